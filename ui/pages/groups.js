// Consumer groups: state, members, total lag.
import { api, enc } from '../lib/api.js';
import { count } from '../lib/format.js';
import { ErrorNote, html, TableWrap, usePoll } from '../lib/ui.js';

export function Groups() {
  const list = usePoll(() => api('/groups'), 5000);
  const groups = list.data?.groups ?? [];
  return html`<section aria-labelledby="groups-title">
    <h1 id="groups-title">Consumer groups</h1>
    <${ErrorNote} error=${list.error} />
    <p class="muted" role="status">${list.data ? `${groups.length} group${groups.length === 1 ? '' : 's'}` : 'Loading…'}</p>
    <${TableWrap} label="Consumer groups">
      <table>
        <thead>
          <tr>
            <th scope="col">Group</th>
            <th scope="col">State</th>
            <th scope="col">Type</th>
            <th scope="col" class="num">Members</th>
            <th scope="col" class="num">Lag (messages)</th>
          </tr>
        </thead>
        <tbody>
          ${groups.map(
            (g) =>
              html`<tr key=${g.groupId}>
                <td><a href=${`#/groups/${enc(g.groupId)}`}>${g.groupId}</a></td>
                <td>${g.state}</td>
                <td>${g.type || g.protocolType}</td>
                <td class="num">${g.members}</td>
                <td class="num">${count(g.lag)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    <//>
  </section>`;
}
