/**
 * Which part of a log the cleaner may rewrite, and how dirty it is (Kafka's LogCleanerManager
 * cleanableOffsets and LogToClean): from the first segment up to the first uncleanable one — the
 * active segment, the one holding the last stable offset (undecided transactions and data above
 * the high watermark are never cleaned), one still inside min.compaction.lag.ms, or one with
 * writes not yet handed to the kernel.
 */
import { decompressLimit } from '../validator.js';
import { mapBytesFor } from './offset-map.js';
import type { LogSegment } from '../segment.js';
import type { UnifiedLog } from '../unified-log.js';
import type { CleanJob, CleanSegmentInfo } from './job.js';

export interface Section {
  /** Segments [0, end) are cleanable. */
  end: number;
  firstDirtyOffset: bigint;
  cleanableBytes: number;
  totalBytes: number;
  /** cleanableBytes / totalBytes (0 when nothing is cleanable). */
  dirtyRatio: number;
  /** max.compaction.lag.ms passed for the oldest dirty record. */
  lagDue: boolean;
}

export function cleanableSection(log: UnifiedLog, checkpoint: bigint | undefined, now: number): Section {
  const segs = log.segmentList;
  const c = log.currentConfig;
  const lso = log.lastStableOffset;
  const minLag = c.minCompactionLagMs ?? 0;
  let first = checkpoint ?? log.logStartOffset;
  if (first < log.logStartOffset || first > log.logEndOffset) first = log.logStartOffset;
  let end = 0;
  while (end < segs.length - 1) {
    const s = segs[end] as LogSegment;
    const ts = s.maxTimestamp >= 0n ? Number(s.maxTimestamp) : s.lastModified;
    if (s.nextOffset > lso || s.hasPending || (minLag > 0 && ts > now - minLag)) break;
    end++;
  }
  let cleanableBytes = 0;
  let totalBytes = 0;
  let lagDue = false;
  const maxLag = c.maxCompactionLagMs ?? Number.MAX_SAFE_INTEGER;
  for (let i = 0; i < end; i++) {
    const s = segs[i] as LogSegment;
    totalBytes += s.size;
    if (s.nextOffset <= first) continue;
    cleanableBytes += s.size;
    // Kafka takes the first batch's timestamp; the segment's first max-timestamp (rollBaseTimestamp) or its file time stands in
    const born = s.rollBaseTimestamp ?? s.created;
    if (s.size > 0 && maxLag < Number.MAX_SAFE_INTEGER && born < now - maxLag) lagDue = true;
  }
  return {
    end,
    firstDirtyOffset: first,
    cleanableBytes,
    totalBytes,
    dirtyRatio: totalBytes === 0 ? 0 : cleanableBytes / totalBytes,
    lagDue,
  };
}

/** The job for a log's section. */
export function makeJob(log: UnifiedLog, section: Section, now: number, ioBytesPerSecond: number, maxMapBytes = 128 << 20): CleanJob {
  const c = log.currentConfig;
  const segs = log.segmentList.slice(0, section.end);
  const infos: CleanSegmentInfo[] = segs.map((s) => ({
    baseOffset: s.baseOffset,
    nextOffset: s.nextOffset,
    size: s.size,
    lastModified: s.lastModified,
    offsetIndexEntries: s.offsetIndex.entries,
    timeIndexEntries: s.timeIndex.entries,
  }));
  const last = segs[segs.length - 1];
  const producerLastOffsets: [bigint, bigint][] = [];
  for (const [pid, e] of log.producers.producers) {
    const b = e.batches[e.batches.length - 1];
    if (b !== undefined) producerLastOffsets.push([pid, b.lastOffset]);
  }
  return {
    dir: log.dir,
    segments: infos,
    firstDirtyOffset: section.firstDirtyOffset,
    now,
    deleteRetentionMs: c.deleteRetentionMs ?? 86400000,
    segmentBytes: c.segmentBytes,
    segmentIndexBytes: c.segmentIndexBytes,
    indexIntervalBytes: c.indexIntervalBytes,
    maxDecompressed: decompressLimit(c),
    abortedTxns: segs.length === 0 || last === undefined ? [] : log.abortedTransactions(segs[0]?.baseOffset ?? 0n, last.nextOffset),
    producerLastOffsets,
    ioBytesPerSecond,
    mapBytes: mapBytesFor((last?.nextOffset ?? 0n) - section.firstDirtyOffset, maxMapBytes),
  };
}
