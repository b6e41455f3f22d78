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
import { fsyncDir, writeFileAtomic } from './checkpoint.js';
import { readRepairMarker, REPAIR_MARKER } from './read-verify.js';
import { DELETED_SUFFIX, LogSegment, parseEntryHeader } from './segment.js';
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
  /** The recovery point the load validated from (lowered by a repair marker or a summary mismatch). */
  recoveryPoint: bigint;
}

/** Files dropped at load: segments deleted, temporaries, and the cleaner's unfinished output (`.swap` files are completed: cleaner/swap.ts). */
const LEFTOVER = [DELETED_SUFFIX, '.tmp', CLEANED_SUFFIX];
/** What recovery cuts off is kept aside under the file's name plus this and the time (ms). */
export const CORRUPT_SUFFIX = '.corrupt-';

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

/** What loading a directory made just now finds: nothing (the caller creates the first segment). */
export function emptyLoad(): LoadResult {
  return { segments: [], tail: [], truncatedBytes: 0, snapshots: [], recovered: false, recoveryPoint: 0n };
}

/** How a log is loaded: as after an unclean shutdown or not, and where its recovery point is. */
export interface Recovery {
  /** Validate (CRC) every entry from the recovery point, as after an unclean shutdown. */
  recover: boolean;
  /** recovery-point-offset-checkpoint's offset: segments wholly below it were on disk (only their tail is checked). */
  recoveryPoint: bigint;
}

/**
 * Loads every segment of `dir`. After an unclean shutdown (`recovery.recover`) every entry of the
 * segments from the one holding the recovery point is validated (CRC, offsets), and the tails of
 * the segments below it; on a clean start the tails are checked. At the first invalid entry the log
 * is truncated, and what is cut (the rest of that segment, the later segments) is kept aside as
 * `*.corrupt-<time>` files (Kafka deletes it), logged with its offsets and bytes. `expected`: what
 * the files should be (the summary the log was served from while closed); when they differ, the log
 * is recovered from its start. A repair marker (a read met a corrupt entry, read-verify.ts) makes
 * the load recover the log from the segment it names, and goes once the log is repaired.
 */
export async function loadSegments(
  dir: string,
  config: LogConfig,
  recovery: Recovery,
  now: number,
  stats: IoStats,
  logger: LogLogger,
  expected: LogSummary | null = null,
): Promise<LoadResult> {
  let { recover, recoveryPoint } = recovery;
  let names = await fsp.readdir(dir);
  for (const name of names) if (LEFTOVER.some((s) => name.endsWith(s))) await fsp.rm(path.join(dir, name), { force: true });
  if (await completeSwaps(dir, names)) {
    logger.warn({ dir }, 'completed a cleaned-segment swap that a crash interrupted');
    recover = true;
  }
  names = await fsp.readdir(dir);
  const repairFrom = names.includes(REPAIR_MARKER) ? await readRepairMarker(dir) : null;
  if (repairFrom !== null) {
    logger.warn(
      { dir, segment: repairFrom.toString() },
      'a read met a corrupt entry in this log: validating it from that segment to repair it',
    );
    recover = true;
    if (repairFrom < recoveryPoint) recoveryPoint = repairFrom;
  }
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
    recoveryPoint = 0n;
  }
  let tail: EntryHeader[] = [];
  let truncatedBytes = 0;
  try {
    let prevNext = -1n;
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i] as LogSegment;
      const isLast = i === segments.length - 1;
      if (seg.baseOffset < prevNext) throw corrupt(dir, `segment ${seg.baseOffset} overlaps the previous one, which ends at ${prevNext}`);
      // Kafka's unflushed segments: the one holding the recovery point and those after it
      const unflushed = recover && (isLast || (segments[i + 1] as LogSegment).baseOffset > recoveryPoint);
      const res = await scanSegment(seg, config, unflushed, recover, logger, dir);
      if (res.problem !== null) {
        truncatedBytes += await cutAndKeepAside(dir, seg, res.validEnd, res.problem, segments.splice(i + 1), config, logger, unflushed);
      } else if (unflushed && !isLast && !config.cleanupPolicy.includes('compact')) {
        // a power loss can keep a later segment (its name and, up to an fsync, data) while this one's
        // tail never reached the disk: outside a compacted log offsets run on without a gap, so the
        // later segments go too (and the lost offsets are given again), as after an invalid entry
        const next = segments[i + 1] as LogSegment;
        if (seg.nextOffset < next.baseOffset) {
          const problem = `the segment ends at offset ${seg.nextOffset}, the next one starts at ${next.baseOffset}`;
          truncatedBytes += await cutAndKeepAside(dir, seg, seg.size, problem, segments.splice(i + 1), config, logger, unflushed);
        }
      }
      // what recovery validated may be in the page cache only: the next roll or flush fsyncs it
      // before the recovery point moves past it (an fsync of each here would slow a restart down)
      if (unflushed) seg.unsynced = true;
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
    if (repairFrom !== null) await fsp.rm(path.join(dir, REPAIR_MARKER), { force: true });
  } catch (err) {
    for (const s of segments) await s.close();
    throw err;
  }
  snapshots.sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
  return { segments, tail, truncatedBytes, snapshots, recovered: recover, recoveryPoint };
}

