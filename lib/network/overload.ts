/**
 * The broker's overload limits, built once from its configuration and shared by every listener:
 * connection quotas (max.connections, max.connections.per.ip, its overrides), the request budget
 * (queued.max.requests, queued.max.request.bytes) and the request read timeout.
 */
import { getHeapStatistics } from 'node:v8';
import type { BrokerConfig } from '../config.js';
import { ConnectionQuotas, parseConnectionOverrides, resolveConnectionOverrides } from './connection-quotas.js';
import { RequestBudget } from './request-budget.js';

export interface OverloadLimits {
  quotas: ConnectionQuotas;
  budget: RequestBudget;
  requestReadTimeoutMs: number;
}

const MiB = 1024 * 1024;

/**
 * queued.max.request.bytes=-1 (Kafka's default: unbounded): gregor bounds it all the same, at an
 * eighth of V8's heap limit and at most 256 MiB (request buffers live outside the heap, but the
 * heap limit is what an operator sets to size a Node process).
 */
export function defaultRequestBytes(): number {
  return Math.min(256 * MiB, Math.floor(getHeapStatistics().heap_size_limit / 8));
}

/**
 * The limits of a broker. The connection limits are read from `config` at each new connection, so
 * dynamic updates (AlterConfigs on the broker or on every broker) apply at once, as in Kafka; host
 * names in the overrides are resolved at start and whenever the value changes (literal addresses
 * apply at once, resolved names once resolved).
 */
export async function overloadLimits(config: BrokerConfig): Promise<OverloadLimits> {
  const overridesKey = 'max.connections.per.ip.overrides';
  let raw = config.string(overridesKey) ?? '';
  let overrides = await resolveConnectionOverrides(parseConnectionOverrides(raw));
  const currentOverrides = (): ReadonlyMap<string, number> => {
    const now = config.string(overridesKey) ?? '';
    if (now !== raw) {
      raw = now;
      const parsed = parseConnectionOverrides(now);
      overrides = parsed;
      void resolveConnectionOverrides(parsed).then((resolved) => {
        if (raw === now) overrides = resolved;
      });
    }
    return overrides;
  };
  const bytes = config.long('queued.max.request.bytes') ?? -1;
  return {
    quotas: new ConnectionQuotas({
      get maxConnections() {
        return config.int('max.connections');
      },
      get maxConnectionsPerIp() {
        return config.int('max.connections.per.ip');
      },
      get overrides() {
        return currentOverrides();
      },
    }),
    budget: new RequestBudget(config.int('queued.max.requests'), bytes < 0 ? defaultRequestBytes() : bytes),
    requestReadTimeoutMs: config.int('gregor.request.read.timeout.ms'),
  };
}
