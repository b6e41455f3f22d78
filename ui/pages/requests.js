// The recent-request log and the fault-injection rules.
import { useState } from 'preact/hooks';
import { api, enc } from '../lib/api.js';
import { localTime } from '../lib/format.js';
import { ErrorNote, html, TableWrap, usePoll } from '../lib/ui.js';

function Faults() {
  const list = usePoll(() => api('/faults'), 3000);
  const [rule, setRule] = useState('{"apiKey": "Produce", "action": "error", "errorCode": "NOT_LEADER_OR_FOLLOWER", "times": 3}');
  const [error, setError] = useState(null);
  const add = async (e) => {
    e.preventDefault();
    setError(null);
    try {
      await api('/faults', { method: 'POST', body: JSON.parse(rule) });
      list.reload();
    } catch (err) {
      setError(err);
    }
  };
  const faults = list.data?.faults ?? [];
  return html`<h2 id="faults-title">Fault injection rules</h2>
    <form class="inline" aria-label="Add a fault rule" onSubmit=${add}>
      <label style="flex: 1 1 24rem"
        >Rule (JSON, as POST /v1/faults takes)
        <textarea class="mono" value=${rule} onInput=${(e) => setRule(e.currentTarget.value)}></textarea>
      </label>
      <button type="submit">Add rule</button>
    </form>
    <${ErrorNote} error=${error || list.error} />
    <${TableWrap} label="Fault rules">
      <table aria-labelledby="faults-title">
        <thead>
          <tr>
            <th scope="col">Id</th>
            <th scope="col">Rule</th>
            <th scope="col" class="num">Applied</th>
            <th scope="col">Action</th>
          </tr>
        </thead>
        <tbody>
          ${faults.map(
            (f) =>
              html`<tr key=${f.id}>
                <td><code>${f.id}</code></td>
                <td><code>${JSON.stringify({ ...f, id: undefined, applied: undefined })}</code></td>
                <td class="num">${f.applied}</td>
                <td>
                  <button
                    class="secondary"
                    onClick=${async () => (await api(`/faults/${enc(f.id)}`, { method: 'DELETE' }).catch(setError), list.reload())}
                  >
                    Remove<span class="sr-only"> rule ${f.id}</span>
                  </button>
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    <//>
    ${faults.length === 0 && html`<p class="muted">No rules.</p>`}`;
}

export function Requests() {
  const [f, setF] = useState({ api: '', client: '', errors: false, minMs: '' });
  const q = new URLSearchParams({ limit: '100' });
  if (f.api) q.set('api', f.api);
  if (f.client) q.set('client', f.client);
  if (f.errors) q.set('errors', '1');
  if (f.minMs) q.set('minMs', f.minMs);
  const log = usePoll(() => api(`/requests?${q}`), 3000, [q.toString()]);
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.value });
  const rows = [...(log.data?.requests ?? [])].reverse();
  return html`<section aria-labelledby="requests-title">
    <h1 id="requests-title">Requests</h1>
    <form class="inline" aria-label="Filter requests" onSubmit=${(e) => e.preventDefault()}>
      <label>API <input value=${f.api} placeholder="Fetch" onInput=${set('api')} /></label>
      <label>Client <input value=${f.client} placeholder="rdkafka" onInput=${set('client')} /></label>
      <label>Slower than (ms) <input type="number" min="0" value=${f.minMs} onInput=${set('minMs')} /></label>
      <label style="flex-direction: row; align-items: center; gap: 0.35rem"
        ><input type="checkbox" checked=${f.errors} onChange=${(e) => setF({ ...f, errors: e.currentTarget.checked })} /> Errors only</label
      >
    </form>
    <${ErrorNote} error=${log.error} />
    <p class="muted" role="status">${rows.length} request(s), newest first</p>
    <${TableWrap} label="Recent requests">
      <table>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">API</th>
            <th scope="col" class="num">Version</th>
            <th scope="col">Client</th>
            <th scope="col">Software</th>
            <th scope="col" class="num">Total ms</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          ${rows.map(
            (r, i) =>
              html`<tr key=${i}>
                <td>${localTime(Date.parse(r.time))}</td>
                <td>${r.api}</td>
                <td class="num">${r.version}</td>
                <td>${r.clientId ?? ''}</td>
                <td>${r.clientSoftwareName ? `${r.clientSoftwareName} ${r.clientSoftwareVersion ?? ''}` : ''}</td>
                <td class="num">${r.latencyMs.total}</td>
                <td>${r.errorCode !== 0 ? r.error : r.partitionErrorCode !== 0 ? r.partitionError : ''}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    <//>
    <${Faults} />
  </section>`;
}
