/**
 * The Requests page: the broker's recent-request log and its fault-injection rules, through the same
 * objects (and query parsing) as the admin API's /v1/requests and /v1/faults, with the console's
 * CSRF protection on the changes.
 *   GET /ui/api/requests?api=&client=&errors=&minMs=&limit=   POST /ui/api/faults (a rule or an array)
 *   GET /ui/api/faults                                         DELETE /ui/api/faults/:id
 */
import { parseRequestLogQuery } from '../admin/request-routes.js';
import { FaultRuleError } from '../network/faults.js';
import { badRequest, notFound, sendJson } from './http.js';
import type { ApiRoute, ConsoleDeps } from './types.js';

export function requestRoutes(deps: ConsoleDeps): ApiRoute[] {
  const { broker } = deps;
  return [
    {
      method: 'GET',
      path: /^\/requests$/,
      handle(_req, res, { url }) {
        const log = broker.metrics.requestLog;
        sendJson(res, 200, { recording: log.status, requests: log.query(parseRequestLogQuery(url.searchParams)) });
      },
    },
    {
      method: 'GET',
      path: /^\/faults$/,
      handle(_req, res) {
        sendJson(res, 200, { faults: broker.faults.list() });
      },
    },
    {
      method: 'POST',
      path: /^\/faults$/,
      handle(_req, res, { body }) {
        try {
          const added = broker.faults.addJson(body.toString('utf8'));
          sendJson(res, 201, { ids: added.map((h) => h.id), faults: added.map((h) => h.info()) });
        } catch (e) {
          if (e instanceof FaultRuleError) throw badRequest(e.message, { field: e.field, index: e.index });
          throw e;
        }
      },
    },
    {
      method: 'DELETE',
      path: /^\/faults\/([^/]+)$/,
      handle(_req, res, { params: [id = ''] }) {
        if (!broker.faults.remove(id)) throw notFound(`no fault rule ${id}`);
        sendJson(res, 200, { removed: id });
      },
    },
  ];
}
