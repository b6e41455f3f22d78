/**
 * One log segment: `<base>.log` with its `.index` and `.timeindex`. Appends land in memory
 * (`pending`) synchronously and reach the file when the partition log drains its write queue;
 * reads see both, so data is readable as soon as it is appended.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { LOG_OVERHEAD, MessageField } from '../../protocol/records/index.js';
import { DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, segmentFileName, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX } from './segment-format.js';
import { OffsetIndex, TimeIndex } from './indexes.js';
import { TransactionIndex } from './transaction-index.js';
import { LogFile, openFd, skipBytes } from './file-io.js';
import { clipVerified } from './verified-ranges.js';
import { writeIndexFiles } from './segment-index-files.js';
import { type ScanResult, scanEntries } from './segment-scan.js';

export * from './segment-format.js';
export type { ScanResult } from './segment-scan.js';

const INT32_MAX = 2147483647n;

/** Coalesced writes up to this size are written synchronously (see Segment.writePending). */
export const SYNC_WRITE_MAX_BYTES = 4 * 1024 * 1024;

/** Counters shared by a log's segments (tests use them to check write coalescing). */
export interface IoStats {
  writes: number;
  syncs: number;
}

export class LogSegment {
  readonly baseOffset: bigint;
  /** The partition directory (the log's own string: the file paths are made when needed, not kept). */
  private readonly dir: string;
  /** The `.log` file (a descriptor, not a FileHandle: see file-io.ts). */
  private readonly file: LogFile;
  /** Logical size, pending bytes included. */
  size = 0;
  /** Bytes handed to the kernel. */
  writtenSize = 0;
  private pending: Buffer[] = [];
  unsynced = false;
  offsetIndex: OffsetIndex;
  timeIndex: TimeIndex;
  /** Aborted transactions whose ABORT marker is in this segment. */
  txnIndex = new TransactionIndex();
  /** False when open() found a `.txnindex` it could not parse (the producer-state replay rebuilds it). */
  txnIndexValid = true;
  nextOffset: bigint;
  maxTimestamp = -1n;
  offsetOfMaxTimestamp = -1n;
  /** Max timestamp of the first entry (Kafka rolls by it), else null. */
  rollBaseTimestamp: number | null = null;
  created: number;
  lastModified: number;
  private bytesSinceLastIndexEntry = 0;
  deleted = false;
  /** The files were renamed to `*.deleted` by the cleaner's swap: their names belong to the segment that replaced this one. */
  renamedAway = false;
  /** Whether open() found sane index files. */
  indexesLoaded = false;
  /**
   * The file's bytes below loadedSize came from disk: reads check each entry they serve from there
   * (read-verify.ts) unless a range of `verified` (verified-ranges.ts) holds it, as a full scan or an
   * earlier read left it. From loadedSize on this process wrote them.
   */
  verified: number[] = [];
  loadedSize = 0;
  private readonly stats: IoStats;
  /** The latest index write (they run one at a time); null when none ran since the last settled. */
  private indexWrites: Promise<void> | null = null;

  private constructor(dir: string, baseOffset: bigint, maxIndexBytes: number, now: number, stats: IoStats) {
    this.baseOffset = baseOffset;
    this.dir = dir;
    this.file = new LogFile(this);
    this.offsetIndex = new OffsetIndex(baseOffset, Math.floor(maxIndexBytes / 8));
    this.timeIndex = new TimeIndex(baseOffset, Math.floor(maxIndexBytes / 12));
    this.nextOffset = baseOffset;
    this.created = now;
    this.lastModified = now;
    this.stats = stats;
  }

