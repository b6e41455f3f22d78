/**
 * Sparse in-memory indexes of one segment, in Kafka's file formats:
 * `.index`: relative offset int32 → position int32 (8 bytes per entry, keyed by a batch's last offset);
 * `.timeindex`: timestamp int64 → relative offset int32 (12 bytes, keyed by the max timestamp so far).
 * Entries are appended to the files as they are persisted; a truncation below the persisted part
 * rewrites the file.
 */

const INT32_MAX = 2147483647;

abstract class SparseIndex {
  readonly baseOffset: bigint;
  readonly maxEntries: number;
  protected count = 0;
  /** Entries already written to the file. */
  persisted = 0;
  /** The file holds entries we no longer have: rewrite it whole. */
  needsRewrite = false;
  abstract readonly entrySize: number;

  constructor(baseOffset: bigint, maxEntries: number) {
    this.baseOffset = baseOffset;
    this.maxEntries = Math.max(1, maxEntries);
  }
  get entries(): number {
    return this.count;
  }
  get isFull(): boolean {
    return this.count >= this.maxEntries;
  }
  protected rel(offset: bigint): number {
    const r = offset - this.baseOffset;
    if (r < 0n || r > BigInt(INT32_MAX)) throw new RangeError(`offset ${offset} does not fit segment ${this.baseOffset}`);
    return Number(r);
  }
  protected dropFrom(n: number): void {
    if (n >= this.count) return;
    this.count = n;
    if (n < this.persisted) {
      this.persisted = n;
      this.needsRewrite = true;
    }
  }
  /** File bytes of entries [from, count). */
  abstract serialize(from: number): Buffer;
  clear(): void {
    this.dropFrom(0);
  }
}

/**
 * The arrays of an index with no entries, shared: most segments of a wide topic are small enough to
 * hold none (one entry per index.interval.bytes), and four empty typed arrays of their own cost a
 * segment ~700 bytes of heap (10,000 partitions: 7 MB). Never written: grow() replaces them first.
 */
const NO_INT32 = new Int32Array(0);
const NO_INT64 = new BigInt64Array(0);

function grow<T extends Int32Array | BigInt64Array>(a: T, need: number, make: (n: number) => T): T {
  if (need <= a.length) return a;
  const b = make(Math.max(need, a.length * 2, 64));
  b.set(a as never);
  return b;
}

export class OffsetIndex extends SparseIndex {
  readonly entrySize = 8;
  private rels = NO_INT32;
  private positions = NO_INT32;

  /** Adds (offset → position) if it moves both forward; entries are keyed by a batch's last offset. */
  append(offset: bigint, position: number): boolean {
    const rel = this.rel(offset);
    if (this.isFull) return false;
    if (this.count > 0 && (rel <= (this.rels[this.count - 1] ?? -1) || position <= (this.positions[this.count - 1] ?? -1))) return false;
    this.rels = grow(this.rels, this.count + 1, (n) => new Int32Array(n));
    this.positions = grow(this.positions, this.count + 1, (n) => new Int32Array(n));
    this.rels[this.count] = rel;
    this.positions[this.count] = position;
    this.count++;
    return true;
  }

