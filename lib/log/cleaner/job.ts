/** What a cleaning job is given and gives back (structured-cloned between the main thread and a cleaner worker). */
import type { AbortedTxn } from '../transaction-index.js';

/** One segment of the cleanable section, as the main thread saw it when the job was made. */
export interface CleanSegmentInfo {
  baseOffset: bigint;
  /** Last offset + 1. */
  nextOffset: bigint;
  /** Bytes of the segment the job reads (all of it: the segment is inactive). */
  size: number;
  lastModified: number;
  offsetIndexEntries: number;
  timeIndexEntries: number;
}

export interface CleanJob {
  /** The partition directory. */
  dir: string;
  /** From the log's first segment up to (not including) the first uncleanable one. */
  segments: CleanSegmentInfo[];
  /** Where the dirty section starts (the cleaner checkpoint, at least the log start offset). */
  firstDirtyOffset: bigint;
  now: number;
  deleteRetentionMs: number;
  segmentBytes: number;
  segmentIndexBytes: number;
  indexIntervalBytes: number;
  /** Upper bound on a decompressed batch. */
  maxDecompressed: number;
  /** Aborted transactions (from the transaction indexes) whose data may lie in the section. */
  abortedTxns: AbortedTxn[];
  /** producerId → last data offset of each producer the log's producer state holds (its last batch is kept). */
  producerLastOffsets: [bigint, bigint][];
  /** Bytes of the job's offset map (offset-map.ts mapBytesFor). */
  mapBytes: number;
  /** log.cleaner.io.buffer.load.factor: the share of the map's slots it fills before it counts as full. */
  loadFactor: number;
  /** Bytes of the read buffer and of the write buffer (log.cleaner.io.buffer.size / threads / 2; grown for a larger batch). */
  ioBufferBytes: number;
  /** ThrottleControl.shared: this thread's share of log.cleaner.io.max.bytes.per.second, as it is now. */
  io: SharedArrayBuffer;
}

/** What the cleaner's settings give each job (JobSettings of cleaner.ts's current options). */
export interface JobSettings {
  /** log.cleaner.dedupe.buffer.size / threads: the most a job's offset map takes. */
  maxMapBytes: number;
  loadFactor: number;
  ioBufferBytes: number;
  io: SharedArrayBuffer;
}

/** One cleaned output segment, written as `<baseOffset>.log.cleaned` (+ `.index/.timeindex/.txnindex.cleaned`). */
export interface CleanedGroup {
  baseOffset: bigint;
  /** The segments it replaces. */
  oldBases: bigint[];
  size: number;
  /** Last kept offset + 1 (the base offset when nothing was kept). */
  nextOffset: bigint;
  hasTxnIndex: boolean;
}

export interface CleanStats {
  bytesRead: number;
  bytesWritten: number;
  recordsRead: number;
  recordsRetained: number;
  /** Share of the offset map's slots used. */
  bufferUtilization: number;
  elapsedMs: number;
}

export interface CleanResult {
  groups: CleanedGroup[];
  /** The next cleaning's first dirty offset (the map's reach). */
  endOffset: bigint;
  /** The earliest delete horizon among kept tombstones and markers (the log is due again then); null if none. */
  nextDeleteHorizon: number | null;
  stats: CleanStats;
}
