/**
 * One round of Fetch for a set of partition positions, one request per leader, decoded into
 * records: batches of any format and codec, control batches skipped, aborted transactions dropped
 * under read_committed (Kafka's consumer algorithm over the response's aborted-transaction list).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { FetchRequest, FetchResponse, FetchResponsePartitionData } from '../../protocol/generated/fetch.js';
import {
  ControlRecordType,
  logEntries,
  readControlRecordKey,
  type Record,
  type RecordBatch,
  type RecordHeader,
} from '../../protocol/records/index.js';
import type { KafkaClient } from './client.js';
import type { BrokerConnection } from './connection.js';
import { ZERO_UUID } from './metadata.js';
import { byLeader, type TopicPartition } from './offsets.js';

export interface FetchPosition extends TopicPartition {
  offset: bigint;
}

export interface FetchedRecord extends TopicPartition {
  offset: bigint;
  timestamp: bigint;
  /** 0 CreateTime, 1 LogAppendTime, -1 none (magic 0) */
  timestampType: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
  leaderEpoch: number;
}

export interface PartitionFetch extends TopicPartition {
  errorCode: number;
  /** the broker that answered, for error messages */
  broker: string;
  records: FetchedRecord[];
  /** where the next fetch starts (past control and aborted batches too) */
  nextOffset: bigint;
  highWatermark: bigint;
  lastStableOffset: bigint;
  logStartOffset: bigint;
  /** the response held only part of an entry bigger than partitionMaxBytes */
  tooSmall: boolean;
}

export interface FetchOptions {
  maxWaitMs: number;
  /** 0 read_uncommitted, 1 read_committed */
  isolationLevel: number;
  partitionMaxBytes: number;
  maxBytes?: number;
  /** cap on decompressed bytes per batch */
  maxDecompressed?: number;
  /** refresh metadata before routing (after a leader error) */
  refresh?: boolean;
}

function fetchBody(v: number, items: readonly FetchPosition[], ids: ReadonlyMap<string, string>, o: FetchOptions): FetchRequest {
  const topics = new Map<string, FetchPosition[]>();
  for (const p of items) topics.set(p.topic, [...(topics.get(p.topic) ?? []), p]);
  const body: FetchRequest = {
    maxWaitMs: o.maxWaitMs,
    minBytes: 1,
    topics: [...topics].map(([topic, ps]) => ({
      ...(v >= 13 ? { topicId: ids.get(topic) ?? ZERO_UUID } : { topic }),
      partitions: ps.map((p) => ({ partition: p.partition, fetchOffset: p.offset, partitionMaxBytes: o.partitionMaxBytes })),
    })),
  };
  if (v >= 3) body.maxBytes = o.maxBytes ?? 64 << 20;
  if (v >= 4) body.isolationLevel = o.isolationLevel;
  return body;
}

/** A record of a v2 batch as a FetchedRecord. */
export function batchRecord(topic: string, partition: number, b: RecordBatch, r: Record): FetchedRecord {
  return {
    topic,
    partition,
    offset: r.offset,
    timestamp: r.timestamp,
    timestampType: b.timestampType,
    key: r.key,
    value: r.value,
    headers: r.headers,
    leaderEpoch: b.partitionLeaderEpoch,
  };
}

