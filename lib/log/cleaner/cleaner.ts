/**
 * The log cleaner (Kafka's LogCleaner + LogCleanerManager): every log.cleaner.backoff.ms it picks
 * the dirtiest compacted logs (dirty ratio ≥ min.cleanable.dirty.ratio, or max.compaction.lag.ms
 * passed, or a kept tombstone's delete horizon passed), one per cleaner thread, cleans each on a
 * worker (pool.ts) and swaps the result in on the main thread (swap.ts). Every log is considered,
 * open or not: a log not open is judged from its summary (its segment list) and the checkpoint, and
 * opened only when it is picked. Where each log's dirty section starts is kept in a
 * `cleaner-offset-checkpoint` per log dir (checkpoints.ts). A log whose cleaning fails (a corrupt
 * batch) is marked uncleanable and left alone; the broker keeps serving it. `reconfigure` applies
 * changed settings (dynamic broker configs) to the running cleaner.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { LogLogger } from '../log-loader.js';
import type { PartitionLog } from '../partition-log.js';
import type { UnifiedLog } from '../unified-log.js';
import { CleanerCheckpoints, dataDirOf } from './checkpoints.js';
import { CLEANED_SUFFIX } from './clean.js';
import type { CleanJob, CleanResult, JobSettings } from './job.js';
import { CleanerPool } from './pool.js';
import { cleanableSection, closedSection, makeJob } from './section.js';
import type { Section } from './section.js';
import { swapCleaned } from './swap.js';
import { ThrottleControl } from './throttle.js';

export { CLEANER_CHECKPOINT } from './checkpoints.js';

/** The cleaner's own settings (Kafka's CleanerConfig), all changeable while it runs. */
export interface CleanerSettings {
  /** log.cleaner.threads (0: inline on the main thread; tests only). */
  threads: number;
  /** log.cleaner.dedupe.buffer.size, shared by the threads. */
  dedupeBufferSize: number;
  /** log.cleaner.io.max.bytes.per.second, shared by the threads. */
  ioMaxBytesPerSecond: number;
  /** log.cleaner.backoff.ms. */
  backoffMs: number;
  /** log.cleaner.io.buffer.size, shared by the threads (half for reading, half for writing); default 524288. */
  ioBufferSize?: number;
  /** log.cleaner.io.buffer.load.factor: how full an offset map gets; default 0.9. */
  loadFactor?: number;
}

export interface LogCleanerOptions extends CleanerSettings {
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
  private readonly throttle = new ThrottleControl();
  private readonly checkpoints: CleanerCheckpoints;
  /** Earliest delete horizon of what the last cleaning kept, per log. */
  private readonly horizons = new Map<string, number>();
  private readonly uncleanable = new Set<string>();
  private readonly inProgress = new Map<string, Promise<void>>();
  /** The logs the last round saw: a partition whose log is gone or another one since (deleted, re-created) starts over. */
  private seen = new Map<string, PartitionLog>();
  /** The logs of the last round in order (compared by identity to skip the bookkeeping above when none came or went). */
  private seenList: readonly PartitionLog[] = [];
  private settings: Required<CleanerSettings>;
  private readonly logger: LogLogger;
  private timer: NodeJS.Timeout | null = null;
  private round: Promise<number> | null = null;
  private stopped = false;

  /** `dataDirs`: the log dirs, each with its cleaner-offset-checkpoint (read now). */
  constructor(
    dataDirs: string | readonly string[],
    private readonly logs: () => Iterable<PartitionLog>,
    opts: LogCleanerOptions,
  ) {
    this.logger = opts.logger;
    this.settings = withDefaults(opts);
    this.pool = new CleanerPool(opts.threads);
    this.throttle.set(this.perThread(this.settings.ioMaxBytesPerSecond));
    this.checkpoints = new CleanerCheckpoints(typeof dataDirs === 'string' ? [dataDirs] : dataDirs, opts.logger);
  }

  start(): void {
    if (this.timer !== null || this.stopped) return;
    this.timer = setInterval(() => void this.runOnce().catch(() => undefined), Math.max(1, Math.min(this.settings.backoffMs, 2 ** 31 - 1)));
    this.timer.unref();
  }

