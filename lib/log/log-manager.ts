/**
 * LogDir: all partition logs of one log dir (an entry of `log.dirs`; the LogManager of log-dirs.ts
 * spreads partitions over them): their handles (opened on first use, see partition-log.ts),
 * the partition summary checkpoint and open journal that make that safe (log-summary.ts), recovery
 * after an unclean shutdown, topic deletion, the single maintenance timer and the clean-shutdown
 * marker.
 *
 * At start the data dir is listed once and two files are read; no partition directory is touched.
 * A partition is then served from its summary when the last clean shutdown recorded one and the
 * open journal does not list it (it was not opened since, so its files are as summarised). The
 * partitions the journal lists after an unclean shutdown, and any with files but no summary, have
 * to be opened (recovered) before use: `attach` marks them (`servable` is false). They are not
 * recovered before the broker is ready: each is recovered by its first use (every call that needs
 * its offsets opens it first, see TopicManager.recover) or by the recovery pass that `startRecovery`
 * runs in the background, whichever comes first. A log to recover answers no offsets before that.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { BrokerConfig } from '../config.js';
import { CheckpointFile, fsyncDir, writeFileAtomic } from './checkpoint.js';
import { closedError } from './errors.js';
import type { LogConfig } from './log-config.js';
import { NOOP_LOGGER } from './log-loader.js';
import type { LogLogger } from './log-loader.js';
import { EMPTY_SUMMARY, OPEN_JOURNAL, OpenJournal, SUMMARY_CHECKPOINT, readSummaries, summaryFields, summaryKey } from './log-summary.js';
import type { LogSummary } from './log-summary.js';
import { Limiter } from './limiter.js';
import { PartitionLog } from './partition-log.js';
import type { OpenHooks, PartitionLogOptions } from './partition-log.js';
import { WrittenPoints } from './written-points.js';

export const CLEAN_SHUTDOWN_MARKER = '.gregor-clean-shutdown';
/** Kafka's file: each log's recovery point (below it every segment is on disk). */
export const RECOVERY_POINT_CHECKPOINT = 'recovery-point-offset-checkpoint';
const DELETE_DIR = /\.[0-9a-f]+-delete$/;
const PARTITION_DIR = /^(.+)-(\d+)$/;
/** Logs opened (or recovered) at once, and closed at once at shutdown: mostly waiting for the disk. */
const OPEN_CONCURRENCY = 16;
const CLOSE_CONCURRENCY = 16;
/** Logs the background recovery pass opens at once: half the open slots, so a first use gets one at once. */
const RECOVERY_CONCURRENCY = 8;
const noop = (): void => undefined;

const key = summaryKey;

export function parseKey(k: string): { topic: string; partition: number } | null {
  const m = PARTITION_DIR.exec(k);
  return m?.[1] === undefined || m[2] === undefined ? null : { topic: m[1], partition: Number(m[2]) };
}

export class LogDir {
  readonly dataDir: string;
  /** Whether the previous run ended with a clean shutdown (the marker was there). */
  readonly hadCleanShutdown: boolean;
  /** Whether logs without a summary must be recovered when opened: no marker, and the dir already held logs. */
  private readonly recover: boolean;
  private readonly broker: BrokerConfig;
  private readonly logger: LogLogger;
  private readonly logs = new Map<string, PartitionLog>();
  /** Summaries from the checkpoint of partitions that have no PartitionLog (yet). */
  private readonly summaries: Map<string, LogSummary>;
  /** Partitions opened since the last clean shutdown (after an unclean one): recovered before use. */
  private readonly dirty: Set<string>;
  /** Partition directories that were on disk at start. */
  private readonly dirs: Set<string>;
  private readonly journal: OpenJournal;
  private readonly checkpoint: CheckpointFile;
  private readonly recoveryPointFile: CheckpointFile;
  /** recovery-point-offset-checkpoint as read at start (logs not attached keep their entry). */
  private readonly recoveryPoints: Map<string, bigint>;
  private recoveryPointTimer: NodeJS.Timeout | null = null;
  /** What the recovery-point checkpoint last got (its timer skips a write that would repeat it). */
  private readonly writtenPoints = new WrittenPoints<PartitionLog>();
  /** What every log of this dir calls when it opens: journal first, then a bounded number of opens at once. */
  private readonly hooks: OpenHooks;
  /** Logs attached without a summary (to recover) whose first open has not finished yet. */
  private readonly unrecovered = new Map<string, PartitionLog>();
  /** Logs whose recovery failed: offline, with no summary to answer from. */
  private readonly failedRecovery = new Set<string>();
  /** The background recovery pass (startRecovery), while it runs. */
  private recovery: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private producerTimer: NodeJS.Timeout | null = null;
  private tick: Promise<void> | null = null;
  private closed = false;

