/**
 * The partition logs of every log dir (`log.dirs`, else `log.dir`): each dir keeps its own
 * checkpoint, open journal and clean-shutdown marker (LogDir, in log-manager.ts), and a partition lives in exactly
 * one of them.
 *
 * At start every dir is opened and each partition is homed in the dir that holds its directory; a
 * partition never written has no directory and is homed by the checkpoint that lists it. A partition
 * whose directory is in two dirs stops the start (GREGOR_ERR_LOG_DIR_DUPLICATE), as Kafka refuses
 * duplicate log directories. A new partition (topic creation, partition increase, a replica a
 * reassignment brings here) goes to the dir holding the fewest partitions, the earlier dir in
 * `log.dirs` on a tie (Kafka's LogManager.nextLogDirs, which counts logs per dir). Nothing moves a
 * partition between dirs afterwards.
 */
import path from 'node:path';
import type { BrokerConfig } from '../config.js';
import { LogDirError, LogDirErrorCode } from './log-dir-identity.js';
import { LogDir, parseKey } from './log-manager.js';
import type { LogConfig } from './log-config.js';
import { NOOP_LOGGER } from './log-loader.js';
import type { LogLogger } from './log-loader.js';
import { summaryKey as key } from './log-summary.js';
import type { PartitionLog, PartitionLogOptions } from './partition-log.js';
import { RecentCacheBudget } from './recent-cache.js';

export { CLEAN_SHUTDOWN_MARKER } from './log-manager.js';

export class LogManager {
  private readonly dirs: readonly LogDir[];
  /** The dir of every partition placed so far (on disk, listed by a checkpoint, or attached). */
  private readonly home = new Map<string, LogDir>();
  /** Partitions per dir (what placement compares). */
  private readonly counts = new Map<LogDir, number>();

  /** The bound every attached log's recent-batches cache shares (gregor.log.recent.cache.bytes). */
  readonly recentCacheBudget: RecentCacheBudget;

  private constructor(dirs: readonly LogDir[], recentCacheBytes: number) {
    this.dirs = dirs;
    this.recentCacheBudget = new RecentCacheBudget(recentCacheBytes);
    for (const d of dirs) this.counts.set(d, 0);
  }

  /**
   * Opens every log dir (absolute, duplicates dropped as Kafka does) and homes the partitions found.
   * Throws LogDirError when a partition directory is in two of them.
   */
  static async open(dataDirs: string | readonly string[], broker: BrokerConfig, logger: LogLogger = NOOP_LOGGER): Promise<LogManager> {
    const paths = [...new Set((typeof dataDirs === 'string' ? [dataDirs] : dataDirs).map((d) => path.resolve(d)))];
    const dirs: LogDir[] = [];
    for (const p of paths) dirs.push(await LogDir.open(p, broker, logger));
    const mgr = new LogManager(dirs, broker.int('gregor.log.recent.cache.bytes'));
    for (const d of dirs) {
      for (const k of d.partitionDirs()) {
        const other = mgr.home.get(k);
        if (other !== undefined) {
          throw new LogDirError(
            LogDirErrorCode.DUPLICATE,
            path.join(d.dataDir, k),
            `partition ${k} has a directory in two log dirs, ${other.dataDir} and ${d.dataDir}: remove the stale one`,
          );
        }
        mgr.place(k, d);
      }
    }
    for (const d of dirs) {
      for (const k of d.listed()) {
        const at = mgr.home.get(k);
        if (at === undefined) mgr.place(k, d);
        else if (at !== d) d.forget(k); // its directory is elsewhere: this dir's line is stale
      }
    }
    return mgr;
  }

  /** The first log dir: where the broker keeps its metadata (Kafka's metadata.log.dir default). */
  get dataDir(): string {
    return (this.dirs[0] as LogDir).dataDir;
  }

  /** The log dirs, absolute, in `log.dirs` order. */
  logDirs(): readonly string[] {
    return this.dirs.map((d) => d.dataDir);
  }

  /** The log dir that holds (or will hold) the partition, or undefined when none was chosen yet. */
  dirOf(topic: string, partition: number): string | undefined {
    return this.home.get(key(topic, partition))?.dataDir;
  }

  /** The partitions of each log dir (those attached, and those known only from disk or a checkpoint). */
  partitionsByDir(): Map<string, { topic: string; partition: number }[]> {
    const out = new Map<string, { topic: string; partition: number }[]>(this.dirs.map((d) => [d.dataDir, []]));
    for (const [k, d] of this.home) {
      const p = parseKey(k);
      if (p !== null) out.get(d.dataDir)?.push(p);
    }
    return out;
  }

