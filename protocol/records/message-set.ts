import { crc32 } from './native.js';
import { GregorErrorCode, ProtocolError } from '../codec/errors.js';
import { int64At } from '../codec/int64.js';
import { crc32Range } from './crc32.js';
import { LOG_OVERHEAD, TimestampType } from './batch.js';
import type { DecodeRecordsOptions, PartialTail } from './batch.js';
import { COMPRESSION_CODEC_MASK, CompressionCodec, compress, decompress, isCompressionCodec } from './compression.js';
import type { Record } from './records.js';

/**
 * Message sets of the old formats: magic 0 (no timestamp) and magic 1 (timestamp, KIP-31 relative
 * inner offsets). Each entry is offset int64, messageSize int32, then the message: crc uint32 (CRC-32
 * over magic … end), magic int8, attributes int8, [timestamp int64 for magic 1], key bytes, value
 * bytes. A compressed message (a "wrapper") holds a whole inner message set in its value.
 */

export const MessageField = {
  OFFSET: 0,
  MESSAGE_SIZE: 8,
  CRC: 12,
  MAGIC: 16,
  ATTRIBUTES: 17,
  TIMESTAMP: 18,
} as const;

/** Smallest messageSize per magic: crc, magic, attributes, [timestamp], key length, value length. */
export const MESSAGE_OVERHEAD = [14, 22] as const;
export const MESSAGE_TIMESTAMP_TYPE = 0x08;
/** Timestamp type of magic 0 messages, which have none. */
export const NO_TIMESTAMP_TYPE = -1;

function corrupt(message: string): ProtocolError {
  return new ProtocolError(GregorErrorCode.CORRUPT_RECORD, message);
}
function invalid(message: string): ProtocolError {
  return new ProtocolError(GregorErrorCode.INVALID_RECORD, message);
}

/** A view over one complete magic 0/1 message (with its offset and size prefix) inside `buf`. */
export class LegacyMessage {
  readonly buf: Buffer;
  readonly start: number;
  readonly magic: 0 | 1;
  private readonly keyStart: number;

  private constructor(buf: Buffer, start: number, magic: 0 | 1) {
    this.buf = buf;
    this.start = start;
    this.magic = magic;
    this.keyStart = start + (magic === 0 ? MessageField.TIMESTAMP : MessageField.TIMESTAMP + 8);
  }

  /**
   * The message at `start`, checked structurally (magic, sizes, key and value lengths filling the
   * message exactly). Does not check the CRC (see `validate`).
   */
  static at(buf: Buffer, start = 0): LegacyMessage {
    if (start < 0 || buf.length - start < LOG_OVERHEAD + 6) {
      throw new ProtocolError(GregorErrorCode.TRUNCATED, 'message header is cut short');
    }
    const magic = buf.readInt8(start + MessageField.MAGIC);
    if (magic !== 0 && magic !== 1) throw new ProtocolError(GregorErrorCode.UNSUPPORTED_MAGIC, `magic ${magic} is not a message set`);
    const size = buf.readInt32BE(start + MessageField.MESSAGE_SIZE);
    if (size < MESSAGE_OVERHEAD[magic]) throw corrupt(`message size ${size} is below the minimum for magic ${magic}`);
    if (size > buf.length - start - LOG_OVERHEAD) {
      throw new ProtocolError(GregorErrorCode.TRUNCATED, `message of ${LOG_OVERHEAD + size} bytes is cut short`);
    }
    const end = start + LOG_OVERHEAD + size;
    let p = start + (magic === 0 ? MessageField.TIMESTAMP : MessageField.TIMESTAMP + 8);
    for (const field of ['key', 'value']) {
      const n = buf.readInt32BE(p);
      p += 4;
      if (n < -1 || (n > 0 && n > end - p - (field === 'key' ? 4 : 0))) throw corrupt(`invalid message ${field} length ${n}`);
      if (n > 0) p += n;
    }
    if (p !== end) throw corrupt(`message size ${size} does not match its key and value (${end - p} bytes over)`);
    return new LegacyMessage(buf, start, magic);
  }

  get offset(): bigint {
    return int64At(this.buf, this.start + MessageField.OFFSET);
  }
  get messageSize(): number {
    return this.buf.readInt32BE(this.start + MessageField.MESSAGE_SIZE);
  }
  get sizeInBytes(): number {
    return LOG_OVERHEAD + this.messageSize;
  }
  get end(): number {
    return this.start + this.sizeInBytes;
  }
  get crc(): number {
    return this.buf.readUInt32BE(this.start + MessageField.CRC);
  }
  get attributes(): number {
    return this.buf.readInt8(this.start + MessageField.ATTRIBUTES);
  }
  get compression(): number {
    return this.attributes & COMPRESSION_CODEC_MASK;
  }
  get isCompressed(): boolean {
    return this.compression !== CompressionCodec.NONE;
  }
  /** TimestampType for magic 1; NO_TIMESTAMP_TYPE (-1) for magic 0. */
  get timestampType(): number {
    if (this.magic === 0) return NO_TIMESTAMP_TYPE;
    return (this.attributes & MESSAGE_TIMESTAMP_TYPE) !== 0 ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
  }
  /** -1 for magic 0. */
  get timestamp(): bigint {
    return this.magic === 0 ? -1n : int64At(this.buf, this.start + MessageField.TIMESTAMP);
  }
  get key(): Buffer | null {
    return this.field(this.keyStart);
  }
  get value(): Buffer | null {
    const n = this.buf.readInt32BE(this.keyStart);
    return this.field(this.keyStart + 4 + Math.max(0, n));
  }
  private field(p: number): Buffer | null {
    const n = this.buf.readInt32BE(p);
    return n < 0 ? null : this.buf.subarray(p + 4, p + 4 + n);
  }
  /** The whole entry (a view). */
  get bytes(): Buffer {
    return this.buf.subarray(this.start, this.end);
  }

