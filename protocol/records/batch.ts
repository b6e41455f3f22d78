import { crc32c } from './native.js';
import { GregorErrorCode, ProtocolError } from '../codec/errors.js';
import { int64At } from '../codec/int64.js';
import { Reader } from '../codec/reader.js';
import { Writer, sizeVarint } from '../codec/writer.js';
import { COMPRESSION_CODEC_MASK, CompressionCodec, compress, decompress, isCompressionCodec } from './compression.js';
import { MIN_RECORD_SIZE, readRecord, recordBodySize, writeRecord } from './records.js';
import type { Record, RecordInput } from './records.js';

/** Field positions of the v2 batch header, relative to the batch start. */
export const BatchField = {
  BASE_OFFSET: 0,
  BATCH_LENGTH: 8,
  PARTITION_LEADER_EPOCH: 12,
  MAGIC: 16,
  CRC: 17,
  ATTRIBUTES: 21,
  LAST_OFFSET_DELTA: 23,
  BASE_TIMESTAMP: 27,
  MAX_TIMESTAMP: 35,
  PRODUCER_ID: 43,
  PRODUCER_EPOCH: 51,
  BASE_SEQUENCE: 53,
  RECORD_COUNT: 57,
  RECORDS: 61,
} as const;

/** baseOffset + batchLength: the part of any log entry (batch or message) before its size-counted bytes. */
export const LOG_OVERHEAD = 12;
/** Size of the v2 header, which is also the smallest possible batch. */
export const RECORD_BATCH_OVERHEAD = 61;
export const CURRENT_MAGIC = 2;

export const BatchAttribute = {
  TIMESTAMP_TYPE: 0x08,
  TRANSACTIONAL: 0x10,
  CONTROL: 0x20,
  DELETE_HORIZON: 0x40,
} as const;

export const TimestampType = { CREATE_TIME: 0, LOG_APPEND_TIME: 1 } as const;
export type TimestampType = (typeof TimestampType)[keyof typeof TimestampType];

/** Where a buffer of log entries ends with an entry that is cut short (normal at the end of a fetch). */
export interface PartialTail {
  /** Position of the partial entry in the scanned buffer. */
  start: number;
  /** Bytes present from `start` to the end. */
  available: number;
  /** Full size the entry declares (LOG_OVERHEAD + length), or null when even that is cut off. */
  declaredSize: number | null;
}

export interface DecodeRecordsOptions {
  /** Upper bound on the decompressed records; required because compressed input can expand without limit. */
  maxOutput: number;
}

function corrupt(message: string): ProtocolError {
  return new ProtocolError(GregorErrorCode.CORRUPT_RECORD, message);
}

/**
 * A view over one complete v2 record batch inside `buf` at `start`. Reading the header never copies;
 * the setters rewrite fields in place.
 */
export class RecordBatch {
  readonly buf: Buffer;
  readonly start: number;

  private constructor(buf: Buffer, start: number) {
    this.buf = buf;
    this.start = start;
  }

  /**
   * The batch at `start`: checks the header is there, the magic is 2, and the declared length is
   * sane and fully present. Does not check the CRC (see `validate`).
   */
  static at(buf: Buffer, start = 0): RecordBatch {
    if (start < 0 || buf.length - start < RECORD_BATCH_OVERHEAD) {
      throw new ProtocolError(GregorErrorCode.TRUNCATED, `record batch header needs ${RECORD_BATCH_OVERHEAD} bytes`);
    }
    const magic = buf.readInt8(start + BatchField.MAGIC);
    if (magic !== CURRENT_MAGIC) throw new ProtocolError(GregorErrorCode.UNSUPPORTED_MAGIC, `magic ${magic} is not a v2 record batch`);
    const length = buf.readInt32BE(start + BatchField.BATCH_LENGTH);
    if (length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) throw corrupt(`record batch length ${length} is below the minimum`);
    if (length > buf.length - start - LOG_OVERHEAD) {
      throw new ProtocolError(GregorErrorCode.TRUNCATED, `record batch of ${LOG_OVERHEAD + length} bytes is cut short`);
    }
    return new RecordBatch(buf, start);
  }

