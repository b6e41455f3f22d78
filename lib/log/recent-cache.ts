/**
 * The recent-batches cache: each log keeps its most recently appended entries in memory, so that
 * tailing consumers are served without reading the segment files. Two bounds hold it:
 * - per log, `PartitionLogOptions.recentCacheBytes` (1 MiB by default), the newest entries kept;
 * - broker-wide, a RecentCacheBudget (`gregor.log.recent.cache.bytes`) shared by every log: past it,
 *   the oldest cached entries of any log go first, so idle logs do not hold memory for ever.
 * Entries are the batches as received (zero-copy): views of the request buffer they came in. One
 * partition's batch in a produce request for several partitions keeps the whole request alive, so the
 * broker-wide bound charges what is really held: each backing buffer once, with its whole size, for as
 * long as some cached entry views it (plus ENTRY_OVERHEAD per entry). The per-log bound counts each
 * entry's own bytes.
 */
import { LOG_OVERHEAD, MessageField } from '../../protocol/records/index.js';
import { Picker } from './log-read.js';
import type { ReadLimits, ReadResult } from './log-read.js';

/** what an entry that left its cache keeps in place of its bytes (the budget's queue may still name it) */
const GONE = Buffer.alloc(0);

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

/**
 * What an entry costs beyond its bytes, charged to both bounds: its record, two bigints and the
 * Buffer view and, when it has a buffer of its own, that ArrayBuffer (322 bytes of heap per entry,
 * measured over 50,000 170-byte entries in buffers of their own with --expose-gc), plus the backing
 * store's native bookkeeping. Without it a log of one-record batches held about three times its budget.
 */
export const ENTRY_OVERHEAD = 384;

/** bytes an entry is charged to its own log's bound */
const charged = (e: CachedEntry): number => e.buf.length + ENTRY_OVERHEAD;

/**
 * The broker-wide bound over every log's recent cache: entries are charged in append order and,
 * while the total is over the limit, the oldest are evicted from whichever log holds them. What is
 * charged is the memory held: each backing ArrayBuffer once, whole, while any entry views it, and
 * ENTRY_OVERHEAD per entry.
 */
export class RecentCacheBudget {
  private queue: (CachedEntry | undefined)[] = [];
  private head = 0;
  private _bytes = 0;
  private live = 0;
  /** backing buffers held by cached entries: how many entries view each */
  private readonly views = new Map<ArrayBufferLike, number>();

  constructor(readonly limit: number) {}

  /** bytes charged: the backing buffers the cached entries view, each once, plus ENTRY_OVERHEAD per entry */
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
    this._bytes += ENTRY_OVERHEAD;
    const backing = e.buf.buffer;
    const n = this.views.get(backing);
    if (n === undefined) this._bytes += backing.byteLength;
    this.views.set(backing, (n ?? 0) + 1);
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
    this._bytes -= ENTRY_OVERHEAD;
    const backing = e.buf.buffer;
    const n = this.views.get(backing) ?? 1;
    if (n <= 1) {
      this.views.delete(backing);
      this._bytes -= backing.byteLength;
    } else this.views.set(backing, n - 1);
    this.live--;
  }

  /** distinct backing buffers the cached entries view (tests) */
  get buffers(): number {
    return this.views.size;
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

  /** bytes charged to this log's bound: the entries' own bytes plus ENTRY_OVERHEAD each */
  get size(): number {
    return this.bytes;
  }

  add(firstOffset: bigint, lastOffset: bigint, buf: Buffer, run = false): void {
    if (this.budget <= 0) return;
    const e: CachedEntry = { firstOffset, lastOffset, buf, run, owner: this, gone: false };
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
    this.leave(e);
    this.compact();
  }

  /** `e` left this cache: uncharged, and its bytes let go (the budget's queue may hold it a while yet) */
  private leave(e: CachedEntry): void {
    e.gone = true;
    this.shared?.released(e);
    e.buf = GONE;
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
      if (e !== undefined) this.leave(e);
    }
    this.entries = [];
    this.head = 0;
    this.bytes = 0;
  }
}
