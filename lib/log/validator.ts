/**
 * Append validation (Kafka's LogValidator, header-level by default), phase 1 of an append:
 * `validateRecords` checks everything and never mutates. Phase 2, offset assignment, is in
 * assign-offsets.ts.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { GregorErrorCode, ProtocolError } from '../../protocol/codec/errors.js';
import {
  COMPRESSION_CODEC_MASK,
  CompressionCodec,
  LOG_OVERHEAD,
  LegacyMessage,
  MESSAGE_OVERHEAD,
  MESSAGE_TIMESTAMP_TYPE,
  MessageField,
  RecordBatch,
  TimestampType,
  decompress,
  isCompressionCodec,
  logEntries,
  scanMessageSet,
} from '../../protocol/records/index.js';
import { crc32Range } from '../../protocol/records/crc32.js';
import { i32, TWO_32 } from './be32.js';
import { LogError } from './errors.js';
import type { LogConfig } from './log-config.js';

/**
 * 'run': consecutive uncompressed magic 0/1 messages, validated and stored as one chunk (one segment
 * write, one recent-cache entry); each message keeps its own offset field and CRC, so readers still
 * see one "batch" per message.
 */
export type EntryKind = 'batch' | 'message' | 'wrapper' | 'run';

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
  /** 'run': index (0-based) of the first message holding maxTimestamp (0 when none has one). */
  maxTimestampIndex?: number;
}

export interface ValidateOptions {
  /**
   * Validate consecutive uncompressed magic 0/1 messages as one 'run' entry (the fast path of the
   * log). Off for callers that want one entry per message (conversion).
   */
  legacyRuns?: boolean;
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
  /** `now` as the caller gave it (milliseconds): the key of lastCtx */
  nowMs: number;
  now: bigint;
  minTs: bigint;
  maxTs: bigint;
  checkTs: boolean;
  compacted: boolean;
  maxOutput: number;
  /** minTs / maxTs as numbers, for the per-message checks of runs (exact for safe-integer timestamps). */
  minTsNum: number;
  maxTsNum: number;
}

function checkTimestamp(ctx: Ctx, ts: bigint, where: string): void {
  if (!ctx.checkTs || ts === -1n) return;
  if (ts < ctx.minTs || ts > ctx.maxTs) {
    throw fail(ErrorCode.INVALID_TIMESTAMP, `timestamp ${ts} of ${where} is out of range [${ctx.minTs}, ${ctx.maxTs}]`);
  }
}

/**
 * The last validation's context, reused while the config object (replaced, never changed, when the
 * topic's config changes) and the millisecond stay the same: appends arriving within one millisecond
 * make no BigInts for the time bounds. Nothing writes to a Ctx once made.
 */
let lastCtx: Ctx | null = null;

function contextFor(config: LogConfig, now: number): Ctx {
  const last = lastCtx;
  if (last !== null && last.config === config && last.nowMs === now) return last;
  const n = BigInt(now);
  const minTs = n - BigInt(config.timestampBeforeMaxMs);
  const maxTs = n + BigInt(config.timestampAfterMaxMs);
  const ctx: Ctx = {
    config,
    nowMs: now,
    now: n,
    minTs,
    maxTs,
    checkTs: config.messageTimestampType === 'CreateTime',
    compacted: config.cleanupPolicy.includes('compact'),
    maxOutput: decompressLimit(config),
    minTsNum: Number(minTs),
    maxTsNum: Number(maxTs),
  };
  lastCtx = ctx;
  return ctx;
}

