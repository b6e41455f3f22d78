import { GregorErrorCode, ProtocolError } from './errors.js';
import { smallInt64 } from './int64.js';

const ZERO_UUID = '00000000000000000000000000000000';

/** Slots of the decoded-UUID table (a power of two): one id per slot, a colliding id replaces it. */
const UUID_SLOTS = 256;
/** Each slot's id as four big-endian int32s, and its string (undefined: empty slot). */
const uuidWords = new Int32Array(UUID_SLOTS * 4);
const uuidStrings: (string | undefined)[] = new Array<string | undefined>(UUID_SLOTS).fill(undefined);

/**
 * Readers over small buffers share one DataView per ArrayBuffer: a request frame of up to 4 KiB is a
 * slice of Node's 8 KiB allocation pool, so consecutive requests mostly sit in the same ArrayBuffer and
 * need no new view. Larger ArrayBuffers get a view of their own and are not kept here (a 100 MB frame
 * is not held alive by the last reader's cache).
 */
const SHARED_VIEW_MAX_BYTES = 64 * 1024;
let sharedBuffer: ArrayBufferLike | null = null;
let sharedView: DataView | null = null;

/** A DataView over the whole of `ab` (reads add the buffer's byteOffset). */
function viewOver(ab: ArrayBufferLike): DataView {
  if (ab === sharedBuffer && sharedView !== null) return sharedView;
  const dv = new DataView(ab);
  if (ab.byteLength <= SHARED_VIEW_MAX_BYTES) {
    sharedBuffer = ab;
    sharedView = dv;
  }
  return dv;
}

/**
 * Short strings (topic names, ids) are kept in a small table keyed by their bytes, as UUIDs are:
 * a repeated one is a hash and a compare over its bytes, not a call into the UTF-8 decoder and a new
 * string. Slots hold up to STRING_MAX_BYTES bytes; a colliding string replaces the slot's.
 */
const STRING_SLOTS = 256;
const STRING_MAX_BYTES = 64;
const stringBytes = new Uint8Array(STRING_SLOTS * STRING_MAX_BYTES);
const stringLengths = new Int32Array(STRING_SLOTS);
const strings: (string | undefined)[] = new Array<string | undefined>(STRING_SLOTS).fill(undefined);

/** An unknown tagged field, kept verbatim so that it survives a decode → encode round trip. */
export interface TaggedField {
  tag: number;
  data: Buffer;
}

/**
 * A cursor over a Buffer with a sticky error. The first malformed or truncated read records a
 * ProtocolError and moves the cursor to the end; every later read returns a zero value, so decoders
 * never loop on garbage. Call `finish()` (or check `error`) once the message is read.
 */
export class Reader {
  readonly buf: Buffer;
  offset: number;
  readonly end: number;
  error: ProtocolError | undefined;
  // Fixed-width fields go through a DataView (inlined by V8; int64 without BigInt arithmetic), one
  // over the whole ArrayBuffer (viewOver): reads add `base`, the buffer's byteOffset. Every read is
  // bounded by need() against `end` first, so none strays outside `buf`.
  private dv: DataView | undefined;
  private readonly base: number;

  constructor(buf: Buffer, offset = 0, end = buf.length) {
    this.buf = buf;
    this.offset = offset;
    // never past the buffer: the shared view would read a neighbour's bytes where a view of `buf` threw
    this.end = end > buf.length ? buf.length : end;
    this.error = undefined;
    this.dv = undefined;
    this.base = buf.byteOffset;
  }

  private get view(): DataView {
    return (this.dv ??= viewOver(this.buf.buffer));
  }

  get remaining(): number {
    return this.end - this.offset;
  }

  /** Records the first error; later reads return zero values. Returns false for convenient chaining. */
  fail(code: GregorErrorCode, message: string): false {
    if (this.error === undefined) this.error = new ProtocolError(code, `${message} at offset ${this.offset}`);
    this.offset = this.end;
    return false;
  }

