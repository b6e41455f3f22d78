/**
 * Phase 2 of an append (Kafka's LogValidator): offsets, leader epochs and timestamps written into
 * records that validator.ts accepted. Mutates the request bytes in place and only fails on a broken
 * codec.
 */
import {
  LOG_OVERHEAD,
  LegacyMessage,
  MESSAGE_TIMESTAMP_TYPE,
  MessageField,
  TimestampType,
  compress,
  encodeMessage,
} from '../../protocol/records/index.js';
import { crc32Range } from '../../protocol/records/crc32.js';
import { i32, TWO_32, w32 } from './be32.js';
import type { LogConfig } from './log-config.js';
import type { ValidatedEntry, ValidatedRecords } from './validator.js';

export interface AssignedEntry {
  buf: Buffer;
  magic: 0 | 1 | 2;
  firstOffset: bigint;
  lastOffset: bigint;
  /** Max timestamp as stored (LogAppendTime applied). */
  maxTimestamp: bigint;
  /** v2 only; -1 for magic 0/1. */
  partitionLeaderEpoch: number;
  /**
   * Set for a run of uncompressed magic 0/1 messages (offsets firstOffset..lastOffset, one per
   * message, in order): the offset of the first message with maxTimestamp.
   */
  runOffsetOfMaxTimestamp?: bigint;
}

/** Rewrites a legacy message's timestamp and type (magic 1), recomputing its CRC; no-op when unchanged. */
function setLegacyTimestamp(m: LegacyMessage, type: TimestampType, ts: bigint): void {
  if (m.magic !== 1) return;
  if (type === TimestampType.LOG_APPEND_TIME) {
    m.setLogAppendTime(ts);
    return;
  }
  if (m.timestampType === TimestampType.CREATE_TIME && m.timestamp === ts) return;
  m.buf.writeInt8(m.attributes & ~MESSAGE_TIMESTAMP_TYPE, m.start + MessageField.ATTRIBUTES);
  m.buf.writeBigInt64BE(ts, m.start + MessageField.TIMESTAMP);
  m.buf.writeUInt32BE(m.computeCrc(), m.start + MessageField.CRC);
}

/**
 * Phase 2: assigns offsets from `firstOffset` in order and applies the leader epoch and
 * LogAppendTime. Mutates the request bytes in place; rebuilds only wrappers listed in `inner`.
 */
export function assignOffsets(
  v: ValidatedRecords,
  firstOffset: bigint,
  leaderEpoch: number,
  config: LogConfig,
  now: number,
): AssignedEntry[] {
  const logAppend = config.messageTimestampType === 'LogAppendTime';
  const nowTs = BigInt(now);
  const out: AssignedEntry[] = [];
  let next = firstOffset;
  for (const e of v.entries) {
    const first = next;
    const last = next + BigInt(e.count - 1);
    next = last + 1n;
    if (e.batch !== undefined) {
      const b = e.batch;
      b.setBaseOffset(first);
      b.setPartitionLeaderEpoch(leaderEpoch);
      if (logAppend) b.setLogAppendTime(nowTs);
      else if (e.realMaxTimestamp !== undefined) b.setMaxTimestamp(TimestampType.CREATE_TIME, e.realMaxTimestamp);
      out.push({
        buf: e.buf,
        magic: 2,
        firstOffset: first,
        lastOffset: last,
        maxTimestamp: b.maxTimestamp,
        partitionLeaderEpoch: leaderEpoch,
      });
      continue;
    }
    if (e.kind === 'run') {
      out.push(assignRun(e, first, last, logAppend, nowTs));
      continue;
    }
    const m = e.message;
    if (m === undefined) throw new Error('validated entry without a batch or message');
    let buf = e.buf;
    let stored: LegacyMessage = m;
    if (e.inner !== undefined) {
      // inner offsets: absolute for magic 0, 0..n-1 for magic 1; the set is recompressed
      e.inner.forEach((im, i) => im.setOffset(m.magic === 0 ? first + BigInt(i) : BigInt(i)));
      const data = e.inner[0]?.buf ?? Buffer.alloc(0);
      const packed = compress(m.compression, data, { magic: m.magic });
      buf = encodeMessage(last, m.magic, m.attributes, m.timestamp, m.key, packed);
      stored = LegacyMessage.at(buf, 0);
    }
    stored.setOffset(e.kind === 'wrapper' ? last : first);
    let maxTs = e.maxTimestamp;
    if (m.magic === 1) {
      if (logAppend) {
        setLegacyTimestamp(stored, TimestampType.LOG_APPEND_TIME, nowTs);
        maxTs = nowTs;
      } else if (e.kind === 'wrapper' && stored.timestampType === TimestampType.CREATE_TIME) {
        setLegacyTimestamp(stored, TimestampType.CREATE_TIME, e.maxTimestamp);
      } else if (stored.timestampType === TimestampType.LOG_APPEND_TIME) {
        maxTs = stored.timestamp;
      }
    }
    out.push({ buf, magic: m.magic, firstOffset: first, lastOffset: last, maxTimestamp: maxTs, partitionLeaderEpoch: -1 });
  }
  return out;
}

/**
 * Offsets of a run of uncompressed messages, written in place (the offset field is outside the
 * CRC); under LogAppendTime magic 1 messages also get the time and a new CRC, as Kafka does.
 */
function assignRun(e: ValidatedEntry, first: bigint, last: bigint, logAppend: boolean, nowTs: bigint): AssignedEntry {
  const buf = e.buf;
  const stamp = logAppend && e.magic === 1;
  const safe = last < 9007199254740992n;
  const firstNum = safe ? Number(first) : 0;
  const stampHi = Number(BigInt.asIntN(32, nowTs >> 32n));
  const stampLo = Number(BigInt.asUintN(32, nowTs));
  let p = 0;
  for (let i = 0; p < buf.length; i++) {
    if (safe) {
      const off = firstNum + i;
      const hi = Math.floor(off / TWO_32);
      w32(buf, p, hi);
      w32(buf, p + 4, off - hi * TWO_32);
    } else buf.writeBigInt64BE(first + BigInt(i), p);
    const end = p + LOG_OVERHEAD + i32(buf, p + MessageField.MESSAGE_SIZE);
    if (stamp) {
      const attributes = buf[p + MessageField.ATTRIBUTES] as number;
      const at = p + MessageField.TIMESTAMP;
      if ((attributes & MESSAGE_TIMESTAMP_TYPE) === 0 || buf.readInt32BE(at) !== stampHi || buf.readUInt32BE(at + 4) !== stampLo) {
        buf[p + MessageField.ATTRIBUTES] = attributes | MESSAGE_TIMESTAMP_TYPE;
        buf.writeInt32BE(stampHi, at);
        buf.writeUInt32BE(stampLo, at + 4);
        buf.writeUInt32BE(crc32Range(buf, p + MessageField.MAGIC, end), p + MessageField.CRC);
      }
    }
    p = end;
  }
  const maxTimestamp = stamp ? nowTs : e.maxTimestamp;
  const runOffsetOfMaxTimestamp = stamp ? first : first + BigInt(e.maxTimestampIndex ?? 0);
  return { buf, magic: e.magic, firstOffset: first, lastOffset: last, maxTimestamp, partitionLeaderEpoch: -1, runOffsetOfMaxTimestamp };
}
