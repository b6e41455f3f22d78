/**
 * The log cleaner (Kafka's LogCleaner + LogCleanerManager): every log.cleaner.backoff.ms it picks
 * the dirtiest compacted logs (dirty ratio ≥ min.cleanable.dirty.ratio, or max.compaction.lag.ms
 * passed, or a kept tombstone's delete horizon passed), one per cleaner thread, cleans each on a
 * worker (pool.ts) and swaps the result in on the main thread (swap.ts). Where each log's dirty
 * section starts is kept in `<dataDir>/cleaner-offset-checkpoint` (Kafka's text format). A log whose
 * cleaning fails (a corrupt batch) is marked uncleanable and left alone; the broker keeps serving it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CheckpointFile } from '../checkpoint.js';
import type { LogLogger } from '../log-loader.js';
import type { PartitionLog } from '../partition-log.js';
import type { UnifiedLog } from '../unified-log.js';
import { CLEANED_SUFFIX } from './clean.js';
import type { CleanResult } from './job.js';
import { CleanerPool } from './pool.js';
import { cleanableSection, makeJob } from './section.js';
import { swapCleaned } from './swap.js';

export const CLEANER_CHECKPOINT = 'cleaner-offset-checkpoint';

export interface LogCleanerOptions {
  /** log.cleaner.threads (0: inline on the main thread; tests only). */
  threads: number;
  /** log.cleaner.dedupe.buffer.size, shared by the threads. */
  dedupeBufferSize: number;
  /** log.cleaner.io.max.bytes.per.second, shared by the threads. */
  ioMaxBytesPerSecond: number;
  /** log.cleaner.backoff.ms. */
  backoffMs: number;
  logger: LogLogger;
}

/** Kafka's LogCleaner gauges. */
export interface CleanerStats {
  maxBufferUtilizationPercent: number;
  cleanerRecopyPercent: number;
  maxCleanTimeSecs: number;
  maxDirtyPercent: number;
  uncleanablePartitions: number;
  cleanings: number;
  bytesCleaned: number;
}

const key = (topic: string, partition: number): string => `${topic}-${partition}`;

export class LogCleaner {
  readonly stats: CleanerStats = {
    maxBufferUtilizationPercent: 0,
    cleanerRecopyPercent: 0,
    maxCleanTimeSecs: 0,
    maxDirtyPercent: 0,
    uncleanablePartitions: 0,
    cleanings: 0,
    bytesCleaned: 0,
  };
  private readonly pool: CleanerPool;
  private readonly checkpoint: CheckpointFile;
  private readonly firstDirty = new Map<string, bigint>();
  /** Earliest delete horizon of what the last cleaning kept, per log. */
  private readonly horizons = new Map<string, number>();
  private readonly uncleanable = new Set<string>();
  private readonly inProgress = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private round: Promise<number> | null = null;
  private stopped = false;

  constructor(
    private readonly dataDir: string,
    private readonly logs: () => Iterable<PartitionLog>,
    private readonly opts: LogCleanerOptions,
  ) {
    this.pool = new CleanerPool(opts.threads);
    this.checkpoint = new CheckpointFile(dataDir, CLEANER_CHECKPOINT);
    try {
      for (const row of this.checkpoint.readSync() ?? []) {
        if (row.length === 3) this.firstDirty.set(key(row[0] as string, Number(row[1])), BigInt(row[2] as string));
      }
    } catch (err) {
      opts.logger.warn({ err, dataDir }, 'ignoring an unreadable cleaner-offset-checkpoint');
    }
  }

  start(): void {
    if (this.timer !== null || this.stopped) return;
    this.timer = setInterval(() => void this.runOnce().catch(() => undefined), Math.max(1, Math.min(this.opts.backoffMs, 2 ** 31 - 1)));
    this.timer.unref();
  }

  /** Whether `topic-partition` was marked uncleanable. */
  isUncleanable(topic: string, partition: number): boolean {
    return this.uncleanable.has(key(topic, partition));
  }

  /** The checkpointed first dirty offset of a log (tests and tools). */
  firstDirtyOffset(topic: string, partition: number): bigint | undefined {
    return this.firstDirty.get(key(topic, partition));
  }

  /** One scheduling round: cleans the dirtiest due logs (one per thread) and resolves with how many were swapped in. */
  runOnce(now = Date.now()): Promise<number> {
    if (this.round !== null) return this.round;
    const r = this.cleanDue(now).finally(() => {
      this.round = null;
    });
    this.round = r;
    return r;
  }

