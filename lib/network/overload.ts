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

export async function overloadLimits(config: BrokerConfig): Promise<OverloadLimits> {
  const overrides = await resolveConnectionOverrides(parseConnectionOverrides(config.string('max.connections.per.ip.overrides') ?? ''));
  const bytes = config.long('queued.max.request.bytes') ?? -1;
  return {
    quotas: new ConnectionQuotas({
      maxConnections: config.int('max.connections'),
      maxConnectionsPerIp: config.int('max.connections.per.ip'),
      overrides,
    }),
    budget: new RequestBudget(config.int('queued.max.requests'), bytes < 0 ? defaultRequestBytes() : bytes),
    requestReadTimeoutMs: config.int('gregor.request.read.timeout.ms'),
  };
}
