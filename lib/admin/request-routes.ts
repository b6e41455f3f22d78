/**
 * The request log (lib/observability/request-log.ts):
 * - GET /v1/requests?api=Fetch&client=rdkafka&errors=1&conn=...&minMs=100&limit=50: the matching
 *   requests, oldest first, as JSON {recording: {...}, requests: [...]};
 * - POST /v1/requests/record-all {"on": true|false}: start a complete recording of every request
 *   (GET then reads it instead of the ring of the last admin.requests.log.size) or stop it;
 * - DELETE /v1/requests: empty the ring and the recording.
 * POST and DELETE are refused from another site, and a POST not declared JSON (lib/admin/cross-site.ts).
 */
import type { RequestLog, RequestLogFilter } from '../observability/request-log.js';
import { AdminHttpError, jsonBody, sendJson } from './server.js';
import { guardMutations } from './cross-site.js';
import type { AdminRoute } from './routes.js';

const FLAGS = new Set(['1', 'true', 'yes', 'on']);
const KNOWN = new Set(['api', 'client', 'errors', 'conn', 'minMs', 'limit']);

function nonNegative(name: string, v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw new AdminHttpError(400, `${name} must be a number >= 0, got "${v}"`);
  return n;
}

export function parseRequestLogQuery(params: URLSearchParams): RequestLogFilter {
  for (const k of params.keys())
    if (!KNOWN.has(k)) throw new AdminHttpError(400, `unknown query parameter "${k}" (known: ${[...KNOWN].join(', ')})`);
  const f: RequestLogFilter = {};
  const api = params.get('api');
  if (api !== null) f.api = api;
  const client = params.get('client');
  if (client !== null) f.client = client;
  const errors = params.get('errors');
  if (errors !== null) f.errors = FLAGS.has(errors.toLowerCase());
  const conn = params.get('conn');
  if (conn !== null) f.connection = conn;
  const minMs = params.get('minMs');
  if (minMs !== null) f.minMs = nonNegative('minMs', minMs);
  const limit = params.get('limit');
  if (limit !== null) f.limit = Math.floor(nonNegative('limit', limit));
  return f;
}

export function requestLogRoutes(log: RequestLog): AdminRoute[] {
  return guardMutations([
    {
      method: 'GET',
      path: '/v1/requests',
      handle(_req, res, { url }) {
        const filter = parseRequestLogQuery(url.searchParams);
        sendJson(res, 200, { recording: log.status, requests: log.query(filter) });
      },
    },
    {
      method: 'DELETE',
      path: '/v1/requests',
      handle(_req, res) {
        log.clear();
        sendJson(res, 200, { recording: log.status });
      },
    },
    {
      method: 'POST',
      path: '/v1/requests/record-all',
      handle(_req, res, { body }) {
        const v: unknown = jsonBody(body);
        if (typeof v !== 'object' || v === null || !('on' in v) || typeof v.on !== 'boolean')
          throw new AdminHttpError(400, 'expected a JSON body {"on": true} or {"on": false}');
        log.recordAll(v.on);
        sendJson(res, 200, { recording: log.status });
      },
    },
  ]);
}
