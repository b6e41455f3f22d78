import { expect } from 'chai';
import { buildRecordBatch } from '../../../../protocol/records/index.js';
import { decodeRecords } from '../../../../protocol/records/index.js';
import type { Record } from '../../../../protocol/records/index.js';
import { LogCleaner } from '../../../../lib/log/cleaner/cleaner.js';
import type { PartitionLog } from '../../../../lib/log/partition-log.js';
import { T0, captureLog, readAll } from '../helpers.js';

/** An inline cleaner (threads 0) over the given logs of `dataDir`. */
export function inlineCleaner(
  dataDir: string,
  logs: PartitionLog[],
  over: { dedupeBufferSize?: number; threads?: number; ioMaxBytesPerSecond?: number } = {},
) {
  const cap = captureLog();
  const cleaner = new LogCleaner(dataDir, () => logs, {
    threads: over.threads ?? 0,
    dedupeBufferSize: over.dedupeBufferSize ?? 1 << 20,
    ioMaxBytesPerSecond: over.ioMaxBytesPerSecond ?? Number.MAX_VALUE,
    backoffMs: 15000,
    logger: cap.logger,
  });
  return { cleaner, lines: cap.lines };
}

/** Every record from the log start, decoded (control batches left out). */
export async function allRecords(log: PartitionLog): Promise<Record[]> {
  const entries = await readAll(log);
  return decodeRecords(Buffer.concat(entries), { maxOutput: 1 << 26, skipControl: true }).records;
}

/** key → [value, offset] of the latest record per key, computed from `recs` the way a consumer would. */
export function latest(recs: readonly Record[]): Map<string, { value: string | null; offset: bigint }> {
  const m = new Map<string, { value: string | null; offset: bigint }>();
  for (const r of recs) m.set(String(r.key), { value: r.value === null ? null : String(r.value), offset: r.offset });
  return m;
}

/** Checks offsets strictly increase and each key appears once. */
export function expectCompacted(recs: readonly Record[]): void {
  const keys = new Set<string>();
  let prev = -1n;
  for (const r of recs) {
    expect(r.offset > prev, `offset ${r.offset} after ${prev}`).to.equal(true);
    prev = r.offset;
    expect(keys.has(String(r.key)), `key ${String(r.key)} twice`).to.equal(false);
    keys.add(String(r.key));
  }
}

/** Waits until the log's rolls finished their work (the cleaner leaves a log alone until then). */
export async function settled(log: PartitionLog): Promise<void> {
  await log.flush();
  for (let i = 0; i < 500 && log.openLog?.swappable === false; i++) await new Promise((r) => setTimeout(r, 2));
}

/** One v2 batch of `keys` with values `<key>=<round>` and timestamps T0 + round*100 + i (a null key: a keyless record). */
export function batch(keys: readonly (string | null)[], round: number, opts: Parameters<typeof buildRecordBatch>[1] = {}): Buffer {
  return buildRecordBatch(
    keys.map((k, i) => ({
      key: k === null ? null : Buffer.from(k),
      value: Buffer.from(`${k}=${round}`),
      timestamp: T0 + BigInt(round * 100 + i),
    })),
    opts,
  );
}