  get baseOffset(): bigint {
    return int64At(this.buf, this.start + BatchField.BASE_OFFSET);
  }
  get batchLength(): number {
    return this.buf.readInt32BE(this.start + BatchField.BATCH_LENGTH);
  }
  /** Whole batch size including baseOffset and batchLength. */
  get sizeInBytes(): number {
    return LOG_OVERHEAD + this.batchLength;
  }
  get end(): number {
    return this.start + this.sizeInBytes;
  }
  get partitionLeaderEpoch(): number {
    return this.buf.readInt32BE(this.start + BatchField.PARTITION_LEADER_EPOCH);
  }
  get magic(): number {
    return this.buf.readInt8(this.start + BatchField.MAGIC);
  }
  get crc(): number {
    return this.buf.readUInt32BE(this.start + BatchField.CRC);
  }
  get attributes(): number {
    return this.buf.readInt16BE(this.start + BatchField.ATTRIBUTES);
  }
  get compression(): number {
    return this.attributes & COMPRESSION_CODEC_MASK;
  }
  get timestampType(): TimestampType {
    return (this.attributes & BatchAttribute.TIMESTAMP_TYPE) !== 0 ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
  }
  get isTransactional(): boolean {
    return (this.attributes & BatchAttribute.TRANSACTIONAL) !== 0;
  }
  get isControl(): boolean {
    return (this.attributes & BatchAttribute.CONTROL) !== 0;
  }
  get hasDeleteHorizon(): boolean {
    return (this.attributes & BatchAttribute.DELETE_HORIZON) !== 0;
  }
  get lastOffsetDelta(): number {
    return this.buf.readInt32BE(this.start + BatchField.LAST_OFFSET_DELTA);
  }
  get lastOffset(): bigint {
    return this.baseOffset + BigInt(this.lastOffsetDelta);
  }
  get nextOffset(): bigint {
    return this.lastOffset + 1n;
  }
  get baseTimestamp(): bigint {
    return int64At(this.buf, this.start + BatchField.BASE_TIMESTAMP);
  }
  get maxTimestamp(): bigint {
    return int64At(this.buf, this.start + BatchField.MAX_TIMESTAMP);
  }
  get producerId(): bigint {
    return int64At(this.buf, this.start + BatchField.PRODUCER_ID);
  }
  get producerEpoch(): number {
    return this.buf.readInt16BE(this.start + BatchField.PRODUCER_EPOCH);
  }
  get baseSequence(): number {
    return this.buf.readInt32BE(this.start + BatchField.BASE_SEQUENCE);
  }
  /** Last sequence number, wrapping past int32 max as Kafka does; -1 when there is no sequence. */
  get lastSequence(): number {
    const base = this.baseSequence;
    if (base === -1) return -1;
    return (base + this.lastOffsetDelta) % 2 ** 31;
  }
  get recordCount(): number {
    return this.buf.readInt32BE(this.start + BatchField.RECORD_COUNT);
  }
  /** The whole batch (a view). */
  get bytes(): Buffer {
    return this.buf.subarray(this.start, this.end);
  }
  /** The records section after the header, compressed or not (a view). */
  get recordsBytes(): Buffer {
    return this.buf.subarray(this.start + BatchField.RECORDS, this.end);
  }

  /** CRC-32C over attributes … end of batch. */
  computeCrc(): number {
    return crc32c(this.buf.subarray(this.start + BatchField.ATTRIBUTES, this.end)) >>> 0;
  }
  isValid(): boolean {
    return this.computeCrc() === this.crc;
  }
  /** Throws CORRUPT_RECORD when the stored CRC does not match, or the header is inconsistent. */
  validate(): void {
    const stored = this.crc;
    const computed = this.computeCrc();
    if (stored !== computed) {
      throw corrupt(`record batch at offset ${this.baseOffset}: CRC is ${stored}, computed ${computed}`);
    }
    if (this.recordCount < 0) throw corrupt(`negative record count ${this.recordCount}`);
    if (this.lastOffsetDelta < -1) throw corrupt(`invalid lastOffsetDelta ${this.lastOffsetDelta}`);
  }

  /** Sets baseOffset (outside the CRC: nothing else changes). */
  setBaseOffset(baseOffset: bigint): void {
    this.buf.writeBigInt64BE(baseOffset, this.start + BatchField.BASE_OFFSET);
  }
  /** Sets partitionLeaderEpoch (outside the CRC). */
  setPartitionLeaderEpoch(epoch: number): void {
    this.buf.writeInt32BE(epoch, this.start + BatchField.PARTITION_LEADER_EPOCH);
  }
  /** Sets the timestamp type and maxTimestamp, then recomputes the CRC (skipped when nothing changes). */
  setMaxTimestamp(type: TimestampType, maxTimestamp: bigint): void {
    if (this.timestampType === type && this.maxTimestamp === maxTimestamp) return;
    const attrs = this.attributes;
    const next = type === TimestampType.LOG_APPEND_TIME ? attrs | BatchAttribute.TIMESTAMP_TYPE : attrs & ~BatchAttribute.TIMESTAMP_TYPE;
    this.buf.writeInt16BE(next, this.start + BatchField.ATTRIBUTES);
    this.buf.writeBigInt64BE(maxTimestamp, this.start + BatchField.MAX_TIMESTAMP);
    this.buf.writeUInt32BE(this.computeCrc(), this.start + BatchField.CRC);
  }
  /** LogAppendTime: every record's timestamp becomes `timestamp`. */
  setLogAppendTime(timestamp: bigint): void {
    this.setMaxTimestamp(TimestampType.LOG_APPEND_TIME, timestamp);
  }