  /**
   * A new, empty segment; its file is created in the background (writes wait for it). `freshDir`:
   * the directory was made just now, so no stale index files of this base offset can be there.
   */
  static create(dir: string, baseOffset: bigint, maxIndexBytes: number, now: number, stats: IoStats, freshDir = false): LogSegment {
    const seg = new LogSegment(dir, baseOffset, maxIndexBytes, now, stats);
    // stale index files of an earlier segment with this base offset go before anything is written
    const stale = freshDir ? [] : [seg.indexPath, seg.timeIndexPath, seg.txnIndexPath];
    seg.file.openingWith(Promise.all(stale.map((f) => fsp.rm(f, { force: true }))).then(() => openFd(seg.logPath, 'w+')));
    return seg;
  }

  /**
   * Opens an existing segment and loads its index files (null indexes when missing or not sane).
   * `files`: the names in `dir` when the caller listed it (index files not among them are not read:
   * after a crash they are often missing, and each failed read costs an error object).
   */
  static async open(
    dir: string,
    baseOffset: bigint,
    maxIndexBytes: number,
    now: number,
    stats: IoStats,
    files?: ReadonlySet<string>,
  ): Promise<{ segment: LogSegment; indexesValid: boolean }> {
    const seg = new LogSegment(dir, baseOffset, maxIndexBytes, now, stats);
    await seg.file.openNow('r+');
    const st = await seg.file.stat().catch(async (err: unknown) => {
      await seg.close();
      throw err;
    });
    const read = async (suffix: string): Promise<Buffer | null> => {
      const name = segmentFileName(baseOffset, suffix);
      return files !== undefined && !files.has(name) ? null : fsp.readFile(path.join(dir, name)).catch(() => null);
    };
    const [ib, tb, xb] = await Promise.all([read(INDEX_SUFFIX), read(TIME_INDEX_SUFFIX), read(TXN_INDEX_SUFFIX)]);
    return { segment: seg, indexesValid: seg.loaded(st, ib, tb, xb, maxIndexBytes) };
  }

  /**
   * Opens an inactive segment synchronously (a cleaned segment swapped in between requests) whose
   * next offset the caller knows; reads without a sane index scan from the segment's start.
   */
  static openSync(dir: string, baseOffset: bigint, maxIndexBytes: number, nextOffset: bigint, stats: IoStats): LogSegment {
    const seg = new LogSegment(dir, baseOffset, maxIndexBytes, Date.now(), stats);
    seg.file.openSync('r+');
    seg.nextOffset = nextOffset;
    const read = (suffix: string): Buffer | null => {
      try {
        return fs.readFileSync(path.join(dir, segmentFileName(baseOffset, suffix)));
      } catch {
        return null;
      }
    };
    const st = fs.fstatSync(seg.file.fd);
    seg.loaded(st, read(INDEX_SUFFIX), read(TIME_INDEX_SUFFIX), read(TXN_INDEX_SUFFIX), maxIndexBytes);
    // the cleaner wrote it from entries it checked
    seg.loadedSize = 0;
    return seg;
  }

  /** Takes the file's size and the index files' contents; whether the indexes are sane. */
  private loaded(st: fs.Stats, ib: Buffer | null, tb: Buffer | null, xb: Buffer | null, maxIndexBytes: number): boolean {
    this.size = st.size;
    this.writtenSize = st.size;
    this.loadedSize = st.size;
    this.lastModified = st.mtimeMs;
    if (xb !== null) {
      const xi = TransactionIndex.parse(xb);
      if (xi === null) this.txnIndexValid = false;
      else this.txnIndex = xi;
    }
    const oi = ib === null ? null : OffsetIndex.parse(ib, this.baseOffset, Math.floor(maxIndexBytes / 8), st.size);
    const ti = tb === null ? null : TimeIndex.parse(tb, this.baseOffset, Math.floor(maxIndexBytes / 12), null);
    const indexesValid = oi !== null && ti !== null && (st.size === 0 || ib !== null);
    this.indexesLoaded = indexesValid;
    if (oi !== null && ti !== null) {
      this.offsetIndex = oi;
      this.timeIndex = ti;
      const last = ti.last();
      if (last !== null) {
        this.maxTimestamp = last.timestamp;
        this.offsetOfMaxTimestamp = last.offset;
      }
    }
    return indexesValid;
  }