  /** Throws the sticky error if one was recorded. */
  check(): void {
    if (this.error !== undefined) throw this.error;
  }

  /** Throws the sticky error, or an error if unread bytes remain and `exact` is set. */
  finish(exact = false): void {
    this.check();
    if (exact && this.offset !== this.end) {
      throw new ProtocolError(GregorErrorCode.TRAILING_BYTES, `${this.end - this.offset} unread bytes`);
    }
  }

  private need(n: number): boolean {
    if (this.end - this.offset >= n) return true;
    return this.fail(GregorErrorCode.TRUNCATED, `need ${n} bytes, have ${this.end - this.offset}`);
  }

  int8(): number {
    if (!this.need(1)) return 0;
    return this.buf.readInt8(this.offset++);
  }

  uint8(): number {
    if (!this.need(1)) return 0;
    return this.buf[this.offset++] ?? 0;
  }

  bool(): boolean {
    return this.int8() !== 0;
  }

  int16(): number {
    if (!this.need(2)) return 0;
    const v = this.view.getInt16(this.base + this.offset);
    this.offset += 2;
    return v;
  }

  uint16(): number {
    if (!this.need(2)) return 0;
    const v = this.view.getUint16(this.base + this.offset);
    this.offset += 2;
    return v;
  }

  int32(): number {
    if (!this.need(4)) return 0;
    const v = this.view.getInt32(this.base + this.offset);
    this.offset += 4;
    return v;
  }

  uint32(): number {
    if (!this.need(4)) return 0;
    const v = this.view.getUint32(this.base + this.offset);
    this.offset += 4;
    return v;
  }

  /**
   * Offsets, epochs and ids are mostly small: those are read as two int32 halves and made a BigInt
   * from the number (0 and -1, the commonest, are constants and allocate nothing), which is several
   * times cheaper than DataView#getBigInt64 on Node 20. Anything beyond 2^53 takes the general path.
   */
  int64(): bigint {
    if (!this.need(8)) return 0n;
    const dv = this.view;
    const at = this.base + this.offset;
    const v = smallInt64(dv.getInt32(at), dv.getUint32(at + 4)) ?? dv.getBigInt64(at);
    this.offset += 8;
    return v;
  }

  float64(): number {
    if (!this.need(8)) return 0;
    const v = this.view.getFloat64(this.base + this.offset);
    this.offset += 8;
    return v;
  }

  /**
   * A UUID as 32 lowercase hex digits. Every Fetch request from v13 on names its topics by id, so the
   * strings are kept in a small table keyed by the bytes (UUID_SLOTS): a repeated id is four int32
   * reads and compares, not a call into the hex encoder and a new string.
   */
  uuid(): string {
    if (!this.need(16)) return ZERO_UUID;
    const o = this.offset;
    const dv = this.view;
    const at = this.base + o;
    const a = dv.getInt32(at);
    const b = dv.getInt32(at + 4);
    const c = dv.getInt32(at + 8);
    const d = dv.getInt32(at + 12);
    this.offset = o + 16;
    const slot = (a ^ b ^ c ^ d ^ (d >>> 16)) & (UUID_SLOTS - 1);
    const w = slot * 4;
    const known = uuidStrings[slot];
    if (known !== undefined && uuidWords[w] === a && uuidWords[w + 1] === b && uuidWords[w + 2] === c && uuidWords[w + 3] === d)
      return known;
    const v = this.buf.toString('hex', o, o + 16);
    uuidWords[w] = a;
    uuidWords[w + 1] = b;
    uuidWords[w + 2] = c;
    uuidWords[w + 3] = d;
    uuidStrings[slot] = v;
    return v;
  }

