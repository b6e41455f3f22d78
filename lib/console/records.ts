/**
 * Records for the console, through Kafka's own handlers in-process: offsets by time (ListOffsets),
 * reads (Fetch, decoded by the client's decoder) and writes (Produce, acks=all), plus how a key,
 * value or header is shown: the bytes (base64, up to DISPLAY_MAX_BYTES) and the detected encoding
 * (json, text or binary), from which the page renders JSON, text, hex or base64.
 */
import { decodePartition, type FetchedRecord } from '../client/fetcher.js';
import { partitionForKey } from '../client/murmur2.js';
import { fetchHandler } from '../handlers/fetch.js';
import { listOffsetsHandler } from '../handlers/list-offsets.js';
import { produceHandler } from '../handlers/produce.js';
import { recordsBuffer } from '../../protocol/codec/writer.js';
import { buildRecordBatch, type RecordHeader } from '../../protocol/records/index.js';
import type { FilterRecord } from './filter/eval.js';
import { kafkaError, type InprocConnection } from './inproc.js';
import { recordsFrom } from './tail-decode.js';

export const DISPLAY_MAX_BYTES = 256 * 1024;

export type Encoding = 'json' | 'text' | 'binary' | 'null';

export interface ShownBytes {
  encoding: Encoding;
  base64: string | null;
  /** bytes in the record (base64 holds at most DISPLAY_MAX_BYTES of them) */
  size: number;
  truncated: boolean;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The text of `b` when it is valid UTF-8 without control characters other than whitespace; else null. */
export function textOf(b: Buffer | null): string | null {
  if (b === null) return null;
  let s: string;
  try {
    s = utf8.decode(b);
  } catch {
    return null;
  }
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u0008\u000e-\u001f\u007f]/.test(s) ? null : s;
}

export function detect(b: Buffer | null): Encoding {
  if (b === null) return 'null';
  const s = textOf(b);
  if (s === null) return 'binary';
  const t = s.trim();
  if (t.startsWith('{') || t.startsWith('[') || t.startsWith('"')) {
    try {
      JSON.parse(t);
      return 'json';
    } catch {
      return 'text';
    }
  }
  return 'text';
}

export function shown(b: Buffer | null): ShownBytes {
  if (b === null) return { encoding: 'null', base64: null, size: 0, truncated: false };
  const truncated = b.length > DISPLAY_MAX_BYTES;
  return { encoding: detect(b), base64: (truncated ? b.subarray(0, DISPLAY_MAX_BYTES) : b).toString('base64'), size: b.length, truncated };
}

export interface ShownRecord {
  partition: number;
  /** a decimal string, as the console's JSON carries 64-bit integers */
  offset: string;
  timestamp: number;
  timestampType: number;
  key: ShownBytes;
  value: ShownBytes;
  headers: { key: string; value: ShownBytes }[];
}

export function showRecord(r: FetchedRecord): ShownRecord {
  return {
    partition: r.partition,
    offset: r.offset.toString(),
    timestamp: Number(r.timestamp),
    timestampType: r.timestampType,
    key: shown(r.key),
    value: shown(r.value),
    headers: r.headers.map((h) => ({ key: h.key, value: shown(h.value) })),
  };
}

/**
 * showRecord's JSON, without toJson's replacer (no bigint in it), which JSON.stringify would call
 * for every key and value: the live tail writes hundreds a round.
 */
export function recordJson(r: FetchedRecord): string {
  return JSON.stringify(showRecord(r));
}

/** What the filter language and the text search see of a record. */
export function filterView(r: FetchedRecord): FilterRecord {
  const headers = new Map<string, string | null>();
  for (const h of r.headers)
    if (!headers.has(h.key)) headers.set(h.key, h.value === null ? null : (textOf(h.value) ?? h.value.toString('base64')));
  const text = (b: Buffer | null) => (b === null ? null : (textOf(b) ?? b.toString('base64')));
  return {
    key: text(r.key),
    value: text(r.value),
    headers,
    partition: r.partition,
    offset: Number(r.offset),
    timestamp: Number(r.timestamp),
  };
}

/** Case-insensitive text search over key, value, header names and header values. */
export function textMatch(v: FilterRecord, needle: string): boolean {
  const n = needle.toLowerCase();
  if (v.key?.toLowerCase().includes(n) === true || v.value?.toLowerCase().includes(n) === true) return true;
  for (const [k, h] of v.headers) if (k.toLowerCase().includes(n) || h?.toLowerCase().includes(n) === true) return true;
  return false;
}

