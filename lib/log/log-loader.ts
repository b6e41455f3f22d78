/**
 * Opening a partition directory: clean-up of leftovers, index loading, tail scans and (after an
 * unclean shutdown) recovery by truncation at the first invalid entry.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { GregorLogErrorCode, LogError, isNoSpace } from './errors.js';
import type { LogConfig } from './log-config.js';
import type { LogSummary } from './log-summary.js';
import { DELETED_SUFFIX, LogSegment } from './segment.js';
import type { EntryHeader, IoStats } from './segment.js';
import { CLEANED_SUFFIX } from './cleaner/clean.js';
import { completeSwaps } from './cleaner/swap.js';

export interface LogLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const NOOP_LOGGER: LogLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export interface LoadResult {
  segments: LogSegment[];
  /** Entries scanned in the last segment (recovery re-derives leader epochs from them). */
  tail: EntryHeader[];
  /** Bytes cut off by recovery. */
  truncatedBytes: number;
  /** Offsets of the producer-state snapshot files found (`<offset>.snapshot`), newest first. */
  snapshots: bigint[];
  /** Whether the tail was scanned as after an unclean shutdown (asked for, or the files differed from `expected`). */
  recovered: boolean;
}

/** Files dropped at load: segments deleted, temporaries, and the cleaner's unfinished output (`.swap` files are completed: cleaner/swap.ts). */
const LEFTOVER = [DELETED_SUFFIX, '.tmp', CLEANED_SUFFIX];

function corrupt(dir: string, message: string): LogError {
  return new LogError(ErrorCode.KAFKA_STORAGE_ERROR, `${dir}: ${message}`, GregorLogErrorCode.CORRUPT);
}

/**
 * Whether the segment files (as opened: base offsets and sizes) are those `expected` describes. A
 * log with no files yet matches a summary of an empty log.
 */
export function matchesSummary(segments: readonly LogSegment[], expected: LogSummary): boolean {
  if (segments.length === 0) return expected.logEndOffset === expected.logStartOffset && expected.segments.every((s) => s.size === 0);
  if (segments.length !== expected.segments.length) return false;
  return segments.every((s, i) => {
    const e = expected.segments[i];
    return e !== undefined && s.baseOffset === e.baseOffset && s.size === e.size;
  });
}

/**
 * Loads every segment of `dir`. Throws LogError(GREGOR_ERR_LOG_CORRUPT) for corruption it must not
 * cut. `expected`: what the files should be (the summary the log was served from while closed);
 * when they differ, the log is recovered as after an unclean shutdown.
 */
