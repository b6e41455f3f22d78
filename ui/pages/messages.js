// The message browser: from start/end/offset/time, per partition or all; text search and filter
// expressions (evaluated by the broker, never by JavaScript); JSON/text/hex/base64 views; live tail
// (Server-Sent Events); export as JSON lines or CSV; a produce form.
import { Component } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, enc } from '../lib/api.js';
import { render } from '../lib/bytes.js';
import { localTime } from '../lib/format.js';
import { ErrorNote, html, TableWrap, usePoll } from '../lib/ui.js';

/**
 * A partition, or `none` (all / by key): a list for a topic of a few partitions; for thousands, a
 * text field (a select of 10,000 options is slow to draw and to use).
 */
function PartitionPicker({ value, onChange, partitions, none, noneLabel }) {
  if (partitions <= 100)
    return html`<select value=${value} onChange=${onChange}>
      <option value=${none}>${noneLabel}</option>
      ${Array.from({ length: partitions }, (_v, i) => html`<option value=${i}>${i}</option>`)}
    </select>`;
  return html`<input
    inputmode="numeric"
    pattern=${`${none === '' ? '' : `${none}|`}[0-9]+`}
    placeholder=${`${noneLabel}, or 0–${partitions - 1}`}
    value=${value}
    onChange=${onChange}
  />`;
}

function Produce({ topic, partitions, onDone }) {
  const [f, setF] = useState({ partition: '', key: '', value: '', valueEncoding: 'text', headers: '' });
  const [error, setError] = useState(null);
  const [status, setStatus] = useState(null);
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.value });
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    setStatus(null);
    try {
      const headers = f.headers
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => {
          const i = l.indexOf(':');
          if (i <= 0) throw new Error(`header line "${l}" is not name:value`);
          return { key: l.slice(0, i).trim(), value: l.slice(i + 1).trim() };
        });
      const body = { key: f.key === '' ? null : f.key, value: f.value, valueEncoding: f.valueEncoding, headers };
      if (f.partition !== '') body.partition = Number(f.partition);
      const r = await api(`/topics/${enc(topic)}/messages`, { method: 'POST', body });
      setStatus(`Produced to partition ${r.partition} at offset ${r.offset}`);
      onDone();
    } catch (err) {
      setError(err);
    }
  };
  return html`<details>
    <summary>Produce a message</summary>
    <form class="inline" onSubmit=${submit} aria-label="Produce a message">
      <label
        >Partition
        <${PartitionPicker} value=${f.partition} onChange=${set('partition')} partitions=${partitions} none="" noneLabel="by key"
      /></label>
      <label>Key <input value=${f.key} onInput=${set('key')} /></label>
      <label
        >Value is
        <select value=${f.valueEncoding} onChange=${set('valueEncoding')}>
          <option value="text">text</option>
          <option value="json">JSON</option>
          <option value="base64">base64</option>
        </select></label
      >
      <label style="flex: 1 1 20rem">Value <textarea value=${f.value} onInput=${set('value')}></textarea></label>
      <label style="flex: 1 1 12rem"
        >Headers (name:value per line) <textarea value=${f.headers} onInput=${set('headers')}></textarea>
      </label>
      <button type="submit">Produce</button>
    </form>
    <${ErrorNote} error=${error} />
    ${status && html`<p class="notice" role="status">${status}</p>`}
  </details>`;
}

/**
 * Rows the live tail keeps (the newest; the page says so) and how often it draws what arrived: a
 * busy topic's records come in bursts, drawn in one update per tick, at an animation frame.
 */
export const TAIL_ROWS = 200;
const FLUSH_MS = 250;

/**
 * A message row, drawn again only when its record or the view changes. Rows are keyed by their
 * place, not their record: a live tail that replaces its 200 rows with newer ones changes the text
 * of the rows it has (a row off screen, skipped by content-visibility, is not laid out again)
 * rather than removing them and making new ones. The table's elements carry their roles:
 * style.css displays them as blocks and grids.
 */
