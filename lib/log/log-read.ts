/** Reading stored entries from segments (via the sparse index); the recent-batches cache is recent-cache.ts. */
import { logEntries } from '../../protocol/records/index.js';
import type { Record } from '../../protocol/records/index.js';
import { HEADER_BYTES, parseEntryHeader } from './segment.js';
import type { EntryHeader, LogSegment } from './segment.js';
import type { SliceRead } from './file-slices.js';
import type { ReadBufferPool, ReadLease } from './read-buffer-pool.js';

export interface ReadResult {
  /**
   * Stored bytes: whole entries (batches or legacy messages), one Buffer per entry or per run of
   * consecutive entries (uncompressed magic 0/1 messages appended together).
   */
  records: Buffer[];
  size: number;
  /**
   * The pooled buffer `records` are views of (reads given a ReadBufferPool): the caller releases it
   * once no view is read any more, or drops it (see read-buffer-pool.ts).
   */
  lease?: ReadLease | null;
  /** The entries as a FileSlice instead (`records` empty): reads asked with `fileSlices` (file-slices.ts). */
  file?: SliceRead;
}

export const EMPTY_READ: ReadResult = { records: [], size: 0 };

/** How a log read is done (PartitionLog.read). */
export interface ReadOptions {
  minOneMessage: boolean;
  /** entries whose last offset reaches this are not returned (default: the log end offset) */
  maxOffset?: bigint;
  /** segment bytes go into this pool's buffers (the result carries the lease) */
  pool?: ReadBufferPool;
  /** large entries in the page cache may come back as a FileSlice (ReadResult.file), to be sent with sendfile */
  fileSlices?: boolean;
}

export interface ReadLimits {
  fetchOffset: bigint;
  maxBytes: number;
  minOneMessage: boolean;
  /** Entries whose last offset reaches this are not returned (exclusive bound, e.g. the high watermark). */
  maxOffset: bigint;
}

/** Decides which entries of a run to return: whole entries from the one containing fetchOffset. */
export class Picker {
  size = 0;
  count = 0;
  done = false;
  constructor(private readonly lim: ReadLimits) {}
  /** 'skip' before fetchOffset, 'take', or 'stop'. */
  consider(lastOffset: bigint, size: number): 'skip' | 'take' | 'stop' {
    if (lastOffset < this.lim.fetchOffset) return 'skip';
    if (lastOffset >= this.lim.maxOffset) return 'stop';
    if (this.size + size > this.lim.maxBytes && !(this.count === 0 && this.lim.minOneMessage)) return 'stop';
    this.size += size;
    this.count++;
    if (this.size >= this.lim.maxBytes) this.done = true;
    return 'take';
  }
  /** Whether a run of entries [firstOffset, lastOffset] of `size` bytes would be taken whole. */
  fitsWhole(firstOffset: bigint, lastOffset: bigint, size: number): boolean {
    if (firstOffset < this.lim.fetchOffset || lastOffset >= this.lim.maxOffset) return false;
    return this.size + size <= this.lim.maxBytes;
  }
}

/** What readSegment found. */
export interface SegmentRead extends ReadResult {
  /** Whether the read ended inside this segment (later segments are not needed). */
  ended: boolean;
  /** Where the first entry returned starts. */
  position: number;
  /** The offset after the entry the read passed just before the first returned (-1n: none). */
  prevEnd: bigint;
  /** An entry header in bytes from disk that cannot be one (the read stopped before it), else null. */
  malformed: { position: number; problem: string } | null;
  /** the pooled buffer the entries are views of (null: none returned, or no pool) */
  lease: ReadLease | null;
}

/** The first read when up to this many leading bytes may be skipped: enough for the header of a large entry, or a run of small ones. */
export const PROBE_BYTES = 64 << 10;

/**
 * Reads whole entries from `seg` starting at `startPosition` (from the index). Returns the entries
 * (possibly none) and whether the read ended inside this segment (so later segments are not needed).
 * With a `pool` the reads go into its buffers: the one the entries are views of is the result's
 * lease (null when none are returned), the others go back at once.
 *
 * Bytes are read in windows: each holds the entry headers the walk needs and, when it can, every
 * entry returned, so that they need no read of their own. `skippable` (from the index: how many bytes
 * from `startPosition` may precede the first entry wanted) makes the first read a small probe when
 * it is large: with ~1 MB batches the index points at the batch before the wanted one, and a
 * window-sized first read would copy it only to skip it.
 */