/**
 * Truncates `seg` at `validEnd` (its first invalid entry) and drops the `later` segments, keeping
 * what goes aside: the cut bytes as `<segment>.log.corrupt-<time>`, each later `.log` renamed so
 * (their indexes are removed: they can be rebuilt). Logs the segment, position, the offsets dropped
 * (as far as the entry headers tell) and the bytes. Returns the bytes cut.
 */
async function cutAndKeepAside(
  dir: string,
  seg: LogSegment,
  validEnd: number,
  problem: string,
  later: LogSegment[],
  config: LogConfig,
  logger: LogLogger,
  unflushed: boolean,
): Promise<number> {
  const suffix = `${CORRUPT_SUFFIX}${Date.now()}`;
  const cut = seg.size - validEnd;
  const firstDropped = seg.nextOffset;
  let lastDropped = -1n;
  const kept: string[] = [];
  if (cut > 0) {
    const bytes = await seg.read(validEnd, cut);
    lastDropped = lastOffsetIn(bytes);
    const file = seg.logPath + suffix;
    try {
      await writeFileAtomic(file, bytes);
      kept.push(path.basename(file));
    } catch (err) {
      logger.error({ err, dir, file }, 'could not keep the cut bytes aside; they are dropped');
    }
  }
  let laterBytes = 0;
  for (const s of later) {
    laterBytes += s.size;
    if (s.size > 0) {
      // the headers tell which offsets go (no CRC check: they go either way)
      await s.scan(0, false, config.indexIntervalBytes, s.baseOffset);
      if (s.nextOffset - 1n > lastDropped) lastDropped = s.nextOffset - 1n;
      await s.close();
      await fsp.rename(s.logPath, s.logPath + suffix);
      kept.push(path.basename(s.logPath + suffix));
    }
    await s.destroy();
  }
  await seg.truncateTo(validEnd);
  if (kept.length > 0) await fsyncDir(dir);
  logger.warn(
    {
      dir,
      segment: seg.baseOffset.toString(),
      position: validEnd,
      problem,
      droppedBytes: cut + laterBytes,
      droppedOffsets: lastDropped >= firstDropped ? [firstDropped.toString(), lastDropped.toString()] : [firstDropped.toString(), null],
      laterSegments: later.map((s) => s.baseOffset.toString()),
      keptAside: kept,
      beforeRecoveryPoint: !unflushed,
    },
    later.length > 0 ? 'truncating log at an invalid entry, and the segments after it' : 'truncating log tail',
  );
  return cut + laterBytes;
}

/** The last offset the entry headers at the start of `bytes` claim before one cannot be parsed (-1n: none). */
function lastOffsetIn(bytes: Buffer): bigint {
  let last = -1n;
  for (let p = 0; p < bytes.length;) {
    const h = parseEntryHeader(bytes, p, bytes.length - p, p);
    if (h === null || typeof h === 'string' || h.size <= 0) break;
    if (h.lastOffset > last) last = h.lastOffset;
    p += h.size;
  }
  return last;
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
