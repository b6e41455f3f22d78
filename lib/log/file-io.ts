/**
 * Positional I/O on a plain file descriptor, as promises. A segment keeps its `.log` open for the
 * life of the log; a FileHandle (node:fs/promises) for it costs ~550 bytes of heap (its JS object,
 * the native object behind it, an EventEmitter's listener table and a close closure), which at
 * 10,000 partitions is 5.5 MB, where the descriptor itself is a number. The callers close what they
 * open (nothing closes a descriptor on garbage collection).
 */
import fs from 'node:fs';
import { promisify } from 'node:util';
import { loadAddon } from '../../protocol/records/native-addon.js';

/** Opens `file` with `flags` ('r+', 'w+', ...); resolves with the descriptor. */
export const openFd = promisify(fs.open);
const fstatFd = promisify(fs.fstat);
const readAt = promisify(fs.read);
const writevAt = promisify(fs.writev);
const fsyncFd = promisify(fs.fsync);
const truncateFd = promisify(fs.ftruncate);
const closeFd = promisify(fs.close);

interface PreadAddon {
  /** bytes read (0 at the end of the file), or -errno (-EAGAIN: not in the page cache) */
  preadNowait: (fd: number, buf: Uint8Array, offset: number, length: number, position: number) => number;
  /** bytes sent (0 at the end of the file), or -errno (-EAGAIN: the socket's buffer is full); absent in an older build */
  sendfileNowait?: (outFd: number, inFd: number, position: number, length: number) => number;
  /** pages of the range not in the page cache, or -errno (-ENOSYS before Linux 6.5) */
  uncachedPages?: (fd: number, position: number, length: number) => number;
  /** a new close-on-exec descriptor of the same open file, or -errno */
  dupFd?: (fd: number) => number;
}

/** What sending stored bytes with sendfile needs from the addon (see lib/log/file-slices.ts). */
export interface SliceCalls {
  preadNowait: PreadAddon['preadNowait'];
  sendfileNowait: NonNullable<PreadAddon['sendfileNowait']>;
  uncachedPages: NonNullable<PreadAddon['uncachedPages']>;
  dupFd: NonNullable<PreadAddon['dupFd']>;
}

let sliceCalls: SliceCalls | null | undefined;

/**
 * The addon's calls for FileSlices, or null: no addon, a build without them, or a kernel without
 * cachestat(2) (a slice must be known to be in the page cache: sendfile cannot refuse a disk read).
 */
export function fileSliceCalls(): SliceCalls | null {
  if (sliceCalls === undefined) {
    const a = loadAddon<PreadAddon>('pread').addon;
    sliceCalls = null;
    if (a?.sendfileNowait !== undefined && a.uncachedPages !== undefined && a.dupFd !== undefined) {
      const { preadNowait, sendfileNowait, uncachedPages, dupFd } = a;
      // probe cachestat on a descriptor every process has (stdin may be closed: try a fresh one)
      let fd = -1;
      try {
        fd = fs.openSync(process.execPath, 'r');
        if (uncachedPages(fd, 0, 1) >= 0) sliceCalls = { preadNowait, sendfileNowait, uncachedPages, dupFd };
      } catch {
        sliceCalls = null;
      } finally {
        if (fd >= 0) fs.closeSync(fd);
      }
    }
  }
  return sliceCalls;
}

/** sendfile of slice bytes [offset, end) to the socket `outFd`: bytes sent, 0 at the file's end, or -errno. */
export function sendSlicePart(outFd: number, slice: { fd: number; position: number; length: number }, offset: number): number {
  const calls = fileSliceCalls();
  if (calls === null) return -38; // ENOSYS: never reached (slices are made only with the calls)
  return calls.sendfileNowait(outFd, slice.fd, slice.position + offset, slice.length - offset);
}

let preadNowait: PreadAddon['preadNowait'] | null | undefined;

/**
 * Segment reads served now from the page cache (native/pread: preadv2 with RWF_NOWAIT, which copies
 * what is cached and never waits for the disk) against those that went to libuv's thread pool, in
 * whole or in part, and the bytes asked by both. Without the addon (or with GREGOR_PREAD_NOWAIT=0)
 * every read goes to the pool.
 */
export const segmentReads = { cached: 0, pooled: 0, bytes: 0 };

/** Whether cached reads are in use in this process (the addon loaded and GREGOR_PREAD_NOWAIT is not 0). */
export function cachedReadsEnabled(): boolean {
  if (preadNowait === undefined) {
    preadNowait = process.env['GREGOR_PREAD_NOWAIT'] === '0' ? null : (loadAddon<PreadAddon>('pread').addon?.preadNowait ?? null);
  }
  return preadNowait !== null;
}

/**
 * The most bytes one read copies on the calling thread: a Fetch window is ~1 MiB, and a larger read
 * (a consumer's max.partition.fetch.bytes of 50 MB) hands the rest to the thread pool rather than
 * hold the event loop for the whole copy.
 */
