/**
 * All partition logs of one data dir: opening (with recovery after an unclean shutdown), topic
 * deletion, the single maintenance timer and the clean-shutdown marker.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { BrokerConfig } from '../config.js';
import { fsyncDir, writeFileAtomic } from './checkpoint.js';
import { closedError } from './errors.js';
import type { LogConfig } from './log-config.js';
import { NOOP_LOGGER } from './log-loader.js';
import type { LogLogger } from './log-loader.js';
import { PartitionLog } from './partition-log.js';
import type { PartitionLogOptions } from './partition-log.js';

export const CLEAN_SHUTDOWN_MARKER = '.gregor-clean-shutdown';
const DELETE_DIR = /\.[0-9a-f]+-delete$/;
const PARTITION_DIR = /^(.+)-(\d+)$/;

const key = (topic: string, partition: number): string => `${topic}-${partition}`;

export class LogManager {
  readonly dataDir: string;
  /** Whether the previous run ended with a clean shutdown (the marker was there). */
  readonly hadCleanShutdown: boolean;
  /** Whether logs opened now must be recovered: no marker, and the dir already held logs. */
  private readonly recover: boolean;
  private readonly broker: BrokerConfig;
  private readonly logger: LogLogger;
  private readonly logs = new Map<string, PartitionLog>();
  private readonly opening = new Map<string, Promise<PartitionLog>>();
  private timer: NodeJS.Timeout | null = null;
  private producerTimer: NodeJS.Timeout | null = null;
  private tick: Promise<void> | null = null;
  private closed = false;

  private constructor(dataDir: string, broker: BrokerConfig, clean: boolean, recover: boolean, logger: LogLogger) {
    this.dataDir = dataDir;
    this.broker = broker;
    this.hadCleanShutdown = clean;
    this.recover = recover;
    this.logger = logger;
  }

  /** Opens the data dir; the clean-shutdown marker is read and removed while the broker runs. */
  static async open(dataDir: string, broker: BrokerConfig, logger: LogLogger = NOOP_LOGGER): Promise<LogManager> {
    await fsp.mkdir(dataDir, { recursive: true });
    const marker = path.join(dataDir, CLEAN_SHUTDOWN_MARKER);
    const marked = fs.existsSync(marker);
    // A data dir without partitions (first start) has nothing to recover.
    const hasLogs = (await fsp.readdir(dataDir)).some((n) => PARTITION_DIR.test(n));
    if (marked) {
      await fsp.rm(marker);
      await fsyncDir(dataDir);
    } else if (hasLogs) {
      logger.warn({ dataDir }, 'no clean-shutdown marker: logs will be recovered as they are opened');
    }
    const mgr = new LogManager(dataDir, broker, marked, !marked && hasLogs, logger);
    for (const name of await fsp.readdir(dataDir)) {
      if (DELETE_DIR.test(name)) await fsp.rm(path.join(dataDir, name), { recursive: true, force: true });
    }
    return mgr;
  }

  /** Partition directories present on disk. */
  async listPartitions(): Promise<{ topic: string; partition: number }[]> {
    const out: { topic: string; partition: number }[] = [];
    for (const ent of await fsp.readdir(this.dataDir, { withFileTypes: true })) {
      if (!ent.isDirectory() || DELETE_DIR.test(ent.name)) continue;
      const m = PARTITION_DIR.exec(ent.name);
      if (m?.[1] !== undefined && m[2] !== undefined) out.push({ topic: m[1], partition: Number(m[2]) });
    }
    return out;
  }

  /** The open log, or opens (recovering if the last shutdown was unclean) / creates it. */
  getOrCreate(topic: string, partition: number, config: LogConfig, opts: Omit<PartitionLogOptions, 'recover'> = {}): Promise<PartitionLog> {
    if (this.closed) return Promise.reject(closedError(this.dataDir));
    const k = key(topic, partition);
    const open = this.logs.get(k);
    if (open !== undefined) return Promise.resolve(open);
    const pending = this.opening.get(k);
    if (pending !== undefined) return pending;
    const p = PartitionLog.open(this.dataDir, topic, partition, config, { logger: this.logger, ...opts, recover: this.recover })
      .then((log) => {
        this.logs.set(k, log);
        return log;
      })
      .finally(() => this.opening.delete(k));
    this.opening.set(k, p);
    return p;
  }

  get(topic: string, partition: number): PartitionLog | undefined {
    return this.logs.get(key(topic, partition));
  }

  all(): PartitionLog[] {
    return [...this.logs.values()];
  }

  /** Deletes every partition of `topic`: open logs and directories on disk. */
  async deleteTopic(topic: string): Promise<void> {
    for (const [k, p] of this.opening) if (k.startsWith(`${topic}-`)) await p.catch(() => undefined);
    const victims = [...this.logs.values()].filter((l) => l.topic === topic);
    for (const log of victims) this.logs.delete(key(log.topic, log.partition));
    for (const log of victims) await log.delete();
    for (const { topic: t, partition } of await this.listPartitions()) {
      if (t !== topic) continue;
      // rename first so a crash mid-delete leaves a dir that start-up removes
      const from = path.join(this.dataDir, key(t, partition));
      const to = `${from}.${randomBytes(8).toString('hex')}-delete`;
      await fsp.rename(from, to).catch(() => undefined);
      await fsp.rm(to, { recursive: true, force: true });
    }
  }

  /** One timer for all logs (log.retention.check.interval.ms by default). */
  startMaintenance(intervalMs?: number): void {
    if (this.timer !== null || this.closed) return;
    const every = intervalMs ?? this.broker.long('log.retention.check.interval.ms') ?? 300000;
    this.timer = setInterval(() => {
      if (this.tick !== null) return;
      this.tick = this.runMaintenance().finally(() => {
        this.tick = null;
      });
    }, Math.min(Math.max(1, every), 2 ** 31 - 1));
    this.timer.unref();
  }

  /**
   * producer.id.expiration.ms: every producer.id.expiration.check.interval.ms, each log forgets the
   * producers idle for longer that have no transaction open.
   */
  startProducerExpiration(checkIntervalMs: number, expirationMs: number): void {
    if (this.producerTimer !== null || this.closed) return;
    this.producerTimer = setInterval(() => this.expireProducers(Date.now(), expirationMs), Math.min(Math.max(1, checkIntervalMs), 2 ** 31 - 1));
    this.producerTimer.unref();
  }

  /** One producer-expiration pass; returns how many producer entries were dropped. */
  expireProducers(now: number, expirationMs: number): number {
    let n = 0;
    for (const log of this.logs.values()) n += log.expireProducers(now, expirationMs);
    if (n > 0) this.logger.info({ producers: n, expirationMs }, 'expired idle producer ids');
    return n;
  }

  /** One maintenance pass over every log (also what the timer runs). */
  async runMaintenance(now = Date.now()): Promise<void> {
    for (const log of this.logs.values()) {
      try {
        await log.maintenance(now);
      } catch (err) {
        this.logger.error({ err, dir: log.dir }, 'log maintenance failed');
      }
    }
  }

  /** Flushes and closes every log, then writes the clean-shutdown marker. */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.producerTimer !== null) clearInterval(this.producerTimer);
    this.producerTimer = null;
    if (this.tick !== null) await this.tick;
    await Promise.allSettled([...this.opening.values()]);
    let failed = false;
    for (const log of this.logs.values()) {
      try {
        if (log.isOffline) failed = true;
        await log.close();
      } catch (err) {
        failed = true;
        this.logger.error({ err, dir: log.dir }, 'closing log failed');
      }
    }
    this.logs.clear();
    if (!failed) await writeFileAtomic(path.join(this.dataDir, CLEAN_SHUTDOWN_MARKER), '');
  }
}
