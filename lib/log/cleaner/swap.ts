/**
 * Swapping a cleaned section into a log, crash-safely as Kafka does: the worker wrote and fsynced
 * `<base>.log.cleaned` (+ `.index/.timeindex/.txnindex.cleaned`); on the main thread, between
 * requests, they become `.swap`, the replaced segments' files become `.deleted` (reads holding
 * them keep their descriptors; they are unlinked after file.delete.delay.ms), and the `.swap` files
 * take the segments' names. At load, `.cleaned` files are dropped and `.swap` files completed
 * (completeSwaps): the segments a swap covers go, and it takes their place.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { fsyncDir } from '../checkpoint.js';
import {
  DELETED_SUFFIX,
  HEADER_BYTES,
  INDEX_SUFFIX,
  LOG_SUFFIX,
  TIME_INDEX_SUFFIX,
  TXN_INDEX_SUFFIX,
  parseEntryHeader,
} from '../segment-format.js';
import { LogSegment } from '../segment.js';
import type { IoStats } from '../segment.js';
import { CLEANED_SUFFIX, SWAP_SUFFIX, cleanerFile } from './clean.js';
import type { CleanJob, CleanResult, CleanedGroup } from './job.js';

const SUFFIXES = [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX];

/** What the swap needs of a log (LocalLog implements it). */
export interface SwappableLog {
  readonly dir: string;
  readonly stats: IoStats;
  readonly segmentList: readonly LogSegment[];
  /** Open, online, not truncating, no roll finishing. */
  readonly swappable: boolean;
  readonly segmentIndexBytes: number;
  /** Replaces segments [from, from + count) (whose files are renamed already) and schedules their deletion. */
  replaceSegments(from: number, count: number, replacement: LogSegment[]): void;
}

function renameIfThere(from: string, to: string): void {
  try {
    fs.renameSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** Removes a job's output files with `extra` (`.cleaned` or `.swap`). */
export function removeCleanerFiles(dir: string, groups: readonly CleanedGroup[], extra: string): void {
  for (const g of groups) for (const s of SUFFIXES) fs.rmSync(cleanerFile(dir, g.baseOffset, s, extra), { force: true });
}

/**
 * Swaps the job's cleaned groups in, synchronously. False (and the cleaned files removed) when the
 * segments it cleaned changed meanwhile (retention, DeleteRecords, truncation, close): the
 * cleaning is dropped.
 */
export function swapCleaned(log: SwappableLog, job: CleanJob, result: CleanResult): boolean {
  const segs = log.segmentList;
  const replaced = job.segments.filter((s) => s.baseOffset < result.endOffset);
  const from = segs.findIndex((s) => s.baseOffset === replaced[0]?.baseOffset);
  const unchanged =
    log.swappable &&
    from >= 0 &&
    from + replaced.length < segs.length &&
    replaced.every((r, i) => {
      const s = segs[from + i];
      return s !== undefined && s.baseOffset === r.baseOffset && s.size === r.size && !s.deleted && !s.hasPending;
    });
  if (!unchanged || result.groups.length === 0) {
    removeCleanerFiles(job.dir, result.groups, CLEANED_SUFFIX);
    return false;
  }
  for (const g of result.groups) {
    for (const s of SUFFIXES)
      renameIfThere(cleanerFile(job.dir, g.baseOffset, s, CLEANED_SUFFIX), cleanerFile(job.dir, g.baseOffset, s, SWAP_SUFFIX));
  }
  const old = segs.slice(from, from + replaced.length);
  for (const s of old) {
    s.deleted = true;
    s.renamedAway = true;
    for (const f of [s.logPath, s.indexPath, s.timeIndexPath, s.txnIndexPath]) renameIfThere(f, f + DELETED_SUFFIX);
  }
  const fresh: LogSegment[] = [];
  for (const g of result.groups) {
    for (const s of SUFFIXES) renameIfThere(cleanerFile(job.dir, g.baseOffset, s, SWAP_SUFFIX), cleanerFile(job.dir, g.baseOffset, s, ''));
    fresh.push(LogSegment.openSync(job.dir, g.baseOffset, log.segmentIndexBytes, g.nextOffset, log.stats));
  }
  log.replaceSegments(from, old.length, fresh);
  fsyncDir(job.dir).catch(() => undefined);
  return true;
}

/** Last offset of the entries in `file` (a swap file, complete: it was fsynced before it was named so), or null when it holds none. */
async function lastOffsetOf(file: string): Promise<bigint | null> {
  const fh = await fsp.open(file, 'r');
  try {
    const size = (await fh.stat()).size;
    let last: bigint | null = null;
    const buf = Buffer.allocUnsafe(1 << 20);
    let start = 0;
    let len = 0;
    for (let p = 0; p < size;) {
      if (p + HEADER_BYTES > start + len) {
        len = (await fh.read(buf, 0, Math.min(buf.length, size - p), p)).bytesRead;
        start = p;
      }
      const h = parseEntryHeader(buf, p - start, len - (p - start), p);
      if (h === null || typeof h === 'string') break;
      last = h.lastOffset;
      p += h.size;
    }
    return last;
  } finally {
    await fh.close();
  }
}

/**
 * Completes the swaps a crash interrupted (Kafka's LogLoader does the same): for each
 * `<base>.log.swap`, the segments whose base offset lies in [base, its last offset] are removed
 * and the swap files take their names; an empty swap is dropped (the segments it would replace
 * still hold their data). Returns whether anything changed.
 */
export async function completeSwaps(dir: string, names: readonly string[]): Promise<boolean> {
  const swaps = names.flatMap((n) => /^(\d{20})\.log\.swap$/.exec(n)?.[1] ?? []).map(BigInt);
  swaps.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const logs = names.flatMap((n) => /^(\d{20})\.log$/.exec(n)?.[1] ?? []).map(BigInt);
  for (const base of swaps) {
    const g = { baseOffset: base } as CleanedGroup;
    const last = await lastOffsetOf(cleanerFile(dir, base, LOG_SUFFIX, SWAP_SUFFIX));
    if (last === null) {
      removeCleanerFiles(dir, [g], SWAP_SUFFIX);
      continue;
    }
    for (const b of logs) if (b >= base && b <= last) removeCleanerFiles(dir, [{ baseOffset: b } as CleanedGroup], '');
    // index files the swap lacks must not be taken from the segment it replaces
    for (const s of SUFFIXES) {
      const swap = cleanerFile(dir, base, s, SWAP_SUFFIX);
      if (fs.existsSync(swap)) fs.renameSync(swap, cleanerFile(dir, base, s, ''));
    }
  }
  if (swaps.length > 0) await fsyncDir(dir);
  return swaps.length > 0;
}
