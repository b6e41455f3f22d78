/** What a partition log is opened with (LocalLog and the layers above it take these). */
import type { ConversionRunner } from './convert.js';
import type { LogLogger } from './log-loader.js';
import type { RecentCacheBudget } from './recent-cache.js';
import type { ConvertHook } from './validator.js';

export interface PartitionLogOptions {
  /** Scan and repair the tail (the data dir had no clean-shutdown marker). */
  recover: boolean;
  logger?: LogLogger;
  /** Synchronous hook applied to fast-path appends after validation (conversion proper is `converter`'s). */
  convert?: ConvertHook;
  /**
   * Where recompression, format conversion and deep validation run (the append worker pool).
   * Absent: inline on the calling thread.
   */
  converter?: ConversionRunner;
  /** Budget of the recent-batches cache (default 1 MiB; 0 disables it). */
  recentCacheBytes?: number;
  /** The broker-wide bound shared by every log's recent-batches cache (gregor.log.recent.cache.bytes). */
  recentCacheBudget?: RecentCacheBudget;
  /** Called when the high watermark moves (after appended data reached the kernel, or disk). */
  onHighWatermark?: (highWatermark: bigint) => void;
  /**
   * recovery-point-offset-checkpoint's offset for this log: below it every segment was on disk, so
   * recovery after an unclean shutdown validates every entry from the segment holding it (default 0).
   */
  recoveryPoint?: bigint;
}

/** A replicated partition's high watermark, which the replication layer moves (see ReplicaLog.useExternalHighWatermark). */
export interface ExternalHighWatermark {
  /** told each move of writtenEndOffset (the leader recomputes the minimum over the ISR then) */
  onWritten: ((writtenEndOffset: bigint) => void) | null;
  /** told each advance of the high watermark (consumers' long polls wake) */
  onAdvanced?: ((highWatermark: bigint) => void) | null;
}