  /** CRC-32 (IEEE) over magic … end. */
  computeCrc(): number {
    return crc32Range(this.buf, this.start + MessageField.MAGIC, this.end);
  }
  isValid(): boolean {
    return this.computeCrc() === this.crc;
  }
  validate(): void {
    const stored = this.crc;
    const computed = this.computeCrc();
    if (stored !== computed) throw corrupt(`message at offset ${this.offset}: CRC is ${stored}, computed ${computed}`);
  }

  /** Sets the offset (before the CRC'd bytes: nothing else changes). For a wrapper, its last inner offset. */
  setOffset(offset: bigint): void {
    this.buf.writeBigInt64BE(offset, this.start + MessageField.OFFSET);
  }
  /** Magic 1 only: marks the message LogAppendTime with `timestamp` and recomputes the CRC. */
  setLogAppendTime(timestamp: bigint): void {
    if (this.magic !== 1) throw new ProtocolError(GregorErrorCode.UNSUPPORTED_MAGIC, 'magic 0 messages carry no timestamp');
    if (this.timestampType === TimestampType.LOG_APPEND_TIME && this.timestamp === timestamp) return;
    this.buf.writeInt8(this.attributes | MESSAGE_TIMESTAMP_TYPE, this.start + MessageField.ATTRIBUTES);
    this.buf.writeBigInt64BE(timestamp, this.start + MessageField.TIMESTAMP);
    this.buf.writeUInt32BE(this.computeCrc(), this.start + MessageField.CRC);
  }

  /** The message itself as a record (for a wrapper, its value is the compressed inner set). */
  toRecord(): Record {
    return { offset: this.offset, timestamp: this.timestamp, key: this.key, value: this.value, headers: [], attributes: this.attributes };
  }

  /** The inner messages of a compressed wrapper, as views into the decompressed value. */
  innerMessages(opts: DecodeRecordsOptions & { checkCrcs?: boolean }): LegacyMessage[] {
    const codec = this.compression;
    if (!isCompressionCodec(codec)) throw new ProtocolError(GregorErrorCode.UNSUPPORTED_COMPRESSION, `unknown compression codec ${codec}`);
    const value = this.value;
    if (value === null) throw invalid('compressed message has a null value');
    const data = decompress(codec, value, { maxOutput: opts.maxOutput, magic: this.magic });
    const { messages, partial } = scanMessageSet(data);
    if (partial !== null) throw corrupt('compressed message set ends with a partial message');
    if (messages.length === 0) throw invalid('compressed message holds no messages');
    for (const m of messages) {
      if (m.magic !== this.magic) throw invalid(`inner message magic ${m.magic} differs from wrapper magic ${this.magic}`);
      if (m.isCompressed) throw invalid('nested compressed message');
      if (opts.checkCrcs !== false) m.validate();
    }
    return messages;
  }

  /**
   * The records this entry stands for: itself when uncompressed, its inner messages (with absolute
   * offsets and, under LogAppendTime, the wrapper's timestamp) when compressed.
   */
  records(opts: DecodeRecordsOptions & { checkCrcs?: boolean }): Record[] {
    if (!this.isCompressed) return [this.toRecord()];
    const inner = this.innerMessages(opts);
    const last = inner[inner.length - 1];
    // magic 1: inner offsets are relative, the wrapper carries the absolute offset of the last one
    const shift = this.magic === 1 && last !== undefined ? this.offset - last.offset : 0n;
    const appendTime = this.timestampType === TimestampType.LOG_APPEND_TIME ? this.timestamp : null;
    return inner.map((m) => {
      const rec = m.toRecord();
      rec.offset += shift;
      if (appendTime !== null) rec.timestamp = appendTime;
      return rec;
    });
  }
}

/**
 * Splits a magic 0/1 message set into shallow entries (wrappers are not opened). A message cut
 * short at the end is reported in `partial`; bad sizes and magics throw.
 */
