/**
 * Append validation and offset assignment (Kafka's LogValidator, header-level by default).
 * Phase 1 (`validateRecords`) checks everything and never mutates; phase 2 (`assignOffsets`) rewrites
 * offsets, leader epochs and timestamps in place and only fails on a broken codec.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { GregorErrorCode, ProtocolError } from '../../protocol/codec/errors.js';
import {
  CompressionCodec,
  LegacyMessage,
  MESSAGE_TIMESTAMP_TYPE,
  MessageField,
  RecordBatch,
  TimestampType,
  compress,
  encodeMessage,
  isCompressionCodec,
  logEntries,
} from '../../protocol/records/index.js';
import { LogError } from './errors.js';
import type { LogConfig } from './log-config.js';

export type EntryKind = 'batch' | 'message' | 'wrapper';

export interface ValidatedEntry {
  kind: EntryKind;
  magic: 0 | 1 | 2;
  /** The entry as received (a view into the request). */
  buf: Buffer;
  /** Records (offsets) the entry takes. */
  count: number;
  /** Largest timestamp in the entry as received (-1 when none). */
  maxTimestamp: bigint;
  batch?: RecordBatch;
  message?: LegacyMessage;
  /** Wrapper whose inner offsets must be rewritten (magic 0, or magic 1 sent without 0..n-1). */
  inner?: LegacyMessage[];
  /** Deep validation found the header's maxTimestamp wrong: the real one. */
  realMaxTimestamp?: bigint;
}

export interface ValidatedRecords {
  entries: ValidatedEntry[];
  recordCount: number;
  sizeInBytes: number;
  magic: 0 | 1 | 2;
}

/**
 * Hook for format conversion / recompression (topic compression.type, message format, worker pool):
 * returns replacement entries, or null to store what arrived. Not implemented here.
 */
export type ConvertHook = (validated: ValidatedRecords, config: LogConfig) => ValidatedRecords | null;

export interface AssignedEntry {
  buf: Buffer;
  magic: 0 | 1 | 2;
  firstOffset: bigint;
  lastOffset: bigint;
  /** Max timestamp as stored (LogAppendTime applied). */
  maxTimestamp: bigint;
  /** v2 only; -1 for magic 0/1. */
  partitionLeaderEpoch: number;
}

/** Upper bound on decompressed bytes per entry (compressed data can expand without limit). */
export function decompressLimit(config: LogConfig): number {
  return Math.min(2 ** 30, Math.max(config.maxMessageBytes, 1 << 20) * 64);
}

function fail(errorCode: number, message: string): LogError {
  return new LogError(errorCode, message);
}

/** Maps a records-layer error to the Kafka error a producer sees. */
export function fromProtocolError(err: unknown): LogError {
  if (err instanceof LogError) return err;
  if (err instanceof ProtocolError) {
    switch (err.code) {
      case GregorErrorCode.INVALID_RECORD:
        return fail(ErrorCode.INVALID_RECORD, err.message);
      case GregorErrorCode.UNSUPPORTED_COMPRESSION:
        return fail(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, err.message);
      default:
        return fail(ErrorCode.CORRUPT_MESSAGE, err.message);
    }
  }
  return fail(ErrorCode.CORRUPT_MESSAGE, err instanceof Error ? err.message : String(err));
}

interface Ctx {
  config: LogConfig;
  now: bigint;
  minTs: bigint;
  maxTs: bigint;
  checkTs: boolean;
  compacted: boolean;
  maxOutput: number;
}

function checkTimestamp(ctx: Ctx, ts: bigint, where: string): void {
  if (!ctx.checkTs || ts === -1n) return;
  if (ts < ctx.minTs || ts > ctx.maxTs) {
    throw fail(ErrorCode.INVALID_TIMESTAMP, `timestamp ${ts} of ${where} is out of range [${ctx.minTs}, ${ctx.maxTs}]`);
  }
}

/** Phase 1: checks `records` against `config`; throws LogError (with a Kafka code) on the first problem. */
export function validateRecords(records: Buffer, config: LogConfig, now: number): ValidatedRecords {
  const n = BigInt(now);
  const ctx: Ctx = {
    config,
    now: n,
    minTs: n - BigInt(config.timestampBeforeMaxMs),
    maxTs: n + BigInt(config.timestampAfterMaxMs),
    checkTs: config.messageTimestampType === 'CreateTime',
    compacted: config.cleanupPolicy.includes('compact'),
    maxOutput: decompressLimit(config),
  };
  const entries: ValidatedEntry[] = [];
  let recordCount = 0;
  let firstMagic: 0 | 1 | 2 | null = null;
  try {
    for (const e of logEntries(records)) {
      if (e.kind === 'partial') {
        throw fail(ErrorCode.CORRUPT_MESSAGE, `entry at position ${e.start} is cut short (${e.partial.available} of ${e.partial.declaredSize ?? '?'} bytes)`);
      }
      const size = e.kind === 'batch' ? e.batch.sizeInBytes : e.message.sizeInBytes;
      if (size > config.maxMessageBytes) {
        throw fail(ErrorCode.MESSAGE_TOO_LARGE, `entry of ${size} bytes exceeds max.message.bytes ${config.maxMessageBytes}`);
      }
      const magic = e.kind === 'batch' ? 2 : e.message.magic;
      if (firstMagic !== null && magic !== firstMagic) {
        throw fail(ErrorCode.INVALID_RECORD, `entry magic ${magic} differs from the first entry's magic ${firstMagic}`);
      }
      firstMagic = magic;
      const v = e.kind === 'batch' ? validateBatch(ctx, e.batch) : validateLegacy(ctx, e.message);
      recordCount += v.count;
      entries.push(v);
    }
  } catch (err) {
    throw fromProtocolError(err);
  }
  if (records.length > config.segmentBytes) {
    throw fail(ErrorCode.RECORD_LIST_TOO_LARGE, `${records.length} bytes of records exceed segment.bytes ${config.segmentBytes}`);
  }
  return { entries, recordCount, sizeInBytes: records.length, magic: firstMagic ?? 2 };
}

