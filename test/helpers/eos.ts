/**
 * Helpers for the exactly-once tests (idempotence, transactions): read partitions back by assignment
 * through librdkafka with a chosen isolation level (to the end, by partition EOF), count requests of
 * one API on the broker, fetch committed offsets raw, wait for conditions, and check per-partition sequences.
 */
import { expect } from 'chai';
import type { FaultHandle, FaultRequestInfo } from '../../lib/network/faults.js';
import type { TestBroker } from './broker.js';
import { asError } from '../../lib/as-error.js';
import type { RawClient } from './raw-client.js';

type Any = any;

export interface ReadRecord {
  partition: number;
  offset: number;
  key: string | null;
  value: string;
}

export async function until(
  cond: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string | (() => string),
  everyMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * `p`, or an error naming `what` when it has not settled within `ms`: a client call that could hang
 * (a send, a disconnect) fails the test with a clear message instead of running into mocha's timeout.
 */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const started = Date.now();
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done after ${Date.now() - started} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

let readers = 0;

/**
 * Reads every partition of `topic` from offset 0 to its end (librdkafka's partition EOF: the high
 * watermark for read_uncommitted, the last stable offset for read_committed) with a node-rdkafka-style
 * KafkaConsumer, by assignment (no group membership, nothing committed). Returns the records per
 * partition in the order delivered.
 */
export async function readAllRdkafka(
  ck: Any,
  bootstrap: string,
  topic: string,
  partitions: number,
  isolation: 'read_committed' | 'read_uncommitted',
  timeoutMs = 60_000,
): Promise<ReadRecord[][]> {
  const c = new ck.KafkaConsumer(
    {
      'bootstrap.servers': bootstrap,
      'group.id': `eos-reader-${++readers}-${process.pid}`,
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'enable.partition.eof': true,
      'isolation.level': isolation,
      'fetch.wait.max.ms': 50,
      log_level: 0,
    },
    {},
  );
  await new Promise<void>((resolve, reject) => c.connect({ timeout: 10_000 }, (e: Any) => (e ? reject(asError(e)) : resolve())));
  try {
    const parts: ReadRecord[][] = Array.from({ length: partitions }, () => []);
    const eof = new Set<number>();
    c.on('partition.eof', (e: Any) => {
      if (e.topic === topic) eof.add(e.partition as number);
    });
    c.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition, offset: 0 })));
    const deadline = Date.now() + timeoutMs;
    while (eof.size < partitions) {
      if (Date.now() > deadline)
        throw new Error(
          `reading ${topic} (${isolation}): no EOF after ${timeoutMs} ms on partitions ${[...Array(partitions).keys()].filter((p) => !eof.has(p)).join(',')}`,
        );
      const batch: Any[] = await new Promise((resolve, reject) =>
        c.consume(10_000, (e: Any, m: Any[]) => (e ? reject(asError(e)) : resolve(m))),
      );
      for (const m of batch) {
        parts[m.partition]?.push({
          partition: m.partition,
          offset: m.offset,
          key: m.key === undefined || m.key === null ? null : String(m.key),
          value: String(m.value),
        });
      }
    }
    return parts;
  } finally {
    await within(
      new Promise<void>((resolve) => c.disconnect(() => resolve())),
      30_000,
      `librdkafka reader of ${topic} (${isolation}): disconnect`,
    );
  }
}

/**
 * Calls `see` with every request of one API the broker decodes, without changing anything: a fault
 * rule whose `match` observes and then declines, so no fault is ever applied and later rules for the
 * same API still apply. Remove the handle when done.
 */
export function observeRequests(b: TestBroker, apiKey: number, see: (req: Any, info: FaultRequestInfo) => void): FaultHandle {
  return b.broker.faults.add({
    apiKey,
    action: 'delay',
    delayMs: 0,
    match: (req, info) => {
      see(req, info);
      return false;
    },
  });
}

export interface OffsetFetchPartition {
  partitionIndex: number;
  committedOffset: bigint;
  errorCode: number;
}

/** OffsetFetch v7 of one group's partitions of one topic, with or without require_stable. */
export async function rawOffsetFetch(
  c: RawClient,
  groupId: string,
  topic: string,
  partitions: number[],
  requireStable: boolean,
): Promise<{ errorCode: number; partitions: OffsetFetchPartition[] }> {
  const res = await c.request<{ errorCode: number; topics: { name: string; partitions: OffsetFetchPartition[] }[] }>(9, 7, {
    groupId,
    topics: [{ name: topic, partitionIndexes: partitions }],
    requireStable,
  });
  return { errorCode: res.errorCode, partitions: res.topics.flatMap((t) => t.partitions) };
}

/**
 * Checks that `got` is exactly `want` (each in order): on a mismatch reports the first differing
 * index, and how many values are duplicated or missing, instead of dumping 100,000 entries.
 */
export function expectSequence(got: readonly string[], want: readonly string[], where: string): void {
  if (got.length === want.length && got.every((v, i) => v === want[i])) return;
  const counts = new Map<string, number>();
  for (const v of got) counts.set(v, (counts.get(v) ?? 0) + 1);
  const dups = [...counts].filter(([, n]) => n > 1);
  const wanted = new Set(want);
  const missing = want.filter((v) => !counts.has(v));
  const extra = got.filter((v) => !wanted.has(v));
  const i = got.findIndex((v, j) => v !== want[j]);
  expect.fail(
    `${where}: ${got.length} values, expected ${want.length}; first difference at index ${i < 0 ? Math.min(got.length, want.length) : i} ` +
      `(got ${String(got[i])}, expected ${String(want[i])}); ${dups.length} duplicated (e.g. ${dups
        .slice(0, 3)
        .map(([v, n]) => `${v}×${n}`)
        .join(' ')}), ` +
      `${missing.length} missing (e.g. ${missing.slice(0, 3).join(' ')}), ${extra.length} unexpected (e.g. ${extra.slice(0, 3).join(' ')})`,
  );
}

/** Offsets of a partition read back must be strictly increasing (and, without transactions, 0..n-1). */
export function expectOffsets(recs: readonly ReadRecord[], where: string, contiguous: boolean): void {
  for (let i = 0; i < recs.length; i++) {
    const o = recs[i]!.offset;
    if (contiguous) {
      if (o !== i) expect.fail(`${where}: record ${i} at offset ${o}`);
    } else if (i > 0 && o <= recs[i - 1]!.offset) expect.fail(`${where}: offset ${o} after ${recs[i - 1]!.offset}`);
  }
}