/** Phase 1: checks `records` against `config`; throws LogError (with a Kafka code) on the first problem. */
export function validateRecords(records: Buffer, config: LogConfig, now: number, opts: ValidateOptions = {}): ValidatedRecords {
  const ctx = contextFor(config, now);
  const runs = opts.legacyRuns === true;
  const entries: ValidatedEntry[] = [];
  let recordCount = 0;
  let firstMagic: 0 | 1 | 2 | null = null;
  const end = records.length;
  let p = 0;
  try {
    while (p < end) {
      if (runs && end - p > MessageField.ATTRIBUTES) {
        const magic = records[p + MessageField.MAGIC];
        if ((magic === 0 || magic === 1) && ((records[p + MessageField.ATTRIBUTES] as number) & COMPRESSION_CODEC_MASK) === 0) {
          if (firstMagic !== null && magic !== firstMagic) {
            throw fail(ErrorCode.INVALID_RECORD, `entry magic ${magic} differs from the first entry's magic ${firstMagic}`);
          }
          firstMagic = magic;
          const run = scanRun(ctx, records, p, end, magic, 'outer');
          recordCount += run.count;
          entries.push(run.entry);
          p = run.end;
          continue;
        }
      }
      const it = logEntries(records, p).next();
      if (it.done === true) break;
      const e = it.value;
      if (e.kind === 'partial') {
        throw fail(
          ErrorCode.CORRUPT_MESSAGE,
          `entry at position ${e.start} is cut short (${e.partial.available} of ${e.partial.declaredSize ?? '?'} bytes)`,
        );
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
      p = e.kind === 'batch' ? e.batch.end : e.message.end;
    }
  } catch (err) {
    throw fromProtocolError(err);
  }
  if (records.length > config.segmentBytes) {
    throw fail(ErrorCode.RECORD_LIST_TOO_LARGE, `${records.length} bytes of records exceed segment.bytes ${config.segmentBytes}`);
  }
  return { entries, recordCount, sizeInBytes: records.length, magic: firstMagic ?? 2 };
}

/**
 * Validates the uncompressed messages of `magic` from `start` on, without an object per message:
 * structure (as LegacyMessage.at), CRC-32, max.message.bytes, timestamps, keys of compacted topics.
 * Stops before the first message that is compressed or of another magic (the caller handles it).
 * `where` 'inner': the messages of a wrapper (offsets must be checked by the caller, no size limit).
 * Also reports whether offsets read 0..n-1 (KIP-31 inner offsets).
 */
function scanRun(ctx: Ctx, buf: Buffer, start: number, end: number, magic: 0 | 1, where: 'outer' | 'inner') {
  const outer = where === 'outer';
  const maxBytes = ctx.config.maxMessageBytes;
  const checkTs = ctx.checkTs && magic === 1;
  const minTs = ctx.minTsNum;
  const maxTs = ctx.maxTsNum;
  const keyAt = magic === 0 ? MessageField.TIMESTAMP : MessageField.TIMESTAMP + 8;
  const minSize = MESSAGE_OVERHEAD[magic];
  let p = start;
  let count = 0;
  let max = -1;
  let maxIndex = 0;
  let exactMax = true;
  let sequential = true;
  while (p < end) {
    const available = end - p;
    if (available <= MessageField.ATTRIBUTES) {
      if (outer) throw fail(ErrorCode.CORRUPT_MESSAGE, `entry at position ${p} is cut short (${available} bytes)`);
      throw fail(ErrorCode.CORRUPT_MESSAGE, 'compressed message set ends with a partial message');
    }
    if (buf[p + MessageField.MAGIC] !== magic || ((buf[p + MessageField.ATTRIBUTES] as number) & COMPRESSION_CODEC_MASK) !== 0) break;
    const size = i32(buf, p + MessageField.MESSAGE_SIZE);
    if (size < minSize)
      throw fail(ErrorCode.CORRUPT_MESSAGE, `message size ${size} at position ${p} is below the minimum for magic ${magic}`);
    const msgEnd = p + LOG_OVERHEAD + size;
    if (msgEnd > end) {
      if (outer)
        throw fail(ErrorCode.CORRUPT_MESSAGE, `entry at position ${p} is cut short (${available} of ${LOG_OVERHEAD + size} bytes)`);
      throw fail(ErrorCode.CORRUPT_MESSAGE, 'compressed message set ends with a partial message');
    }
    if (outer && LOG_OVERHEAD + size > maxBytes) {
      throw fail(ErrorCode.MESSAGE_TOO_LARGE, `entry of ${LOG_OVERHEAD + size} bytes exceeds max.message.bytes ${maxBytes}`);
    }
    // key and value lengths fill the message exactly
    let q = p + keyAt;
    const keyLength = i32(buf, q);
    q += 4;
    if (keyLength < -1 || (keyLength > 0 && keyLength > msgEnd - q - 4))
      throw fail(ErrorCode.CORRUPT_MESSAGE, `invalid message key length ${keyLength}`);
    if (keyLength > 0) q += keyLength;
    const valueLength = q + 4 <= msgEnd ? i32(buf, q) : -2;
    q += 4;
    if (valueLength < -1 || (valueLength > 0 && valueLength > msgEnd - q))
      throw fail(ErrorCode.CORRUPT_MESSAGE, `invalid message value length ${valueLength}`);
    if (valueLength > 0) q += valueLength;
    if (q !== msgEnd)
      throw fail(ErrorCode.CORRUPT_MESSAGE, `message size ${size} does not match its key and value (${msgEnd - q} bytes over)`);
    const stored = i32(buf, p + MessageField.CRC) >>> 0;
    const computed = crc32Range(buf, p + MessageField.MAGIC, msgEnd);
    if (stored !== computed) throw fail(ErrorCode.CORRUPT_MESSAGE, `message at position ${p}: CRC is ${stored}, computed ${computed}`);
    if (ctx.compacted && keyLength === -1) throw fail(ErrorCode.INVALID_RECORD, 'compacted topic cannot accept a message without a key');
    if (magic === 1) {
      const hi = i32(buf, p + MessageField.TIMESTAMP);
      const ts = hi * TWO_32 + (i32(buf, p + MessageField.TIMESTAMP + 4) >>> 0);
      if (hi < -2097152 || hi >= 2097152)
        exactMax = false; // beyond 2^53: the slow path redoes it exactly
      else if (
        checkTs &&
        ts !== -1 &&
        ((buf[p + MessageField.ATTRIBUTES] as number) & MESSAGE_TIMESTAMP_TYPE) === 0 &&
        (ts < minTs || ts > maxTs)
      ) {
        throw fail(ErrorCode.INVALID_TIMESTAMP, `timestamp ${ts} of message ${count} is out of range [${ctx.minTs}, ${ctx.maxTs}]`);
      }
      if (ts > max) {
        max = ts;
        maxIndex = count;
      }
    }
    if (sequential && !outer && (i32(buf, p) !== 0 || i32(buf, p + 4) >>> 0 !== count)) sequential = false;
    count++;
    p = msgEnd;
  }
  let maxTimestamp = magic === 1 ? BigInt(max) : -1n;
  if (!exactMax) {
    // timestamps outside the safe-integer range: check and take the max with bigints
    let big = -1n;
    let i = 0;
    for (let r = start; r < p; r += LOG_OVERHEAD + buf.readInt32BE(r + MessageField.MESSAGE_SIZE), i++) {
      const ts = buf.readBigInt64BE(r + MessageField.TIMESTAMP);
      if (checkTs && ((buf[r + MessageField.ATTRIBUTES] as number) & MESSAGE_TIMESTAMP_TYPE) === 0) checkTimestamp(ctx, ts, `message ${i}`);
      if (ts > big) {
        big = ts;
        maxIndex = i;
      }
    }
    maxTimestamp = big;
  }
  const entry: ValidatedEntry = { kind: 'run', magic, buf: buf.subarray(start, p), count, maxTimestamp, maxTimestampIndex: maxIndex };
  return { entry, count, end: p, sequential };
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
      if (r.offset !== batch.baseOffset + BigInt(i))
        throw fail(ErrorCode.INVALID_RECORD, `record ${i} has offset delta ${r.offset - batch.baseOffset}`);
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
  const value = m.value;
  if (value === null) throw fail(ErrorCode.INVALID_RECORD, 'compressed message has a null value');
  const data = decompress(codec, value, { maxOutput: ctx.maxOutput, magic: m.magic });
  const run = scanRun(appendTime ? { ...ctx, checkTs: false } : ctx, data, 0, data.length, m.magic, 'inner');
  if (run.end < data.length) {
    const at = run.end;
    const innerMagic = data[at + MessageField.MAGIC];
    if (innerMagic !== m.magic)
      throw fail(ErrorCode.INVALID_RECORD, `inner message magic ${innerMagic} differs from wrapper magic ${m.magic}`);
    throw fail(ErrorCode.INVALID_RECORD, 'nested compressed message');
  }
  if (run.count === 0) throw fail(ErrorCode.INVALID_RECORD, 'compressed message holds no messages');
  const entry: ValidatedEntry = {
    kind: 'wrapper',
    magic: m.magic,
    buf: m.bytes,
    count: run.count,
    maxTimestamp: m.magic === 0 ? -1n : run.entry.maxTimestamp,
    message: m,
  };
  if (m.magic === 0 || !run.sequential) entry.inner = scanMessageSet(data).messages;
  return entry;
}