function validateBatch(ctx: Ctx, batch: RecordBatch): ValidatedEntry {
  batch.validate(); // CRC and header sanity → CORRUPT_MESSAGE
  const count = batch.recordCount;
  const fromOffsets = batch.lastOffsetDelta + 1;
  if (fromOffsets <= 0) throw fail(ErrorCode.INVALID_RECORD, `batch has an invalid offset range [0, ${batch.lastOffsetDelta}]`);
  if (count <= 0) throw fail(ErrorCode.INVALID_RECORD, `invalid reported record count ${count}`);
  if (count !== fromOffsets) {
    throw fail(ErrorCode.INVALID_RECORD, `inconsistent batch offset range [0, ${batch.lastOffsetDelta}] and record count ${count}`);
  }
  if (batch.isControl) throw fail(ErrorCode.INVALID_RECORD, 'clients may not write control records');
  if (batch.producerId >= 0n && batch.baseSequence < 0) {
    throw fail(ErrorCode.INVALID_RECORD, `invalid sequence ${batch.baseSequence} with producerId ${batch.producerId}`);
  }
  if (!isCompressionCodec(batch.compression)) {
    throw fail(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `unknown compression codec ${batch.compression}`);
  }
  const entry: ValidatedEntry = { kind: 'batch', magic: 2, buf: batch.bytes, count, maxTimestamp: batch.maxTimestamp, batch };
  const appendTimeBatch = batch.timestampType === TimestampType.LOG_APPEND_TIME;
  if (ctx.config.validationDeep || ctx.compacted) {
    // decode every record: offsets 0..n-1, timestamps, keys of compacted topics
    const recs = batch.records({ maxOutput: ctx.maxOutput });
    let max = -1n;
    recs.forEach((r, i) => {
      if (r.offset !== batch.baseOffset + BigInt(i)) throw fail(ErrorCode.INVALID_RECORD, `record ${i} has offset delta ${r.offset - batch.baseOffset}`);
      if (ctx.compacted && r.key === null) throw fail(ErrorCode.INVALID_RECORD, 'compacted topic cannot accept a record without a key');
      if (!appendTimeBatch) checkTimestamp(ctx, r.timestamp, `record ${i}`);
      if (r.timestamp > max) max = r.timestamp;
    });
    if (!appendTimeBatch && ctx.config.validationDeep && max !== batch.maxTimestamp) entry.realMaxTimestamp = max;
  } else {
    // header level: the CRC covers the records, so the first and max timestamps stand for the batch
    if (!appendTimeBatch) checkTimestamp(ctx, batch.baseTimestamp, 'the batch (base timestamp)');
    checkTimestamp(ctx, batch.maxTimestamp, 'the batch (max timestamp)');
  }
  return entry;
}

function validateLegacy(ctx: Ctx, m: LegacyMessage): ValidatedEntry {
  m.validate();
  const codec = m.compression;
  if (!isCompressionCodec(codec)) throw fail(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `unknown compression codec ${codec}`);
  if (codec === CompressionCodec.ZSTD) throw fail(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `zstd needs magic 2, got magic ${m.magic}`);
  const appendTime = m.timestampType === TimestampType.LOG_APPEND_TIME;
  if (codec === CompressionCodec.NONE) {
    if (ctx.compacted && m.key === null) throw fail(ErrorCode.INVALID_RECORD, 'compacted topic cannot accept a message without a key');
    if (!appendTime) checkTimestamp(ctx, m.timestamp, `message at offset ${m.offset}`);
    return { kind: 'message', magic: m.magic, buf: m.bytes, count: 1, maxTimestamp: m.timestamp, message: m };
  }
  // decompressed only to validate and count; the payload stays as sent unless offsets need rewriting
  const inner = m.innerMessages({ maxOutput: ctx.maxOutput, checkCrcs: true });
  let max = -1n;
  let sequential = true;
  inner.forEach((im, i) => {
    if (ctx.compacted && im.key === null) throw fail(ErrorCode.INVALID_RECORD, 'compacted topic cannot accept a message without a key');
    if (!appendTime) checkTimestamp(ctx, im.timestamp, `inner message ${i}`);
    if (im.timestamp > max) max = im.timestamp;
    if (im.offset !== BigInt(i)) sequential = false;
  });
  const entry: ValidatedEntry = { kind: 'wrapper', magic: m.magic, buf: m.bytes, count: inner.length, maxTimestamp: m.magic === 0 ? -1n : max, message: m };
  if (m.magic === 0 || !sequential) entry.inner = inner;
  return entry;
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
export function assignOffsets(v: ValidatedRecords, firstOffset: bigint, leaderEpoch: number, config: LogConfig, now: number): AssignedEntry[] {
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
      out.push({ buf: e.buf, magic: 2, firstOffset: first, lastOffset: last, maxTimestamp: b.maxTimestamp, partitionLeaderEpoch: leaderEpoch });
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
