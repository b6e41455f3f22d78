/**
 * Which part of a log the cleaner may rewrite, and how dirty it is (Kafka's LogCleanerManager
 * cleanableOffsets and LogToClean): from the first segment up to the first uncleanable one — the
 * active segment, the one holding the last stable offset (undecided transactions and data above
 * the high watermark are never cleaned), one still inside min.compaction.lag.ms, or one with
 * writes not yet handed to the kernel.
 */
import { decompressLimit } from '../validator.js';
import type { LogConfig } from '../log-config.js';
import type { PartitionLog } from '../partition-log.js';
import type { UnifiedLog } from '../unified-log.js';
import { mapBytesFor } from './offset-map.js';
import type { CleanJob, CleanSegmentInfo, JobSettings } from './job.js';
import { fixedRate } from './throttle.js';

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

/** A segment as the section sees it: an open log's LogSegment, or a closed log's summary line. */
interface SegmentView {
  readonly nextOffset: bigint;
  readonly size: number;
  readonly maxTimestamp: bigint;
  readonly lastModified: number;
  /** Writes not yet handed to the kernel (an open log's only). */
  readonly hasPending?: boolean;
  /** The first entry's max timestamp, or when the segment was made (an open log's only). */
  readonly rollBaseTimestamp?: number | null;
  readonly created?: number;
}

interface SectionSource {
  readonly segments: readonly SegmentView[];
  readonly logStartOffset: bigint;
  readonly logEndOffset: bigint;
  readonly lastStableOffset: bigint;
  readonly config: LogConfig;
}

/** The cleanable section of an open log. */
export function cleanableSection(log: UnifiedLog, checkpoint: bigint | undefined, now: number): Section {
  const { segmentList: segments, logStartOffset, logEndOffset, lastStableOffset, currentConfig: config } = log;
  return sectionOf({ segments, logStartOffset, logEndOffset, lastStableOffset, config }, checkpoint, now);
}

/**
 * The cleanable section of a log not open, from its summary (the segment list the partition summary
 * checkpoint keeps): what decides whether it is worth opening to clean. A segment's first timestamp
 * is not in the summary; its max timestamp stands in (not earlier), so max.compaction.lag.ms never
 * makes a log due here that the open log would not find due.
 */
export function closedSection(log: PartitionLog, checkpoint: bigint | undefined, now: number): Section {
  const s = log.summary();
  const src = {
    segments: s.segments,
    logStartOffset: s.logStartOffset,
    logEndOffset: s.logEndOffset,
    lastStableOffset: log.lastStableOffset,
    config: log.currentConfig,
  };
  return sectionOf(src, checkpoint, now);
}

function sectionOf(src: SectionSource, checkpoint: bigint | undefined, now: number): Section {
  const segs = src.segments;
  const c = src.config;
  const lso = src.lastStableOffset;
  const minLag = c.minCompactionLagMs ?? 0;
  let first = checkpoint ?? src.logStartOffset;
  if (first < src.logStartOffset || first > src.logEndOffset) first = src.logStartOffset;
  let end = 0;
  while (end < segs.length - 1) {
    const s = segs[end] as SegmentView;
    const ts = s.maxTimestamp >= 0n ? Number(s.maxTimestamp) : s.lastModified;
    if (s.nextOffset > lso || s.hasPending === true || (minLag > 0 && ts > now - minLag)) break;
    end++;
  }
  let cleanableBytes = 0;
  let totalBytes = 0;
  let lagDue = false;
  const maxLag = c.maxCompactionLagMs ?? Number.MAX_SAFE_INTEGER;
  for (let i = 0; i < end; i++) {
    const s = segs[i] as SegmentView;
    totalBytes += s.size;
    if (s.nextOffset <= first) continue;
    cleanableBytes += s.size;
    // Kafka takes the first batch's timestamp; the segment's first max-timestamp (rollBaseTimestamp) or its file time stands in
    const born = s.rollBaseTimestamp ?? s.created ?? (s.maxTimestamp >= 0n ? Number(s.maxTimestamp) : s.lastModified);
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

/** Settings with Kafka's defaults for one thread, unthrottled (tests, tools); `over` replaces fields. */
export function jobSettings(over: Partial<JobSettings> = {}): JobSettings {
  return { maxMapBytes: 128 << 20, loadFactor: 0.9, ioBufferBytes: 262144, io: fixedRate(), ...over };
}

/** The job for a log's section. */
export function makeJob(log: UnifiedLog, section: Section, now: number, settings: JobSettings): CleanJob {
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
    mapBytes: mapBytesFor((last?.nextOffset ?? 0n) - section.firstDirtyOffset, settings.maxMapBytes, settings.loadFactor),
    loadFactor: settings.loadFactor,
    ioBufferBytes: settings.ioBufferBytes,
    io: settings.io,
  };
}
