/**
 * The values a `records` field is encoded from (RecordsValue: one buffer, stored slices, or a
 * FileSlice) and what sizing them counts for a splicing writer (takeSplicedBytes); writer.ts encodes
 * them and re-exports all of this.
 */
import fs from 'node:fs';

/**
 * Stored bytes still in a file: [position, position + length) of the open descriptor `fd`, holding
 * `recordCount` records. A splicing writer passes one on as a chunk of its own, and the connection
 * sends it from the page cache with sendfile(2), as Kafka's FileRecords.writeTo does; a plain writer
 * reads the bytes (synchronously) and copies them like any others. Whoever makes one keeps `fd` open
 * until the response it is in has been written.
 */
export class FileSlice {
  constructor(
    readonly fd: number,
    readonly position: number,
    readonly length: number,
    readonly recordCount: number,
  ) {}

  /** Bytes [offset, offset + length) of the slice (all of it by default), read now; throws when the file ends first. */
  read(offset = 0, length = this.length - offset): Buffer {
    const out = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const n = fs.readSync(this.fd, out, got, length - got, this.position + offset + got);
      if (n === 0) throw new RangeError(`file slice of ${this.length} bytes at ${this.position} ends after ${offset + got}`);
      got += n;
    }
    return out;
  }
}

/** A part of a chunked (splicing) encoding: bytes in memory, or a FileSlice to be sent from its file. */
export type Chunk = Buffer | FileSlice;

/**
 * A `records` field's value when encoding: one buffer, the stored entries read from the log as they
 * are (slices, in order), which a splicing writer passes on without copying them, or a FileSlice.
 */
export type RecordsValue = Buffer | readonly Buffer[] | FileSlice;

/**
 * A run of adjacent slices at least this long is spliced into a chunked response rather than copied
 * (see Writer.splicing): below it, copying costs less than another chunk on the socket.
 */
export const SPLICE_MIN_BYTES = 1024;

/**
 * Bytes of the `records` values sized since the last takeSplicedBytes() that a splicing writer will
 * pass by reference. The size functions return one number, so the size pass adds the zero-copy part
 * here as it goes (Kafka's MessageSizeAccumulator keeps the two counts side by side); the pass is
 * synchronous, so whoever sizes a message with splicing in mind reads it right after.
 */
let splicedBytes = 0;

/** The zero-copy bytes counted since the last call (see splicedBytes); starts the count again. */
export function takeSplicedBytes(): number {
  const n = splicedBytes;
  splicedBytes = 0;
  return n;
}

/** Total bytes of a records value. */
export function recordsLength(v: RecordsValue): number {
  if (Buffer.isBuffer(v) || v instanceof FileSlice) return v.length;
  let n = 0;
  for (let i = 0; i < v.length; i++) n += (v[i] as Buffer).length;
  return n;
}

/** A records value as one buffer (joined, a copy, when it is several slices): for readers that need one. */
export function recordsBuffer(v: RecordsValue): Buffer {
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof FileSlice) return v.read();
  return v.length === 1 ? (v[0] as Buffer) : Buffer.concat(v);
}

/** A records value as its list of slices. */
export function recordsSlices(v: RecordsValue): readonly Buffer[] {
  if (v instanceof FileSlice) return [v.read()];
  return Buffer.isBuffer(v) ? [v] : v;
}

/** Whether b starts in memory exactly where a ends (two slices of one read), so that one view covers both. */
function adjacent(a: Buffer, b: Buffer): boolean {
  return a.buffer === b.buffer && a.byteOffset + a.length === b.byteOffset;
}

/**
 * Calls `run(first, last, bytes)` for each run of adjacent slices in v (indexes inclusive). Sizing and
 * writing both walk runs this way, so they agree on what is spliced.
 */
export function forEachRun(v: readonly Buffer[], run: (first: number, last: number, bytes: number) => void): void {
  let first = 0;
  let bytes = 0;
  for (let i = 0; i < v.length; i++) {
    const b = v[i] as Buffer;
    if (i > first && !adjacent(v[i - 1] as Buffer, b)) {
      run(first, i - 1, bytes);
      first = i;
      bytes = 0;
    }
    bytes += b.length;
  }
  if (v.length > 0) run(first, v.length - 1, bytes);
}

export function countSpliced(v: RecordsValue): number {
  if (v instanceof FileSlice) {
    splicedBytes += v.length; // always a chunk of its own: its bytes are not in memory
    return v.length;
  }
  if (Buffer.isBuffer(v)) {
    if (v.length >= SPLICE_MIN_BYTES) splicedBytes += v.length;
    return v.length;
  }
  let n = 0;
  forEachRun(v, (_f, _l, bytes) => {
    n += bytes;
    if (bytes >= SPLICE_MIN_BYTES) splicedBytes += bytes;
  });
  return n;
}
