/**
 * Segment read buffers for Fetch, recycled (issue 14). A fetch reads ~1 MB windows of a segment; with
 * zero-copy responses the stored slices of that window travel to the socket by reference, so the
 * window lives until the socket write completes. Allocated afresh for every read, each window lands in
 * new memory (glibc serves large allocations with mmap and unmaps them on free): page faults on every
 * read. The pool hands out buffers of fixed sizes (powers of two, MIN_CLASS_BYTES to MAX_CLASS_BYTES)
 * and takes them back when the holder is done with every view of them.
 *
 * Contract: a lease is released once nothing refers to its bytes any more (the response was copied,
 * or the socket write carrying its slices completed, or the connection closed). A lease never
 * released is simply garbage collected, so a path that cannot tell when its views die does not
 * release: the pool forgets that buffer, nothing else happens. A buffer is in the free list only
 * after its release, and a release counts once, so a buffer is never handed out while a view of it
 * may still be read. The pool keeps at most `maxBytes` of free buffers (gregor.fetch.read.buffer.pool.bytes);
 * releases beyond that leave the buffer to the garbage collector.
 */

export const MIN_CLASS_BYTES = 64 << 10;
export const MAX_CLASS_BYTES = 8 << 20;
const MIN_SHIFT = 16;
const CLASSES = 23 - MIN_SHIFT + 1;

/** A buffer lent by a ReadBufferPool (or made for one read when the pool cannot serve it). */
export class ReadLease {
  private released = false;

  constructor(
    /** the whole buffer: at least the bytes asked for, views of it are what the holder passes on */
    readonly buf: Buffer,
    private readonly pool: ReadBufferPool | null,
  ) {}

  /** Gives the buffer back (idempotent). Only once no view of it will be read again. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.pool?.giveBack(this.buf);
  }
}

export interface ReadBufferPoolStats {
  /** leases served from the free list */
  reused: number;
  /** leases that allocated a buffer (a pooled size, or one larger than the largest) */
  allocated: number;
  /** releases the pool kept */
  kept: number;
  /** releases dropped because the free list was full */
  dropped: number;
}

export class ReadBufferPool {
  /** free buffers by size class (index 0: MIN_CLASS_BYTES) */
  private readonly free: Buffer[][] = Array.from({ length: CLASSES }, () => []);
  /** bytes in the free lists */
  private freeBytes = 0;
  readonly stats: ReadBufferPoolStats = { reused: 0, allocated: 0, kept: 0, dropped: 0 };

  /** `maxBytes`: the most bytes of free buffers kept (0: none, every lease allocates) */
  constructor(readonly maxBytes: number) {}

  /** Bytes held in the free lists. */
  get idleBytes(): number {
    return this.freeBytes;
  }

  /** A buffer of at least `bytes` bytes (uninitialised), to be released when no view of it is read any more. */
  lease(bytes: number): ReadLease {
    const c = classOf(bytes);
    if (c < 0 || this.maxBytes <= 0) {
      this.stats.allocated++;
      return new ReadLease(Buffer.allocUnsafeSlow(Math.max(0, bytes)), null);
    }
    const list = this.free[c] as Buffer[];
    const buf = list.pop();
    if (buf !== undefined) {
      this.freeBytes -= buf.length;
      this.stats.reused++;
      return new ReadLease(buf, this);
    }
    this.stats.allocated++;
    // its own ArrayBuffer (never a slice of Node's shared pool, which other code writes into)
    return new ReadLease(Buffer.allocUnsafeSlow(MIN_CLASS_BYTES << c), this);
  }

  /** Called by ReadLease.release. */
  giveBack(buf: Buffer): void {
    if (this.freeBytes + buf.length > this.maxBytes) {
      this.stats.dropped++;
      return;
    }
    const c = classOf(buf.length);
    if (c < 0 || MIN_CLASS_BYTES << c !== buf.length) return;
    (this.free[c] as Buffer[]).push(buf);
    this.freeBytes += buf.length;
    this.stats.kept++;
  }

  /** Drops the free buffers (broker shutdown). */
  clear(): void {
    for (const l of this.free) l.length = 0;
    this.freeBytes = 0;
  }
}

/** The size class holding `bytes` (the smallest power of two ≥ bytes, at least MIN_CLASS_BYTES); -1 above MAX_CLASS_BYTES. */
export function classOf(bytes: number): number {
  if (bytes > MAX_CLASS_BYTES) return -1;
  if (bytes <= MIN_CLASS_BYTES) return 0;
  return 32 - Math.clz32(bytes - 1) - MIN_SHIFT;
}

/** What a response holds until it has been written: a ReadLease, or a FileSlice's descriptor (file-slices.ts). */
export interface Releasable {
  release(): void;
}

/** Releases every lease of `leases` (a request's reads, once its response no longer needs them). */
export function releaseAll(leases: readonly Releasable[]): void {
  for (const l of leases) l.release();
}
