import type { TaggedField } from './reader.js';

/**
 * Exact-size writing: callers first add up the sizes (the `size*` helpers below), allocate once with
 * `Writer.alloc(size)`, then write. Writing past the end is a programming error (the size pass was
 * wrong) and throws.
 */

export function sizeUvarint(v: number): number {
  if (v < 0x80) return 1;
  if (v < 0x4000) return 2;
  if (v < 0x200000) return 3;
  if (v < 0x10000000) return 4;
  return 5;
}

export function sizeVarint(v: number): number {
  return sizeUvarint(v >= 0 ? v * 2 : -v * 2 - 1);
}

export function sizeVarlong(v: bigint): number {
  let u = v >= 0n ? v << 1n : (-v << 1n) - 1n;
  let n = 1;
  while (u >= 0x80n) {
    u >>= 7n;
    n++;
  }
  return n;
}

export function sizeString(v: string | null): number {
  return v === null ? 2 : 2 + Buffer.byteLength(v, 'utf8');
}

export function sizeCompactString(v: string | null): number {
  if (v === null) return 1;
  const n = Buffer.byteLength(v, 'utf8');
  return sizeUvarint(n + 1) + n;
}

export function sizeBytes(v: Buffer | null): number {
  return v === null ? 4 : 4 + v.length;
}

export function sizeCompactBytes(v: Buffer | null): number {
  return v === null ? 1 : sizeUvarint(v.length + 1) + v.length;
}

export function sizeCompactArrayLength(n: number): number {
  return sizeUvarint(n + 1);
}

/** Size of a tagged-field section holding `fields` (already-encoded values). */
export function sizeTaggedFields(fields: readonly TaggedField[] | undefined): number {
  if (fields === undefined || fields.length === 0) return 1;
  let size = sizeUvarint(fields.length);
  for (const f of fields) size += sizeUvarint(f.tag) + sizeUvarint(f.data.length) + f.data.length;
  return size;
}

function outOfRange(kind: string, v: number | bigint): RangeError {
  return new RangeError(`${String(v)} is out of range for ${kind}`);
}

export class Writer {
  readonly buf: Buffer;
  offset: number;
  // Fixed-width fields go through a DataView: V8 inlines its accessors, and int64 needs no BigInt
  // arithmetic (Buffer's writers are JS with argument checks, several times slower per field). Made
  // with the writer (one per encoded message): a plain field load per write, where a lazy getter
  // cost a call and a check on every field of a 10,000-partition Fetch response.
  private readonly view: DataView;