  get logPath(): string {
    return path.join(this.dir, segmentFileName(this.baseOffset, LOG_SUFFIX));
  }
  get indexPath(): string {
    return path.join(this.dir, segmentFileName(this.baseOffset, INDEX_SUFFIX));
  }
  get timeIndexPath(): string {
    return path.join(this.dir, segmentFileName(this.baseOffset, TIME_INDEX_SUFFIX));
  }
  get txnIndexPath(): string {
    return path.join(this.dir, segmentFileName(this.baseOffset, TXN_INDEX_SUFFIX));
  }

  get isEmpty(): boolean {
    return this.size === 0;
  }
  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** Whether an entry ending at `lastOffset` still fits the relative-offset range of this segment. */
  canHold(lastOffset: bigint): boolean {
    return lastOffset - this.baseOffset <= INT32_MAX;
  }

  /** Updates indexes and trackers for an entry at `position` (Kafka's LogSegment.append bookkeeping; append and scan). */
  track(lastOffset: bigint, maxTimestamp: bigint, position: number, size: number, indexIntervalBytes: number): void {
    if (maxTimestamp > this.maxTimestamp) {
      this.maxTimestamp = maxTimestamp;
      this.offsetOfMaxTimestamp = lastOffset;
    }
    if (this.bytesSinceLastIndexEntry > indexIntervalBytes) {
      this.offsetIndex.append(lastOffset, position);
      this.timeIndex.maybeAppend(this.maxTimestamp, this.offsetOfMaxTimestamp);
      this.bytesSinceLastIndexEntry = 0;
    }
    this.bytesSinceLastIndexEntry += size;
    this.nextOffset = lastOffset + 1n;
  }

  /** Appends one entry in memory; returns its position. */
  append(buf: Buffer, lastOffset: bigint, maxTimestamp: bigint, indexIntervalBytes: number, now: number): number {
    const position = this.size;
    if (position === 0 && this.rollBaseTimestamp === null && maxTimestamp >= 0n) this.rollBaseTimestamp = Number(maxTimestamp);
    this.track(lastOffset, maxTimestamp, position, buf.length, indexIntervalBytes);
    this.pending.push(buf);
    this.size += buf.length;
    this.lastModified = now;
    return position;
  }

  /**
   * Appends a run of uncompressed magic 0/1 messages (offsets firstOffset, firstOffset+1, … in order)
   * as one chunk. The offset index still gets entries at message boundaries wherever appending the
   * messages one by one would have put them, so a read inside the chunk starts at (or just before)
   * the message it wants; the time index gets the chunk's max timestamp. Returns the position.
   */
  appendRun(
    buf: Buffer,
    firstOffset: bigint,
    lastOffset: bigint,
    maxTimestamp: bigint,
    offsetOfMaxTimestamp: bigint,
    indexIntervalBytes: number,
    now: number,
  ): number {
    const position = this.size;
    if (position === 0 && this.rollBaseTimestamp === null && maxTimestamp >= 0n) this.rollBaseTimestamp = Number(maxTimestamp);
    if (maxTimestamp > this.maxTimestamp) {
      this.maxTimestamp = maxTimestamp;
      this.offsetOfMaxTimestamp = offsetOfMaxTimestamp;
    }
    if (this.bytesSinceLastIndexEntry + buf.length > indexIntervalBytes) {
      let indexed = false;
      let since = this.bytesSinceLastIndexEntry;
      for (let p = 0, i = 0; p < buf.length; i++) {
        const size = LOG_OVERHEAD + buf.readInt32BE(p + MessageField.MESSAGE_SIZE);
        if (since > indexIntervalBytes) {
          this.offsetIndex.append(firstOffset + BigInt(i), position + p);
          indexed = true;
          since = 0;
        }
        since += size;
        p += size;
      }
      this.bytesSinceLastIndexEntry = since;
      if (indexed) this.timeIndex.maybeAppend(this.maxTimestamp, this.offsetOfMaxTimestamp);
    } else this.bytesSinceLastIndexEntry += buf.length;
    this.nextOffset = lastOffset + 1n;
    this.pending.push(buf);
    this.size += buf.length;
    this.lastModified = now;
    return position;
  }

