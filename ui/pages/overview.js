// The overview: brokers, topics, partitions, health, and live throughput charts with the last 15 min.
import { api } from '../lib/api.js';
import { bytes, count, duration } from '../lib/format.js';
import { ErrorNote, html, TableWrap, ThroughputCharts, usePoll } from '../lib/ui.js';

function Stat({ label, value }) {
  return html`<div class="stat">
    <dt>${label}</dt>
    <dd>${value}</dd>
  </div>`;
}

export function Overview() {
  const ov = usePoll(() => api('/overview'), 5000);
  const o = ov.data;
  return html`<section aria-labelledby="overview-title">
    <h1 id="overview-title">Overview</h1>
    <${ErrorNote} error=${ov.error} />
    ${
      o &&
      html`<dl class="stats">
          <${Stat}
            label="Health"
            value=${html`<span class=${o.health.healthy ? 'ok' : 'bad'}>${o.health.healthy ? 'healthy' : o.health.ready ? 'degraded' : 'starting'}</span>`}
          />
          <${Stat} label="Brokers" value=${count(o.brokers.length)} />
          <${Stat} label="Topics" value=${count(o.topics)} />
          <${Stat} label="Partitions" value=${count(o.partitions)} />
          <${Stat} label="Under-replicated" value=${count(o.underReplicatedPartitions)} />
          <${Stat} label="Offline partitions" value=${count(o.offlinePartitions)} />
          <${Stat} label="Consumer groups" value=${count(o.groups)} />
          <${Stat} label="Data on disk" value=${bytes(o.sizeBytes)} />
        </dl>
        <h2>Brokers</h2>
        <${TableWrap} label="Brokers">
          <table>
            <thead>
              <tr>
                <th scope="col">Node</th>
                <th scope="col">Endpoints</th>
                <th scope="col">Rack</th>
                <th scope="col">Role</th>
              </tr>
            </thead>
            <tbody>
              ${o.brokers.map(
                (b) =>
                  html`<tr key=${b.nodeId}>
                    <td>${b.nodeId}${b.self ? ' (this broker)' : ''}</td>
                    <td>${b.endpoints.map((e) => `${e.listener} ${e.host}:${e.port}`).join(', ')}</td>
                    <td>${b.rack ?? '—'}</td>
                    <td>${b.nodeId === o.controllerId ? 'controller' : 'broker'}</td>
                  </tr>`,
              )}
            </tbody>
          </table>
        <//>
        <p class="muted">
          Cluster ${o.clusterId} · gregor ${o.version ?? ''} · metadata ${o.metadataStore} · bootstrap <code>${o.bootstrap}</code> ·
          up${' '}${duration(o.uptimeMs)}
        </p>`
    }
    <h2>Throughput</h2>
    <${ThroughputCharts} path="/history?seconds=900" />
  </section>`;
}
