/**
 * GET /metrics: the Prometheus text exposition (lib/observability/prometheus.ts). The exporter (and
 * prom-client with it) is loaded on the first scrape, so a broker nobody scrapes never loads it.
 */
import type { PrometheusExporter } from '../observability/prometheus.js';
import type { AdminRoute } from './routes.js';

export function metricsRoutes(exporter: () => Promise<PrometheusExporter>): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/metrics',
      async handle(_req, res) {
        const e = await exporter();
        const text = await e.scrape();
        res.writeHead(200, { 'content-type': e.contentType, 'cache-control': 'no-store' });
        res.end(text);
      },
    },
  ];
}
