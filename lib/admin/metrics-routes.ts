/** GET /metrics: the Prometheus text exposition (lib/observability/prometheus.ts). */
import type { PrometheusExporter } from '../observability/prometheus.js';
import type { AdminRoute } from './routes.js';

export function metricsRoutes(exporter: () => PrometheusExporter): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/metrics',
      async handle(_req, res) {
        const e = exporter();
        const text = await e.scrape();
        res.writeHead(200, { 'content-type': e.contentType, 'cache-control': 'no-store' });
        res.end(text);
      },
    },
  ];
}