export function scanMessageSet(buf: Buffer, start = 0, end = buf.length): { messages: LegacyMessage[]; partial: PartialTail | null } {
  const messages: LegacyMessage[] = [];
  const view = end === buf.length ? buf : buf.subarray(0, end);
  let p = start;
  while (p < end) {
    const available = end - p;
    if (available < LOG_OVERHEAD) return { messages, partial: { start: p, available, declaredSize: null } };
    const size = view.readInt32BE(p + MessageField.MESSAGE_SIZE);
    if (size < MESSAGE_OVERHEAD[0]) throw corrupt(`message size ${size} at position ${p} is below the minimum`);
    if (available > MessageField.MAGIC) {
      const magic = view.readInt8(p + MessageField.MAGIC);
      if (magic !== 0 && magic !== 1)
        throw new ProtocolError(GregorErrorCode.UNSUPPORTED_MAGIC, `magic ${magic} at position ${p} in a message set`);
    }
    if (LOG_OVERHEAD + size > available) return { messages, partial: { start: p, available, declaredSize: LOG_OVERHEAD + size } };
    const m = LegacyMessage.at(view, p);
    messages.push(m);
    p = m.end;
  }
  return { messages, partial: null };
}

export interface LegacyRecordInput {
  key: Buffer | null;
  value: Buffer | null;
  /** Magic 1 only; default -1 (no timestamp). */
  timestamp?: bigint;
}

export interface BuildMessageSetOptions {
  magic: 0 | 1;
  compression?: number;
  compressionLevel?: number;
  /** Offset of the first record; default 0. */
  baseOffset?: bigint;
  /** Magic 1: LogAppendTime sets every outer message's timestamp to `logAppendTime` (default now). */
  timestampType?: TimestampType;
  logAppendTime?: bigint;
}

/** Encodes one message (offset and size prefix included) with its CRC. */
export function encodeMessage(
  offset: bigint,
  magic: 0 | 1,
  attributes: number,
  timestamp: bigint,
  key: Buffer | null,
  value: Buffer | null,
): Buffer {
  const size = MESSAGE_OVERHEAD[magic] + (key?.length ?? 0) + (value?.length ?? 0);
  const out = Buffer.allocUnsafe(LOG_OVERHEAD + size);
  out.writeBigInt64BE(offset, MessageField.OFFSET);
  out.writeInt32BE(size, MessageField.MESSAGE_SIZE);
  out.writeInt8(magic, MessageField.MAGIC);
  out.writeInt8(attributes, MessageField.ATTRIBUTES);
  let p = MessageField.TIMESTAMP;
  if (magic === 1) {
    out.writeBigInt64BE(timestamp, p);
    p += 8;
  }
  for (const v of [key, value]) {
    out.writeInt32BE(v === null ? -1 : v.length, p);
    p += 4;
    if (v !== null) p += v.copy(out, p);
  }
  out.writeUInt32BE(crc32(out.subarray(MessageField.MAGIC)) >>> 0, MessageField.CRC);
  return out;
}

/**
 * Encodes `records` as a message set. Uncompressed: one message per record at baseOffset + i.
 * Compressed: one wrapper at the last offset holding the inner set, whose offsets are relative
 * (0..n-1) for magic 1 and absolute for magic 0.
 */
export function buildMessageSet(records: readonly LegacyRecordInput[], opts: BuildMessageSetOptions): Buffer {
  const { magic } = opts;
  const codec = opts.compression ?? CompressionCodec.NONE;
  if (!isCompressionCodec(codec)) throw new ProtocolError(GregorErrorCode.UNSUPPORTED_COMPRESSION, `unknown compression codec ${codec}`);
  if (codec === CompressionCodec.ZSTD)
    throw new ProtocolError(GregorErrorCode.UNSUPPORTED_COMPRESSION, 'zstd needs message format magic 2');
  const base = opts.baseOffset ?? 0n;
  const logAppend = magic === 1 && opts.timestampType === TimestampType.LOG_APPEND_TIME;
  const appendTime = logAppend ? (opts.logAppendTime ?? BigInt(Date.now())) : -1n;
  const tsAttr = logAppend ? MESSAGE_TIMESTAMP_TYPE : 0;
  const ts = (r: LegacyRecordInput): bigint => (magic === 0 ? -1n : (r.timestamp ?? -1n));
  if (codec === CompressionCodec.NONE) {
    return Buffer.concat(
      records.map((r, i) => encodeMessage(base + BigInt(i), magic, tsAttr, logAppend ? appendTime : ts(r), r.key, r.value)),
    );
  }
  if (records.length === 0) return Buffer.alloc(0);
  const inner = Buffer.concat(
    records.map((r, i) => encodeMessage(magic === 1 ? BigInt(i) : base + BigInt(i), magic, 0, ts(r), r.key, r.value)),
  );
  const level = opts.compressionLevel;
  const packed = compress(codec, inner, level === undefined ? { magic } : { magic, level });
  let maxTs = -1n;
  for (const r of records) if (ts(r) > maxTs) maxTs = ts(r);
  const lastOffset = base + BigInt(records.length - 1);
  return encodeMessage(lastOffset, magic, codec | tsAttr, logAppend ? appendTime : maxTs, null, packed);
}
