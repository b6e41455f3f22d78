import { GregorErrorCode } from '../codec/errors.js';
import { Reader } from '../codec/reader.js';
import { sizeVarint, sizeVarlong } from '../codec/writer.js';
import type { Writer } from '../codec/writer.js';

/** A record header: the key is a non-null string, the value nullable bytes. */
export interface RecordHeader {
  key: string;
  value: Buffer | null;
}

/**
 * A decoded record, whatever format it came in. Keys, values and header values are views into the
 * (possibly decompressed) batch buffer. `attributes` is the record's own attribute byte for v2
 * (unused by Kafka, normally 0) and the message attributes for magic 0/1.
 */
export interface Record {
  offset: bigint;
  timestamp: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
  attributes?: number;
}

/** What a builder needs for one record. */
export interface RecordInput {
  key: Buffer | null;
  value: Buffer | null;
  timestamp: bigint;
  headers?: readonly RecordHeader[];
}

/** Smallest encoded v2 record: length, attributes, timestampDelta, offsetDelta, key, value, header count. */
export const MIN_RECORD_SIZE = 7;

/**
 * Reads one v2 record at the reader's cursor. Malformed records set the reader's sticky error with
 * INVALID_RECORD (the message says what was wrong) and return a dummy record.
 * `logAppendTime` replaces every record timestamp when the batch uses LogAppendTime.
 */
export function readRecord(r: Reader, baseOffset: bigint, baseTimestamp: bigint, logAppendTime: bigint | null): Record {
  // The length varint: one or two bytes inline (records under 8 KiB), the general reader otherwise.
  const buf = r.buf;
  const p = r.offset;
  const b0 = p < r.end ? (buf[p] as number) : 0x80;
  const b1 = p + 1 < r.end ? (buf[p + 1] as number) : 0x80;
  let length: number;
  if (b0 < 0x80) {
    length = (b0 >>> 1) ^ -(b0 & 1);
    r.offset = p + 1;
  } else if (b1 < 0x80) {
    const u = (b0 & 0x7f) | (b1 << 7);
    length = (u >>> 1) ^ -(u & 1);
    r.offset = p + 2;
  } else {
    const lr = new Reader(buf, p, r.end);
    length = lr.varint();
    if (lr.error !== undefined) return invalid(r, `bad record length: ${lr.error.message}`);
    r.offset = lr.offset;
  }
  if (length < MIN_RECORD_SIZE - 1 || length > r.remaining) {
    return invalid(r, `record length ${length} with ${r.remaining} bytes remaining`);
  }
  const sub = new Reader(r.buf, r.offset, r.offset + length);
  r.offset += length;
  const attributes = sub.int8();
  const timestampDelta = sub.varlong();
  const offsetDelta = sub.varint();
  const key = varBytes(sub);
  const value = varBytes(sub);
  const headerCount = sub.varint();
  if (headerCount < 0 || headerCount > sub.remaining / 2) {
    if (sub.error === undefined) return invalid(r, `invalid header count ${headerCount}`);
  }
  const headers: RecordHeader[] = [];
  for (let i = 0; i < headerCount && sub.error === undefined; i++) {
    const keyLength = sub.varint();
    if (keyLength < 0) {
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- varint() sets sub.error, which narrowing does not see
      if (sub.error === undefined) return invalid(r, 'null header key');
      break;
    }
    if (keyLength > sub.remaining) return invalid(r, `header key length ${keyLength} exceeds the record`);
    const headerKey = headerKeyString(sub.buf, sub.offset, keyLength, i & (KEY_CACHE_SLOTS - 1));
    sub.offset += keyLength;
    headers.push({ key: headerKey, value: varBytes(sub) });
  }
  if (sub.error !== undefined) return invalid(r, sub.error.message);
  if (sub.remaining !== 0) return invalid(r, `${sub.remaining} unread bytes at the end of a record`);
  return {
    offset: baseOffset + BigInt(offsetDelta),
    timestamp: logAppendTime ?? baseTimestamp + timestampDelta,
    key,
    value,
    headers,
    attributes,
  };
}

/**
 * Header keys repeat from record to record, so the last key decoded at each header position (mod
 * KEY_CACHE_SLOTS) is kept with a copy of its bytes: equal bytes give the same string without a
 * UTF-8 decode. Only short keys are cached.
 */
const KEY_CACHE_SLOTS = 4;
const KEY_CACHE_MAX = 64;
const keyCacheBytes: Buffer[] = [];
const keyCacheStrings: string[] = [];
for (let i = 0; i < KEY_CACHE_SLOTS; i++) {
  keyCacheBytes.push(Buffer.alloc(0));
  keyCacheStrings.push('');
}

function headerKeyString(buf: Buffer, start: number, n: number, slot: number): string {
  const cached = keyCacheBytes[slot] as Buffer;
  if (cached.length === n) {
    let i = 0;
    while (i < n && buf[start + i] === cached[i]) i++;
    if (i === n) return keyCacheStrings[slot] as string;
  }
  const s = buf.toString('utf8', start, start + n);
  if (n <= KEY_CACHE_MAX) {
    keyCacheBytes[slot] = Buffer.from(buf.subarray(start, start + n));
    keyCacheStrings[slot] = s;
  }
  return s;
}

function varBytes(r: Reader): Buffer | null {
  const n = r.varint();
  if (n === -1) return null;
  if (n < -1) {
    r.fail(GregorErrorCode.INVALID_RECORD, `invalid length ${n}`);
    return null;
  }
  return r.raw(n);
}

function invalid(r: Reader, message: string): Record {
  r.fail(GregorErrorCode.INVALID_RECORD, `invalid record: ${message}`);
  return { offset: -1n, timestamp: -1n, key: null, value: null, headers: [], attributes: 0 };
}

function sizeVarBytes(v: Buffer | null): number {
  return v === null ? 1 : sizeVarint(v.length) + v.length;
}

/** Size of a record's body (everything after its length varint). */
export function recordBodySize(rec: RecordInput, offsetDelta: number, timestampDelta: bigint): number {
  let size = 1 + sizeVarlong(timestampDelta) + sizeVarint(offsetDelta) + sizeVarBytes(rec.key) + sizeVarBytes(rec.value);
  const headers = rec.headers ?? [];
  size += sizeVarint(headers.length);
  for (const h of headers) {
    const n = Buffer.byteLength(h.key, 'utf8');
    size += sizeVarint(n) + n + sizeVarBytes(h.value);
  }
  return size;
}

/** Size of a whole record including its length varint. */
export function recordSize(rec: RecordInput, offsetDelta: number, timestampDelta: bigint): number {
  const body = recordBodySize(rec, offsetDelta, timestampDelta);
  return sizeVarint(body) + body;
}

/** Writes one record; `bodySize` must come from `recordBodySize` with the same arguments. */
export function writeRecord(
  w: Writer,
  rec: RecordInput,
  offsetDelta: number,
  timestampDelta: bigint,
  bodySize: number,
  attributes = 0,
): void {
  w.varint(bodySize);
  w.int8(attributes);
  w.varlong(timestampDelta);
  w.varint(offsetDelta);
  writeVarBytes(w, rec.key);
  writeVarBytes(w, rec.value);
  const headers = rec.headers ?? [];
  w.varint(headers.length);
  for (const h of headers) {
    const key = Buffer.from(h.key, 'utf8');
    w.varint(key.length);
    w.raw(key);
    writeVarBytes(w, h.value);
  }
}

function writeVarBytes(w: Writer, v: Buffer | null): void {
  if (v === null) {
    w.varint(-1);
    return;
  }
  w.varint(v.length);
  w.raw(v);
}
