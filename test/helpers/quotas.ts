/** Client quota helpers for tests: AlterClientQuotas / DescribeClientQuotas over raw frames, and a timed librdkafka producer. */
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { AlterClientQuotasResponse } from '../../protocol/generated/alter-client-quotas.js';
import type { DescribeClientQuotasResponse } from '../../protocol/generated/describe-client-quotas.js';
import { asError } from '../../lib/as-error.js';
import type { ConfluentModule } from '../../compat/lib/confluent-module.js';
import { RawClient } from './raw-client.js';

/** An entity as the protocol's pairs: { user: 'alice', 'client-id': null } (null: the default entity). */
export type Entity = Record<string, string | null>;

export function pairs(e: Entity): { entityType: string; entityName: string | null }[] {
  return Object.entries(e).map(([entityType, entityName]) => ({ entityType, entityName }));
}

/** One AlterClientQuotas request; ops' value null removes the key. */
export async function alterQuotas(
  bootstrap: string,
  entries: { entity: Entity; ops: Record<string, number | null> }[],
  opts: { validateOnly?: boolean; version?: number } = {},
): Promise<AlterClientQuotasResponse> {
  const c = await RawClient.connect(bootstrap);
  try {
    return await c.request<AlterClientQuotasResponse>(
      ApiKey.AlterClientQuotas,
      opts.version ?? 1,
      {
        entries: entries.map((e) => ({
          entity: pairs(e.entity),
          ops: Object.entries(e.ops).map(([key, v]) => ({ key, value: v ?? 0, remove: v === null })),
        })),
        validateOnly: opts.validateOnly ?? false,
      },
      15_000,
    );
  } finally {
    c.destroy();
  }
}

/** DescribeClientQuotas: components as [type, matchType, match]. */
export async function describeQuotas(
  bootstrap: string,
  components: [string, number, string | null][],
  strict = false,
  version = 1,
): Promise<DescribeClientQuotasResponse> {
  const c = await RawClient.connect(bootstrap);
  try {
    return await c.request<DescribeClientQuotasResponse>(
      ApiKey.DescribeClientQuotas,
      version,
      { components: components.map(([entityType, matchType, match]) => ({ entityType, matchType, match })), strict },
      15_000,
    );
  } finally {
    c.destroy();
  }
}

/** Describe's entries as 'type=name|type=name' → { key: value }, for deep equality. */
export function quotaMap(res: DescribeClientQuotasResponse): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const e of res.entries ?? [])
    out[e.entity.map((p) => `${p.entityType}=${p.entityName ?? '<default>'}`).join('|')] = Object.fromEntries(
      e.values.map((v) => [v.key, v.value]),
    );
  return out;
}

/** The largest throttle (ms) any broker's window in a librdkafka statistics JSON reports (brokers[].throttle.max). */
function statsThrottleMax(json: string): number {
  const stats = JSON.parse(json) as { brokers?: Record<string, { throttle?: { max?: number } }> };
  return Math.max(0, ...Object.values(stats.brokers ?? {}).map((b) => b.throttle?.max ?? 0));
}

export interface TimedProduce {
  /** value bytes acknowledged within the measured time */
  bytes: number;
  seconds: number;
  /** the largest throttle librdkafka reported in its statistics (brokers[].throttle.max, ms) */
  maxThrottleMs: number;
}

/**
 * librdkafka's node-rdkafka-style Producer sends 1 KB records to `topic` as fast as it can for
 * `seconds` (`extra`: more client properties, e.g. SASL); counts the value bytes acknowledged in that time.
 */
export async function produceFor(
  ck: ConfluentModule,
  bootstrap: string,
  topic: string,
  clientId: string,
  seconds: number,
  extra: Record<string, unknown> = {},
): Promise<TimedProduce> {
  const producer = new ck.Producer({
    ...extra,
    'bootstrap.servers': bootstrap,
    'client.id': clientId,
    dr_cb: true,
    'linger.ms': 5,
    'statistics.interval.ms': 500,
    'queue.buffering.max.kbytes': 8192,
    // requests far smaller than a second of quota, so that the throttle, not one request, sets the pace
    'batch.size': 65536,
    log_level: 0,
  });
  await new Promise<void>((resolve, reject) => producer.connect({}, (e: unknown) => (e ? reject(asError(e)) : resolve())));
  const value = Buffer.alloc(1000, 'q');
  let acked = 0;
  let maxThrottleMs = 0;
  let end = Infinity;
  producer.on('delivery-report', (err: unknown) => {
    if (!err && Date.now() <= end) acked += value.length;
  });
  producer.on('event.stats', (s: { message: string }) => (maxThrottleMs = Math.max(maxThrottleMs, statsThrottleMax(s.message))));
  producer.setPollInterval(5);
  const start = Date.now();
  end = start + seconds * 1000;
  try {
    while (Date.now() < end) {
      try {
        for (let i = 0; i < 100; i++) producer.produce(topic, null, value, null);
        await new Promise((r) => setImmediate(r));
      } catch {
        await sleep(5); // the local queue is full: librdkafka is being held back
      }
    }
  } finally {
    await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
  }
  return { bytes: acked, seconds, maxThrottleMs };
}

/** librdkafka's KafkaConsumer (assigned partition 0 from offset 0, no group) reads for `seconds`; value bytes read and the largest throttle reported. */
export async function consumeFor(
  ck: ConfluentModule,
  bootstrap: string,
  topic: string,
  clientId: string,
  seconds: number,
): Promise<TimedProduce> {
  const c = new ck.KafkaConsumer(
    {
      'bootstrap.servers': bootstrap,
      'client.id': clientId,
      'group.id': `quota-${clientId}`,
      'enable.auto.commit': false,
      'statistics.interval.ms': 500,
      log_level: 0,
    },
    {},
  );
  await new Promise<void>((resolve, reject) => c.connect({ timeout: 10_000 }, (e: unknown) => (e ? reject(asError(e)) : resolve())));
  let bytes = 0;
  let maxThrottleMs = 0;
  c.on('event.stats', (s: { message: string }) => (maxThrottleMs = Math.max(maxThrottleMs, statsThrottleMax(s.message))));
  try {
    c.assign([{ topic, partition: 0, offset: 0 }]);
    const end = Date.now() + seconds * 1000;
    while (Date.now() < end) {
      const batch: { value?: Buffer | null }[] = await new Promise((resolve, reject) =>
        c.consume(1000, (e: unknown, m: { value?: Buffer | null }[]) => (e ? reject(asError(e)) : resolve(m))),
      );
      if (Date.now() <= end) for (const m of batch) bytes += m.value?.length ?? 0;
    }
  } finally {
    await new Promise<void>((resolve) => c.disconnect(() => resolve()));
  }
  return { bytes, seconds, maxThrottleMs };
}
