/**
 * The recent-batches cache: each log keeps its most recently appended entries in memory, so that
 * tailing consumers are served without reading the segment files. Two bounds hold it:
 * - per log, `PartitionLogOptions.recentCacheBytes` (1 MiB by default), the newest entries kept;
 * - broker-wide, a RecentCacheBudget (`gregor.log.recent.cache.bytes`) shared by every log: past it,
 *   the oldest cached entries of any log go first, so idle logs do not hold memory for ever.
 * The bytes counted are the bytes held: an entry that is a small view into a larger buffer (one
 * partition's batch inside a multi-partition produce request) is copied out, so that the cache does
 * not keep the whole request alive behind a budget that counts only its own part.
 */
import { LOG_OVERHEAD, MessageField } from '../../protocol/records/index.js';
import { Picker } from './log-read.js';
import type { ReadLimits, ReadResult } from './log-read.js';

interface CachedEntry {
  firstOffset: bigint;
  lastOffset: bigint;
  buf: Buffer;
  /** `buf` holds messages firstOffset..lastOffset, one offset each (uncompressed magic 0/1). */
  run: boolean;
  owner: RecentCache;
  /** evicted or cleared: no longer in its owner's list (the budget's queue may still name it) */
  gone: boolean;
}

/** Extra bytes of a backing buffer an entry may keep alive before it is copied out (see keepable). */
const VIEW_SLACK = 1024;

/**
 * What an entry costs beyond its bytes, charged to both bounds: its record, two bigints and the
 * Buffer view, and for a copy its ArrayBuffer (322 bytes of heap per entry, measured over 50,000
 * copied 170-byte entries with --expose-gc), plus a copy's native backing-store bookkeeping. Without
 * it a log of one-record batches held about three times its budget.
 */
export const ENTRY_OVERHEAD = 384;

/** bytes an entry is charged */
const charged = (e: CachedEntry): number => e.buf.length + ENTRY_OVERHEAD;

/**
 * `buf` itself when its backing memory is about its own size, else a copy of it: a view that keeps
 * more than its own size plus VIEW_SLACK of a larger buffer alive (a batch of a multi-partition
 * request, a slice of Node's 8 KB pool) is copied.
 */
export function keepable(buf: Buffer): Buffer {
  const waste = buf.buffer.byteLength - buf.length;
  if (!(waste > VIEW_SLACK && waste > buf.length)) return buf;
  // its own memory: Buffer.from would put a small copy in a slab of Node's pool, shared again
  const own = Buffer.allocUnsafeSlow(buf.length);
  buf.copy(own);
  return own;
}

/**
 * The broker-wide bound over every log's recent cache: entries are charged in append order and,
 * while the total is over the limit, the oldest are evicted from whichever log holds them.
 */
export class RecentCacheBudget {
  private queue: (CachedEntry | undefined)[] = [];
  private head = 0;
  private _bytes = 0;
  private live = 0;

  constructor(readonly limit: number) {}

  /** bytes charged by all the caches of this budget (their entries' bytes plus ENTRY_OVERHEAD each) */
  get bytes(): number {
    return this._bytes;
  }

  /** entries held by all the caches charged to this budget */
  get entries(): number {
    return this.live;
  }

  /** queued entries, held or not yet dropped from the queue (tests: it stays proportional to entries) */
  get queued(): number {
    return this.queue.length - this.head;
  }

  charge(e: CachedEntry): void {
    this.queue.push(e);
    this._bytes += charged(e);
    this.live++;
    while (this._bytes > this.limit && this.head < this.queue.length) {
      const oldest = this.queue[this.head];
      this.queue[this.head++] = undefined;
      if (oldest !== undefined && !oldest.gone) oldest.owner.evictOldest(oldest);
    }
    // entries gone by their own log's bound or a clear stay queued until here: drop them once they
    // are most of the queue, so that it stays proportional to what is held
    const queued = this.queue.length - this.head;
    if (queued > 1024 && queued > 2 * this.live) {
      this.queue = this.queue.slice(this.head).filter((q) => q !== undefined && !q.gone);
      this.head = 0;
    }
  }

  /** an entry left its cache (its own log's bound, eviction here, a clear) */
  released(e: CachedEntry): void {
    this._bytes -= charged(e);
    this.live--;
  }
}

