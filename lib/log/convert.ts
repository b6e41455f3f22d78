/**
 * Format conversion and recompression on append, and down-conversion for old fetchers (Kafka's
 * LogValidator conversion paths and RecordsUtil.downConvert). Everything here is pure CPU work over
 * buffers, so it runs unchanged on a worker thread (lib/append) or inline on the main thread.
 *
 * - `planAppend` (main thread, header-level, no decompression): does this request need the work?
 * - `convertForAppend` (worker): full validation (deep when configured), conversion to the topic's
 *   magic and codec, offsets assigned from a tentative base; output packed into one buffer.
 * - `rebaseConverted` (main thread, at commit): moves the tentative offsets to the final ones and sets
 *   the leader epoch; O(1) per entry except for magic-0 wrappers (absolute inner offsets).
 * - `downConvert` (worker): stored entries → magic 0/1 for Fetch v0-3.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import {
  COMPRESSION_CODEC_MASK,
  CompressionCodec,
  LOG_OVERHEAD,
  LegacyMessage,
  MESSAGE_OVERHEAD,
  MessageField,
  RecordBatch,
  TimestampType,
  buildMessageSet,
  buildRecordBatch,
  buildRecordBatchOf,
  compress,
  encodeMessage,
  logEntries,
} from '../../protocol/records/index.js';
import type { BuildBatchOptions, LegacyRecordInput, Record as LogRecord, RecordInput } from '../../protocol/records/index.js';
import { LogError } from './errors.js';
import type { LogConfig } from './log-config.js';
import { assignOffsets, type AssignedEntry } from './assign-offsets.js';
import { decompressLimit, fromProtocolError, validateRecords } from './validator.js';
import type { ValidatedEntry, ValidatedRecords } from './validator.js';

export type Magic = 0 | 1 | 2;

/**
 * What the topic stores: its magic (null: whatever arrives — a LogConfig without a format version,
 * as tools and unit tests build it), its codec ('producer' keeps the batch's), deep checks.
 */
export interface ConversionTarget {
  readonly magic: Magic | null;
  readonly codec: number | 'producer';
  readonly deep: boolean;
}

const CODEC_BY_NAME: Readonly<Record<string, number>> = {
  uncompressed: CompressionCodec.NONE,
  none: CompressionCodec.NONE,
  gzip: CompressionCodec.GZIP,
  snappy: CompressionCodec.SNAPPY,
  lz4: CompressionCodec.LZ4,
  zstd: CompressionCodec.ZSTD,
};

/** Magic a message.format.version stores: < 0.10.0 → 0, 0.10.x → 1, 0.11.0 and later → 2; null for none. */
export function formatMagic(version: string | undefined): Magic | null {
  if (version === undefined) return null;
  const m = /^(\d+)\.(\d+)/.exec(version.trim());
  if (m === null) return 2;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  if (major > 0 || minor >= 11) return 2;
  return minor >= 10 ? 1 : 0;
}

/** A config's target, with the three values it was worked out from (a config changed in place is worked out again). */
interface KnownTarget {
  compressionType: string;
  messageFormatVersion: string | undefined;
  validationDeep: boolean;
  target: ConversionTarget;
}

/** Targets by config object: every append asks, and a topic's config is replaced, not edited, when it changes. */
const targets = new WeakMap<LogConfig, KnownTarget>();

export function conversionTarget(config: LogConfig): ConversionTarget {
  const known = targets.get(config);
  if (
    known !== undefined &&
    known.compressionType === config.compressionType &&
    known.messageFormatVersion === config.messageFormatVersion &&
    known.validationDeep === config.validationDeep
  )
    return known.target;
  const type = config.compressionType.toLowerCase();
  const codec = type === 'producer' ? 'producer' : (CODEC_BY_NAME[type] ?? 'producer');
  const target: ConversionTarget = { magic: formatMagic(config.messageFormatVersion), codec, deep: config.validationDeep };
  const { compressionType, messageFormatVersion, validationDeep } = config;
  targets.set(config, { compressionType, messageFormatVersion, validationDeep, target });
  return target;
}