  /**
   * Applies changed settings to the running cleaner, as Kafka's LogCleaner.reconfigure: the I/O rate
   * at once (threads in the middle of a cleaning too), the number of threads, the offset-map memory
   * and the buffers from the next cleaning on (a thread beyond the new number ends once its cleaning
   * is done), the backoff from now. The cleaner keeps at least one thread once it has threads.
   */
  reconfigure(next: CleanerSettings): void {
    const before = this.settings;
    const s = withDefaults(next);
    if (this.pool.threads > 0 && s.threads < 1) s.threads = 1;
    const changed = (Object.keys(s) as (keyof CleanerSettings)[]).filter((k) => s[k] !== before[k]);
    if (changed.length === 0) return;
    this.settings = s;
    if (s.threads !== this.pool.threads) this.pool.resize(s.threads);
    this.throttle.set(this.perThread(s.ioMaxBytesPerSecond));
    if (s.backoffMs !== before.backoffMs && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
      this.start();
    }
    this.logger.info(Object.fromEntries(changed.map((k) => [k, `${before[k]} -> ${s[k]}`])), 'log cleaner reconfigured');
  }

  /** The settings in use. */
  get currentSettings(): Readonly<Required<CleanerSettings>> {
    return this.settings;
  }

  /** Worker threads running now (tests). */
  get liveThreads(): number {
    return this.pool.liveWorkers;
  }

  private perThread(total: number): number {
    return total / Math.max(1, this.settings.threads);
  }

  private jobSettings(): JobSettings {
    const threads = Math.max(1, this.settings.threads);
    return {
      maxMapBytes: Math.floor(this.settings.dedupeBufferSize / threads),
      loadFactor: this.settings.loadFactor,
      ioBufferBytes: Math.floor(this.settings.ioBufferSize / threads / 2),
      io: this.throttle.shared,
    };
  }

  /** Whether `topic-partition` was marked uncleanable. */
  isUncleanable(topic: string, partition: number): boolean {
    return this.uncleanable.has(key(topic, partition));
  }

  /** The checkpointed first dirty offset of a log (tests and tools). */
  firstDirtyOffset(topic: string, partition: number): bigint | undefined {
    const k = key(topic, partition);
    const p = this.seen.get(k);
    return p === undefined ? this.checkpoints.find(k) : this.checkpoints.get(dataDirOf(p), k);
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
    const due: { p: PartitionLog; k: string; score: number }[] = [];
    let maxDirty = 0;
    const logs = this.logs();
    const list = Array.isArray(logs) ? (logs as readonly PartitionLog[]) : [...logs];
    // the same logs as last round (an idle broker's case): nothing can be gone, and the partitions
    // not compacted need no key at all, so a round over 10,000 of them allocates next to nothing
    if (!sameLogs(list, this.seenList)) {
      const live = new Map<string, PartitionLog>();
      for (const p of list) live.set(key(p.topic, p.partition), p);
      this.forgetGone(live);
      this.seenList = list.slice();
    }
    for (const p of list) {
      if (!p.currentConfig.cleanupPolicy.includes('compact')) continue;
      const k = key(p.topic, p.partition);
      if (this.uncleanable.has(k) || this.inProgress.has(k)) continue;
      const s = this.sectionOf(p, k, now);
      if (s === null || s.end === 0) continue;
      maxDirty = Math.max(maxDirty, s.dirtyRatio);
      const horizon = this.horizons.get(k);
      const horizonDue = horizon !== undefined && horizon <= now;
      const ratioDue = s.cleanableBytes > 0 && s.dirtyRatio >= (p.currentConfig.minCleanableDirtyRatio ?? 0.5);
      if (ratioDue || s.lagDue || horizonDue) due.push({ p, k, score: s.lagDue ? 2 + s.dirtyRatio : s.dirtyRatio });
    }
    this.stats.maxDirtyPercent = Math.round(maxDirty * 100);
    due.sort((a, b) => b.score - a.score);
    const picked = due.slice(0, Math.max(1, this.settings.threads));
    const results = await Promise.all(picked.map((d, slot) => this.clean(d.p, d.k, now, slot)));
    return results.filter(Boolean).length;
  }

  /** The log's cleanable section: of the open log, or from the summary of a log not open (null: leave it for now). */
  private sectionOf(p: PartitionLog, k: string, now: number): Section | null {
    const first = this.checkpoints.get(dataDirOf(p), k);
    const log = p.openLog;
    if (log !== null) return log.swappable ? cleanableSection(log, first, now) : null;
    // a log to recover (no summary) is opened by the recovery pass, an offline one stays as it is
    if (!p.servable || p.isOffline) return null;
    return closedSection(p, first, now);
  }