/**
 * Takes what `picker` allows of a cached run, message by message: from the message holding
 * fetchOffset, up to maxOffset and maxBytes. Returns the bytes taken (possibly none) and whether
 * the run was taken to its end (the next entry may follow).
 */
function takeFromRun(picker: Picker, e: CachedEntry, lim: ReadLimits): { part: Buffer; complete: boolean } {
  const buf = e.buf;
  const skip = lim.fetchOffset > e.firstOffset ? Number(lim.fetchOffset - e.firstOffset) : 0;
  let p = 0;
  for (let i = 0; i < skip && p < buf.length; i++) p += LOG_OVERHEAD + buf.readInt32BE(p + MessageField.MESSAGE_SIZE);
  const from = p;
  let offset = e.firstOffset + BigInt(skip);
  while (p < buf.length && !picker.done) {
    const size = LOG_OVERHEAD + buf.readInt32BE(p + MessageField.MESSAGE_SIZE);
    if (picker.consider(offset, size) !== 'take') break;
    p += size;
    offset++;
  }
  return { part: buf.subarray(from, p), complete: p === buf.length };
}

/**
 * One log's most recently appended entries, contiguous up to the log end offset, within its own
 * byte budget and the broker-wide one.
 */
export class RecentCache {
  private entries: (CachedEntry | undefined)[] = [];
  private head = 0;
  private bytes = 0;
  readonly budget: number;
  private readonly shared: RecentCacheBudget | undefined;

  constructor(budget: number, shared?: RecentCacheBudget) {
    // a broker-wide limit of 0 turns every log's cache off
    this.budget = shared !== undefined && shared.limit <= 0 ? 0 : budget;
    this.shared = shared;
  }

  /** bytes charged: the entries' bytes plus ENTRY_OVERHEAD each */
  get size(): number {
    return this.bytes;
  }

  add(firstOffset: bigint, lastOffset: bigint, buf: Buffer, run = false): void {
    if (this.budget <= 0) return;
    const e: CachedEntry = { firstOffset, lastOffset, buf: keepable(buf), run, owner: this, gone: false };
    this.entries.push(e);
    this.bytes += charged(e);
    while (this.bytes > this.budget && this.entries.length - this.head > 1) this.dropHead();
    this.compact();
    this.shared?.charge(e);
  }

  /** The budget's eviction of `e`, this cache's oldest entry (older ones left before it). */
  evictOldest(e: CachedEntry): void {
    if (this.entries[this.head] === e) this.dropHead();
  }

  private dropHead(): void {
    const e = this.entries[this.head];
    if (e === undefined) return;
    this.entries[this.head++] = undefined;
    this.bytes -= charged(e);
    e.gone = true;
    this.shared?.released(e);
    this.compact();
  }

  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }

  /** Whether the cache holds fetchOffset and everything after it. */
  covers(offset: bigint): boolean {
    const first = this.entries[this.head];
    return first !== undefined && first.firstOffset <= offset;
  }

  read(lim: ReadLimits): ReadResult {
    let lo = this.head;
    let hi = this.entries.length - 1;
    let i = this.entries.length;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.entries[mid]?.lastOffset ?? -1n) >= lim.fetchOffset) {
        i = mid;
        hi = mid - 1;
      } else lo = mid + 1;
    }
    const picker = new Picker(lim);
    const records: Buffer[] = [];
    for (; i < this.entries.length && !picker.done; i++) {
      const e = this.entries[i];
      if (e === undefined) break;
      if (e.run && !picker.fitsWhole(e.firstOffset, e.lastOffset, e.buf.length)) {
        // a read starting, or a limit falling, inside a run: whole messages from the one wanted
        const { part, complete } = takeFromRun(picker, e, lim);
        if (part.length > 0) records.push(part);
        if (!complete) break;
        continue;
      }
      if (picker.consider(e.lastOffset, e.buf.length) !== 'take') break;
      records.push(e.buf);
    }
    return { records, size: picker.size };
  }

  clear(): void {
    for (let i = this.head; i < this.entries.length; i++) {
      const e = this.entries[i];
      if (e === undefined) continue;
      e.gone = true;
      this.shared?.released(e);
    }
    this.entries = [];
    this.head = 0;
    this.bytes = 0;
  }
}