/** The topic's level for `codec` where the codec takes one here (gzip, zstd; -1 = codec default). */
function levelFor(codec: number, config: LogConfig): number | undefined {
  const l = config.compressionLevels;
  if (l === undefined) return undefined;
  if (codec === CompressionCodec.GZIP) return l.gzip === -1 ? undefined : l.gzip;
  if (codec === CompressionCodec.ZSTD) return l.zstd;
  return undefined; // snappy has no levels; our LZ4 frame encoder has one speed
}

export interface AppendPlan {
  /** Records the request is expected to take (exact for v2; estimated for compressed magic 0/1). */
  count: number;
}

/**
 * Header-level look at a produce payload (no CRC, no decompression): null when it can be stored as
 * it came without decompressing anything (the fast path, which then validates it), else the plan
 * for the conversion pipeline — conversion, deep validation, or a compressed magic 0/1 wrapper, which
 * is decompressed to be counted and validated. A structural problem also answers null so that the
 * fast path's validation reports it at once.
 */
export function planAppend(records: Buffer, config: LogConfig): AppendPlan | null {
  const t = conversionTarget(config);
  let count = 0;
  let convert = t.deep;
  const end = records.length;
  let p = 0;
  try {
    while (p < end) {
      let magic: Magic;
      let codec: number;
      if (end - p > MessageField.ATTRIBUTES && (records[p + MessageField.MAGIC] === 0 || records[p + MessageField.MAGIC] === 1)) {
        // magic 0/1 message: its header is all this needs (no object per message); the fast
        // path's validation reports whatever is wrong with it
        const size = records.readInt32BE(p + MessageField.MESSAGE_SIZE);
        if (size < MESSAGE_OVERHEAD[0] || LOG_OVERHEAD + size > end - p) return null;
        magic = records[p + MessageField.MAGIC] as 0 | 1;
        codec = (records[p + MessageField.ATTRIBUTES] as number) & COMPRESSION_CODEC_MASK;
        if (codec === CompressionCodec.NONE) count += 1;
        else {
          // producers set the wrapper's offset to the last inner (relative) offset: a good estimate
          const last = records.readBigInt64BE(p);
          count += last >= 0n && last < 1_000_000n ? Number(last) + 1 : 1;
          // validating a compressed wrapper means decompressing it: CPU work for the pool, even
          // when its bytes are then stored as they came
          convert = true;
        }
        p += LOG_OVERHEAD + size;
      } else {
        const it = logEntries(records, p).next();
        if (it.done === true) break;
        const e = it.value;
        if (e.kind === 'partial') return null;
        if (e.kind === 'batch') {
          magic = 2;
          codec = e.batch.compression;
          const n = e.batch.recordCount;
          if (n <= 0) return null;
          count += n;
          p = e.batch.end;
        } else {
          const m = e.message;
          magic = m.magic;
          codec = m.compression;
          count += 1;
          p = m.end;
        }
      }
      if ((t.magic !== null && magic !== t.magic) || (t.codec !== 'producer' && codec !== t.codec)) convert = true;
    }
  } catch {
    return null;
  }
  return convert && count > 0 ? { count } : null;
}

/** One converted entry inside `ConvertedAppend.buf`. */
export interface ConvertedEntry {
  start: number;
  end: number;
  magic: Magic;
  firstOffset: bigint;
  lastOffset: bigint;
  maxTimestamp: bigint;
  /** Compression codec of the entry (needed to rebuild a magic-0 wrapper). */
  codec: number;
}

/** The result of the CPU work: entries with offsets from the tentative base, packed in one buffer. */
export interface ConvertedAppend {
  buf: Buffer;
  entries: ConvertedEntry[];
  recordCount: number;
  /** Whether conversion happened (false: deep validation only, bytes as sent). */
  converted: boolean;
}

function fail(errorCode: number, message: string): LogError {
  return new LogError(errorCode, message);
}

function entryCodec(e: ValidatedEntry): number {
  return e.batch !== undefined ? e.batch.compression : (e.message?.compression ?? CompressionCodec.NONE);
}

function needsConversion(v: ValidatedRecords, t: ConversionTarget): boolean {
  return v.entries.some((e) => (t.magic !== null && e.magic !== t.magic) || (t.codec !== 'producer' && entryCodec(e) !== t.codec));
}

