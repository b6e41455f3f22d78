// One consumer group: members and assignments, lag per partition (messages and time), offset reset with a preview.
import { api, enc } from '../lib/api.js';
import { count, duration } from '../lib/format.js';
import { useMemo, useState } from 'preact/hooks';
import { Chart, ErrorNote, html, MoreRows, TableWrap, toChartData, usePoll } from '../lib/ui.js';

function Reset({ id, state, onDone }) {
  const [f, setF] = useState({ to: 'start', offset: '', time: '', topic: '' });
  const [plan, setPlan] = useState(null);
  const [error, setError] = useState(null);
  const [status, setStatus] = useState(null);
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.value });
  const body = (execute) => {
    const b = { to: f.to, execute };
    if (f.topic.trim() !== '') b.topic = f.topic.trim();
    if (f.to === 'offset') b.offset = f.offset;
    if (f.to === 'timestamp') b.timestamp = new Date(f.time).getTime();
    return b;
  };
  const run = async (execute) => {
    setError(null);
    setStatus(null);
    try {
      const r = await api(`/groups/${enc(id)}/reset`, { method: 'POST', body: body(execute) });
      setPlan(r.partitions);
      if (execute) {
        setStatus(`Offsets of ${r.partitions.length} partition(s) reset`);
        onDone();
      }
    } catch (err) {
      setError(err);
    }
  };
  const empty = state === 'Empty' || state === 'Dead';
  return html`<h2>Reset offsets</h2>
    ${!empty && html`<p class="muted">The group is ${state}: offsets can be reset only while it has no members (stop its consumers first).</p>`}
    <form class="inline" aria-label="Reset offsets" onSubmit=${(e) => (e.preventDefault(), void run(false))}>
      <label
        >To
        <select value=${f.to} onChange=${set('to')}>
          <option value="start">start</option>
          <option value="end">end</option>
          <option value="offset">offset</option>
          <option value="timestamp">time</option>
        </select></label
      >
      ${f.to === 'offset' && html`<label>Offset <input type="number" min="0" required value=${f.offset} onInput=${set('offset')} /></label>`}
      ${f.to === 'timestamp' && html`<label>Time (local) <input type="datetime-local" step="1" required value=${f.time} onInput=${set('time')} /></label>`}
      <label>Topic (all committed if empty) <input value=${f.topic} onInput=${set('topic')} /></label>
      <button type="submit" class="secondary">Preview</button>
      <button type="button" class="danger" disabled=${plan === null} onClick=${() => run(true)}>Apply reset</button>
    </form>
    <${ErrorNote} error=${error} />
    ${status && html`<p class="notice" role="status">${status}</p>`}
    ${
      plan &&
      html`<${TableWrap} label="Reset preview">
        <table>
          <caption class="sr-only">
            What the reset changes
          </caption>
          <thead>
            <tr>
              <th scope="col">Topic</th>
              <th scope="col" class="num">Partition</th>
              <th scope="col" class="num">Current offset</th>
              <th scope="col" class="num">New offset</th>
            </tr>
          </thead>
          <tbody>
            ${plan.map(
              (p) =>
                html`<tr key=${`${p.topic}:${p.partition}`}>
                  <td>${p.topic}</td>
                  <td class="num">${p.partition}</td>
                  <td class="num">${p.currentOffset ?? '—'}</td>
                  <td class="num">${p.newOffset}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      <//>`
    }`;
}

const parts = (list) => list.map((a) => `${a.topic}-${a.partition}`).join(', ');

function Members({ d }) {
  const kip848 = d.type === 'consumer';
  return html`<h2>Members</h2>
    ${kip848 && html`<p class="muted">Consumer protocol (KIP-848): group epoch ${d.groupEpoch}, assignment epoch ${d.assignmentEpoch}, assignor ${d.protocol}</p>`}
    <${TableWrap} label="Members">
      <table>
        <thead>
          <tr>
            <th scope="col">Member</th>
            <th scope="col">Client</th>
            <th scope="col">Host</th>
            ${
              kip848 &&
              html`<th scope="col" class="num">Epoch</th>
                <th scope="col">Subscribed</th>`
            }
            <th scope="col">Assignment</th>
            ${kip848 && html`<th scope="col">Target assignment</th>`}
          </tr>
        </thead>
        <tbody>
          ${d.members.map(
            (m) =>
              html`<tr key=${m.memberId}>
                <td><code>${m.memberId}</code>${m.groupInstanceId ? html` (static: ${m.groupInstanceId})` : ''}</td>
                <td>${m.clientId}</td>
                <td>${m.clientHost}</td>
                ${
                  kip848 &&
                  html`<td class="num">${m.memberEpoch}</td>
                    <td>${m.subscribedTopicRegex ?? m.subscribedTopicNames.join(', ')}</td>`
                }
                <td>${parts(m.assignment)}</td>
                ${kip848 && html`<td>${parts(m.targetAssignment)}</td>`}
              </tr>`,
          )}
        </tbody>
      </table>
    <//>`;
}

export function Group({ id }) {
  const [all, setAll] = useState(false);
  const g = usePoll(() => api(`/groups/${enc(id)}${all ? '?partitions=all' : ''}`), 3000, [id, all]);
  const d = g.data;
  const total = d?.totalLag ?? 0;
  const lag = useMemo(() => d && toChartData(d.lagHistory, ['lag']), [d]);
  return html`<section aria-labelledby="group-title">
    <p><a href="#/groups">Consumer groups</a> /</p>
    <h1 id="group-title">${id}</h1>
    <${ErrorNote} error=${g.error} />
    ${
      d &&
      html`<p>
          <span class="pill">${d.state}</span> ${d.type === 'consumer' ? 'consumer protocol (KIP-848)' : `${d.protocolType} ${d.protocol}`}
          · ${d.members.length} member(s) · total lag
          <strong>${count(total)}</strong>
        </p>
        <h2>Lag history</h2>
        <div class="charts">
          <${Chart} title="Total lag (messages)" data=${lag} series=${['lag']} format=${count} />
        </div>
        <h2>Lag per partition</h2>
        <${TableWrap} label="Lag per partition">
          <table>
            <thead>
              <tr>
                <th scope="col">Topic</th>
                <th scope="col" class="num">Partition</th>
                <th scope="col" class="num">Committed</th>
                <th scope="col" class="num">High watermark</th>
                <th scope="col" class="num">Lag</th>
                <th scope="col" class="num">Lag (time)</th>
              </tr>
            </thead>
            <tbody>
              ${d.partitions.map(
                (p) =>
                  html`<tr key=${`${p.topic}:${p.partition}`}>
                    <td><a href=${`#/topics/${enc(p.topic)}`}>${p.topic}</a></td>
                    <td class="num">${p.partition}</td>
                    <td class="num">${p.committedOffset}</td>
                    <td class="num">${p.highWatermark ?? '—'}</td>
                    <td class="num">${p.lag === null ? '—' : count(p.lag)}</td>
                    <td class="num">${p.lagMs === null ? '—' : duration(p.lagMs)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>
        <//>
        <${MoreRows} shown=${d.partitions.length} total=${d.partitionCount} what="partitions" onAll=${() => setAll(true)} />
        <${Members} d=${d} />
        <${Reset} id=${id} state=${d.state} onDone=${g.reload} />`
    }
  </section>`;
}