  /** Forgets what it knew of partitions whose log is gone, or is another one now (Kafka drops a deleted partition's checkpoint line). */
  private forgetGone(live: ReadonlyMap<string, PartitionLog>): void {
    const dirs = new Set<string>();
    for (const [k, p] of this.seen) {
      if (live.get(k) === p) continue;
      for (const d of this.checkpoints.delete(k)) dirs.add(d);
      this.horizons.delete(k);
      this.uncleanable.delete(k);
    }
    this.seen = new Map(live);
    this.stats.uncleanablePartitions = this.uncleanable.size;
    for (const d of dirs) this.writeCheckpoint(d);
  }

  private clean(p: PartitionLog, k: string, now: number, slot: number): Promise<boolean> {
    const run = this.prepare(p, k, now).then((prep) => {
      if (prep === null) return false;
      const { log, job } = prep;
      return this.pool.run(job, slot).then(
        (result) => this.finish(log, k, job, result),
        (err: unknown) => this.failed(log, k, job.dir, err),
      );
    });
    const done = run.then(() => undefined);
    this.inProgress.set(k, done);
    void done.finally(() => this.inProgress.delete(k));
    return run;
  }

  /** The job for the log, opened first when it is not open (null: nothing to do after all). */
  private async prepare(p: PartitionLog, k: string, now: number): Promise<{ log: UnifiedLog; job: CleanJob } | null> {
    let log = p.openLog;
    if (log === null) {
      try {
        await p.open();
      } catch {
        // the log is offline now (PartitionLog logged why)
        return null;
      }
      log = p.openLog;
      if (log === null || this.stopped) return null;
      this.logger.info({ dir: p.dir }, 'opened a log not in use to clean it');
    }
    if (!log.swappable || this.stopped) return null;
    const section = cleanableSection(log, this.checkpoints.get(dataDirOf(p), k), now);
    if (section.end === 0) return null;
    return { log, job: makeJob(log, section, now, this.jobSettings()) };
  }

  private finish(log: UnifiedLog, k: string, job: CleanJob, result: CleanResult): boolean {
    if (this.stopped) {
      removeLeftovers(job.dir);
      return false;
    }
    if (!swapCleaned(log, job, result)) return false;
    const dir = dataDirOf(job);
    this.checkpoints.set(dir, k, result.endOffset);
    if (result.nextDeleteHorizon === null) this.horizons.delete(k);
    else this.horizons.set(k, result.nextDeleteHorizon);
    const st = result.stats;
    this.stats.cleanings++;
    this.stats.bytesCleaned += st.bytesRead;
    this.stats.maxBufferUtilizationPercent = Math.round(st.bufferUtilization * 100);
    this.stats.cleanerRecopyPercent = st.bytesRead === 0 ? 0 : Math.round((st.bytesWritten / st.bytesRead) * 100);
    this.stats.maxCleanTimeSecs = st.elapsedMs / 1000;
    this.writeCheckpoint(dir);
    this.logger.info(
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
    this.logger.error({ err, dir }, 'log cleaning failed; the partition is marked uncleanable (it is still served)');
    return false;
  }

  /** Rewrites the checkpoint of log dir `dir` with the partitions it holds. */
  private writeCheckpoint(dir: string): void {
    const live = new Set<string>();
    for (const p of this.logs()) if (dataDirOf(p) === dir) live.add(key(p.topic, p.partition));
    this.checkpoints.write(dir, live);
  }

  /** Resolves once the cleaner checkpoints written so far are durable. */
  checkpointWritten(): Promise<void> {
    return this.checkpoints.settle();
  }

  /** Stops the timer and the threads: cleanings in flight are abandoned (their files removed), as Kafka's shutdown aborts them. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.pool.stop();
    await Promise.all([...this.inProgress.values()]);
    await this.checkpoints.settle();
  }
}

/** Whether `a` holds the same logs as `b`, in the same order. */
function sameLogs(a: readonly PartitionLog[], b: readonly PartitionLog[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function withDefaults(s: CleanerSettings): Required<CleanerSettings> {
  return {
    threads: s.threads,
    dedupeBufferSize: s.dedupeBufferSize,
    ioMaxBytesPerSecond: s.ioMaxBytesPerSecond,
    backoffMs: s.backoffMs,
    ioBufferSize: s.ioBufferSize ?? 524288,
    loadFactor: Math.min(1, Math.max(0.01, s.loadFactor ?? 0.9)),
  };
}

function removeLeftovers(dir: string): void {
  try {
    for (const n of fs.readdirSync(dir)) if (n.endsWith(CLEANED_SUFFIX)) fs.rmSync(path.join(dir, n), { force: true });
  } catch {
    // the directory is gone
  }
}
