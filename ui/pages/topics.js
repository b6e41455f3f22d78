// The topic list: search, sizes, message counts, throughput; create a topic.
import { useState } from 'preact/hooks';
import { api, enc } from '../lib/api.js';
import { bytes, count, rate } from '../lib/format.js';
import { ErrorNote, html, TableWrap, usePoll } from '../lib/ui.js';

function parseConfigs(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t === '') continue;
    const eq = t.indexOf('=');
    if (eq <= 0) throw new Error(`config line "${t}" is not key=value`);
    out[t.slice(0, eq).trim()] = t.slice(eq + 1).trim();
  }
  return out;
}

function CreateTopic({ onCreated }) {
  const [name, setName] = useState('');
  const [partitions, setPartitions] = useState('1');
  const [rf, setRf] = useState('');
  const [configs, setConfigs] = useState('');
  const [error, setError] = useState(null);
  const [done, setDone] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    setDone(null);
    try {
      const body = { name: name.trim(), partitions: Number(partitions), configs: parseConfigs(configs) };
      if (rf.trim() !== '') body.replicationFactor = Number(rf);
      await api('/topics', { method: 'POST', body });
      setDone(`Created ${body.name}`);
      setName('');
      onCreated();
    } catch (err) {
      setError(err);
    }
  };
  return html`<details>
    <summary>Create a topic</summary>
    <form class="inline" onSubmit=${submit} aria-label="Create a topic">
      <label>Name <input name="name" required value=${name} onInput=${(e) => setName(e.currentTarget.value)} /></label>
      <label
        >Partitions
        <input name="partitions" type="number" min="1" value=${partitions} onInput=${(e) => setPartitions(e.currentTarget.value)}
      /></label>
      <label
        >Replication factor
        <input
          name="replicationFactor"
          type="number"
          min="1"
          placeholder="default"
          value=${rf}
          onInput=${(e) => setRf(e.currentTarget.value)}
      /></label>
      <label style="flex: 1 1 16rem"
        >Configs (key=value per line)
        <textarea name="configs" value=${configs} onInput=${(e) => setConfigs(e.currentTarget.value)}></textarea>
      </label>
      <button type="submit">Create</button>
    </form>
    <${ErrorNote} error=${error} />
    ${done && html`<p class="notice" role="status">${done}</p>`}
  </details>`;
}

export function Topics() {
  const [q, setQ] = useState('');
  const [internal, setInternal] = useState(false);
  const list = usePoll(() => api(`/topics?q=${enc(q)}${internal ? '&internal=1' : ''}`), 5000, [q, internal]);
  const topics = list.data?.topics ?? [];
  return html`<section aria-labelledby="topics-title">
    <h1 id="topics-title">Topics</h1>
    <div class="toolbar">
      <label>Search topics <input type="search" value=${q} onInput=${(e) => setQ(e.currentTarget.value)} /></label>
      <label style="flex-direction: row; align-items: center; gap: 0.35rem">
        <input type="checkbox" checked=${internal} onChange=${(e) => setInternal(e.currentTarget.checked)} /> Show internal topics
      </label>
    </div>
    <${CreateTopic} onCreated=${list.reload} />
    <${ErrorNote} error=${list.error} />
    <p class="muted" role="status">${list.data ? `${count(topics.length)} topic${topics.length === 1 ? '' : 's'}` : 'Loading…'}</p>
    <${TableWrap} label="Topics">
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col" class="num">Partitions</th>
            <th scope="col" class="num">Replicas</th>
            <th scope="col" class="num">Messages</th>
            <th scope="col" class="num">Size</th>
            <th scope="col" class="num">In msg/s</th>
            <th scope="col" class="num">Out msg/s</th>
          </tr>
        </thead>
        <tbody>
          ${topics.map(
            (t) =>
              html`<tr key=${t.name}>
                <td>
                  <a href=${`#/topics/${enc(t.name)}`}>${t.name}</a
                  >${t.internal ? html` <span class="pill">internal</span>` : ''}${t.underReplicated > 0 ? html` <span class="pill bad">${t.underReplicated} under-replicated</span>` : ''}
                </td>
                <td class="num">${count(t.partitions)}</td>
                <td class="num">${t.replicationFactor}</td>
                <td class="num">${count(t.messages)}</td>
                <td class="num">${bytes(t.sizeBytes)}</td>
                <td class="num">${rate(t.messagesInPerSec)}</td>
                <td class="num">${rate(t.messagesOutPerSec)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    <//>
  </section>`;
}