  /**
   * Unsigned LEB128 varint of at most 5 bytes (32 bits). The first four bytes (28 bits) are combined
   * with int32 bit operations; only the fifth byte needs float arithmetic.
   */
  uvarint(): number {
    const buf = this.buf;
    const end = this.end;
    let off = this.offset;
    let result = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      if (off >= end) {
        this.offset = off;
        this.need(1);
        return 0;
      }
      const b = buf[off++] as number;
      result |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.offset = off;
        return result;
      }
    }
    if (off >= end) {
      this.offset = off;
      this.need(1);
      return 0;
    }
    const b = buf[off++] as number;
    this.offset = off;
    if (b >= 0x80) {
      this.fail(GregorErrorCode.VARINT_TOO_LONG, 'uvarint longer than 5 bytes');
      return 0;
    }
    const v = result + b * 0x10000000;
    if (v <= 0xffffffff) return v;
    this.fail(GregorErrorCode.VARINT_TOO_LONG, 'uvarint over 32 bits');
    return 0;
  }

  /** Zigzag-encoded signed varint (record fields), 32 bits. */
  varint(): number {
    const u = this.uvarint();
    // u is at most 0xffffffff, so >>> keeps every bit and the result is the int32 zigzag decoding.
    return (u >>> 1) ^ -(u & 1);
  }

  /**
   * Zigzag-encoded signed varlong (record fields), 64 bits. Values of up to 7 bytes (49 bits) are
   * decoded with float arithmetic, which is exact there, and converted to a bigint once.
   */
  varlong(): bigint {
    const buf = this.buf;
    const end = this.end;
    let off = this.offset;
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 7; i++) {
      if (off >= end) break;
      const b = buf[off++] as number;
      result += (b & 0x7f) * scale;
      if (b < 0x80) {
        this.offset = off;
        return BigInt(result % 2 === 0 ? result / 2 : -(result + 1) / 2);
      }
      scale *= 128;
    }
    return this.varlongSlow();
  }

  private varlongSlow(): bigint {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (!this.need(1)) return 0n;
      const b = this.buf[this.offset++] ?? 0;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return (result >> 1n) ^ -(result & 1n);
      shift += 7n;
    }
    this.fail(GregorErrorCode.VARINT_TOO_LONG, 'varlong longer than 10 bytes');
    return 0n;
  }

  /** Takes `n` bytes as a view (no copy). Fails before allocating when `n` exceeds what remains. */
  raw(n: number): Buffer {
    if (n < 0) {
      this.fail(GregorErrorCode.NEGATIVE_LENGTH, `negative length ${n}`);
      return Buffer.alloc(0);
    }
    if (n > this.end - this.offset) {
      this.fail(GregorErrorCode.LENGTH_EXCEEDS_FRAME, `length ${n} exceeds the ${this.end - this.offset} remaining bytes`);
      return Buffer.alloc(0);
    }
    // Same view as subarray(), built directly over the ArrayBuffer: markedly cheaper per call on Node 20.
    const v = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.offset, n);
    this.offset += n;
    return v;
  }

  private utf8(n: number): string {
    if (n > this.end - this.offset) {
      this.fail(GregorErrorCode.LENGTH_EXCEEDS_FRAME, `string length ${n} exceeds the ${this.end - this.offset} remaining bytes`);
      return '';
    }
    const o = this.offset;
    this.offset = o + n;
    if (n === 0) return '';
    if (n > STRING_MAX_BYTES) return this.buf.toString('utf8', o, o + n);
    const buf = this.buf;
    let h = n;
    for (let i = o; i < o + n; i++) h = Math.imul(h ^ (buf[i] as number), 0x01000193);
    const slot = (h ^ (h >>> 15)) & (STRING_SLOTS - 1);
    const at = slot * STRING_MAX_BYTES;
    const known = strings[slot];
    if (known !== undefined && stringLengths[slot] === n) {
      let i = 0;
      while (i < n && stringBytes[at + i] === buf[o + i]) i++;
      if (i === n) return known;
    }
    const v = buf.toString('utf8', o, o + n);
    for (let i = 0; i < n; i++) stringBytes[at + i] = buf[o + i] as number;
    stringLengths[slot] = n;
    strings[slot] = v;
    return v;
  }

  /** int16-length string; -1 is null. */
  nullableString(): string | null {
    const n = this.int16();
    if (n === -1) return null;
    if (n < 0) {
      this.fail(GregorErrorCode.NEGATIVE_LENGTH, `negative string length ${n}`);
      return '';
    }
    return this.utf8(n);
  }

  string(): string {
    const v = this.nullableString();
    if (v === null) {
      this.fail(GregorErrorCode.NULL_NOT_ALLOWED, 'null string in a non-nullable field');
      return '';
    }
    return v;
  }

  /** Compact string: uvarint N+1, 0 is null. */
  compactNullableString(): string | null {
    const n = this.uvarint();
    if (n === 0) return null;
    return this.utf8(n - 1);
  }

  compactString(): string {
    const v = this.compactNullableString();
    if (v === null) {
      this.fail(GregorErrorCode.NULL_NOT_ALLOWED, 'null compact string in a non-nullable field');
      return '';
    }
    return v;
  }

  /** int32-length bytes (a view); -1 is null. */
  nullableBytes(): Buffer | null {
    const n = this.int32();
    if (n === -1) return null;
    return this.raw(n);
  }

  bytes(): Buffer {
    const v = this.nullableBytes();
    if (v === null) {
      this.fail(GregorErrorCode.NULL_NOT_ALLOWED, 'null bytes in a non-nullable field');
      return Buffer.alloc(0);
    }
    return v;
  }

  compactNullableBytes(): Buffer | null {
    const n = this.uvarint();
    if (n === 0) return null;
    return this.raw(n - 1);
  }

  compactBytes(): Buffer {
    const v = this.compactNullableBytes();
    if (v === null) {
      this.fail(GregorErrorCode.NULL_NOT_ALLOWED, 'null compact bytes in a non-nullable field');
      return Buffer.alloc(0);
    }
    return v;
  }

  /**
   * Array length (int32, -1 null) checked against the bytes that remain: every element takes at least
   * one byte on the wire in every schema we read, so a count larger than the remaining bytes is refused
   * before any array is allocated. Returns -1 for null.
   */
  arrayLength(): number {
    const n = this.int32();
    return this.checkCount(n);
  }

  /** Compact array length (uvarint N+1, 0 null); -1 for null. */
  compactArrayLength(): number {
    const n = this.uvarint() - 1;
    return this.checkCount(n);
  }

  private checkCount(n: number): number {
    if (n < -1) {
      this.fail(GregorErrorCode.NEGATIVE_LENGTH, `negative array length ${n}`);
      return 0;
    }
    if (n > this.end - this.offset) {
      this.fail(GregorErrorCode.LENGTH_EXCEEDS_FRAME, `array length ${n} exceeds the ${this.end - this.offset} remaining bytes`);
      return 0;
    }
    return n;
  }

  /**
   * Reads a tagged-field section, handing each known tag to `onTag` (which reads the value through
   * this reader, bounded to the field's size) and returning the unknown ones verbatim.
   */
  taggedFields(onTag?: (tag: number, r: Reader) => boolean): TaggedField[] | undefined {
    return this.taggedFieldsOf(this.uvarint(), onTag);
  }

  /**
   * The same after the section's field count was read (the generated readers check for an empty
   * section, by far the common case, before they build an `onTag` callback).
   */
  taggedFieldsOf(count: number, onTag?: (tag: number, r: Reader) => boolean): TaggedField[] | undefined {
    let unknown: TaggedField[] | undefined;
    for (let i = 0; i < count && this.error === undefined; i++) {
      const tag = this.uvarint();
      const size = this.uvarint();
      const data = this.raw(size);
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- raw() sets this.error, which narrowing does not see
      if (this.error !== undefined) break;
      if (onTag !== undefined) {
        const sub = new Reader(data);
        if (onTag(tag, sub)) {
          if (sub.error !== undefined) {
            this.fail(sub.error.code, `tagged field ${tag}: ${sub.error.message}`);
          }
          continue;
        }
      }
      (unknown ??= []).push({ tag, data });
    }
    return unknown;
  }
}

export { ZERO_UUID };