  private constructor(
    dataDir: string,
    broker: BrokerConfig,
    clean: boolean,
    recover: boolean,
    logger: LogLogger,
    state: { summaries: Map<string, LogSummary>; dirty: Set<string>; dirs: Set<string>; recoveryPoints: Map<string, bigint> },
  ) {
    this.dataDir = dataDir;
    this.broker = broker;
    this.hadCleanShutdown = clean;
    this.recover = recover;
    this.logger = logger;
    this.summaries = state.summaries;
    this.dirty = state.dirty;
    this.dirs = state.dirs;
    this.journal = new OpenJournal(dataDir);
    this.journal.preload(state.dirty);
    this.checkpoint = new CheckpointFile(dataDir, SUMMARY_CHECKPOINT);
    this.recoveryPointFile = new CheckpointFile(dataDir, RECOVERY_POINT_CHECKPOINT);
    this.recoveryPoints = state.recoveryPoints;
    const opens = new Limiter(OPEN_CONCURRENCY);
    this.hooks = {
      beforeOpen: (topic, partition) => this.journal.add(topic, partition),
      schedule: (open) => opens.run(open),
      settled: (topic, partition) => {
        const k = key(topic, partition);
        const log = this.unrecovered.get(k);
        this.unrecovered.delete(k);
        if (log !== undefined && !log.servable) this.failedRecovery.add(k);
      },
    };
  }

  /** Opens the data dir; the clean-shutdown marker is read and removed while the broker runs. */
  static async open(dataDir: string, broker: BrokerConfig, logger: LogLogger = NOOP_LOGGER): Promise<LogDir> {
    await fsp.mkdir(dataDir, { recursive: true });
    const marker = path.join(dataDir, CLEAN_SHUTDOWN_MARKER);
    const marked = fs.existsSync(marker);
    const names = await fsp.readdir(dataDir);
    const dirs = new Set<string>();
    for (const name of names) {
      if (DELETE_DIR.test(name)) await fsp.rm(path.join(dataDir, name), { recursive: true, force: true });
      else if (PARTITION_DIR.test(name)) dirs.add(name);
    }
    // A data dir without partitions (first start) has nothing to recover.
    const hasLogs = dirs.size > 0;
    const summaries = readSummaries(dataDir, (err) =>
      logger.warn({ err, dataDir }, 'ignoring an unreadable partition summary checkpoint: logs will be opened at start'),
    );
    const recoveryPoints = readRecoveryPoints(dataDir, (err) =>
      logger.warn(
        { err, dataDir },
        `ignoring an unreadable ${RECOVERY_POINT_CHECKPOINT}: logs recovered after an unclean shutdown are validated from their start`,
      ),
    );
    let dirty = new Set<string>();
    if (marked) {
      // the checkpoint written before the marker describes every partition; the journal starts over
      await fsp.rm(path.join(dataDir, OPEN_JOURNAL), { force: true });
      await fsp.rm(marker);
      await fsyncDir(dataDir);
    } else if (hasLogs) {
      dirty = OpenJournal.read(dataDir);
      // only those opened since the last clean shutdown (and any without a summary) can have changed
      logger.warn({ dataDir, partitions: dirty.size }, 'no clean-shutdown marker: logs will be recovered as they are opened');
    }
    return new LogDir(dataDir, broker, marked, !marked && hasLogs, logger, { summaries, dirty, dirs, recoveryPoints });
  }

  /** Partitions with a directory here at start (before any was deleted). */
  partitionDirs(): ReadonlySet<string> {
    return this.dirs;
  }