/** Decodes one partition's records from `position` on. */
export function decodePartition(
  topic: string,
  data: FetchResponsePartitionData,
  position: bigint,
  opts: { isolationLevel: number; maxDecompressed: number; partitionMaxBytes: number },
): Pick<PartitionFetch, 'records' | 'nextOffset' | 'tooSmall'> {
  const records: FetchedRecord[] = [];
  let next = position;
  let tooSmall = false;
  const buf = data.records ?? Buffer.alloc(0);
  const aborted = [...(data.abortedTransactions ?? [])].sort((a, b) => Number((a.firstOffset ?? 0n) - (b.firstOffset ?? 0n)));
  const activeAborted = new Set<bigint>();
  const partition = data.partitionIndex;
  for (const e of logEntries(buf)) {
    if (e.kind === 'partial') {
      if (records.length === 0 && next === position && (e.partial.declaredSize ?? 0) > opts.partitionMaxBytes) tooSmall = true;
      break;
    }
    if (e.kind === 'message') {
      for (const r of e.message.records({ maxOutput: opts.maxDecompressed, checkCrcs: true })) {
        if (r.offset < position) continue;
        records.push({
          topic,
          partition,
          offset: r.offset,
          timestamp: r.timestamp,
          timestampType: e.message.magic === 0 ? -1 : e.message.timestampType,
          key: r.key,
          value: r.value,
          headers: [],
          leaderEpoch: -1,
        });
        next = r.offset + 1n;
      }
      continue;
    }
    const b = e.batch;
    if (b.lastOffset < position) continue;
    if (opts.isolationLevel === 1) {
      while (aborted.length > 0 && (aborted[0]?.firstOffset ?? 0n) <= b.lastOffset) activeAborted.add(aborted.shift()?.producerId ?? -1n);
    }
    if (b.isControl) {
      if (opts.isolationLevel === 1) {
        const rec = b.records({ maxOutput: opts.maxDecompressed })[0];
        if (rec !== undefined) {
          const k = readControlRecordKey(rec.key);
          if (k.type === ControlRecordType.ABORT) activeAborted.delete(b.producerId);
        }
      }
      next = b.nextOffset;
      continue;
    }
    if (opts.isolationLevel === 1 && b.isTransactional && activeAborted.has(b.producerId)) {
      next = b.nextOffset;
      continue;
    }
    b.validate();
    for (const r of b.records({ maxOutput: opts.maxDecompressed }))
      if (r.offset >= position) records.push(batchRecord(topic, partition, b, r));
    next = b.nextOffset;
  }
  return { records, nextOffset: next, tooSmall };
}

async function fetchFrom(
  c: BrokerConnection,
  client: KafkaClient,
  items: readonly FetchPosition[],
  o: FetchOptions,
): Promise<PartitionFetch[]> {
  const ids = new Map<string, string>();
  for (const t of new Set(items.map((i) => i.topic))) ids.set(t, (await client.topic(t)).topicId);
  const haveIds = [...ids.values()].every((id) => id !== ZERO_UUID);
  const res = await c.request<FetchResponse>(ApiKey.Fetch, (v) => fetchBody(v, items, ids, o), {
    minVersion: o.isolationLevel === 1 ? 4 : 0,
    maxVersion: haveIds ? 17 : 12,
    timeoutMs: client.options.requestTimeoutMs + o.maxWaitMs,
  });
  c.check(res.body.errorCode, ApiKey.Fetch);
  const byId = new Map([...ids].map(([name, id]) => [id, name]));
  const out: PartitionFetch[] = [];
  for (const t of res.body.responses) {
    const topic = res.version >= 13 ? (byId.get(t.topicId ?? ZERO_UUID) ?? '') : (t.topic ?? '');
    for (const p of t.partitions) {
      const pos = items.find((i) => i.topic === topic && i.partition === p.partitionIndex);
      if (pos === undefined) continue;
      const base = {
        topic,
        partition: p.partitionIndex,
        errorCode: p.errorCode,
        broker: c.label,
        highWatermark: p.highWatermark,
        lastStableOffset: p.lastStableOffset ?? -1n,
        logStartOffset: p.logStartOffset ?? -1n,
      };
      if (p.errorCode !== 0) {
        out.push({ ...base, records: [], nextOffset: pos.offset, tooSmall: false });
        continue;
      }
      out.push({
        ...base,
        ...decodePartition(topic, p, pos.offset, {
          isolationLevel: o.isolationLevel,
          maxDecompressed: o.maxDecompressed ?? 256 << 20,
          partitionMaxBytes: o.partitionMaxBytes,
        }),
      });
    }
  }
  return out;
}

/** Fetches every position once (in parallel per leader). */
export async function fetchOnce(client: KafkaClient, positions: readonly FetchPosition[], o: FetchOptions): Promise<PartitionFetch[]> {
  const groups = await byLeader(client, positions, o.refresh === true);
  const parts = await Promise.all([...groups].map(([c, items]) => fetchFrom(c, client, items, o)));
  return parts.flat();
}