  /** Largest entry with offset <= target, or (baseOffset, 0) when none: where a scan for target starts. */
  lookup(target: bigint): { offset: bigint; position: number } {
    const i = this.floor(target);
    if (i < 0) return { offset: this.baseOffset, position: 0 };
    return { offset: this.baseOffset + BigInt(this.rels[i] ?? 0), position: this.positions[i] ?? 0 };
  }
  /** Position of the first entry with offset > target (-1: none): where the entry holding target starts at the latest. */
  positionAfter(target: bigint): number {
    const i = this.floor(target) + 1;
    return i < this.count ? (this.positions[i] ?? -1) : -1;
  }
  private floor(target: bigint): number {
    if (target < this.baseOffset) return -1;
    const t = target - this.baseOffset > BigInt(INT32_MAX) ? INT32_MAX : Number(target - this.baseOffset);
    let lo = 0;
    let hi = this.count - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.rels[mid] ?? 0) <= t) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }
  last(): { offset: bigint; position: number } | null {
    if (this.count === 0) return null;
    return { offset: this.baseOffset + BigInt(this.rels[this.count - 1] ?? 0), position: this.positions[this.count - 1] ?? 0 };
  }
  /** Drops entries at or after a byte position (after the log was truncated there). */
  truncateToPosition(position: number): void {
    let n = this.count;
    while (n > 0 && (this.positions[n - 1] ?? 0) >= position) n--;
    this.dropFrom(n);
  }
  serialize(from: number): Buffer {
    const out = Buffer.allocUnsafe((this.count - from) * 8);
    for (let i = from; i < this.count; i++) {
      out.writeInt32BE(this.rels[i] ?? 0, (i - from) * 8);
      out.writeInt32BE(this.positions[i] ?? 0, (i - from) * 8 + 4);
    }
    return out;
  }
  /** Parses an index file; null when it is not a sane index for a log of `logSize` bytes. */
  static parse(buf: Buffer, baseOffset: bigint, maxEntries: number, logSize: number): OffsetIndex | null {
    if (buf.length % 8 !== 0) return null;
    const idx = new OffsetIndex(baseOffset, Math.max(maxEntries, buf.length / 8));
    for (let p = 0; p < buf.length; p += 8) {
      const rel = buf.readInt32BE(p);
      const pos = buf.readInt32BE(p + 4);
      if (rel < 0 || pos < 0 || pos >= logSize) return null;
      if (!idx.append(baseOffset + BigInt(rel), pos)) return null;
    }
    idx.persisted = idx.count;
    return idx;
  }
}

export class TimeIndex extends SparseIndex {
  readonly entrySize = 12;
  private timestamps = NO_INT64;
  private rels = NO_INT32;

  /** Adds (timestamp → offset) when the timestamp grew since the last entry (Kafka's maybeAppend). */
  maybeAppend(timestamp: bigint, offset: bigint, force = false): boolean {
    if (timestamp < 0n || (this.isFull && !force)) return false;
    const rel = this.rel(offset);
    if (this.count > 0) {
      if (timestamp <= (this.timestamps[this.count - 1] ?? -1n)) return false;
      if (rel < (this.rels[this.count - 1] ?? 0)) return false;
    }
    this.timestamps = grow(this.timestamps, this.count + 1, (n) => new BigInt64Array(n));
    this.rels = grow(this.rels, this.count + 1, (n) => new Int32Array(n));
    this.timestamps[this.count] = timestamp;
    this.rels[this.count] = rel;
    this.count++;
    return true;
  }
  /** Largest entry with timestamp <= target: the offset a search for target can start from. */
  lookup(target: bigint): { timestamp: bigint; offset: bigint } {
    let lo = 0;
    let hi = this.count - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.timestamps[mid] ?? 0n) <= target) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found < 0) return { timestamp: -1n, offset: this.baseOffset };
    return { timestamp: this.timestamps[found] ?? -1n, offset: this.baseOffset + BigInt(this.rels[found] ?? 0) };
  }
  last(): { timestamp: bigint; offset: bigint } | null {
    if (this.count === 0) return null;
    return { timestamp: this.timestamps[this.count - 1] ?? -1n, offset: this.baseOffset + BigInt(this.rels[this.count - 1] ?? 0) };
  }
  /** Drops entries pointing at or after `offset`. */
  truncateToOffset(offset: bigint): void {
    let n = this.count;
    while (n > 0 && this.baseOffset + BigInt(this.rels[n - 1] ?? 0) >= offset) n--;
    this.dropFrom(n);
  }
  serialize(from: number): Buffer {
    const out = Buffer.allocUnsafe((this.count - from) * 12);
    for (let i = from; i < this.count; i++) {
      out.writeBigInt64BE(this.timestamps[i] ?? 0n, (i - from) * 12);
      out.writeInt32BE(this.rels[i] ?? 0, (i - from) * 12 + 8);
    }
    return out;
  }
  static parse(buf: Buffer, baseOffset: bigint, maxEntries: number, nextOffset: bigint | null): TimeIndex | null {
    if (buf.length % 12 !== 0) return null;
    const idx = new TimeIndex(baseOffset, Math.max(maxEntries, buf.length / 12));
    for (let p = 0; p < buf.length; p += 12) {
      const ts = buf.readBigInt64BE(p);
      const rel = buf.readInt32BE(p + 8);
      if (rel < 0 || (nextOffset !== null && baseOffset + BigInt(rel) >= nextOffset)) return null;
      if (!idx.maybeAppend(ts, baseOffset + BigInt(rel), true)) return null;
    }
    idx.persisted = idx.count;
    return idx;
  }
}