  /** Partitions this dir's checkpoint or open journal lists (a partition never written has no directory). */
  listed(): string[] {
    return [...this.summaries.keys(), ...this.dirty];
  }

  /** Drops what the checkpoint and journal say of a partition whose directory is in another log dir. */
  forget(k: string): void {
    this.writtenPoints.layoutChanged();
    this.summaries.delete(k);
    this.dirty.delete(k);
    this.recoveryPoints.delete(k);
  }

  /** Partition directories present on disk. */
  async listPartitions(): Promise<{ topic: string; partition: number }[]> {
    const out: { topic: string; partition: number }[] = [];
    for (const ent of await fsp.readdir(this.dataDir, { withFileTypes: true })) {
      if (!ent.isDirectory() || DELETE_DIR.test(ent.name)) continue;
      const p = parseKey(ent.name);
      if (p !== null) out.push(p);
    }
    return out;
  }

  /**
   * The partition's log, made now if needed but not opened when its summary can serve it (see
   * PartitionLog.servable: when false, `open()` it before use).
   */
  attach(topic: string, partition: number, config: LogConfig, opts: Omit<PartitionLogOptions, 'recover'> = {}): PartitionLog {
    if (this.closed) throw closedError(this.dataDir);
    const k = key(topic, partition);
    const have = this.logs.get(k);
    if (have !== undefined) return have;
    const dirty = this.dirty.has(k);
    const summary = dirty ? null : (this.summaries.get(k) ?? (this.dirs.has(k) ? null : EMPTY_SUMMARY));
    this.summaries.delete(k);
    const recover = dirty || (summary === null && this.recover);
    const recoveryPoint = this.recoveryPoints.get(k) ?? 0n;
    const log = PartitionLog.lazy(
      this.dataDir,
      topic,
      partition,
      config,
      { logger: this.logger, ...opts, recover, recoveryPoint },
      summary,
      this.hooks,
    );
    this.logs.set(k, log);
    this.writtenPoints.layoutChanged();
    if (summary === null) this.unrecovered.set(k, log);
    return log;
  }

  /** Whether some log still waits for its recovery (its first open); false once all have opened or failed. */
  get recovering(): boolean {
    return this.unrecovered.size > 0;
  }

  /** Whether some log cannot answer offsets (`servable` is false): not recovered yet, or its recovery failed. */
  get hasUnservable(): boolean {
    return this.unrecovered.size > 0 || this.failedRecovery.size > 0;
  }