  private async cleanDue(now: number): Promise<number> {
    const due: { log: UnifiedLog; k: string; score: number }[] = [];
    let maxDirty = 0;
    for (const p of this.logs()) {
      const log = p.openLog;
      const k = key(p.topic, p.partition);
      if (
        log === null ||
        !log.swappable ||
        !log.currentConfig.cleanupPolicy.includes('compact') ||
        this.uncleanable.has(k) ||
        this.inProgress.has(k)
      )
        continue;
      const s = cleanableSection(log, this.firstDirty.get(k), now);
      if (s.end === 0) continue;
      maxDirty = Math.max(maxDirty, s.dirtyRatio);
      const horizon = this.horizons.get(k);
      const horizonDue = horizon !== undefined && horizon <= now;
      const ratioDue = s.cleanableBytes > 0 && s.dirtyRatio >= (log.currentConfig.minCleanableDirtyRatio ?? 0.5);
      if (ratioDue || s.lagDue || horizonDue) due.push({ log, k, score: s.lagDue ? 2 + s.dirtyRatio : s.dirtyRatio });
    }
    this.stats.maxDirtyPercent = Math.round(maxDirty * 100);
    due.sort((a, b) => b.score - a.score);
    const picked = due.slice(0, Math.max(1, this.opts.threads));
    const results = await Promise.all(picked.map((d, slot) => this.clean(d.log, d.k, now, slot)));
    return results.filter(Boolean).length;
  }

  private clean(log: UnifiedLog, k: string, now: number, slot: number): Promise<boolean> {
    const section = cleanableSection(log, this.firstDirty.get(k), now);
    const threads = Math.max(1, this.opts.threads);
    const job = makeJob(log, section, now, this.opts.ioMaxBytesPerSecond / threads, Math.floor(this.opts.dedupeBufferSize / threads));
    const run = this.pool.run(job, slot).then(
      (result) => this.finish(log, k, job, result),
      (err: unknown) => this.failed(log, k, job.dir, err),
    );
    const done = run.then(() => undefined);
    this.inProgress.set(k, done);
    void done.finally(() => this.inProgress.delete(k));
    return run;
  }

  private finish(log: UnifiedLog, k: string, job: Parameters<typeof swapCleaned>[1], result: CleanResult): boolean {
    if (this.stopped) {
      removeLeftovers(job.dir);
      return false;
    }
    if (!swapCleaned(log, job, result)) return false;
    this.firstDirty.set(k, result.endOffset);
    if (result.nextDeleteHorizon === null) this.horizons.delete(k);
    else this.horizons.set(k, result.nextDeleteHorizon);
    const st = result.stats;
    this.stats.cleanings++;
    this.stats.bytesCleaned += st.bytesRead;
    this.stats.maxBufferUtilizationPercent = Math.round(st.bufferUtilization * 100);
    this.stats.cleanerRecopyPercent = st.bytesRead === 0 ? 0 : Math.round((st.bytesWritten / st.bytesRead) * 100);
    this.stats.maxCleanTimeSecs = st.elapsedMs / 1000;
    this.writeCheckpoint();
    this.opts.logger.info(
      {
        dir: job.dir,
        segments: `${job.segments.length} -> ${result.groups.length}`,
        endOffset: result.endOffset.toString(),
        records: `${st.recordsRead} -> ${st.recordsRetained}`,
        bytes: `${st.bytesRead} -> ${st.bytesWritten}`,
        ms: Math.round(st.elapsedMs),
      },
      'cleaned log',
    );
    return true;
  }

  private failed(log: UnifiedLog, k: string, dir: string, err: unknown): boolean {
    removeLeftovers(dir);
    // a log that changed under the cleaning (deleted, truncated, closed) is not at fault
    if (this.stopped || !log.swappable) return false;
    this.uncleanable.add(k);
    this.stats.uncleanablePartitions = this.uncleanable.size;
    this.opts.logger.error({ err, dir }, 'log cleaning failed; the partition is marked uncleanable (it is still served)');
    return false;
  }

  private writeCheckpoint(): void {
    const live = new Set<string>();
    for (const p of this.logs()) live.add(key(p.topic, p.partition));
    const rows: (string | number | bigint)[][] = [];
    for (const [k, off] of this.firstDirty) {
      if (!live.has(k)) continue;
      const m = /^(.+)-(\d+)$/.exec(k);
      if (m?.[1] !== undefined && m[2] !== undefined) rows.push([m[1], Number(m[2]), off]);
    }
    this.checkpoint
      .write(rows)
      .catch((err: unknown) => this.opts.logger.error({ err, dataDir: this.dataDir }, 'writing cleaner-offset-checkpoint failed'));
  }

  /** Resolves once the cleaner checkpoint written so far is durable. */
  checkpointWritten(): Promise<void> {
    return this.checkpoint.settle();
  }

  /** Stops the timer and the threads: cleanings in flight are abandoned (their files removed), as Kafka's shutdown aborts them. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.pool.stop();
    await Promise.all([...this.inProgress.values()]);
    await this.checkpoint.settle();
  }
}

function removeLeftovers(dir: string): void {
  try {
    for (const n of fs.readdirSync(dir)) if (n.endsWith(CLEANED_SUFFIX)) fs.rmSync(path.join(dir, n), { force: true });
  } catch {
    // the directory is gone
  }
}