  /** Whether every log dir's previous run ended with a clean shutdown. */
  get hadCleanShutdown(): boolean {
    return this.dirs.every((d) => d.hadCleanShutdown);
  }

  private place(k: string, d: LogDir): void {
    this.home.set(k, d);
    this.counts.set(d, (this.counts.get(d) ?? 0) + 1);
  }

  private unplace(k: string): void {
    const d = this.home.get(k);
    if (d === undefined) return;
    this.home.delete(k);
    this.counts.set(d, (this.counts.get(d) ?? 1) - 1);
  }

  /** The partition's dir: where it is, else the dir with the fewest partitions (the first of those). */
  private dirFor(topic: string, partition: number): LogDir {
    const k = key(topic, partition);
    const have = this.home.get(k);
    if (have !== undefined) return have;
    let best = this.dirs[0] as LogDir;
    for (const d of this.dirs) if ((this.counts.get(d) ?? 0) < (this.counts.get(best) ?? 0)) best = d;
    this.place(k, best);
    return best;
  }

  /** Partition directories present on disk, in every log dir. */
  async listPartitions(): Promise<{ topic: string; partition: number }[]> {
    const lists = await Promise.all(this.dirs.map((d) => d.listPartitions()));
    return lists.flat();
  }

  /** The partition's log (see LogDir.attach), in its dir; a new partition is placed first. */
  attach(topic: string, partition: number, config: LogConfig, opts: Omit<PartitionLogOptions, 'recover'> = {}): PartitionLog {
    const have = this.get(topic, partition);
    if (have !== undefined) return have;
    return this.dirFor(topic, partition).attach(topic, partition, config, { recentCacheBudget: this.recentCacheBudget, ...opts });
  }

  /** The log, opened (recovering it if the last shutdown was unclean) or created. */
  async getOrCreate(
    topic: string,
    partition: number,
    config: LogConfig,
    opts: Omit<PartitionLogOptions, 'recover'> = {},
  ): Promise<PartitionLog> {
    const log = this.attach(topic, partition, config, opts);
    await log.open();
    return log;
  }

  get recovering(): boolean {
    return this.dirs.some((d) => d.recovering);
  }

  get hasUnservable(): boolean {
    return this.dirs.some((d) => d.hasUnservable);
  }

  /** Each dir's background recovery pass (see LogDir.startRecovery); resolves when all are over. */
  async startRecovery(concurrency?: number): Promise<void> {
    await Promise.all(this.dirs.map((d) => d.startRecovery(concurrency)));
  }

  get(topic: string, partition: number): PartitionLog | undefined {
    return this.home.get(key(topic, partition))?.get(topic, partition);
  }

  all(): PartitionLog[] {
    return this.dirs.flatMap((d) => d.all());
  }

  /** The logs of one dir (its replication-offset-checkpoint's replicas). */
  logsIn(dataDir: string): PartitionLog[] {
    return this.dirs.find((d) => d.dataDir === dataDir)?.all() ?? [];
  }

  /** Deletes every partition of `topic`, in whichever dirs they are. */
  async deleteTopic(topic: string): Promise<void> {
    for (const k of [...this.home.keys()]) if (parseKey(k)?.topic === topic) this.unplace(k);
    await Promise.all(this.dirs.map((d) => d.deleteTopic(topic)));
  }

  /** Deletes one partition's log, summary and directory (a replica moved to other brokers). */
  async deletePartition(topic: string, partition: number): Promise<void> {
    const d = this.home.get(key(topic, partition));
    this.unplace(key(topic, partition));
    await Promise.all((d === undefined ? this.dirs : [d]).map((x) => x.deletePartition(topic, partition)));
  }

  startMaintenance(intervalMs?: number): void {
    for (const d of this.dirs) d.startMaintenance(intervalMs);
  }

  startProducerExpiration(checkIntervalMs: number, expirationMs: number): void {
    for (const d of this.dirs) d.startProducerExpiration(checkIntervalMs, expirationMs);
  }

  expireProducers(now: number, expirationMs: number): number {
    return this.dirs.reduce((n, d) => n + d.expireProducers(now, expirationMs), 0);
  }

  async runMaintenance(now = Date.now()): Promise<void> {
    for (const d of this.dirs) await d.runMaintenance(now);
  }

  /** Shuts every dir down (each writes its summaries and marker, see LogDir.shutdown). */
  async shutdown(): Promise<void> {
    const results = await Promise.allSettled(this.dirs.map((d) => d.shutdown()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }
}