  /**
   * Recovers, in the background and a few at a time, every log attached so far that waits for
   * recovery (after an unclean shutdown: those in the open journal). A log whose first use comes
   * first is recovered by that use, and the pass finds it done. Resolves when the pass is over.
   */
  startRecovery(concurrency = RECOVERY_CONCURRENCY): Promise<void> {
    if (this.recovery !== null) return this.recovery;
    if (this.closed || this.unrecovered.size === 0) return Promise.resolve();
    const queue = [...this.unrecovered.values()];
    const started = performance.now();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (!this.closed && next < queue.length) {
        const log = queue[next++] as PartitionLog;
        // a failure leaves the log offline, and PartitionLog logs it
        if (!log.servable && !log.isOffline) await log.open().catch(noop);
      }
    };
    this.recovery = Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker)).then(() => {
      this.logger.info(
        { dataDir: this.dataDir, logs: next, left: this.unrecovered.size, ms: Math.round(performance.now() - started) },
        this.closed ? 'log recovery pass stopped by shutdown' : 'log recovery pass done',
      );
    });
    return this.recovery;
  }

  get(topic: string, partition: number): PartitionLog | undefined {
    return this.logs.get(key(topic, partition));
  }

  all(): PartitionLog[] {
    return [...this.logs.values()];
  }

  /** Deletes every partition of `topic`: its logs, summaries and directories on disk. */
  deleteTopic(topic: string): Promise<void> {
    return this.deleteWhere((t) => t === topic);
  }

  /** Deletes one partition's log, summary and directory (a replica moved to other brokers). */
  deletePartition(topic: string, partition: number): Promise<void> {
    return this.deleteWhere((t, p) => t === topic && p === partition);
  }

  private async deleteWhere(match: (topic: string, partition: number) => boolean): Promise<void> {
    const victims = [...this.logs.values()].filter((l) => match(l.topic, l.partition));
    for (const log of victims) this.logs.delete(key(log.topic, log.partition));
    this.writtenPoints.layoutChanged();
    for (const set of [this.summaries, this.dirty, this.dirs, this.unrecovered, this.failedRecovery, this.recoveryPoints]) {
      for (const k of set.keys()) {
        const p = parseKey(k);
        if (p !== null && match(p.topic, p.partition)) set.delete(k);
      }
    }
    for (const log of victims) await log.delete();
    // before the directories go: a topic created again under this name must not find these summaries
    await this.writeSummaries();
    for (const { topic, partition } of await this.listPartitions()) {
      if (!match(topic, partition)) continue;
      // rename first so a crash mid-delete leaves a dir that start-up removes
      const from = path.join(this.dataDir, key(topic, partition));
      const to = `${from}.${randomBytes(8).toString('hex')}-delete`;
      await fsp.rename(from, to).catch(() => undefined);
      await fsp.rm(to, { recursive: true, force: true });
    }
  }

  /**
   * Writes the summary of every partition: those with a log (as they are now) and those without one.
   * A log not recovered yet has none: it is left out (the open journal still lists it, and with no
   * summary it is recovered when opened after an unclean shutdown; a clean one recovers it first).
   */
  private async writeSummaries(): Promise<void> {
    const rows: string[][] = [];
    // a log a read found corrupt has none: the next start opens (and repairs) it before use
    for (const log of this.logs.values())
      if (log.servable && !log.needsRepair) rows.push([log.topic, String(log.partition), ...summaryFields(log.summary())]);
    for (const [k, s] of this.summaries) {
      const p = parseKey(k);
      if (p !== null) rows.push([p.topic, String(p.partition), ...summaryFields(s)]);
    }
    await this.checkpoint.write(rows);
  }

  /** Writes every log's recovery point (those of logs not attached, as read at start, stay). */
  writeRecoveryPoints(): Promise<void> {
    const snap = this.writtenPoints.snapshot(this.logs.values());
    const points = new Map(this.recoveryPoints);
    for (const [k, s] of this.summaries) points.set(k, s.logEndOffset);
    snap.logs.forEach((log, i) => points.set(key(log.topic, log.partition), snap.points[i] as bigint));
    const rows: string[][] = [];
    for (const [k, offset] of points) {
      const p = parseKey(k);
      if (p !== null) rows.push([p.topic, String(p.partition), offset.toString()]);
    }
    return this.recoveryPointFile.write(rows).then(() => this.writtenPoints.wrote(snap));
  }

  /** The periodic write: writeRecoveryPoints() unless the file already holds what it would write; resolves whether it wrote. */
  async writeRecoveryPointsIfChanged(): Promise<boolean> {
    if (this.writtenPoints.unchanged(this.logs.values())) return false;
    await this.writeRecoveryPoints();
    return true;
  }

  /** One timer for all logs (log.retention.check.interval.ms by default); also the recovery points' (log.flush.offset.checkpoint.interval.ms). */
  startMaintenance(intervalMs?: number): void {
    if (this.timer !== null || this.closed) return;
    const rpEvery = this.broker.int('log.flush.offset.checkpoint.interval.ms');
    if (rpEvery > 0) {
      this.recoveryPointTimer = setInterval(
        () => {
          this.writeRecoveryPointsIfChanged().catch((err: unknown) =>
            this.logger.warn({ err, dataDir: this.dataDir }, `writing ${RECOVERY_POINT_CHECKPOINT} failed`),
          );
        },
        Math.min(rpEvery, 2 ** 31 - 1),
      );
      this.recoveryPointTimer.unref();
    }
    const every = intervalMs ?? this.broker.long('log.retention.check.interval.ms') ?? 300000;
    this.timer = setInterval(
      () => {
        if (this.tick !== null) return;
        this.tick = this.runMaintenance().finally(() => {
          this.tick = null;
        });
      },
      Math.min(Math.max(1, every), 2 ** 31 - 1),
    );
    this.timer.unref();
  }

  /**
   * producer.id.expiration.ms: every producer.id.expiration.check.interval.ms, each log forgets the
   * producers idle for longer that have no transaction open.
   */
  startProducerExpiration(checkIntervalMs: number, expirationMs: number): void {
    if (this.producerTimer !== null || this.closed) return;
    this.producerTimer = setInterval(
      () => this.expireProducers(Date.now(), expirationMs),
      Math.min(Math.max(1, checkIntervalMs), 2 ** 31 - 1),
    );
    this.producerTimer.unref();
  }

  /** One producer-expiration pass; returns how many producer entries were dropped. */
  expireProducers(now: number, expirationMs: number): number {
    let n = 0;
    for (const log of this.logs.values()) n += log.expireProducers(now, expirationMs);
    if (n > 0) this.logger.info({ producers: n, expirationMs }, 'expired idle producer ids');
    return n;
  }

  /** One maintenance pass over every log (also what the timer runs); a log not open is opened only when it has work. */
  async runMaintenance(now = Date.now()): Promise<void> {
    for (const log of this.logs.values()) {
      if (!log.maintenanceDue(now)) continue;
      try {
        await log.maintenance(now);
      } catch (err) {
        this.logger.error({ err, dir: log.dir }, 'log maintenance failed');
      }
    }
  }

  /**
   * Flushes and closes every log, then writes the partition summaries, clears the open journal and
   * writes the clean-shutdown marker (in that order: the marker vouches for the summaries).
   */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.producerTimer !== null) clearInterval(this.producerTimer);
    this.producerTimer = null;
    if (this.recoveryPointTimer !== null) clearInterval(this.recoveryPointTimer);
    this.recoveryPointTimer = null;
    if (this.tick !== null) await this.tick;
    // the recovery pass stops at the log it is at (closed is set)
    if (this.recovery !== null) await this.recovery;
    let failed = false as boolean; // set by the closers below, which narrowing does not see
    // a few at a time: closing an open log is mostly waiting for fsyncs (a log not open has nothing to do)
    const logs = [...this.logs.values()];
    let next = 0;
    const closer = async (): Promise<void> => {
      while (next < logs.length) {
        const log = logs[next++] as PartitionLog;
        try {
          if (log.isOffline) failed = true;
          await log.close();
        } catch (err) {
          failed = true;
          this.logger.error({ err, dir: log.dir }, 'closing log failed');
        }
      }
    };
    await Promise.all(Array.from({ length: CLOSE_CONCURRENCY }, closer));
    // a log never recovered has no summary to write: the next start has to recover it, as after a crash
    if (this.unrecovered.size > 0) {
      failed = true;
      this.logger.warn(
        { dataDir: this.dataDir, logs: this.unrecovered.size },
        'logs not recovered yet at shutdown: no clean-shutdown marker, the next start recovers them',
      );
    }
    await this.writeRecoveryPoints().catch((err: unknown) =>
      this.logger.warn({ err, dataDir: this.dataDir }, `writing ${RECOVERY_POINT_CHECKPOINT} failed`),
    );
    if (failed) {
      await this.journal.close();
    } else {
      await this.writeSummaries();
      await this.journal.remove();
      await writeFileAtomic(path.join(this.dataDir, CLEAN_SHUTDOWN_MARKER), '');
    }
    this.logs.clear();
  }
}

/** recovery-point-offset-checkpoint by `topic-partition`; empty when missing or unreadable (then every log recovers from its start). */
function readRecoveryPoints(dataDir: string, onError: (err: unknown) => void): Map<string, bigint> {
  const out = new Map<string, bigint>();
  try {
    for (const row of new CheckpointFile(dataDir, RECOVERY_POINT_CHECKPOINT).readSync() ?? []) {
      const [topic, partition, offset] = row;
      if (
        topic === undefined ||
        partition === undefined ||
        !/^\d+$/.test(partition) ||
        offset === undefined ||
        !/^\d+$/.test(offset) ||
        row.length !== 3
      )
        throw new Error(`malformed line: ${row.join(' ')}`);
      out.set(key(topic, Number(partition)), BigInt(offset));
    }
  } catch (err) {
    onError(err);
    out.clear();
  }
  return out;
}
