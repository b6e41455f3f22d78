/**
 * Health in the shapes tools already probe for:
 * - GET /v1/status/ready (Redpanda's admin API): 200 {"status":"ready"}, or 503 {"status":"booting"}
 *   with the conditions still pending;
 * - GET /v1/ready (Strimzi's KafkaAgent): 204 when ready, else 503;
 * - GET /v1/status/live: 200 {"status":"live"} while the process serves HTTP at all.
 */
import type { Readiness } from '../observability/readiness.js';
import { sendJson } from './server.js';
import type { AdminRoute } from './routes.js';

export function healthRoutes(readiness: Readiness): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/v1/status/ready',
      handle(_req, res) {
        if (readiness.isReady) {
          sendJson(res, 200, { status: 'ready' });
          return;
        }
        sendJson(res, 503, { status: 'booting', pending: readiness.pending });
      },
    },
    {
      method: 'GET',
      path: '/v1/ready',
      handle(_req, res) {
        res.writeHead(readiness.isReady ? 204 : 503, { 'cache-control': 'no-store' });
        res.end();
      },
    },
    {
      method: 'GET',
      path: '/v1/status/live',
      handle(_req, res) {
        sendJson(res, 200, { status: 'live' });
      },
    },
  ];
}
