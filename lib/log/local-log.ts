/**
 * The files of an open partition log (Kafka's LocalLog): loading its segments (with crash
 * recovery), the log start / log end offsets and high watermark, leader epochs, coalesced
 * page-cache writes and flushing, rolling, retention and DeleteRecords' segment deletion, producer
 * snapshots, closing. UnifiedLog (unified-log.ts) adds appends, reads and offset lookups;
 * PartitionLog (partition-log.ts) opens one on first use.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { CheckpointFile, LeaderEpochCache } from './checkpoint.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { LogError, closedError, storageError, writeFailure } from './errors.js';
import { corruptReadError, writeRepairMarker, type ReadCorruption } from './read-verify.js';
import type { LogConfig } from './log-config.js';
import { NOOP_LOGGER, emptyLoad, loadSegments } from './log-loader.js';
import type { LogLogger } from './log-loader.js';
import { RecentCache } from './recent-cache.js';
import { summaryOf } from './log-summary.js';
import type { LogSummary } from './log-summary.js';
import { LogSegment } from './segment.js';
import type { IoStats } from './segment.js';
import { deletableSegments, rollDue } from './segment-list.js';
import type { ExternalHighWatermark, PartitionLogOptions } from './log-options.js';
import { BackgroundWork, logFailure, logWriteFailure, MAX_TIMER_MS } from './log-background.js';
import { loadEpochs, readLogStartCheckpoint, rebuildEpochs, syncSegments } from './local-log-files.js';
import { WriteQueue } from './write-queue.js';
import type { WriteGroup } from './write-queue.js';
import { ProducerStateManager } from '../txn/producer-state.js';
import { SNAPSHOTS_KEPT, recoverProducerState } from '../txn/producer-recovery.js';
import { deleteSnapshot, serializeSnapshot, writeSnapshot } from '../txn/producer-snapshot.js';

export type { ExternalHighWatermark, PartitionLogOptions } from './log-options.js';

const noop = (): void => undefined;
export { MAX_TIMER_MS } from './log-background.js';

export abstract class LocalLog {
  readonly topic: string;
  readonly partition: number;
  /** `<dataDir>/<topic>-<partition>`. */
  readonly dir: string;
  readonly stats: IoStats;
  protected config: LogConfig;
  protected readonly logger: LogLogger;
  protected readonly opts: PartitionLogOptions;
  protected segments: LogSegment[] = [];
  protected _logStartOffset = 0n;
  protected _logEndOffset = 0n;
  protected _highWatermark = 0n;
  /** End of the data handed to the kernel (or fsynced, under flush.policy=always / flush.messages). */
  protected _writtenEndOffset = 0n;
  /** Set for a replicated partition: the replication layer moves the high watermark (replica-log.ts). */
  protected externalHw: ExternalHighWatermark | null = null;
  /** A truncation runs: appends are refused until it is over. */
  protected truncating = false;
  /** The work of the latest rolls (index writes, producer snapshot) until it is done. */
  protected rolling: Promise<void> | null = null;
  protected readonly epochs: LeaderEpochCache;
  protected readonly startCheckpoint: CheckpointFile;
  protected readonly cache: RecentCache;
  protected readonly queue = new WriteQueue((g) => this.writeGroup(g));
  private unflushedMessages = 0;
  private lastFlushTime = Date.now();
  private flushTimer: NodeJS.Timeout | null = null;
  protected offline: LogError | null = null;
  protected closed = false;
  /** Checkpoint writes, flushes and deletions running on their own (made on first use: an idle log holds none). */
  private background: BackgroundWork | null = null;
  /** Idempotence and transactions: producer ids, their sequences, open transactions. */
  readonly producers: ProducerStateManager;
  /** Offsets of the producer-state snapshot files, newest first. */
  protected snapshots: bigint[] = [];
  /** Below it every segment is fsynced (Kafka's recovery point): where recovery after a crash starts validating. */
  protected _recoveryPoint = 0n;
  /** A corrupt entry a read met: reads from its offset and appends are refused until a restart repairs the log. */
  protected corruption: ReadCorruption | null = null;

  protected constructor(dataDir: string, topic: string, partition: number, config: LogConfig, opts: PartitionLogOptions, stats: IoStats) {
    this.topic = topic;
    this.partition = partition;
    this.dir = path.join(dataDir, `${topic}-${partition}`);
    this.config = config;
    this.opts = opts;
    this.stats = stats;
    this.logger = opts.logger ?? NOOP_LOGGER;
    this.epochs = new LeaderEpochCache(this.dir);
    this.epochs.onError = (err) => logFailure(this.logger, this.dir, err, 'writing leader-epoch-checkpoint failed');
    this.startCheckpoint = new CheckpointFile(this.dir, 'log-start-offset-checkpoint');
    this.cache = new RecentCache(opts.recentCacheBytes ?? 1 << 20, opts.recentCacheBudget);
    this.producers = new ProducerStateManager(`${topic}-${partition}`);
  }

  /** Appends reserved and not yet committed must settle before the files close. */
  protected abstract drainAppends(): Promise<void>;

  /**
   * Loads the directory. `expected`: the summary this log was served from while it was not open;
   * files that differ from it are recovered as after an unclean shutdown.
   */
  protected async load(expected: LogSummary | null, fresh = false): Promise<void> {
    const now = Date.now();
    const recovery = { recover: this.opts.recover, recoveryPoint: this.opts.recoveryPoint ?? 0n };
    const loaded = fresh ? emptyLoad() : await loadSegments(this.dir, this.config, recovery, now, this.stats, this.logger, expected);
    // each checkpoint on its own: a garbled one is treated as absent, and does not hide the other
    const checkpointed = fresh ? null : readLogStartCheckpoint(this.startCheckpoint, this.logger, this.dir);
    const epochFile = fresh ? 'loaded' : loadEpochs(this.epochs, this.logger, this.dir);
    this.segments = loaded.segments;
    if (this.segments.length === 0)
      this.segments = [LogSegment.create(this.dir, checkpointed ?? 0n, this.config.segmentIndexBytes, now, this.stats, fresh)];
    this._logEndOffset = this.active.nextOffset;
    let start = this.segments[0]?.baseOffset ?? 0n;
    if (checkpointed !== null && checkpointed > start) start = checkpointed;
    if (start > this._logEndOffset) start = this._logEndOffset;
    this._logStartOffset = start;
    const rebuilt = epochFile !== 'loaded' && (await rebuildEpochs(this.epochs, this.segments, epochFile, this.logger, this.dir));
    if (epochFile === 'loaded' && loaded.recovered && loaded.tail[0] !== undefined) {
      const tail = loaded.tail.filter((h) => h.magic === 2).map((h) => ({ epoch: h.partitionLeaderEpoch, startOffset: h.baseOffset }));
      this.epochs.rebuildFrom(loaded.tail[0].baseOffset, tail);
    }
    this.epochs.truncateFromEnd(this._logEndOffset);
    this.epochs.truncateFromStart(this._logStartOffset);
    if (rebuilt) await this.epochs.writeNow();
    this._highWatermark = this._logEndOffset;
    this._writtenEndOffset = this._logEndOffset;
    // a log that never held data needs no checkpoint yet (its start is its first segment's base)
    if (checkpointed !== start && !(checkpointed === null && start === 0n)) this.persistLogStartOffset();
    this.snapshots = (
      await recoverProducerState(this.dir, this.segments, loaded.snapshots, this.producers, this._logEndOffset, this.logger)
    ).snapshots;
    // a clean shutdown fsynced everything; after a recovery the segments it validated are fsynced
    // by the next roll or flush (loadSegments marks them), which moves the recovery point then
    this._recoveryPoint = loaded.recovered && loaded.recoveryPoint < this._logEndOffset ? loaded.recoveryPoint : this._logEndOffset;
    if (loaded.truncatedBytes > 0 || loaded.recovered) {
      this.logger.info(
        { dir: this.dir, logEndOffset: this._logEndOffset.toString(), truncatedBytes: loaded.truncatedBytes },
        'log recovered',
      );
    }
  }

  protected get active(): LogSegment {
    return this.segments[this.segments.length - 1] as LogSegment;
  }
  get logStartOffset(): bigint {
    return this._logStartOffset;
  }
  get logEndOffset(): bigint {
    return this._logEndOffset;
  }
  get highWatermark(): bigint {
    return this._highWatermark;
  }
  get latestEpoch(): number {
    return this.epochs.latestEpoch;
  }
  get recoveryPoint(): bigint {
    return this._recoveryPoint;
  }
  /** Whether a read met a corrupt entry: the next open must repair the log (see noteCorruption). */
  get needsRepair(): boolean {
    return this.corruption !== null;
  }

  protected advanceRecoveryPoint(offset: bigint): void {
    if (offset > this._recoveryPoint) this._recoveryPoint = offset > this._logEndOffset ? this._logEndOffset : offset;
  }

  /**
   * A read met a corrupt entry (read-verify.ts): from its offset on, reads and appends are refused,
   * and a repair marker in the partition directory makes the next open truncate the log there
   * (moving the rest aside, see log-loader.ts). Logged once per log.
   */
  protected noteCorruption(c: ReadCorruption): LogError {
    const first = this.corruption === null;
    if (this.corruption === null || c.offset < this.corruption.offset) this.corruption = c;
    if (first) {
      this.logger.error(
        { dir: this.dir, segment: c.segment.toString(), position: c.position, offset: c.offset.toString(), problem: c.problem },
        'a read met a corrupt entry: fetches from this offset get CORRUPT_MESSAGE and appends KAFKA_STORAGE_ERROR; the next start truncates the log there, keeping the rest aside',
      );
      this.track(writeRepairMarker(this.dir, c), 'writing the repair marker');
    }
    return corruptReadError(this.dir, this.corruption);
  }
  /** Bytes in all segments. */
  get size(): number {
    return this.segments.reduce((n, s) => n + s.size, 0);
  }
  get segmentBaseOffsets(): bigint[] {
    return this.segments.map((s) => s.baseOffset);
  }
  /** A write failed: the log refuses appends until reopened. */
  get isOffline(): boolean {
    return this.offline !== null;
  }
  get currentConfig(): LogConfig {
    return this.config;
  }

  /** The segments, oldest first (the cleaner reads them; it changes them only through replaceSegments). */
  get segmentList(): readonly LogSegment[] {
    return this.segments;
  }
  /** Whether the cleaner may swap segments in now: open, online, not truncating, no roll finishing. */
  get swappable(): boolean {
    return !this.closed && this.offline === null && !this.truncating && this.rolling === null;
  }
  get segmentIndexBytes(): number {
    return this.config.segmentIndexBytes;
  }

  /** The cleaner's swap (cleaner/swap.ts): segments [from, from + count), their files renamed already, give way to `replacement`. */
  replaceSegments(from: number, count: number, replacement: LogSegment[]): void {
    const old = this.segments.slice(from, from + count);
    this.segments = [...this.segments.slice(0, from), ...replacement, ...this.segments.slice(from + count)];
    this.cache.clear();
    for (const s of old) this.scheduleDelete(s);
  }

  /** What a closed log looks like (the partition summary checkpoint keeps it). */
  summary(): LogSummary {
    return summaryOf(this.segments, this._logStartOffset, this._logEndOffset, this.producers.firstUnstableOffset());
  }

  protected ensureWritable(): void {
    if (this.closed) throw closedError(this.dir);
    if (this.offline !== null) throw this.offline;
    if (this.corruption !== null) {
      throw storageError(
        `${this.dir} holds a corrupt entry at offset ${this.corruption.offset}; appends are refused until a restart repairs it`,
      );
    }
    if (this.truncating) throw new LogError(ErrorCode.REQUEST_TIMED_OUT, `${this.dir} is being truncated; retry`);
  }

  /** Writes the producer-state snapshot for offset `at` and drops the oldest beyond the few kept. */
  protected async takeSnapshot(at: bigint, data: Buffer): Promise<void> {
    await writeSnapshot(this.dir, at, data);
    const list = [at, ...this.snapshots.filter((o) => o !== at)].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
    this.snapshots = list.slice(0, SNAPSHOTS_KEPT);
    for (const o of list.slice(SNAPSHOTS_KEPT)) await deleteSnapshot(this.dir, o);
  }

  /** Kafka's shouldRoll: size, time (by record timestamps), full indexes, relative offset overflow. */
  protected maybeRoll(bytes: number, lastOffset: bigint, maxTimestamp: bigint, now: number): void {
    if (this.shouldRoll(bytes, lastOffset, maxTimestamp, now)) this.roll(now);
  }

  protected shouldRoll(bytes: number, lastOffset: bigint, maxTimestamp: bigint, now: number): boolean {
    return rollDue(this.active, this.config, bytes, lastOffset, maxTimestamp, now);
  }

  protected roll(now: number): void {
    const old = this.active;
    old.onBecomeInactive();
    this.segments.push(LogSegment.create(this.dir, this._logEndOffset, this.config.segmentIndexBytes, now, this.stats));
    // the old segment's tail is written by the pending groups; then its indexes and data go to disk,
    // and then the producer state as of the new segment's base (so a snapshot never refers to
    // aborted-transaction index entries that are not on disk)
    const wait = this.queue.written();
    const snapshot = serializeSnapshot(this.producers.producers.values());
    const at = this._logEndOffset;
    // every segment below the new one (Kafka's flush up to its base): the closed one, and any that
    // recovery validated but did not fsync
    const flushed = wait.then(() => old.persistIndexes()).then(() => this.syncSegments((s) => s.baseOffset < at));
    const done = flushed.then(() => this.takeSnapshot(at, snapshot));
    this.track(done, 'finishing a rolled segment');
    // every segment below the new one is on disk once the earlier rolls' syncs are done too
    const earlier = this.rolling;
    void Promise.all([earlier, flushed]).then(() => this.advanceRecoveryPoint(at), noop);
    // a truncation waits for the snapshot (it must not appear after the truncation removed those above it)
    const all = this.rolling === null ? done.catch(noop) : Promise.all([this.rolling, done.catch(noop)]).then(noop);
    this.rolling = all;
    void all.then(() => {
      if (this.rolling === all) this.rolling = null;
    });
    this.logger.info({ dir: this.dir, segment: this._logEndOffset.toString() }, 'rolled segment');
  }

  private async writeGroup(g: WriteGroup): Promise<void> {
    if (this.offline !== null) {
      g.reject(this.offline);
      return;
    }
    try {
      for (const seg of g.segments) await seg.writePending();
      this.unflushedMessages += g.messages;
      if (this.config.flushPolicy === 'always' || this.unflushedMessages >= this.config.flushMessages) {
        await this.syncAll();
        this.advanceRecoveryPoint(g.endOffset);
      } else this.armFlushTimer();
      this._writtenEndOffset = g.endOffset;
      if (this.externalHw === null) this.advanceHighWatermark(g.endOffset);
      else this.externalHw.onWritten?.(g.endOffset);
      g.resolve();
    } catch (err) {
      this.offline = writeFailure(this.dir, err);
      logWriteFailure(this.logger, this.dir, err);
      g.reject(this.offline);
      this.afterWriteFailure();
    }
  }

  /**
   * A write failed and `offline` is set: the appends not written are refused. A log that can undo
   * them (ReplicaLog) discards them and takes appends again; by default it stays offline.
   */
  protected afterWriteFailure(): void {}

  protected advanceHighWatermark(offset: bigint): void {
    if (offset <= this._highWatermark) return;
    this._highWatermark = offset;
    this.producers.onHighWatermark(offset);
    this.opts.onHighWatermark?.(offset);
    this.externalHw?.onAdvanced?.(offset);
  }

  private async syncAll(): Promise<void> {
    this.unflushedMessages = 0;
    this.lastFlushTime = Date.now();
    if (this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    await this.syncSegments();
  }

  /**
   * fsyncs the segments `which` selects, and the directory when one of them is new (local-log-files.ts);
   * first the leader-epoch checkpoint when an append changed it (LeaderEpochCache.assign), so it is on
   * disk before the recovery point moves past its entries.
   */
  private async syncSegments(which: (s: LogSegment) => boolean = () => true): Promise<void> {
    await this.epochs.sync();
    await syncSegments(this.segments, this._recoveryPoint, this.dir, which);
  }

  private armFlushTimer(): void {
    if (this.flushTimer !== null || this.unflushedMessages === 0 || this.config.flushMs >= MAX_TIMER_MS) return;
    this.flushTimer = setTimeout(
      () => {
        this.flushTimer = null;
        if (!this.closed) this.track(this.flush(), 'flush by flush.ms');
      },
      Math.max(0, this.config.flushMs),
    );
    this.flushTimer.unref();
  }

  protected track(p: Promise<unknown>, what: string): void {
    (this.background ??= new BackgroundWork(this.logger, this.dir)).track(p, what);
  }

  protected setLogStartOffset(offset: bigint): void {
    this._logStartOffset = offset;
    this.epochs.truncateFromStart(offset);
    this.persistLogStartOffset();
  }

  private persistLogStartOffset(): void {
    this.track(this.startCheckpoint.write([[this.topic, this.partition, this._logStartOffset]]), 'writing log-start-offset-checkpoint');
  }

  updateConfig(c: LogConfig): void {
    const flushChanged = c.flushMs !== this.config.flushMs;
    this.config = c;
    if (flushChanged && this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
      this.armFlushTimer();
    }
  }

  /** Periodic work: roll by segment.ms, retention by time and size, flush by flush.ms. */
  async maintenance(now: number): Promise<void> {
    if (this.closed || this.offline !== null || this.truncating) return;
    const seg = this.active;
    if (!seg.isEmpty && now - seg.created > this.config.segmentMs) this.roll(now);
    this.deleteOldSegments(now, true);
    if (this.unflushedMessages > 0 && now - this.lastFlushTime >= this.config.flushMs) await this.flush();
  }

  /**
   * Deletes whole segments from the oldest: those below the log start offset, and (with
   * cleanup.policy=delete and `retention`) those past retention.ms / beyond retention.bytes.
   * Never the active segment, never data above the high watermark.
   */
  protected deleteOldSegments(now: number, retention: boolean): void {
    const segs = this.segments;
    const i = deletableSegments(segs, retention ? this.config : null, now, this._highWatermark, this._logStartOffset);
    if (i === 0) return;
    const victims = segs.slice(0, i);
    this.segments = segs.slice(i);
    const first = (this.segments[0] as LogSegment).baseOffset;
    if (first > this._logStartOffset) this.setLogStartOffset(first);
    this.logger.info(
      { dir: this.dir, segments: victims.map((s) => s.baseOffset.toString()), logStartOffset: this._logStartOffset.toString() },
      'deleting segments',
    );
    for (const s of victims) this.scheduleDelete(s);
  }

  private scheduleDelete(seg: LogSegment): void {
    const delay = this.config.fileDeleteDelayMs;
    const p = seg.markDeleted().then(async () => {
      if (delay <= 0 || this.closed) return seg.destroy();
      await (this.background ??= new BackgroundWork(this.logger, this.dir)).destroyLater(seg, delay);
    });
    this.track(p, 'deleting a segment');
  }

  /** Writes out everything appended so far and fsyncs data and indexes. */
  async flush(): Promise<void> {
    await this.queue.written();
    if (this.offline !== null) throw this.offline;
    const end = this._writtenEndOffset;
    await this.syncAll();
    this.advanceRecoveryPoint(end);
    for (const s of this.segments) await s.persistIndexes();
  }

  private async shutdownIo(): Promise<void> {
    this.closed = true;
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    // reserved appends still commit (or fail) in order before the files close
    await this.drainAppends();
    await this.queue.idle();
    await this.background?.settle();
    await this.epochs.settle();
    await this.startCheckpoint.settle();
  }

  /** Flushes and closes; the log can be reopened afterwards. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.shutdownIo();
    this.active.onBecomeInactive();
    try {
      if (this.offline === null) {
        await this.syncSegments();
        this.advanceRecoveryPoint(this._logEndOffset);
        for (const s of this.segments) await s.persistIndexes();
        if (this._logEndOffset > (this.snapshots[0] ?? this._logStartOffset)) {
          await this.takeSnapshot(this._logEndOffset, serializeSnapshot(this.producers.producers.values()));
        }
      }
    } finally {
      for (const s of this.segments) await s.close();
      this.cache.clear();
    }
  }

  /** Closes and removes the partition directory. */
  async delete(): Promise<void> {
    if (!this.closed) await this.shutdownIo();
    for (const s of this.segments) await s.close();
    this.cache.clear();
    await fsp.rm(this.dir, { recursive: true, force: true });
  }
}