  /** The `.log` file's descriptor, or -1 while it is not open (file-slices.ts: sendfile reads from it). */
  get fileDescriptor(): number {
    return this.file.fd;
  }

  /** Writes everything pending with one positional writev. */
  async writePending(): Promise<void> {
    if (this.pending.length === 0) return;
    const bufs = this.pending.slice();
    let bytes = 0;
    for (const b of bufs) bytes += b.length;
    const fd = this.file.fd >= 0 ? this.file.fd : await this.file.handle();
    // Up to SYNC_WRITE_MAX_BYTES the write goes to the page cache synchronously, as Kafka's request
    // threads write: a handful of microseconds for a small group, where handing it to libuv's thread
    // pool costs more in submission, a pool thread's wake-up and the completion's callback than the
    // copy itself; and for a large one (a produce request of 0.5-1 MB, or a few coalesced) the copy
    // runs while the bytes are still in this core's cache from the CRC check, at ~0.3 ms per MB,
    // small beside the main thread's cost of receiving them (1M 100-byte records: 0.27 -> 0.24
    // broker CPU-s at acks=1, 0.23 -> 0.21 at acks=all, with 4 MiB rather than 256 KiB here).
    // Only larger groups go asynchronous, so that one write does not hold the event loop long.
    const sync = bytes <= SYNC_WRITE_MAX_BYTES;
    let done = 0;
    let rest = bufs;
    while (done < bytes) {
      const bytesWritten = sync ? fs.writevSync(fd, rest, this.writtenSize + done) : await this.file.writev(rest, this.writtenSize + done);
      this.stats.writes++;
      if (bytesWritten <= 0) throw new Error(`writev wrote nothing to ${this.logPath}`);
      done += bytesWritten;
      rest = skipBytes(rest, bytesWritten);
    }
    this.pending.splice(0, bufs.length);
    this.writtenSize += bytes;
    this.unsynced = true;
  }

  /** Forgets the appends not written yet (a write failed): the segment ends where its written part does. */
  dropPending(): void {
    this.pending = [];
    this.size = this.writtenSize;
  }

  async sync(): Promise<void> {
    if (!this.unsynced || this.file.fd < 0) return;
    this.unsynced = false;
    this.stats.syncs++;
    await this.file.sync();
  }

  /** Writes new index entries (or rewrites the files after a truncation); calls are serialised. */
  persistIndexes(): Promise<void> {
    const p = (this.indexWrites ?? Promise.resolve()).then(() => this.writeIndexes());
    // once the chain is done, an idle segment keeps no promise
    const tail: Promise<void> = p.then(
      () => this.settleIndexWrites(tail),
      () => this.settleIndexWrites(tail),
    );
    this.indexWrites = tail;
    return p;
  }

  private settleIndexWrites(tail: Promise<void>): void {
    if (this.indexWrites === tail) this.indexWrites = null;
  }

  private async writeIndexes(): Promise<void> {
    if (this.deleted) return;
    await this.file.handle();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- delete() may have run during the await
    if (this.deleted) return;
    await writeIndexFiles(this);
  }

  /** Called when a newer segment takes over: the time index gets the final max timestamp. */
  onBecomeInactive(): void {
    if (this.maxTimestamp >= 0n) this.timeIndex.maybeAppend(this.maxTimestamp, this.offsetOfMaxTimestamp, true);
  }