  /** The records bytes, decompressed if needed (a view when uncompressed). */
  decompressedRecords(opts: DecodeRecordsOptions): Buffer {
    const codec = this.compression;
    if (codec === CompressionCodec.NONE) return this.recordsBytes;
    if (!isCompressionCodec(codec)) {
      throw new ProtocolError(GregorErrorCode.UNSUPPORTED_COMPRESSION, `unknown compression codec ${codec}`);
    }
    return decompress(codec, this.recordsBytes, { maxOutput: opts.maxOutput, magic: CURRENT_MAGIC });
  }

  /**
   * Decodes every record (decompressing when needed). Throws INVALID_RECORD when the records do not
   * match the header's count or leave bytes over. Does not check the CRC.
   */
  records(opts: DecodeRecordsOptions): Record[] {
    return this.recordsOf(this.decompressedRecords(opts));
  }

  /** Decodes the records from `data`, this batch's records section already decompressed (see records()). */
  recordsOf(data: Buffer): Record[] {
    const count = this.recordCount;
    if (count < 0) throw new ProtocolError(GregorErrorCode.INVALID_RECORD, `negative record count ${count}`);
    if (count > data.length / MIN_RECORD_SIZE) {
      throw new ProtocolError(GregorErrorCode.INVALID_RECORD, `record count ${count} does not fit in ${data.length} bytes`);
    }
    const r = new Reader(data);
    const baseOffset = this.baseOffset;
    const baseTimestamp = this.baseTimestamp;
    const logAppendTime = this.timestampType === TimestampType.LOG_APPEND_TIME ? this.maxTimestamp : null;
    const out: Record[] = [];
    for (let i = 0; i < count; i++) {
      const rec = readRecord(r, baseOffset, baseTimestamp, logAppendTime);
      if (r.error !== undefined) throw r.error;
      out.push(rec);
    }
    if (r.remaining !== 0) {
      throw new ProtocolError(GregorErrorCode.INVALID_RECORD, `${r.remaining} bytes after the last of ${count} records`);
    }
    return out;
  }
}

/**
 * Splits a records buffer (a sequence of v2 batches, e.g. a produce request's or a fetch
 * response's `records`) into batch views. A batch cut short at the end is reported in `partial`,
 * not thrown; a bad length or magic is.
 */
export function scanBatches(records: Buffer, start = 0, end = records.length): { batches: RecordBatch[]; partial: PartialTail | null } {
  const batches: RecordBatch[] = [];
  let p = start;
  while (p < end) {
    const available = end - p;
    if (available < LOG_OVERHEAD) return { batches, partial: { start: p, available, declaredSize: null } };
    const length = records.readInt32BE(p + BatchField.BATCH_LENGTH);
    if (length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) throw corrupt(`record batch length ${length} at position ${p} is below the minimum`);
    if (available > BatchField.MAGIC) {
      const magic = records.readInt8(p + BatchField.MAGIC);
      if (magic !== CURRENT_MAGIC) {
        throw new ProtocolError(GregorErrorCode.UNSUPPORTED_MAGIC, `magic ${magic} at position ${p} is not a v2 record batch`);
      }
    }
    if (LOG_OVERHEAD + length > available) {
      return { batches, partial: { start: p, available, declaredSize: LOG_OVERHEAD + length } };
    }
    const view = end === records.length ? RecordBatch.at(records, p) : RecordBatch.at(records.subarray(0, end), p);
    batches.push(view);
    p += LOG_OVERHEAD + length;
  }
  return { batches, partial: null };
}

export interface BuildBatchOptions {
  baseOffset?: bigint;
  partitionLeaderEpoch?: number;
  compression?: number;
  compressionLevel?: number;
  /** LogAppendTime batches carry `logAppendTime` (default: now) as maxTimestamp. */
  timestampType?: TimestampType;
  logAppendTime?: bigint;
  isTransactional?: boolean;
  isControl?: boolean;
  hasDeleteHorizon?: boolean;
  producerId?: bigint;
  producerEpoch?: number;
  baseSequence?: number;
  /** Default: the first record's timestamp (as Kafka's producer does), or -1 for an empty batch. */
  baseTimestamp?: bigint;
  /** Offset delta of each record (default: its index); must be ascending. */
  offsetDeltas?: readonly number[];
  /** Default: the last record's offset delta (-1 for an empty batch). */
  lastOffsetDelta?: number;
  /** Attribute byte written in each record (Kafka leaves it 0). */
  recordAttributes?: number;
}