/** Per-record checks Kafka makes whenever it rebuilds: sequential offsets, timestamps, keys of compacted topics. */
function checkRecords(
  records: LogRecord[],
  base: bigint,
  config: LogConfig,
  now: number,
  checkTimestamps: boolean,
  sequential: boolean,
): void {
  const compacted = config.cleanupPolicy.includes('compact');
  const n = BigInt(now);
  const min = n - BigInt(config.timestampBeforeMaxMs);
  const max = n + BigInt(config.timestampAfterMaxMs);
  const checkTs = checkTimestamps && config.messageTimestampType === 'CreateTime';
  records.forEach((r, i) => {
    if (sequential && r.offset !== base + BigInt(i))
      throw fail(ErrorCode.INVALID_RECORD, `record ${i} has offset delta ${r.offset - base}; inner offsets must be sequential`);
    if (compacted && r.key === null) throw fail(ErrorCode.INVALID_RECORD, 'compacted topic cannot accept a record without a key');
    if (checkTs && r.timestamp !== -1n && (r.timestamp < min || r.timestamp > max)) {
      throw fail(ErrorCode.INVALID_TIMESTAMP, `timestamp ${r.timestamp} of record ${i} is out of range [${min}, ${max}]`);
    }
  });
}

/** Builds the packed output from separately built entries. */
function pack(parts: { buf: Buffer; meta: Omit<ConvertedEntry, 'start' | 'end'> }[], converted: boolean): ConvertedAppend {
  let total = 0;
  for (const p of parts) total += p.buf.length;
  // its own ArrayBuffer (never the shared pool of Buffer.allocUnsafe), so it can be transferred
  const buf = Buffer.allocUnsafeSlow(total);
  const entries: ConvertedEntry[] = [];
  let pos = 0;
  let recordCount = 0;
  for (const p of parts) {
    p.buf.copy(buf, pos);
    entries.push({ start: pos, end: pos + p.buf.length, ...p.meta });
    recordCount += Number(p.meta.lastOffset - p.meta.firstOffset) + 1;
    pos += p.buf.length;
  }
  return { buf, entries, recordCount, converted };
}

function assignedParts(assigned: AssignedEntry[], v: ValidatedRecords): { buf: Buffer; meta: Omit<ConvertedEntry, 'start' | 'end'> }[] {
  return assigned.map((a, i) => ({
    buf: a.buf,
    meta: {
      magic: a.magic,
      firstOffset: a.firstOffset,
      lastOffset: a.lastOffset,
      maxTimestamp: a.maxTimestamp,
      codec: v.entries[i] === undefined ? 0 : entryCodec(v.entries[i]),
    },
  }));
}

/**
 * The append's CPU work: validates `records` fully (deep when the topic says so), converts them to
 * the topic's magic and codec when needed, and assigns offsets from `base` (LogAppendTime from
 * `now`). Throws LogError with the Kafka error code. Leader epochs are set at commit.
 */
export function convertForAppend(records: Buffer, config: LogConfig, base: bigint, now: number): ConvertedAppend {
  const v = validateRecords(records, config, now);
  const t = conversionTarget(config);
  if (v.entries.length === 0) return pack([], false);
  if (!needsConversion(v, t)) {
    let assigned: AssignedEntry[];
    try {
      assigned = assignOffsets(v, base, -1, config, now);
    } catch (err) {
      throw fromProtocolError(err);
    }
    return pack(assignedParts(assigned, v), false);
  }
  try {
    const toMagic = t.magic ?? v.magic;
    return toMagic === 2 ? toV2(v, t, config, base, now) : toLegacy(v, toMagic, t, config, base, now);
  } catch (err) {
    throw fromProtocolError(err);
  }
}

function targetCodec(source: number, t: ConversionTarget): number {
  return t.codec === 'producer' ? source : t.codec;
}

