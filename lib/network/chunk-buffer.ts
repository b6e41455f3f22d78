/** Bytes received from a socket and not yet framed: a list of chunks, the first one consumed up to `headOffset`. */
export class ChunkBuffer {
  private chunks: Buffer[] = [];
  private headOffset = 0;
  /** bytes held */
  buffered = 0;

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  /** Reads a 4-byte big-endian int32 (the caller checked that 4 bytes are held), which may straddle chunks. */
  takeInt32(): number {
    const head = this.chunks[0]!;
    if (head.length - this.headOffset >= 4) {
      const v = head.readInt32BE(this.headOffset);
      this.consume(4);
      return v;
    }
    return this.take(4).readInt32BE(0);
  }

  /** Removes n held bytes: a zero-copy view when they sit in one chunk, else one allocation. */
  take(n: number): Buffer {
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