/** Encodes `records` as one v2 batch with a valid CRC-32C. */
export function buildRecordBatch(records: readonly RecordInput[], opts: BuildBatchOptions = {}): Buffer {
  const first = records[0];
  const baseTimestamp = opts.baseTimestamp ?? (first === undefined ? -1n : first.timestamp);
  const deltas = records.map((_, i) => opts.offsetDeltas?.[i] ?? i);
  let maxTimestamp = -1n;
  const sizes: number[] = [];
  let total = 0;
  records.forEach((rec, i) => {
    if (rec.timestamp > maxTimestamp) maxTimestamp = rec.timestamp;
    const body = recordBodySize(rec, deltas[i] ?? i, rec.timestamp - baseTimestamp);
    sizes.push(body);
    total += body + sizeVarint(body);
  });
  const w = Writer.alloc(total);
  records.forEach((rec, i) => {
    writeRecord(w, rec, deltas[i] ?? i, rec.timestamp - baseTimestamp, sizes[i] ?? 0, opts.recordAttributes ?? 0);
  });
  const lastOffsetDelta = opts.lastOffsetDelta ?? (deltas.length === 0 ? -1 : (deltas[deltas.length - 1] ?? 0));
  return buildRecordBatchOf(w.done(), { records: records.length, lastOffsetDelta, baseTimestamp, maxTimestamp }, opts);
}

/** What the header of a batch says of the records it holds. */
export interface RecordsSectionInfo {
  records: number;
  lastOffsetDelta: number;
  baseTimestamp: bigint;
  /** the records' largest timestamp (a LogAppendTime batch carries opts.logAppendTime instead) */
  maxTimestamp: bigint;
}

/**
 * Builds one v2 batch around `section`, records already encoded (uncompressed, deltas from
 * `info.baseTimestamp` and offset 0), compressed with `opts.compression`: what recompression needs,
 * since a record's bytes do not depend on the batch codec.
 */
export function buildRecordBatchOf(section: Buffer, info: RecordsSectionInfo, opts: BuildBatchOptions = {}): Buffer {
  const codec = opts.compression ?? CompressionCodec.NONE;
  if (!isCompressionCodec(codec)) throw new ProtocolError(GregorErrorCode.UNSUPPORTED_COMPRESSION, `unknown compression codec ${codec}`);
  const level = opts.compressionLevel;
  const payload = compress(codec, section, level === undefined ? { magic: CURRENT_MAGIC } : { magic: CURRENT_MAGIC, level });
  const { baseTimestamp } = info;
  let maxTimestamp = info.maxTimestamp;
  const logAppend = opts.timestampType === TimestampType.LOG_APPEND_TIME;
  if (logAppend) maxTimestamp = opts.logAppendTime ?? BigInt(Date.now());
  let attributes = codec;
  if (logAppend) attributes |= BatchAttribute.TIMESTAMP_TYPE;
  if (opts.isTransactional === true) attributes |= BatchAttribute.TRANSACTIONAL;
  if (opts.isControl === true) attributes |= BatchAttribute.CONTROL;
  if (opts.hasDeleteHorizon === true) attributes |= BatchAttribute.DELETE_HORIZON;

  const out = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + payload.length);
  out.writeBigInt64BE(opts.baseOffset ?? 0n, BatchField.BASE_OFFSET);
  out.writeInt32BE(out.length - LOG_OVERHEAD, BatchField.BATCH_LENGTH);
  out.writeInt32BE(opts.partitionLeaderEpoch ?? -1, BatchField.PARTITION_LEADER_EPOCH);
  out.writeInt8(CURRENT_MAGIC, BatchField.MAGIC);
  out.writeInt16BE(attributes, BatchField.ATTRIBUTES);
  out.writeInt32BE(info.lastOffsetDelta, BatchField.LAST_OFFSET_DELTA);
  out.writeBigInt64BE(baseTimestamp, BatchField.BASE_TIMESTAMP);
  out.writeBigInt64BE(maxTimestamp, BatchField.MAX_TIMESTAMP);
  out.writeBigInt64BE(opts.producerId ?? -1n, BatchField.PRODUCER_ID);
  out.writeInt16BE(opts.producerEpoch ?? -1, BatchField.PRODUCER_EPOCH);
  out.writeInt32BE(opts.baseSequence ?? -1, BatchField.BASE_SEQUENCE);
  out.writeInt32BE(info.records, BatchField.RECORD_COUNT);
  payload.copy(out, BatchField.RECORDS);
  out.writeUInt32BE(crc32c(out.subarray(BatchField.ATTRIBUTES)) >>> 0, BatchField.CRC);
  return out;
}