/** Up-conversion (magic 0/1 → one v2 batch, as Kafka builds it) or recompression of v2 batches. */
function toV2(v: ValidatedRecords, t: ConversionTarget, config: LogConfig, base: bigint, now: number): ConvertedAppend {
  const maxOutput = decompressLimit(config);
  const logAppend = config.messageTimestampType === 'LogAppendTime';
  const tsOpts = logAppend
    ? { timestampType: TimestampType.LOG_APPEND_TIME, logAppendTime: BigInt(now) }
    : { timestampType: TimestampType.CREATE_TIME };
  const parts: { buf: Buffer; meta: Omit<ConvertedEntry, 'start' | 'end'> }[] = [];
  let next = base;
  const opts = (codec: number, extra: BuildBatchOptions): BuildBatchOptions => {
    const level = levelFor(codec, config);
    return { ...extra, ...tsOpts, baseOffset: next, compression: codec, ...(level === undefined ? {} : { compressionLevel: level }) };
  };
  const push = (buf: Buffer, codec: number): void => {
    const b = RecordBatch.at(buf);
    parts.push({ buf, meta: { magic: 2, firstOffset: next, lastOffset: b.lastOffset, maxTimestamp: b.maxTimestamp, codec } });
    next = b.lastOffset + 1n;
  };
  const emit = (recs: RecordInput[], codec: number, extra: BuildBatchOptions): void =>
    push(buildRecordBatch(recs, opts(codec, extra)), codec);
  if (v.magic === 2) {
    for (const e of v.entries) {
      const b = e.batch as RecordBatch;
      const section = b.decompressedRecords({ maxOutput });
      const recs = b.recordsOf(section);
      checkRecords(recs, b.baseOffset, config, now, b.timestampType === TimestampType.CREATE_TIME, true);
      const codec = targetCodec(b.compression, t);
      // Recompression: the records' bytes do not depend on the codec (offset deltas 0..n-1 were just
      // checked, timestamp deltas stay with the same base), so the section is compressed as it is.
      let maxTimestamp = -1n;
      for (const r of recs) if (r.timestamp > maxTimestamp) maxTimestamp = r.timestamp;
      const info = { records: recs.length, lastOffsetDelta: recs.length - 1, baseTimestamp: b.baseTimestamp, maxTimestamp };
      const extra = {
        isTransactional: b.isTransactional,
        producerId: b.producerId,
        producerEpoch: b.producerEpoch,
        baseSequence: b.baseSequence,
      };
      push(buildRecordBatchOf(section, info, opts(codec, extra)), codec);
    }
  } else {
    // magic 0/1: every record of the request goes into one batch (validateRecords checked the inner
    // CRCs, timestamps and keys of wrappers)
    const all: RecordInput[] = [];
    let sourceCodec: number = CompressionCodec.NONE;
    for (const e of v.entries) {
      const m = e.message as LegacyMessage;
      if (m.isCompressed) sourceCodec = m.compression;
      for (const r of m.records({ maxOutput, checkCrcs: false }))
        all.push({ key: r.key, value: r.value, timestamp: v.magic === 0 ? -1n : r.timestamp });
    }
    emit(all, targetCodec(sourceCodec, t), {});
  }
  return pack(parts, true);
}