class Row extends Component {
  shouldComponentUpdate(next) {
    return next.r !== this.props.r || next.view !== this.props.view;
  }
  render({ r, view }) {
    return html`<tr role="row">
      <td role="cell" class="num">${r.partition}</td>
      <td role="cell" class="num">${r.offset}</td>
      <td role="cell"><time datetime=${new Date(r.timestamp).toISOString()}>${localTime(r.timestamp)}</time></td>
      <td role="cell">${render(r.key, view)}</td>
      <td role="cell">${render(r.value, view)}</td>
      <td role="cell">
        ${r.headers.map((h) => html`<div><span class="pill">${h.key}</span> ${render(h.value, view === 'auto' ? 'text' : view)}</div>`)}
      </td>
    </tr>`;
  }
}

function query(p, extra = {}) {
  const q = new URLSearchParams({ partition: p.partition, from: p.from, limit: p.limit, q: p.q, filter: p.filter, ...extra });
  if (p.from === 'offset') q.set('offset', p.offset || '0');
  if (p.from === 'timestamp') q.set('timestamp', String(new Date(p.time).getTime() || 0));
  return q;
}

export function Messages({ topic }) {
  // only the partition count: no partition rows
  const meta = usePoll(() => api(`/topics/${enc(topic)}?partitions=0`), 0, [topic]);
  const partitions = meta.data?.partitionCount ?? 0;
  const [p, setP] = useState({ partition: 'all', from: 'end', offset: '', time: '', limit: '50', q: '', filter: '' });
  const [view, setView] = useState('auto');
  const [records, setRecords] = useState([]);
  const [next, setNext] = useState(null);
  const [error, setError] = useState(null);
  const [status, setStatus] = useState('');
  const [live, setLive] = useState(false);
  const source = useRef(null);
  // each load, and the live tail's start, takes a number: a load answered after a later one began
  // (or after the live tail started, whose rows and status it would overwrite) is dropped
  const loads = useRef(0);
  const set = (k) => (e) => setP({ ...p, [k]: e.currentTarget.value });

  const load = async (append = false) => {
    const seq = ++loads.current;
    setError(null);
    try {
      const q =
        append && next
          ? query(p, {
              from: 'cursor',
              cursor: Object.entries(next)
                .map(([k, v]) => `${k}:${v}`)
                .join(','),
            })
          : query(p);
      const r = await api(`/topics/${enc(topic)}/messages?${q}`);
      if (seq !== loads.current) return;
      const rs = append ? [...records, ...r.records] : r.records;
      setRecords(rs);
      setNext(r.atEnd ? null : r.next);
      setStatus(`${rs.length} message${rs.length === 1 ? '' : 's'} shown (${r.scanned} read)${r.atEnd ? ', end of the selection' : ''}`);
    } catch (err) {
      if (seq === loads.current) setError(err);
    }
  };
  useEffect(() => {
    void load();
  }, [topic]);
  useEffect(() => () => source.current?.close(), []);

  const toggleLive = () => {
    if (live) {
      source.current?.close();
      source.current = null;
      setLive(false);
      setStatus('Live tail stopped');
      return;
    }
    loads.current++;
    const es = new EventSource(`/ui/api/topics/${enc(topic)}/tail?${query(p)}`);
    // records arrive in bursts: kept as their event text, the newest TAIL_ROWS parsed and drawn at
    // most every FLUSH_MS (one state update; a hidden tab draws when it is shown again)
    let pending = [];
    let shown = 0;
    let skipped = 0;
    let timer = null;
    const flush = () => {
      timer = null;
      if (source.current !== es) return; // stopped meanwhile
      const batch = pending.length > TAIL_ROWS ? pending.slice(-TAIL_ROWS) : pending;
      skipped += pending.length - batch.length;
      pending = [];
      if (batch.length > 0) {
        const rows = batch.map((d) => JSON.parse(d));
        setRecords((rs) => (rows.length >= TAIL_ROWS ? rows : [...rs, ...rows].slice(-TAIL_ROWS)));
      }
      shown += batch.length;
      setStatus(
        `Live tail: ${shown} message${shown === 1 ? '' : 's'} received, the newest ${TAIL_ROWS} at most shown` +
          (skipped > 0 ? `; ${skipped} record${skipped === 1 ? '' : 's'} skipped to keep up with the newest` : ''),
      );
    };
    const later = () => {
      if (timer === null) timer = setTimeout(() => requestAnimationFrame(flush), FLUSH_MS);
    };
    es.addEventListener('record', (e) => {
      pending.push(e.data);
      // a burst far past what is kept: drop the oldest now rather than hold them
      if (pending.length > 4 * TAIL_ROWS) {
        skipped += pending.length - TAIL_ROWS;
        pending = pending.slice(-TAIL_ROWS);
      }
      later();
    });
    es.addEventListener('skipped', (e) => {
      skipped += JSON.parse(e.data).records;
      later();
    });
    es.addEventListener('ready', () => setStatus('Live tail: waiting for new messages'));
    es.addEventListener('error', (e) => {
      if (e.data) setError(new Error(JSON.parse(e.data).message));
    });
    es.addEventListener('end', () => {
      es.close();
      setLive(false);
    });
    source.current = es;
    setRecords([]);
    setLive(true);
  };

  return html`<section aria-labelledby="messages-title">
    <p><a href="#/topics">Topics</a> / <a href=${`#/topics/${enc(topic)}`}>${topic}</a> /</p>
    <h1 id="messages-title">Messages in ${topic}</h1>
    <form class="inline" aria-label="Select messages" onSubmit=${(e) => (e.preventDefault(), void load())}>
      <label
        >Partition
        <${PartitionPicker} value=${p.partition} onChange=${set('partition')} partitions=${partitions} none="all" noneLabel="all"
      /></label>
      <label
        >From
        <select value=${p.from} onChange=${set('from')}>
          <option value="end">newest</option>
          <option value="start">oldest</option>
          <option value="offset">offset</option>
          <option value="timestamp">time</option>
        </select></label
      >
      ${p.from === 'offset' && html`<label>Offset <input type="number" min="0" value=${p.offset} onInput=${set('offset')} /></label>`}
      ${p.from === 'timestamp' && html`<label>Time (local) <input type="datetime-local" step="1" value=${p.time} onInput=${set('time')} /></label>`}
      <label>Limit <input type="number" min="1" max="1000" value=${p.limit} onInput=${set('limit')} /></label>
      <label>Search text <input type="search" value=${p.q} onInput=${set('q')} /></label>
      <label style="flex: 1 1 18rem"
        >Filter expression
        <input class="mono" value=${p.filter} placeholder='value.status == "shipped" && headers.source == "web"' onInput=${set('filter')}
      /></label>
      <button type="submit">Show</button>
    </form>
    <div class="toolbar">
      <label
        >View as
        <select value=${view} onChange=${(e) => setView(e.currentTarget.value)}>
          <option value="auto">auto</option>
          <option value="json">JSON</option>
          <option value="text">text</option>
          <option value="hex">hex</option>
          <option value="base64">base64</option>
        </select></label
      >
      <button class=${live ? 'danger' : 'secondary'} onClick=${toggleLive} aria-pressed=${live}>
        ${live ? 'Stop live tail' : 'Live tail'}
      </button>
      <a href=${`/ui/api/topics/${enc(topic)}/export?${query(p, { format: 'jsonl', limit: '10000' })}`} download>Export JSON lines</a>
      <a href=${`/ui/api/topics/${enc(topic)}/export?${query(p, { format: 'csv', limit: '10000' })}`} download>Export CSV</a>
    </div>
    <${Produce} topic=${topic} partitions=${partitions} onDone=${() => !live && load()} />
    <${ErrorNote} error=${error} />
    <p class="muted" role="status">${status}</p>
    <${TableWrap} label="Messages">
      <table class=${live ? 'messages live' : 'messages'} role="table">
        <thead role="rowgroup">
          <tr role="row">
            <th role="columnheader" scope="col" class="num">Partition</th>
            <th role="columnheader" scope="col" class="num">Offset</th>
            <th role="columnheader" scope="col">Time</th>
            <th role="columnheader" scope="col">Key</th>
            <th role="columnheader" scope="col">Value</th>
            <th role="columnheader" scope="col">Headers</th>
          </tr>
        </thead>
        <tbody role="rowgroup">
          ${records.map((r, i) => html`<${Row} key=${i} r=${r} view=${view} />`)}
        </tbody>
      </table>
    <//>
    ${next && !live && html`<button class="secondary" onClick=${() => load(true)}>Load more</button>`}
  </section>`;
}