  /**
   * Bytes [pos, pos+len) clipped to the segment: the file part from disk, the pending part from memory.
   * `into` (at least len bytes) receives them (the result is a view of it), else a new Buffer does.
   */
  async read(pos: number, len: number, into?: Buffer): Promise<Buffer> {
    const { out, fileEnd } = this.prepareRead(pos, len, into);
    if (fileEnd > pos) {
      const got = await this.file.readFully(out, fileEnd - pos, pos);
      if (got < fileEnd - pos) return out.subarray(0, got);
    }
    return out;
  }

  /** Synchronous read (ListOffsets by timestamp needs one); same contract as read(). */
  readSync(pos: number, len: number): Buffer {
    const { out, fileEnd } = this.prepareRead(pos, len);
    if (fileEnd > pos) {
      const fd = this.file.fd;
      if (fd < 0) throw new Error(`segment ${this.logPath} is not open`);
      let got = 0;
      while (got < fileEnd - pos) {
        const n = fs.readSync(fd, out, got, fileEnd - pos - got, pos + got);
        if (n === 0) return out.subarray(0, got);
        got += n;
      }
    }
    return out;
  }

  private prepareRead(pos: number, len: number, into?: Buffer): { out: Buffer; fileEnd: number } {
    const end = Math.min(pos + len, this.size);
    const n = Math.max(0, end - pos);
    const out = into !== undefined && into.length >= n ? into.subarray(0, n) : Buffer.allocUnsafe(n);
    const fileEnd = Math.min(end, this.writtenSize);
    let p = this.writtenSize;
    for (const b of this.pending) {
      if (p >= end) break;
      const from = Math.max(pos, p);
      const to = Math.min(end, p + b.length);
      if (to > from) b.copy(out, from - pos, from - p, to - p);
      p += b.length;
    }
    return { out, fileEnd };
  }

  /**
   * Walks entries from `from` to the end of the file, checking structure, offsets and (optionally)
   * CRCs, and feeds each valid one to the indexes. Stops at the first invalid or partial entry.
   */
  scan(from: number, checkCrc: boolean, indexIntervalBytes: number, minOffset: bigint): Promise<ScanResult> {
    this.bytesSinceLastIndexEntry = 0;
    return scanEntries(this, from, checkCrc, indexIntervalBytes, minOffset);
  }

  /**
   * Forgets indexes and trackers, so a scan from 0 rebuilds them; the rebuilt indexes replace the
   * files whole when next persisted (an index file recovery could not use, or one holding entries
   * past what a power loss left of the log, must not keep stale entries beyond the rebuilt ones).
   */
  resetIndexes(): void {
    this.offsetIndex.clear();
    this.timeIndex.clear();
    this.offsetIndex.needsRewrite = true;
    this.timeIndex.needsRewrite = true;
    this.maxTimestamp = -1n;
    this.offsetOfMaxTimestamp = -1n;
    this.nextOffset = this.baseOffset;
  }

  /** Cuts the file at `position` (recovery only: nothing may be pending). */
  async truncateTo(position: number): Promise<void> {
    await this.file.truncate(position);
    this.size = position;
    this.writtenSize = position;
    this.loadedSize = Math.min(this.loadedSize, position);
    clipVerified(this.verified, position);
    this.offsetIndex.truncateToPosition(position);
    this.timeIndex.truncateToOffset(this.nextOffset);
  }

  /** Renames the files to `*.deleted` so they are gone from the log before they are unlinked. */
  async markDeleted(): Promise<void> {
    this.deleted = true;
    if (this.renamedAway) return;
    for (const f of [this.logPath, this.indexPath, this.timeIndexPath, this.txnIndexPath]) {
      await fsp.rename(f, f + DELETED_SUFFIX).catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.file.close();
  }

  /** Closes and unlinks the files (renamed or not). */
  async destroy(): Promise<void> {
    await this.close();
    for (const f of [this.logPath, this.indexPath, this.timeIndexPath, this.txnIndexPath]) {
      if (!this.renamedAway) await fsp.rm(f, { force: true });
      await fsp.rm(f + DELETED_SUFFIX, { force: true });
    }
  }
}