/** Down-conversion on produce (a v2 batch into a topic held at format 0/1), or a legacy recompression. */
function toLegacy(v: ValidatedRecords, magic: 0 | 1, t: ConversionTarget, config: LogConfig, base: bigint, now: number): ConvertedAppend {
  const maxOutput = decompressLimit(config);
  const all: LegacyRecordInput[] = [];
  let sourceCodec: number = CompressionCodec.NONE;
  for (const e of v.entries) {
    if (e.batch !== undefined) {
      const b = e.batch;
      if (b.producerId >= 0n || b.isTransactional) {
        throw fail(
          ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
          `idempotent or transactional records cannot be written with message format magic ${magic}`,
        );
      }
      const recs = b.records({ maxOutput });
      checkRecords(recs, b.baseOffset, config, now, b.timestampType === TimestampType.CREATE_TIME, true);
      for (const r of recs) {
        if (r.headers.length > 0)
          throw fail(
            ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
            `record headers need message format magic 2; the topic stores magic ${magic}`,
          );
        all.push({ key: r.key, value: r.value, timestamp: r.timestamp });
      }
      if (b.compression !== CompressionCodec.NONE) sourceCodec = b.compression;
    } else {
      const m = e.message as LegacyMessage;
      if (m.isCompressed) sourceCodec = m.compression;
      for (const r of m.records({ maxOutput, checkCrcs: false })) all.push({ key: r.key, value: r.value, timestamp: r.timestamp });
    }
  }
  const codec = targetCodec(sourceCodec, t);
  if (codec === CompressionCodec.ZSTD)
    throw fail(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `zstd needs message format magic 2; the topic stores magic ${magic}`);
  const logAppend = magic === 1 && config.messageTimestampType === 'LogAppendTime';
  const level = levelFor(codec, config);
  const set = buildMessageSet(all, {
    magic,
    compression: codec,
    baseOffset: base,
    ...(logAppend ? { timestampType: TimestampType.LOG_APPEND_TIME, logAppendTime: BigInt(now) } : {}),
    ...(level === undefined ? {} : { compressionLevel: level }),
  });
  const parts: { buf: Buffer; meta: Omit<ConvertedEntry, 'start' | 'end'> }[] = [];
  if (codec === CompressionCodec.NONE) {
    for (const e of logEntries(set)) {
      if (e.kind !== 'message') continue;
      const m = e.message;
      parts.push({ buf: m.bytes, meta: { magic, firstOffset: m.offset, lastOffset: m.offset, maxTimestamp: m.timestamp, codec } });
    }
  } else {
    const w = LegacyMessage.at(set, 0);
    parts.push({
      buf: set,
      meta: { magic, firstOffset: base, lastOffset: w.offset, maxTimestamp: magic === 0 ? -1n : w.timestamp, codec },
    });
  }
  return pack(parts, true);
}

/**
 * At commit: entries of `c` as AssignedEntry views with offsets moved from their tentative base to
 * `finalBase` (different only when an earlier reservation failed or an estimate was off) and the
 * leader epoch set. v2 and magic-1 offsets sit outside the CRCs; a magic-0 wrapper holds absolute
 * inner offsets and is rebuilt (the rare case: an earlier failure in a format-0 topic).
 */
export function rebaseConverted(c: ConvertedAppend, finalBase: bigint, leaderEpoch: number, config: LogConfig): AssignedEntry[] {
  const first = c.entries[0];
  const delta = first === undefined ? 0n : finalBase - first.firstOffset;
  const maxOutput = decompressLimit(config);
  return c.entries.map((e) => {
    let buf = c.buf.subarray(e.start, e.end);
    const firstOffset = e.firstOffset + delta;
    const lastOffset = e.lastOffset + delta;
    if (e.magic === 2) {
      const b = RecordBatch.at(buf);
      if (delta !== 0n) b.setBaseOffset(firstOffset);
      b.setPartitionLeaderEpoch(leaderEpoch);
    } else if (delta !== 0n) {
      const m = LegacyMessage.at(buf);
      if (m.magic === 0 && m.isCompressed) {
        const inner = m.innerMessages({ maxOutput, checkCrcs: false });
        inner.forEach((im, i) => im.setOffset(firstOffset + BigInt(i)));
        const data = inner[0]?.buf ?? Buffer.alloc(0);
        buf = encodeMessage(lastOffset, 0, m.attributes, -1n, m.key, compress(m.compression, data, { magic: 0 }));
      } else {
        m.setOffset(lastOffset);
      }
    }
    return {
      buf,
      magic: e.magic,
      firstOffset,
      lastOffset,
      maxTimestamp: e.maxTimestamp,
      partitionLeaderEpoch: e.magic === 2 ? leaderEpoch : -1,
    };
  });
}

/** Runs the CPU work somewhere: a worker pool (lib/append) or inline. Partition logs take one. */
export interface ConversionRunner {
  /** `convertForAppend` on `records` (the runner may transfer a copy to another thread). */
  convertForAppend(records: Buffer, config: LogConfig, base: bigint, now: number): Promise<ConvertedAppend>;
  /** `downConvert` of stored entries. */
  downConvert(data: Buffer, toMagic: 0 | 1, fetchOffset: bigint, maxOutput: number): Promise<Buffer>;
}
