/**
 * Producer-state snapshot files: `<offset, 20 digits>.snapshot` in the partition directory, the state
 * as of that log offset, written at segment roll and at clean shutdown (tmp → fsync → rename).
 * Recovery loads the newest valid one at or below the log end and replays the log from there.
 *
 * Layout (gregor's; Kafka's version 1 keeps only the last batch per producer, so its retries after a
 * restart are deduplicated for one batch only): int16 version (2), uint32 CRC-32C of what follows,
 * int32 producer count, then per producer: int64 producerId, int16 epoch, int32 coordinatorEpoch,
 * int64 lastTimestamp, int64 currentTxnFirstOffset (-1: none), int8 batch count, and per batch
 * int32 firstSeq, int32 lastSeq, int64 firstOffset, int64 lastOffset, int64 timestamp.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { crc32c } from '../../protocol/records/native.js';
import { writeFileAtomic } from '../log/checkpoint.js';
import { segmentFileName } from '../log/segment.js';
import type { BatchMetadata, ProducerStateEntry } from './producer-state.js';

export const SNAPSHOT_SUFFIX = '.snapshot';
const VERSION = 2;
const HEADER = 2 + 4 + 4;
const ENTRY = 8 + 2 + 4 + 8 + 8 + 1;
const BATCH = 4 + 4 + 8 + 8 + 8;

export function serializeSnapshot(entries: Iterable<ProducerStateEntry>): Buffer {
  const list = [...entries];
  let size = HEADER;
  for (const e of list) size += ENTRY + BATCH * e.batches.length;
  const b = Buffer.alloc(size);
  b.writeInt16BE(VERSION, 0);
  b.writeInt32BE(list.length, 6);
  let p = HEADER;
  for (const e of list) {
    b.writeBigInt64BE(e.producerId, p);
    b.writeInt16BE(e.producerEpoch, p + 8);
    b.writeInt32BE(e.coordinatorEpoch, p + 10);
    b.writeBigInt64BE(e.lastTimestamp, p + 14);
    b.writeBigInt64BE(e.currentTxnFirstOffset ?? -1n, p + 22);
    b.writeInt8(e.batches.length, p + 30);
    p += ENTRY;
    for (const m of e.batches) {
      b.writeInt32BE(m.firstSeq, p);
      b.writeInt32BE(m.lastSeq, p + 4);
      b.writeBigInt64BE(m.firstOffset, p + 8);
      b.writeBigInt64BE(m.lastOffset, p + 16);
      b.writeBigInt64BE(m.timestamp, p + 24);
      p += BATCH;
    }
  }
  b.writeUInt32BE(crc32c(b.subarray(6)) >>> 0, 2);
  return b;
}

/** The entries of a snapshot file; null when it is not one (wrong version, CRC or size). */
export function parseSnapshot(b: Buffer): ProducerStateEntry[] | null {
  if (b.length < HEADER || b.readInt16BE(0) !== VERSION) return null;
  if (b.readUInt32BE(2) !== crc32c(b.subarray(6)) >>> 0) return null;
  const count = b.readInt32BE(6);
  const out: ProducerStateEntry[] = [];
  let p = HEADER;
  for (let i = 0; i < count; i++) {
    if (p + ENTRY > b.length) return null;
    const n = b.readInt8(p + 30);
    const txn = b.readBigInt64BE(p + 22);
    const e: ProducerStateEntry = {
      producerId: b.readBigInt64BE(p),
      producerEpoch: b.readInt16BE(p + 8),
      coordinatorEpoch: b.readInt32BE(p + 10),
      lastTimestamp: b.readBigInt64BE(p + 14),
      currentTxnFirstOffset: txn < 0n ? null : txn,
      batches: [],
    };
    p += ENTRY;
    if (n < 0 || p + n * BATCH > b.length) return null;
    for (let k = 0; k < n; k++) {
      const m: BatchMetadata = {
        firstSeq: b.readInt32BE(p),
        lastSeq: b.readInt32BE(p + 4),
        firstOffset: b.readBigInt64BE(p + 8),
        lastOffset: b.readBigInt64BE(p + 16),
        timestamp: b.readBigInt64BE(p + 24),
      };
      e.batches.push(m);
      p += BATCH;
    }
    out.push(e);
  }
  return p === b.length ? out : null;
}

export function snapshotPath(dir: string, offset: bigint): string {
  return path.join(dir, segmentFileName(offset, SNAPSHOT_SUFFIX));
}

export function writeSnapshot(dir: string, offset: bigint, data: Buffer): Promise<void> {
  return writeFileAtomic(snapshotPath(dir, offset), data);
}

export async function deleteSnapshot(dir: string, offset: bigint): Promise<void> {
  await fsp.rm(snapshotPath(dir, offset), { force: true });
}
