/**
 * /metrics families of the overload limits (lib/network/overload.ts): Kafka's request queue and
 * memory pool gauges under their JMX-exporter names, and gregor's own counters of refused
 * connections and of sockets muted for want of request budget.
 */
import type { ConnectionQuotas } from '../network/connection-quotas.js';
import type { RequestBudget, RequestBudgetStats } from '../network/request-budget.js';
import type { Families } from './families.js';

export type OverloadSource = () => { quotas: ConnectionQuotas; budget: RequestBudget } | null | undefined;

/** The request budget's families: [kind, name, help, value]. */
const BUDGET_FAMILIES: readonly ['gauge' | 'counter', string, string, (b: RequestBudgetStats) => number][] = [
  [
    'gauge',
    'kafka_network_requestchannel_requestqueuesize',
    'Requests read and not yet handled, all listeners (queued.max.requests bounds it)',
    (b) => b.queuedRequests,
  ],
  ['gauge', 'kafka_network_socketserver_memorypoolused', 'Bytes of requests read and not yet handled', (b) => b.queuedBytes],
  [
    'gauge',
    'kafka_network_socketserver_memorypoolavailable',
    'Bytes left before sockets stop being read (queued.max.request.bytes minus what is used)',
    (b) => Math.max(0, b.maxBytes - b.queuedBytes),
  ],
  [
    'counter',
    'gregor_network_request_budget_mutes_total',
    'Times a connection stopped reading because queued.max.requests or queued.max.request.bytes was reached',
    (b) => b.mutes,
  ],
  [
    'counter',
    'gregor_network_request_budget_exhausted_seconds_total',
    'Seconds during which connections waited for request budget (Kafka: memory pool depleted time)',
    (b) => b.exhaustedMs / 1000,
  ],
];

export function registerOverloadMetrics(f: Families, source: OverloadSource): void {
  for (const [kind, name, help, value] of BUDGET_FAMILIES) {
    f[kind](name, help, [], (put) => {
      const b = source()?.budget.stats();
      if (b !== undefined) put(null, value(b));
    });
  }
  f.counter(
    'gregor_network_connections_refused_total',
    'Connections closed at once because a connection limit was reached',
    ['limit'],
    (put) => {
      const q = source()?.quotas;
      if (q === undefined) return;
      for (const [limit, n] of q.refused()) put({ limit }, n);
    },
  );
}