export async function loadSegments(
  dir: string,
  config: LogConfig,
  recover: boolean,
  now: number,
  stats: IoStats,
  logger: LogLogger,
  expected: LogSummary | null = null,
): Promise<LoadResult> {
  let names = await fsp.readdir(dir);
  for (const name of names) if (LEFTOVER.some((s) => name.endsWith(s))) await fsp.rm(path.join(dir, name), { force: true });
  if (await completeSwaps(dir, names)) {
    logger.warn({ dir }, 'completed a cleaned-segment swap that a crash interrupted');
    recover = true;
  }
  names = await fsp.readdir(dir);
  const bases: bigint[] = [];
  const logs = new Set<string>();
  const snapshots: bigint[] = [];
  for (const name of names) {
    const m = /^(\d{20})\.(log|snapshot)$/.exec(name);
    if (m?.[1] !== undefined && m[2] === 'snapshot') snapshots.push(BigInt(m[1]));
    else if (m?.[1] !== undefined) {
      bases.push(BigInt(m[1]));
      logs.add(m[1]);
    }
  }
  for (const name of names) {
    const m = /^(\d{20})\.(index|timeindex|txnindex)$/.exec(name);
    if (m?.[1] !== undefined && !logs.has(m[1])) await fsp.rm(path.join(dir, name), { force: true });
  }
  bases.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

  const segments: LogSegment[] = [];
  const files = new Set(names);
  for (const base of bases) {
    try {
      segments.push(await openSegment(dir, base, config, now, stats, files));
    } catch (err) {
      for (const s of segments) await s.close();
      throw err;
    }
  }
  if (!recover && expected !== null && !matchesSummary(segments, expected)) {
    logger.warn(
      { dir, segments: segments.length, expected: expected.segments.length },
      'the log files differ from its summary checkpoint; recovering the log',
    );
    recover = true;
  }
  let tail: EntryHeader[] = [];
  let truncatedBytes = 0;
  try {
    let prevNext = -1n;
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i] as LogSegment;
      const isLast = i === segments.length - 1;
      if (seg.baseOffset < prevNext) throw corrupt(dir, `segment ${seg.baseOffset} overlaps the previous one, which ends at ${prevNext}`);
      const res = await scanSegment(seg, config, recover && isLast, recover, logger, dir);
      if (res.problem !== null) {
        const laterData = segments.slice(i + 1).some((s) => s.size > 0);
        if (laterData) {
          throw corrupt(dir, `segment ${seg.baseOffset}: ${res.problem}, followed by valid data in later segments; refusing to truncate`);
        }
        truncatedBytes += seg.size - res.validEnd;
        logger.warn(
          { dir, segment: seg.baseOffset.toString(), position: res.validEnd, dropped: seg.size - res.validEnd, problem: res.problem },
          'truncating log tail',
        );
        await seg.truncateTo(res.validEnd);
        // later segments are all empty: they go, this one becomes the active segment
        for (const s of segments.splice(i + 1)) await s.destroy();
      }
      seg.timeIndex.truncateToOffset(seg.nextOffset);
      if (i < segments.length - 1) seg.onBecomeInactive();
      prevNext = seg.nextOffset;
      if (i === segments.length - 1) tail = res.entries;
    }
    // empty segments between the first and the last hold nothing: drop them (the first stays: its base
    // offset is the log start offset, and the cleaner may have emptied it of superseded records)
    for (let i = segments.length - 2; i >= 1; i--) {
      const s = segments[i] as LogSegment;
      if (s.size === 0) {
        segments.splice(i, 1);
        await s.destroy();
      }
    }
    for (const s of segments) {
      // on a full disk the rebuilt index serves from memory; the next persist (roll, close) writes it
      await s.persistIndexes().catch((err: unknown) => {
        if (!isNoSpace(err)) throw err;
        logger.warn({ dir, segment: s.baseOffset.toString() }, 'writing a recovered index failed: the file system is full');
      });
    }
  } catch (err) {
    for (const s of segments) await s.close();
    throw err;
  }
  snapshots.sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
  return { segments, tail, truncatedBytes, snapshots, recovered: recover };
}

async function openSegment(
  dir: string,
  base: bigint,
  config: LogConfig,
  now: number,
  stats: IoStats,
  files: ReadonlySet<string>,
): Promise<LogSegment> {
  const { segment, indexesValid } = await LogSegment.open(dir, base, config.segmentIndexBytes, now, stats, files);
  if (!indexesValid) segment.resetIndexes();
  return segment;
}

/**
 * Scans a segment's tail from its last index entry, or all of it when `full` or its index is
 * missing; `checkCrc` during recovery.
 */
async function scanSegment(seg: LogSegment, config: LogConfig, full: boolean, checkCrc: boolean, logger: LogLogger, dir: string) {
  const indexed = seg.indexesLoaded;
  const last = seg.offsetIndex.last();
  if (!full && indexed && last !== null) {
    const res = await seg.scan(last.position, checkCrc, config.indexIntervalBytes, seg.baseOffset);
    if (res.entries[0]?.lastOffset === last.offset) return res;
    logger.warn({ dir, segment: seg.baseOffset.toString() }, 'index does not match the log; rebuilding it');
  } else if (!indexed && seg.size > 0) {
    logger.info({ dir, segment: seg.baseOffset.toString() }, 'rebuilding missing or invalid index');
  }
  seg.resetIndexes();
  return seg.scan(0, checkCrc, config.indexIntervalBytes, seg.baseOffset);
}