export async function readSegment(
  seg: LogSegment,
  startPosition: number,
  lim: ReadLimits,
  indexIntervalBytes: number,
  pool: ReadBufferPool | null = null,
  skippable = 0,
): Promise<SegmentRead> {
  const end = seg.size;
  const windowSize = Math.max(PROBE_BYTES, Math.min(lim.maxBytes + 2 * indexIntervalBytes, 8 << 20));
  let win: Buffer = Buffer.alloc(0);
  let winLease: ReadLease | null = null;
  const readAt = async (pos: number, len: number): Promise<{ buf: Buffer; lease: ReadLease | null }> => {
    if (pool === null) return { buf: await seg.read(pos, len), lease: null };
    const lease = pool.lease(len);
    try {
      return { buf: await seg.read(pos, len, lease.buf), lease };
    } catch (e) {
      lease.release();
      throw e;
    }
  };
  let winStart = startPosition;
  const picker = new Picker(lim);
  let first = -1;
  let p = startPosition;
  const sizes: number[] = [];
  let malformed: SegmentRead['malformed'] = null;
  let prevEnd = -1n;
  while (p < end && !picker.done) {
    if (p + Math.min(HEADER_BYTES, end - p) > winStart + win.length) {
      // The next header is past the window. Entries already taken are read again with it when they
      // and every entry that could still be taken fit one window (finish() then cuts them from it);
      // otherwise the window starts at the header (and finish() reads the entries anew). Either way
      // the window before holds nothing returned.
      let from = p;
      let len = Math.min(windowSize, end - p);
      if (p === startPosition && skippable > PROBE_BYTES) len = Math.min(PROBE_BYTES, end - p);
      else if (first >= 0) {
        const reach = Math.min(end, p + Math.max(HEADER_BYTES, lim.maxBytes - picker.size)) - first;
        if (reach <= windowSize) [from, len] = [first, reach];
      }
      const next = await readAt(from, len);
      winLease?.release();
      win = next.buf;
      winLease = next.lease;
      winStart = from;
    }
    const off = p - winStart;
    const h = parseEntryHeader(win, off, win.length - off, p);
    if (h === null || typeof h === 'string') {
      // a tail being truncated, or (in bytes read from disk) a garbled entry header: stop here
      if (p < seg.loadedSize) malformed = { position: p, problem: h ?? `partial entry header at position ${p}` };
      break;
    }
    if (p < seg.loadedSize && (h.baseOffset < seg.baseOffset || h.lastOffset >= seg.nextOffset)) {
      // offsets the segment cannot hold (a garbled base offset, outside the v2 CRC): stop before it
      malformed = { position: p, problem: `offsets ${h.baseOffset}..${h.lastOffset} at position ${p} outside segment ${seg.baseOffset}` };
      break;
    }
    const verdict = picker.consider(h.lastOffset, h.size);
    if (verdict === 'stop') return finish(true);
    if (verdict === 'take') {
      if (first < 0) first = p;
      sizes.push(h.size);
    } else prevEnd = h.lastOffset + 1n;
    p += h.size;
  }
  return finish(p < end || picker.done);

  async function finish(ended: boolean): Promise<SegmentRead> {
    if (first < 0) {
      winLease?.release();
      return { records: [], size: 0, ended, position: startPosition, prevEnd, malformed, lease: null };
    }
    const total = picker.size;
    const inWindow = first >= winStart && first + total <= winStart + win.length;
    let data: Buffer;
    let lease = winLease;
    if (inWindow) data = win.subarray(first - winStart, first - winStart + total);
    else {
      const r = await readAt(first, total);
      winLease?.release();
      data = r.buf;
      lease = r.lease;
    }
    const records: Buffer[] = [];
    let q = 0;
    for (const s of sizes) {
      if (q + s > data.length) break;
      records.push(data.subarray(q, q + s));
      q += s;
    }
    return { records, size: q, ended, position: first, prevEnd, malformed, lease };
  }
}

/**
 * Synchronously walks the entries of `seg` from `position`, calling `visit` until it returns true.
 * `head` is a view of the entry's first bytes (the whole v2 header, or the entry when shorter).
 */
export function walkSegmentSync(
  seg: LogSegment,
  position: number,
  visit: (h: EntryHeader, bytes: () => Buffer, head: Buffer) => boolean,
): void {
  const end = seg.size;
  let win: Buffer = Buffer.alloc(0);
  let winStart = position;
  let p = position;
  while (p < end) {
    if (p + Math.min(HEADER_BYTES, end - p) > winStart + win.length) {
      win = seg.readSync(p, Math.min(256 << 10, end - p));
      winStart = p;
    }
    const off = p - winStart;
    const h = parseEntryHeader(win, off, win.length - off, p);
    if (h === null || typeof h === 'string') return;
    const at = p;
    const bytes = (): Buffer =>
      at + h.size <= winStart + win.length ? win.subarray(at - winStart, at - winStart + h.size) : seg.readSync(at, h.size);
    if (visit(h, bytes, win.subarray(off, off + Math.min(h.size, HEADER_BYTES)))) return;
    p += h.size;
  }
}

/** Every record of one stored entry (decompressing when needed), with absolute offsets. */
export function entryRecords(bytes: Buffer, maxOutput: number): { records: Record[]; leaderEpoch: number } {
  for (const e of logEntries(bytes)) {
    if (e.kind === 'batch') return { records: e.batch.records({ maxOutput }), leaderEpoch: e.batch.partitionLeaderEpoch };
    if (e.kind === 'message') return { records: e.message.records({ maxOutput, checkCrcs: false }), leaderEpoch: -1 };
  }
  return { records: [], leaderEpoch: -1 };
}