  constructor(buf: Buffer, offset = 0) {
    this.buf = buf;
    this.offset = offset;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  static alloc(size: number): Writer {
    return new Writer(Buffer.allocUnsafe(size));
  }

  int8(v: number): void {
    this.buf.writeInt8(v, this.offset);
    this.offset += 1;
  }

  uint8(v: number): void {
    this.buf.writeUInt8(v, this.offset);
    this.offset += 1;
  }

  bool(v: boolean): void {
    this.buf.writeUInt8(v ? 1 : 0, this.offset);
    this.offset += 1;
  }

  int16(v: number): void {
    if ((v << 16) >> 16 !== v) throw outOfRange('int16', v);
    this.view.setInt16(this.offset, v);
    this.offset += 2;
  }

  uint16(v: number): void {
    if ((v & 0xffff) !== v) throw outOfRange('uint16', v);
    this.view.setUint16(this.offset, v);
    this.offset += 2;
  }

  int32(v: number): void {
    if ((v | 0) !== v) throw outOfRange('int32', v);
    this.view.setInt32(this.offset, v);
    this.offset += 4;
  }

  uint32(v: number): void {
    if (v >>> 0 !== v) throw outOfRange('uint32', v);
    this.view.setUint32(this.offset, v);
    this.offset += 4;
  }

  int64(v: bigint): void {
    // One BigInt.asIntN (lowered by TurboFan) instead of two BigInt comparisons against the bounds.
    if (BigInt.asIntN(64, v) !== v) throw outOfRange('int64', v);
    this.view.setBigInt64(this.offset, v);
    this.offset += 8;
  }

  float64(v: number): void {
    this.view.setFloat64(this.offset, v);
    this.offset += 8;
  }

  /** A UUID given as 32 hex digits. */
  uuid(v: string): void {
    if (v.length !== 32) throw new TypeError(`uuid must be 32 hex digits, got ${JSON.stringify(v)}`);
    const n = this.buf.write(v, this.offset, 16, 'hex');
    if (n !== 16) throw new TypeError(`uuid must be 32 hex digits, got ${JSON.stringify(v)}`);
    this.offset += 16;
  }

  uvarint(v: number): void {
    if (v < 0x80 && v >= 0 && this.offset < this.buf.length) {
      // one byte: compact lengths of short arrays and strings, empty tagged-field sections
      this.buf[this.offset++] = v;
      return;
    }
    if (this.offset + sizeUvarint(v) > this.buf.length) throw new RangeError('write past the end of the buffer');
    while (v >= 0x80) {
      this.buf[this.offset++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.offset++] = v;
  }

  varint(v: number): void {
    this.uvarint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  varlong(v: bigint): void {
    let u = v >= 0n ? v << 1n : (-v << 1n) - 1n;
    while (u >= 0x80n) {
      this.uint8(Number(u & 0x7fn) | 0x80);
      u >>= 7n;
    }
    this.uint8(Number(u));
  }

  raw(v: Buffer): void {
    if (v.length === 0) return; // empty records of every caught-up fetch partition: skip TypedArray#set's call
    if (this.offset + v.length > this.buf.length) throw new RangeError('write past the end of the buffer');
    // TypedArray#set: same bytes as Buffer#copy without its JS argument handling (cheaper for small values).
    this.buf.set(v, this.offset);
    this.offset += v.length;
  }

  private utf8(v: string, n: number): void {
    if (this.offset + n > this.buf.length) throw new RangeError('write past the end of the buffer');
    this.buf.write(v, this.offset, n, 'utf8');
    this.offset += n;
  }

  /** int16-length string; null as -1. */
  string(v: string | null): void {
    if (v === null) {
      this.int16(-1);
      return;
    }
    const n = Buffer.byteLength(v, 'utf8');
    if (n > 0x7fff) throw new RangeError(`string of ${n} bytes is too long for an int16 length`);
    this.int16(n);
    this.utf8(v, n);
  }

  compactString(v: string | null): void {
    if (v === null) {
      this.uvarint(0);
      return;
    }
    const n = Buffer.byteLength(v, 'utf8');
    this.uvarint(n + 1);
    this.utf8(v, n);
  }

  bytes(v: Buffer | null): void {
    if (v === null) {
      this.int32(-1);
      return;
    }
    this.int32(v.length);
    this.raw(v);
  }

  compactBytes(v: Buffer | null): void {
    if (v === null) {
      this.uvarint(0);
      return;
    }
    this.uvarint(v.length + 1);
    this.raw(v);
  }

  arrayLength(n: number | null): void {
    this.int32(n === null ? -1 : n);
  }

  compactArrayLength(n: number | null): void {
    this.uvarint(n === null ? 0 : n + 1);
  }

  /** Writes a tagged-field section; `fields` must already be in ascending tag order. */
  taggedFields(fields: readonly TaggedField[] | undefined): void {
    if (fields === undefined || fields.length === 0) {
      this.uvarint(0);
      return;
    }
    this.uvarint(fields.length);
    for (const f of fields) {
      this.uvarint(f.tag);
      this.uvarint(f.data.length);
      this.raw(f.data);
    }
  }

  /** Checks that the size pass and the write pass agree, and returns the buffer. */
  done(): Buffer {
    if (this.offset !== this.buf.length) {
      throw new RangeError(`size pass said ${this.buf.length} bytes, write pass wrote ${this.offset}`);
    }
    return this.buf;
  }
}
