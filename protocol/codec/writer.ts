import type { TaggedField } from './reader.js';
import { type Chunk, countSpliced, FileSlice, forEachRun, recordsLength, type RecordsValue, SPLICE_MIN_BYTES } from './records-value.js';

export {
  type Chunk,
  FileSlice,
  recordsBuffer,
  recordsLength,
  recordsSlices,
  type RecordsValue,
  SPLICE_MIN_BYTES,
  takeSplicedBytes,
} from './records-value.js';

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

/** Ids kept by Writer.uuid before the table is emptied and filled again (a cluster's topics, with room). */
const UUID_KEPT = 10_000;
/** Each UUID string written, as its four big-endian int32s. */
const uuidWords = new Map<string, readonly [number, number, number, number]>();

/** Size of a records field (int32 length; null as -1); counts its zero-copy part (takeSplicedBytes). */
export function sizeRecords(v: RecordsValue | null): number {
  return v === null ? 4 : 4 + countSpliced(v);
}

/** Size of a records field in a flexible version (compact length). */
export function sizeCompactRecords(v: RecordsValue | null): number {
  if (v === null) return 1;
  const n = countSpliced(v);
  return sizeUvarint(n + 1) + n;
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

/**
 * A struct's encoding kept with the value that produced it (the structs the generator marks: see
 * ENCODED_ONCE in scripts/protocol-emit.ts). The first write of a value carrying one fills it; later
 * writes and sizes of that value in the same version copy the bytes instead of encoding its fields.
 * Whoever attaches it keeps the value unchanged from then on.
 */
export interface EncodedOnce {
  version: number;
  bytes: Buffer | null;
}

/** An empty EncodedOnce, for a value to be encoded once. */
export function encodeOnce(): EncodedOnce {
  return { version: -1, bytes: null };
}

/**
 * Size of an EncodedOnce's bytes; counts them as zero-copy (takeSplicedBytes) when a splicing writer
 * will pass them by reference (see Writer.encoded).
 */
export function sizeEncoded(bytes: Buffer): number {
  return countSpliced(bytes);
}

export class Writer {
  readonly buf: Buffer;
  offset: number;
  /**
   * A splicing writer (Writer.splicing): the chunks finished so far, the buffer's written parts and
   * spliced records in order; null for a plain writer, which copies records like any bytes.
   */
  private readonly chunks: Chunk[] | null;
  /** where the buffer's current (unfinished) chunk starts */
  private chunkStart = 0;
  // Fixed-width fields go through a DataView: V8 inlines its accessors, and int64 needs no BigInt
  // arithmetic (Buffer's writers are JS with argument checks, several times slower per field). Made
  // with the writer (one per encoded message): a plain field load per write, where a lazy getter
  // cost a call and a check on every field of a 10,000-partition Fetch response.
  private readonly view: DataView;

  constructor(buf: Buffer, offset = 0, splice = false) {
    this.buf = buf;
    this.offset = offset;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.chunks = splice ? [] : null;
  }

  static alloc(size: number): Writer {
    return new Writer(Buffer.allocUnsafe(size));
  }

  /**
   * A writer whose records fields pass runs of at least SPLICE_MIN_BYTES by reference: `size` is the
   * whole message's size and `spliced` the part takeSplicedBytes() counted in its size pass; only the
   * rest is allocated. doneChunks() returns the message as a list of buffers.
   */
  static splicing(size: number, spliced: number): Writer {
    return new Writer(Buffer.allocUnsafe(size - spliced), 0, spliced > 0);
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

  /**
   * A UUID given as 32 hex digits. Responses name the same few topic ids over and over, so each id's
   * 16 bytes are kept (uuidWords, as four int32s) and written, not parsed from hex each time.
   */
  uuid(v: string): void {
    let words = uuidWords.get(v);
    if (words === undefined) {
      if (v.length !== 32) throw new TypeError(`uuid must be 32 hex digits, got ${JSON.stringify(v)}`);
      const bytes = Buffer.alloc(16);
      if (bytes.write(v, 0, 16, 'hex') !== 16) throw new TypeError(`uuid must be 32 hex digits, got ${JSON.stringify(v)}`);
      words = [bytes.readInt32BE(0), bytes.readInt32BE(4), bytes.readInt32BE(8), bytes.readInt32BE(12)];
      if (uuidWords.size >= UUID_KEPT) uuidWords.clear();
      uuidWords.set(v, words);
    }
    const dv = this.view;
    const o = this.offset;
    dv.setInt32(o, words[0]);
    dv.setInt32(o + 4, words[1]);
    dv.setInt32(o + 8, words[2]);
    dv.setInt32(o + 12, words[3]);
    this.offset = o + 16;
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

  /**
   * An EncodedOnce's bytes: passed by reference by a splicing writer when at least SPLICE_MIN_BYTES
   * (as sizeEncoded counted them), copied otherwise, as a records value's bytes are. They never change once made, so the same bytes
   * can be on several responses' way to the socket at once.
   */
  encoded(bytes: Buffer): void {
    this.recordBytes(bytes);
  }

  /**
   * A copy of what was written since offset `start` (an EncodedOnce's bytes); null when a records
   * value was spliced in meanwhile, as those bytes are not in this buffer.
   */
  since(start: number): Buffer | null {
    if (this.chunks !== null && this.chunkStart > start) return null;
    return Buffer.from(this.buf.subarray(start, this.offset));
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

  /** A records field: int32 length (null as -1), then the bytes (see Writer.splicing). */
  records(v: RecordsValue | null): void {
    if (v === null) {
      this.int32(-1);
      return;
    }
    if (Buffer.isBuffer(v)) {
      this.int32(v.length);
      this.recordBytes(v);
      return;
    }
    if (v instanceof FileSlice) {
      this.int32(v.length);
      this.fileSlice(v);
      return;
    }
    this.int32(recordsLength(v));
    this.recordSlices(v);
  }

  /** A records field in a flexible version: compact length (null as 0), then the bytes. */
  compactRecords(v: RecordsValue | null): void {
    if (v === null) {
      this.uvarint(0);
      return;
    }
    if (Buffer.isBuffer(v)) {
      this.uvarint(v.length + 1);
      this.recordBytes(v);
      return;
    }
    if (v instanceof FileSlice) {
      this.uvarint(v.length + 1);
      this.fileSlice(v);
      return;
    }
    this.uvarint(recordsLength(v) + 1);
    this.recordSlices(v);
  }

  private recordBytes(v: Buffer): void {
    if (this.chunks !== null && v.length >= SPLICE_MIN_BYTES) this.splice(v);
    else this.raw(v);
  }

  private recordSlices(v: readonly Buffer[]): void {
    if (v.length === 1) {
      this.recordBytes(v[0] as Buffer);
      return;
    }
    forEachRun(v, (first, last, bytes) => {
      if (this.chunks !== null && bytes >= SPLICE_MIN_BYTES) {
        const a = v[first] as Buffer;
        // adjacent slices of one read go out as one view of it
        this.splice(first === last ? a : Buffer.from(a.buffer, a.byteOffset, bytes));
      } else for (let i = first; i <= last; i++) this.raw(v[i] as Buffer);
    });
  }

  /** A FileSlice: a chunk of its own for a splicing writer, its bytes read and copied for a plain one. */
  private fileSlice(v: FileSlice): void {
    if (this.chunks !== null) this.splice(v);
    else this.raw(v.read());
  }

  /** Ends the current chunk and adds `v` after it as it is. */
  private splice(v: Chunk): void {
    const chunks = this.chunks as Chunk[];
    if (this.offset > this.chunkStart) chunks.push(this.buf.subarray(this.chunkStart, this.offset));
    chunks.push(v);
    this.chunkStart = this.offset;
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

  /** done() for a splicing writer: the message as a list of chunks (one buffer, when nothing was spliced). */
  doneChunks(): Chunk[] {
    const buf = this.done();
    if (this.chunks === null || this.chunks.length === 0) return [buf];
    if (this.offset > this.chunkStart) this.chunks.push(buf.subarray(this.chunkStart, this.offset));
    return this.chunks;
  }
}