export const CACHED_READ_MAX_BYTES = 4 << 20;

/**
 * Copies what the page cache holds of [pos, pos + length) from `pos` on into `out`, now, up to
 * CACHED_READ_MAX_BYTES; returns how many bytes that was (0: nothing cached at `pos`, the end of the
 * file, or no addon). A read that would wait for the disk, or fails, stops here: the asynchronous
 * read that takes over reports it.
 */
function readCached(fd: number, out: Buffer, length: number, pos: number): number {
  const read = cachedReadsEnabled() ? preadNowait : null;
  if (read == null) return 0;
  const want = Math.min(length, CACHED_READ_MAX_BYTES);
  let got = 0;
  while (got < want) {
    const n = read(fd, out, got, want - got, pos + got);
    if (n <= 0) break;
    got += n;
  }
  return got;
}

/**
 * The `.log` file of a segment: its descriptor, opened once (and again after close() when used
 * again), and a count of the asynchronous operations in flight, which close() waits for (a closed
 * descriptor's number is soon given to another open file). Synchronous calls use `fd` directly.
 */
export class LogFile {
  /** -1 while not open. */
  fd = -1;
  private opening: Promise<number> | null = null;
  private inflight = 0;
  private drained: (() => void) | null = null;

  /** `owner.logPath` is read only when the file has to be opened. */
  constructor(private readonly owner: { readonly logPath: string }) {}

  /** Uses `opening` as the open in progress (a new segment creates its file in the background). */
  openingWith(opening: Promise<number>): void {
    this.opening = opening;
    opening.catch(() => undefined);
  }

  async openNow(flags: string): Promise<void> {
    this.fd = await openFd(this.owner.logPath, flags);
  }

  /** Opens the file now, synchronously (the cleaner's swap runs between requests). */
  openSync(flags: string): void {
    this.fd = fs.openSync(this.owner.logPath, flags);
  }

  /** The descriptor, opening the file ('r+') when it is not open. */
  handle(): Promise<number> {
    if (this.fd >= 0) return Promise.resolve(this.fd);
    this.opening ??= openFd(this.owner.logPath, 'r+');
    return this.opening.then((fd) => {
      this.fd = fd;
      return fd;
    });
  }

  private endIo(): void {
    if (--this.inflight > 0 || this.drained === null) return;
    const drained = this.drained;
    this.drained = null;
    drained();
  }

  private settled(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const before = this.drained;
      this.drained = () => {
        before?.();
        resolve();
      };
    });
  }

  stat(): Promise<fs.Stats> {
    return this.track(async () => fstatFd(await this.handle()));
  }

  /**
   * Reads [pos, pos + length) into `out` from offset 0; resolves with the bytes read (fewer at the end
   * of the file). What the page cache holds is copied at once, on this thread (a Fetch of recent data
   * then costs no thread-pool round trip); the rest is read by the thread pool.
   */
  readFully(out: Buffer, length: number, pos: number): Promise<number> {
    segmentReads.bytes += length;
    const cached = this.fd >= 0 ? readCached(this.fd, out, length, pos) : 0;
    if (cached === length) {
      segmentReads.cached++;
      return Promise.resolve(cached);
    }
    segmentReads.pooled++;
    return this.track(async () => {
      const fd = await this.handle();
      let got = cached;
      while (got < length) {
        const { bytesRead } = await readAt(fd, out, got, length - got, pos + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return got;
    });
  }

  writev(bufs: Buffer[], pos: number): Promise<number> {
    return this.track(async () => (await writevAt(await this.handle(), bufs, pos)).bytesWritten);
  }

  sync(): Promise<void> {
    return this.track(async () => fsyncFd(await this.handle()));
  }

  /** Cuts the file at `length` and fsyncs it. */
  truncate(length: number): Promise<void> {
    return this.track(async () => {
      const fd = await this.handle();
      await truncateFd(fd, length);
      await fsyncFd(fd);
    });
  }

  private async track<T>(op: () => Promise<T>): Promise<T> {
    this.inflight++;
    try {
      return await op();
    } finally {
      this.endIo();
    }
  }

  /** Closes the descriptor once the operations in flight are done (a later use opens the file again). */
  async close(): Promise<void> {
    await this.settled();
    const fd = this.fd >= 0 ? this.fd : this.opening !== null ? await this.opening.catch(() => -1) : -1;
    this.fd = -1;
    this.opening = null;
    if (fd >= 0) await closeFd(fd);
  }
}

/** `bufs` without their first `n` bytes (what a short writev left to write). */
export function skipBytes(bufs: Buffer[], n: number): Buffer[] {
  const out: Buffer[] = [];
  let left = n;
  for (const b of bufs) {
    if (left >= b.length) {
      left -= b.length;
      continue;
    }
    out.push(left > 0 ? b.subarray(left) : b);
    left = 0;
  }
  return out;
}
