/** ListOffsets routed to each partition's leader: earliest, latest, max-timestamp or by time. */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ListOffsetsRequest, ListOffsetsResponse } from '../../protocol/generated/list-offsets.js';
import type { KafkaClient } from './client.js';
import type { BrokerConnection } from './connection.js';
import { ClientError, kafkaError } from './errors.js';

/** Special ListOffsets timestamps (Kafka's ListOffsetsRequest constants). */
export const OffsetTime = {
  LATEST: -1n,
  EARLIEST: -2n,
  MAX_TIMESTAMP: -3n,
} as const;

export interface TopicPartition {
  topic: string;
  partition: number;
}

export interface OffsetQuery extends TopicPartition {
  /** -1 latest, -2 earliest, -3 the record with the largest timestamp, else a timestamp in ms */
  timestamp: bigint;
}

export interface OffsetResult extends TopicPartition {
  /** -1 when no record has a timestamp at or after the one asked for */
  offset: bigint;
  /** the record's timestamp for time queries; -1 otherwise */
  timestamp: bigint;
}

export function tpKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

/** Groups partitions by their leader's connection. */
export async function byLeader<T extends TopicPartition>(
  client: KafkaClient,
  items: readonly T[],
  refresh = false,
): Promise<Map<BrokerConnection, T[]>> {
  const out = new Map<BrokerConnection, T[]>();
  const refreshed = new Set<string>();
  for (const it of items) {
    const fresh = refresh && !refreshed.has(it.topic);
    if (fresh) refreshed.add(it.topic);
    const c = await client.leader(it.topic, it.partition, fresh);
    const list = out.get(c);
    if (list === undefined) out.set(c, [it]);
    else list.push(it);
  }
  return out;
}

const LEADER_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.LEADER_NOT_AVAILABLE,
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCode.FENCED_LEADER_EPOCH,
  ErrorCode.UNKNOWN_LEADER_EPOCH,
  ErrorCode.OFFSET_NOT_AVAILABLE,
  ErrorCode.REPLICA_NOT_AVAILABLE,
]);

/** Errors after which asking again (with fresh metadata) may work. */
export function isLeaderError(code: number): boolean {
  return LEADER_ERRORS.has(code);
}

function listOffsetsBody(v: number, items: readonly OffsetQuery[], isolationLevel: number, timeoutMs: number): ListOffsetsRequest {
  const topics = new Map<string, OffsetQuery[]>();
  for (const q of items) topics.set(q.topic, [...(topics.get(q.topic) ?? []), q]);
  const body: ListOffsetsRequest = {
    replicaId: -1,
    topics: [...topics].map(([name, qs]) => ({
      name,
      partitions: qs.map((q) =>
        v === 0
          ? { partitionIndex: q.partition, timestamp: q.timestamp, maxNumOffsets: 1 }
          : { partitionIndex: q.partition, timestamp: q.timestamp },
      ),
    })),
  };
  if (v >= 2) body.isolationLevel = isolationLevel;
  if (v >= 10) body.timeoutMs = timeoutMs;
  return body;
}

/** Offsets for each query, in query order. Retries leader moves until the request timeout. */
export async function listOffsets(
  client: KafkaClient,
  queries: readonly OffsetQuery[],
  opts: { isolationLevel?: number } = {},
): Promise<OffsetResult[]> {
  const results = new Map<string, OffsetResult>();
  let todo = [...queries];
  const deadline = Date.now() + client.options.requestTimeoutMs;
  for (let attempt = 0; todo.length > 0; attempt++) {
    const groups = await byLeader(client, todo, attempt > 0);
    const retry: OffsetQuery[] = [];
    // assigned inside the per-partition callbacks below, which control-flow narrowing does not see
    let lastError = null as ClientError | null;
    await Promise.all(
      [...groups].map(async ([c, items]) => {
        const needsV7 = items.some((q) => q.timestamp === OffsetTime.MAX_TIMESTAMP);
        const minVersion = needsV7 ? 7 : items.some((q) => q.timestamp >= 0n) ? 1 : 0;
        const res = await c.request<ListOffsetsResponse>(
          ApiKey.ListOffsets,
          (v) => listOffsetsBody(v, items, opts.isolationLevel ?? 0, client.options.requestTimeoutMs),
          { minVersion },
        );
        for (const t of res.body.topics) {
          for (const p of t.partitions) {
            const q = items.find((x) => x.topic === t.name && x.partition === p.partitionIndex);
            if (q === undefined) continue;
            if (p.errorCode !== 0) {
              const err = kafkaError(p.errorCode, { api: 'ListOffsets', broker: c.label, subject: `${t.name}-${p.partitionIndex}` });
              if (isLeaderError(p.errorCode) && Date.now() < deadline) {
                retry.push(q);
                lastError = err;
                continue;
              }
              throw err;
            }
            const offset = res.version === 0 ? (p.oldStyleOffsets?.[0] ?? -1n) : (p.offset ?? -1n);
            results.set(tpKey(q.topic, q.partition), { topic: q.topic, partition: q.partition, offset, timestamp: p.timestamp ?? -1n });
          }
        }
      }),
    );
    if (retry.length > 0 && Date.now() >= deadline && lastError !== null) throw lastError;
    if (retry.length > 0) await new Promise((r) => setTimeout(r, Math.min(100 * (attempt + 1), 1000)));
    todo = retry;
  }
  return queries.map((q) => {
    const r = results.get(tpKey(q.topic, q.partition));
    if (r === undefined) throw new Error(`ListOffsets answered nothing for ${q.topic}-${q.partition}`);
    return r;
  });
}
