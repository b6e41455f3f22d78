// One topic: partitions (offsets, leader, replicas, ISR, size), configs (value, source, default; editable), delete.
import { useState } from 'preact/hooks';
import { api, enc } from '../lib/api.js';
import { bytes, count, rate } from '../lib/format.js';
import { ErrorNote, html, MoreRows, TableWrap, ThroughputCharts, usePoll } from '../lib/ui.js';

function ConfigEditor({ topic, configs, onChanged }) {
  const [filter, setFilter] = useState('');
  const [name, setName] = useState('retention.ms');
  const [value, setValue] = useState('');
  const [error, setError] = useState(null);
  const [status, setStatus] = useState(null);
  const change = async (body, what) => {
    setError(null);
    setStatus(null);
    try {
      await api(`/topics/${enc(topic)}/configs`, { method: 'PUT', body });
      setStatus(what);
      onChanged();
    } catch (err) {
      setError(err);
    }
  };
  const shown = configs.filter((c) => c.name.includes(filter.trim()));
  return html`<h2 id="configs-title">Configs</h2>
    <form
      class="inline"
      aria-label="Set a config"
      onSubmit=${(e) => {
        e.preventDefault();
        void change({ set: { [name]: value } }, `Set ${name}=${value}`);
      }}
    >
      <label
        >Config
        <select value=${name} onChange=${(e) => setName(e.currentTarget.value)}>
          ${configs.map((c) => html`<option key=${c.name} value=${c.name}>${c.name}</option>`)}
        </select></label
      >
      <label>New value <input name="value" required value=${value} onInput=${(e) => setValue(e.currentTarget.value)} /></label>
      <button type="submit">Set</button>
      <label>Filter configs <input type="search" value=${filter} onInput=${(e) => setFilter(e.currentTarget.value)} /></label>
    </form>
    <${ErrorNote} error=${error} />
    ${status && html`<p class="notice" role="status">${status}</p>`}
    <${TableWrap} label="Configs">
      <table aria-labelledby="configs-title">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
            <th scope="col">Source</th>
            <th scope="col">Default</th>
            <th scope="col">Action</th>
          </tr>
        </thead>
        <tbody>
          ${shown.map(
            (c) =>
              html`<tr key=${c.name}>
                <td><code>${c.name}</code></td>
                <td>${c.overridden ? html`<strong>${c.value ?? 'null'}</strong>` : (c.value ?? 'null')}</td>
                <td>${c.source}</td>
                <td>${c.default ?? 'null'}</td>
                <td>
                  ${c.overridden ? html`<button class="secondary" onClick=${() => change({ delete: [c.name] }, `Reset ${c.name} to its default`)}>Reset<span class="sr-only"> ${c.name}</span></button>` : ''}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    <//>`;
}

function DeleteTopic({ topic }) {
  const [armed, setArmed] = useState(false);
  const [error, setError] = useState(null);
  const del = async () => {
    try {
      await api(`/topics/${enc(topic)}`, { method: 'DELETE' });
      location.hash = '#/topics';
    } catch (err) {
      setError(err);
    }
  };
  return html`<div class="toolbar">
      ${
        armed
          ? html`<button class="danger" onClick=${del}>Really delete ${topic}</button
              ><button class="secondary" onClick=${() => setArmed(false)}>Keep it</button>`
          : html`<button class="danger" onClick=${() => setArmed(true)}>Delete topic</button>`
      }
    </div>
    <${ErrorNote} error=${error} />`;
}

export function Topic({ name }) {
  const [all, setAll] = useState(false);
  const t = usePoll(() => api(`/topics/${enc(name)}${all ? '?partitions=all' : ''}`), 5000, [name, all]);
  const d = t.data;
  const [adding, setAdding] = useState('');
  const [addError, setAddError] = useState(null);
  return html`<section aria-labelledby="topic-title">
    <p><a href="#/topics">Topics</a> /</p>
    <h1 id="topic-title">${name}</h1>
    <${ErrorNote} error=${t.error} />
    ${
      d &&
      html`<div class="toolbar">
          <a href=${`#/topics/${enc(name)}/messages`}>Browse messages</a>
          <span class="muted"
            >id ${d.topicId} · replication factor ${d.replicationFactor} · in ${rate(d.messagesInPerSec)} msg/s · out
            ${rate(d.messagesOutPerSec)} msg/s</span
          >
        </div>
        <h2>Throughput</h2>
        <${ThroughputCharts} path=${`/topics/${enc(name)}/history?seconds=900`} />
        <h2>Partitions</h2>
        <${TableWrap} label="Partitions">
          <table>
            <thead>
              <tr>
                <th scope="col" class="num">Partition</th>
                <th scope="col" class="num">Start offset</th>
                <th scope="col" class="num">High watermark</th>
                <th scope="col" class="num">Messages</th>
                <th scope="col" class="num">Size</th>
                <th scope="col">Leader</th>
                <th scope="col">Replicas</th>
                <th scope="col">ISR</th>
              </tr>
            </thead>
            <tbody>
              ${d.partitions.map(
                (p) =>
                  html`<tr key=${p.partition}>
                    <td class="num">${p.partition}</td>
                    <td class="num">${p.logStartOffset ?? '—'}</td>
                    <td class="num">${p.highWatermark ?? '—'}</td>
                    <td class="num">${p.messages === null ? '—' : count(p.messages)}</td>
                    <td class="num">${p.sizeBytes === null ? '—' : bytes(p.sizeBytes)}</td>
                    <td>
                      ${p.leader < 0 ? html`<span class="bad">none</span>` : p.leader}${p.offline ? html` <span class="bad">offline</span>` : ''}
                    </td>
                    <td>${p.replicas.join(', ')}</td>
                    <td>${p.isr.join(', ')}</td>
                  </tr>`,
              )}
            </tbody>
          </table>
        <//>
        <${MoreRows} shown=${d.partitions.length} total=${d.partitionCount} what="partitions" onAll=${() => setAll(true)} />
        <form
          class="inline"
          aria-label="Add partitions"
          onSubmit=${async (e) => {
            e.preventDefault();
            setAddError(null);
            try {
              await api(`/topics/${enc(name)}/partitions`, { method: 'POST', body: { count: Number(adding) } });
              setAdding('');
              t.reload();
            } catch (err) {
              setAddError(err);
            }
          }}
        >
          <label
            >New partition count
            <input type="number" min=${d.partitionCount + 1} required value=${adding} onInput=${(e) => setAdding(e.currentTarget.value)}
          /></label>
          <button type="submit" class="secondary">Add partitions</button>
        </form>
        <${ErrorNote} error=${addError} />
        <${ConfigEditor} topic=${name} configs=${d.configs} onChanged=${t.reload} />
        ${
          !d.internal &&
          html`<h2>Danger zone</h2>
            <${DeleteTopic} topic=${name} />`
        }`
    }
  </section>`;
}
