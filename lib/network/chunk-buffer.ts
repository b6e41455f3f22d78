/**
 * Bytes received from a socket and not yet framed: a list of chunks, the first one consumed up to
 * `headOffset`. A frame announced with expect() that will span chunks is assembled as its bytes
 * arrive (each chunk copied once into the frame while it is fresh in the cache, and released at
 * once), not gathered at the end: a TLS socket delivers 16 KB chunks, so a 1 MB produce request would
 * otherwise hold 64 chunks and copy them all when the last one lands.
 */
export class ChunkBuffer {
  private chunks: Buffer[] = [];
  private headOffset = 0;
  /** the frame being assembled (its first `frameFilled` bytes are here); while set, `chunks` is empty */
  private frame: Buffer | null = null;
  private frameFilled = 0;
  /** bytes held (in the frame being assembled and in chunks) */
  buffered = 0;
  /** the frame's unfilled tail as last handed out by room(), while the frame has not changed since */
  private roomView: Buffer | null = null;

  /**
   * The unfilled tail of the frame being assembled, for a socket read straight into it (see
   * direct-read.ts), or null when no frame is being assembled.
   */
  room(): Buffer | null {
    const frame = this.frame;
    if (frame === null || this.frameFilled >= frame.length) return null;
    this.roomView = frame.subarray(this.frameFilled);
    return this.roomView;
  }

  /**
   * `n` bytes were read into `buf`: the frame's tail from room() if that is still the tail (they are
   * then the frame's next bytes, in place), else a chunk like any other (copied into a frame
   * assembled since, or held).
   */
  pushRead(buf: Buffer, n: number): void {
    if (buf === this.roomView) {
      this.roomView = null;
      this.frameFilled += n;
      this.buffered += n;
      return;
    }
    this.push(n === buf.length ? buf : buf.subarray(0, n));
  }

  push(chunk: Buffer): void {
    const frame = this.frame;
    if (frame !== null && this.frameFilled < frame.length) {
      this.roomView = null;
      const need = frame.length - this.frameFilled;
      const n = Math.min(need, chunk.length);
      chunk.copy(frame, this.frameFilled, 0, n);
      this.frameFilled += n;
      this.buffered += n;
      if (n === chunk.length) return;
      chunk = chunk.subarray(n);
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  /**
   * The next take() will be of n bytes: if they are not all held yet and do not fit in the head
   * chunk, their buffer is allocated now and filled as chunks arrive.
   */
  expect(n: number): void {
    if (this.frame !== null || n <= this.buffered) return;
    const frame = Buffer.allocUnsafe(n);
    let filled = 0;
    for (let i = 0; i < this.chunks.length; i++) filled += this.chunks[i]!.copy(frame, filled, i === 0 ? this.headOffset : 0);
    this.chunks = [];
    this.headOffset = 0;
    this.frame = frame;
    this.frameFilled = filled;
  }

  /** Reads a 4-byte big-endian int32 (the caller checked that 4 bytes are held), which may straddle chunks. */
  takeInt32(): number {
    const head = this.chunks[0]!;
    if (this.frame === null && head.length - this.headOffset >= 4) {
      const v = head.readInt32BE(this.headOffset);
      this.consume(4);
      return v;
    }
    return this.take(4).readInt32BE(0);
  }

  /** Removes n held bytes: the assembled frame, a zero-copy view when they sit in one chunk, else one allocation. */
  take(n: number): Buffer {
    const frame = this.frame;
    if (frame !== null) {
      if (n !== frame.length || this.frameFilled !== n)
        throw new Error(`take(${n}) of a ${frame.length}-byte frame holding ${this.frameFilled}`);
      this.frame = null;
      this.frameFilled = 0;
      this.roomView = null;
      this.buffered -= n;
      return frame;
    }
    const head = this.chunks[0];
    if (n === 0) return Buffer.alloc(0);
    if (head !== undefined && head.length - this.headOffset >= n) {
      const out = head.subarray(this.headOffset, this.headOffset + n);
      this.consume(n);
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0]!;
      const len = Math.min(c.length - this.headOffset, n - filled);
      c.copy(out, filled, this.headOffset, this.headOffset + len);
      filled += len;
      this.consume(len);
    }
    return out;
  }

  clear(): void {
    this.chunks = [];
    this.headOffset = 0;
    this.frame = null;
    this.frameFilled = 0;
    this.roomView = null;
    this.buffered = 0;
  }

  private consume(n: number): void {
    this.buffered -= n;
    this.headOffset += n;
    const head = this.chunks[0];
    if (head !== undefined && this.headOffset === head.length) {
      this.chunks.shift();
      this.headOffset = 0;
    }
  }
}