/** The first offset with a timestamp >= `timestamp` per partition (-1: none, the log end). */
export async function offsetsForTime(
  kafka: InprocConnection,
  topic: string,
  partitions: readonly number[],
  timestamp: bigint,
): Promise<Map<number, bigint>> {
  const res = await kafka.call(listOffsetsHandler, 7, {
    replicaId: -1,
    isolationLevel: 0,
    topics: [{ name: topic, partitions: partitions.map((p) => ({ partitionIndex: p, currentLeaderEpoch: -1, timestamp })) }],
  });
  const out = new Map<number, bigint>();
  for (const p of res.topics[0]?.partitions ?? []) {
    if (p.errorCode !== 0) throw kafkaError(p.errorCode, null, `cannot look up offsets of ${topic}-${p.partitionIndex}`);
    out.set(p.partitionIndex, p.offset ?? -1n);
  }
  return out;
}

export interface PartitionRead {
  partition: number;
  records: FetchedRecord[];
  nextOffset: bigint;
  highWatermark: bigint;
  logStartOffset: bigint;
}

/**
 * One Fetch (read_uncommitted, up to the high watermark) of `positions`; `maxWaitMs` > 0 waits in
 * the purgatory for data as a consumer's long poll does (the live tail). `lean`: the records before
 * each position are passed over undecoded and CRCs are not computed (the live tail: tail-decode.ts).
 */
export async function fetchRecords(
  kafka: InprocConnection,
  topic: string,
  positions: ReadonlyMap<number, bigint>,
  opts: { maxWaitMs: number; partitionMaxBytes: number; lean?: boolean },
): Promise<PartitionRead[]> {
  const res = await kafka.call(fetchHandler, 12, {
    replicaId: -1,
    maxWaitMs: opts.maxWaitMs,
    minBytes: opts.maxWaitMs > 0 ? 1 : 0,
    maxBytes: 64 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      {
        topic,
        partitions: [...positions].map(([partition, fetchOffset]) => ({
          partition,
          currentLeaderEpoch: -1,
          fetchOffset,
          lastFetchedEpoch: -1,
          logStartOffset: -1n,
          partitionMaxBytes: opts.partitionMaxBytes,
        })),
      },
    ],
    forgottenTopicsData: [],
    rackId: '',
  });
  if (res.errorCode !== undefined && res.errorCode !== 0) throw kafkaError(res.errorCode, null, `cannot read ${topic}`);
  const out: PartitionRead[] = [];
  for (const t of res.responses) {
    for (const p of t.partitions) {
      const at = positions.get(p.partitionIndex) ?? 0n;
      if (p.errorCode !== 0) throw kafkaError(p.errorCode, null, `cannot read ${topic}-${p.partitionIndex}`);
      // in-process: the handler's answer carries the stored slices (zero-copy), joined here for decoding
      const whole = { ...p, records: p.records === null ? null : recordsBuffer(p.records) };
      const d =
        opts.lean === true
          ? recordsFrom(topic, whole, at, opts.partitionMaxBytes)
          : decodePartition(topic, whole, at, { isolationLevel: 0, maxDecompressed: 256 << 20, partitionMaxBytes: opts.partitionMaxBytes });
      out.push({
        partition: p.partitionIndex,
        records: d.records,
        nextOffset: d.nextOffset,
        highWatermark: p.highWatermark,
        logStartOffset: p.logStartOffset ?? -1n,
      });
    }
  }
  return out;
}

export interface ProduceInput {
  partition: number | null;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
}

let roundRobin = 0;

/** Appends one record with acks=all; its partition: the given one, the key's (murmur2, as Java's producer), or the next in turn. */
export async function produceRecord(
  kafka: InprocConnection,
  topic: string,
  partitions: number,
  r: ProduceInput,
): Promise<{ partition: number; offset: bigint }> {
  const partition = r.partition ?? (r.key !== null ? partitionForKey(r.key, partitions) : roundRobin++ % partitions);
  const batch = buildRecordBatch([{ key: r.key, value: r.value, timestamp: BigInt(Date.now()), headers: r.headers }]);
  const res = await kafka.call(produceHandler, 9, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 30_000,
    topicData: [{ name: topic, partitionData: [{ index: partition, records: batch }] }],
  });
  const p = res.responses[0]?.partitionResponses[0];
  if (p === undefined) throw new Error('Produce answered no partition');
  if (p.errorCode !== 0) throw kafkaError(p.errorCode, p.errorMessage ?? null, `cannot produce to ${topic}-${partition}`);
  return { partition, offset: p.baseOffset };
}
