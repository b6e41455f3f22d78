/**
 * Questions about a partition's segments (oldest first) that need no log state beyond them: which
 * segment holds an offset, the first record at or after a timestamp, the aborted transactions a
 * read_committed fetch must be told about, how many of the oldest segments may be deleted, and
 * whether the active one is due to roll.
 */
import { LogError, storageError } from './errors.js';
import type { LogConfig } from './log-config.js';
import { entryRecords, walkSegmentSync } from './log-read.js';
import type { LogSegment } from './segment.js';
import type { AbortedTxn } from './transaction-index.js';

export interface TimestampOffset {
  offset: bigint;
  timestamp: bigint;
  leaderEpoch: number;
}

/** Index of the last segment whose base offset is <= offset (0 when none). */
export function segmentIndexFor(segs: readonly LogSegment[], offset: bigint): number {
  let lo = 0;
  let hi = segs.length - 1;
  let found = 0;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if ((segs[mid]?.baseOffset ?? 0n) <= offset) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** The first record at or after `logStartOffset` with timestamp >= `target` (decoding the entries that may hold it). */
export function searchTimestamp(
  segs: readonly LogSegment[],
  target: bigint,
  logStartOffset: bigint,
  maxOutput: number,
): TimestampOffset | null {
  const start = logStartOffset;
  for (const seg of segs) {
    if (seg.maxTimestamp < target || seg.nextOffset <= start) continue;
    const fromOffset = seg.timeIndex.lookup(target).offset;
    const from = fromOffset > start ? fromOffset : start;
    const position = from > seg.baseOffset ? seg.offsetIndex.lookup(from).position : 0;
    let found = null as TimestampOffset | null; // set by the walk's callback, which narrowing does not see
    try {
      walkSegmentSync(seg, position, (h, bytes) => {
        if (h.maxTimestamp < target || h.lastOffset < start) return false;
        const { records, leaderEpoch } = entryRecords(bytes(), maxOutput);
        const r = records.find((x) => x.timestamp >= target && x.offset >= start);
        if (r !== undefined) found = { offset: r.offset, timestamp: r.timestamp, leaderEpoch };
        return found !== null;
      });
    } catch (err) {
      throw err instanceof LogError ? err : storageError(`reading ${seg.logPath} by timestamp failed: ${(err as Error).message}`, err);
    }
    if (found !== null) return found;
  }
  return null;
}

/**
 * The aborted transactions overlapping [fetchOffset, upperBound), by first offset: Kafka's
 * collectAbortedTxns over the transaction indexes from the segment holding fetchOffset on (an
 * entry lives in the segment of its ABORT marker, so earlier segments cannot hold one that matters).
 */
export function abortedTransactionsIn(segs: readonly LogSegment[], fetchOffset: bigint, upperBound: bigint): AbortedTxn[] {
  const out: AbortedTxn[] = [];
  for (let i = segmentIndexFor(segs, fetchOffset); i < segs.length; i++) {
    if ((segs[i] as LogSegment).txnIndex.collect(fetchOffset, upperBound, out)) break;
  }
  if (out.length > 1) out.sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  return out;
}

/** What retention reads of a segment (a LogSegment, or a closed log's SegmentSummary). */
export interface SegmentView {
  readonly baseOffset: bigint;
  readonly nextOffset: bigint;
  readonly size: number;
  readonly maxTimestamp: bigint;
  readonly lastModified: number;
}

/**
 * How many of the oldest segments may go: those wholly below the log start offset, and (given a
 * config with cleanup.policy=delete) those past retention.ms / beyond retention.bytes. Never the
 * active segment, never data above the high watermark.
 */
export function deletableSegments(
  segs: readonly SegmentView[],
  retention: LogConfig | null,
  now: number,
  highWatermark: bigint,
  logStartOffset: bigint,
): number {
  let i = 0;
  const eligible = (k: number): boolean => k < segs.length - 1 && (segs[k] as SegmentView).nextOffset <= highWatermark;
  while (eligible(i) && (segs[i + 1] as SegmentView).baseOffset <= logStartOffset) i++;
  if (retention === null || !retention.cleanupPolicy.includes('delete')) return i;
  if (retention.retentionMs >= 0) {
    const age = (s: SegmentView): number => now - (s.maxTimestamp >= 0n ? Number(s.maxTimestamp) : s.lastModified);
    while (eligible(i) && age(segs[i] as SegmentView) > retention.retentionMs) i++;
  }
  if (retention.retentionBytes >= 0) {
    let diff = -retention.retentionBytes;
    for (const s of segs) diff += s.size;
    for (let k = 0; k < i; k++) diff -= (segs[k] as SegmentView).size;
    while (eligible(i) && diff - (segs[i] as SegmentView).size >= 0) diff -= (segs[i++] as SegmentView).size;
  }
  return i;
}

/**
 * The bytes from the start of the entry holding `from` to the start of the one holding `to` (from ≤
 * to; the log's end when none holds it): what a read from `from` up to `to` returns when both are
 * entry boundaries, as a transaction's first offset and a last stable offset are. The boundaries are
 * found by walking the headers from the offset index's entry below each offset. What a marker made
 * readable to read_committed fetches.
 */
export function bytesBetween(segs: readonly LogSegment[], from: bigint, to: bigint): number {
  if (segs.length === 0 || to <= from) return 0;
  const a = segmentIndexFor(segs, from);
  const b = segmentIndexFor(segs, to);
  let bytes = positionIn(segs[b]!, to) - positionIn(segs[a]!, from);
  for (let i = a; i < b; i++) bytes += segs[i]!.size;
  return Math.max(0, bytes);
}

/** Where, in `seg`, the entry holding `offset` starts (the segment's size when no entry holds it). */
function positionIn(seg: LogSegment, offset: bigint): number {
  if (offset <= seg.baseOffset) return 0;
  if (offset >= seg.nextOffset) return seg.size;
  let at = seg.size;
  walkSegmentSync(seg, seg.offsetIndex.lookup(offset).position, (h) => {
    if (h.lastOffset < offset) return false;
    at = h.position;
    return true;
  });
  return at;
}

/**
 * Kafka's shouldRoll for an append of `bytes` ending at `lastOffset` to the active segment: size, time
 * (by record timestamps), full indexes, relative offset overflow. An empty segment never rolls.
 */
export function rollDue(seg: LogSegment, c: LogConfig, bytes: number, lastOffset: bigint, maxTimestamp: bigint, now: number): boolean {
  if (seg.isEmpty) return false;
  const base = seg.rollBaseTimestamp;
  const waited = base !== null && maxTimestamp >= 0n ? Number(maxTimestamp) - base : now - seg.created;
  return (
    seg.size > c.segmentBytes - bytes || waited > c.segmentMs || seg.offsetIndex.isFull || seg.timeIndex.isFull || !seg.canHold(lastOffset)
  );
}
