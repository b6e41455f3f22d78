/**
 * The log of one partition (Kafka's UnifiedLog, one node): validated appends with offsets assigned
 * synchronously, coalesced page-cache writes, reads by offset and timestamp, leader epochs,
 * retention, DeleteRecords and crash recovery.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { CheckpointFile, LeaderEpochCache } from './checkpoint.js';
import { LogError, closedError, storageError } from './errors.js';
import type { LogConfig } from './log-config.js';
import { NOOP_LOGGER, loadSegments } from './log-loader.js';
import type { LogLogger } from './log-loader.js';
import { EMPTY_READ, RecentCache, readSegment } from './log-read.js';
import type { ReadLimits, ReadResult } from './log-read.js';
import { LogSegment } from './segment.js';
import type { IoStats } from './segment.js';
import { convertForAppend, planAppend, rebaseConverted } from './convert.js';
import type { ConversionRunner, ConvertedAppend } from './convert.js';
import { assignOffsets, decompressLimit, fromProtocolError, validateRecords } from './validator.js';
import type { AssignedEntry, ConvertHook } from './validator.js';
import { CommitQueue } from './commit-queue.js';
import type { AppendResult } from './commit-queue.js';
import { WriteQueue } from './write-queue.js';
import { abortedTransactionsIn, deletableSegments, searchTimestamp, segmentIndexFor } from './segment-list.js';
import type { TimestampOffset } from './segment-list.js';
import type { WriteGroup } from './write-queue.js';
import type { AbortedTxn } from './transaction-index.js';
import { ControlRecordType, buildEndTxnBatch } from '../../protocol/records/index.js';
import { AppendOrigin, ProducerStateManager } from '../txn/producer-state.js';
import type { BatchMetadata } from '../txn/producer-state.js';
import { SNAPSHOTS_KEPT, recoverProducerState } from '../txn/producer-recovery.js';
import { deleteSnapshot, serializeSnapshot, writeSnapshot } from '../txn/producer-snapshot.js';

export { LogError } from './errors.js';
export type { AppendInfo, AppendResult } from './commit-queue.js';
export type { LogLogger } from './log-loader.js';

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
  /** Called when the high watermark moves (after appended data reached the kernel, or disk). */
  onHighWatermark?: (highWatermark: bigint) => void;
}

export type { TimestampOffset } from './segment-list.js';

/** ListOffsets special timestamps. */
export const ListOffsetsTimestamp = { LATEST: -1n, EARLIEST: -2n, MAX_TIMESTAMP: -3n, EARLIEST_LOCAL: -4n } as const;

const noop = (): void => undefined;
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface AppendOptions {
  leaderEpoch: number;
  now?: number;
  /** Who appends (default: a client, with full producer validation and duplicate detection). */
  origin?: AppendOrigin;
}

/** A COMMIT or ABORT marker written by the transaction coordinator. */
export interface TxnMarker {
  producerId: bigint;
  producerEpoch: number;
  coordinatorEpoch: number;
  commit: boolean;
}

export class PartitionLog {
  readonly topic: string;
  readonly partition: number;
  /** `<dataDir>/<topic>-<partition>`. */
  readonly dir: string;
  readonly stats: IoStats = { writes: 0, syncs: 0 };
  private config: LogConfig;
  private readonly logger: LogLogger;
  private readonly opts: PartitionLogOptions;
  private segments: LogSegment[] = [];
  private _logStartOffset = 0n;
  private _logEndOffset = 0n;
  private _highWatermark = 0n;
  private readonly epochs: LeaderEpochCache;
  private readonly startCheckpoint: CheckpointFile;
  private readonly cache: RecentCache;
  private readonly queue = new WriteQueue((g) => this.writeGroup(g));
  private unflushedMessages = 0;
  private lastFlushTime = Date.now();
  private flushTimer: NodeJS.Timeout | null = null;
  private offline: LogError | null = null;
  private closed = false;
  private readonly background = new Set<Promise<unknown>>();
  private readonly pendingDeletes = new Map<LogSegment, { timer: NodeJS.Timeout; done: () => void }>();
  /** Appends waiting for their CPU work or for an earlier one, in reservation (= commit) order. */
  private readonly commits: CommitQueue;
  /** Idempotence and transactions: producer ids, their sequences, open transactions. */
  readonly producers: ProducerStateManager;
  /** Offsets of the producer-state snapshot files, newest first. */
  private snapshots: bigint[] = [];

  private constructor(dataDir: string, topic: string, partition: number, config: LogConfig, opts: PartitionLogOptions) {
    this.topic = topic;
    this.partition = partition;
    this.dir = path.join(dataDir, `${topic}-${partition}`);
    this.config = config;
    this.opts = opts;
    this.logger = opts.logger ?? NOOP_LOGGER;
    this.epochs = new LeaderEpochCache(path.join(this.dir, 'leader-epoch-checkpoint'));
    this.epochs.onError = (err) => this.logger.error({ err, dir: this.dir }, 'writing leader-epoch-checkpoint failed');
    this.startCheckpoint = new CheckpointFile(path.join(this.dir, 'log-start-offset-checkpoint'));
    this.cache = new RecentCache(opts.recentCacheBytes ?? 1 << 20);
    this.producers = new ProducerStateManager(`${topic}-${partition}`);
    const self = this;
    this.commits = new CommitQueue({
      get logEndOffset() {
        return self._logEndOffset;
      },
      get offlineError() {
        return self.offline;
      },
      commit: (entries, recordCount, now, origin) => this.commitEntries(entries, recordCount, now, origin),
    });
  }

  /** Opens (creating if needed) the log in `<dataDir>/<topic>-<partition>`. */
  static async open(dataDir: string, topic: string, partition: number, config: LogConfig, opts: PartitionLogOptions): Promise<PartitionLog> {
    const log = new PartitionLog(dataDir, topic, partition, config, opts);
    await fsp.mkdir(log.dir, { recursive: true });
    await log.load();
    return log;
  }

  private async load(): Promise<void> {
    const now = Date.now();
    const loaded = await loadSegments(this.dir, this.config, this.opts.recover, now, this.stats, this.logger);
    let checkpointed: bigint | null = null;
    try {
      const row = this.startCheckpoint.readSync()?.[0];
      if (row?.[2] !== undefined) checkpointed = BigInt(row[2]);
      this.epochs.load();
    } catch (err) {
      this.logger.warn({ err, dir: this.dir }, 'ignoring an unreadable checkpoint');
    }
    this.segments = loaded.segments;
    if (this.segments.length === 0) this.segments = [LogSegment.create(this.dir, checkpointed ?? 0n, this.config.segmentIndexBytes, now, this.stats)];
    this._logEndOffset = this.active.nextOffset;
    let start = this.segments[0]?.baseOffset ?? 0n;
    if (checkpointed !== null && checkpointed > start) start = checkpointed;
    if (start > this._logEndOffset) start = this._logEndOffset;
    this._logStartOffset = start;
    if (this.opts.recover) for (const h of loaded.tail) if (h.magic === 2) this.epochs.assign(h.partitionLeaderEpoch, h.baseOffset);
    this.epochs.truncateFromEnd(this._logEndOffset);
    this.epochs.truncateFromStart(this._logStartOffset);
    this._highWatermark = this._logEndOffset;
    if (checkpointed !== start) this.persistLogStartOffset();
    this.snapshots = (await recoverProducerState(this.dir, this.segments, loaded.snapshots, this.producers, this._logEndOffset, this.logger)).snapshots;
    if (loaded.truncatedBytes > 0 || this.opts.recover) {
      this.logger.info({ dir: this.dir, logEndOffset: this._logEndOffset.toString(), truncatedBytes: loaded.truncatedBytes }, 'log recovered');
    }
  }

  private get active(): LogSegment {
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

  private ensureWritable(): void {
    if (this.closed) throw closedError(this.dir);
    if (this.offline !== null) throw this.offline;
  }

  /** The runner of conversion work given to this log (the fetch path's down-conversion uses it too). */
  get converter(): ConversionRunner | undefined {
    return this.opts.converter;
  }

  /** Appends reserved and not yet committed (waiting for the worker pool or an earlier append). */
  get pendingAppends(): number {
    return this.commits.length;
  }

  /**
   * Validates and appends `records` (one produce request's partition data) synchronously: offsets
   * are assigned now, in call order; the data is readable on return; `written` resolves once it is
   * in the kernel (and on disk under flush.policy=always or flush.messages). Conversion the topic
   * needs (compression.type, message format, validation.deep) runs inline here; the broker's
   * produce path uses `appendAsync`, which runs it on the worker pool. Refused with a retriable
   * REQUEST_TIMED_OUT while pool work for this partition is pending, since the offsets could not
   * be given now.
   */
  append(records: Buffer, opts: AppendOptions): AppendResult {
    this.ensureWritable();
    if (this.commits.length > 0) {
      throw new LogError(ErrorCode.REQUEST_TIMED_OUT, `${this.dir} has ${this.commits.length} appends in the conversion pipeline; retry`);
    }
    const now = opts.now ?? Date.now();
    const config = this.config;
    const origin = opts.origin ?? AppendOrigin.CLIENT;
    if (planAppend(records, config) !== null) {
      const c = convertForAppend(records, config, this._logEndOffset, now);
      return this.commitEntries(rebaseConverted(c, this._logEndOffset, opts.leaderEpoch, config), c.recordCount, now, origin);
    }
    const v = this.validateFast(records, now);
    if (v.entries.length === 0) return this.commitEntries([], 0, now, origin);
    return this.commitEntries(this.assignFast(v, this._logEndOffset, opts.leaderEpoch, now), v.recordCount, now, origin);
  }

  /**
   * Appends a transaction marker (a control batch) for the coordinator, in commit order behind any
   * append still in the conversion pipeline. Rejects with INVALID_PRODUCER_EPOCH or
   * TRANSACTION_COORDINATOR_FENCED when the producer state refuses it.
   */
  appendMarker(m: TxnMarker, opts: { leaderEpoch: number; now?: number }): Promise<AppendResult> {
    try {
      this.ensureWritable();
      const now = opts.now ?? Date.now();
      const batch = buildEndTxnBatch({
        type: m.commit ? ControlRecordType.COMMIT : ControlRecordType.ABORT,
        producerId: m.producerId,
        producerEpoch: m.producerEpoch,
        coordinatorEpoch: m.coordinatorEpoch,
        timestamp: BigInt(now),
        partitionLeaderEpoch: opts.leaderEpoch,
      });
      const at = (base: bigint): AssignedEntry[] => {
        batch.writeBigInt64BE(base, 0);
        return [{ buf: batch, magic: 2, firstOffset: base, lastOffset: base, maxTimestamp: BigInt(now), partitionLeaderEpoch: opts.leaderEpoch }];
      };
      if (this.commits.length === 0) return Promise.resolve(this.commitEntries(at(this._logEndOffset), 1, now, AppendOrigin.COORDINATOR));
      const { r, result } = this.commits.reserve(1, now, opts.leaderEpoch, AppendOrigin.COORDINATOR);
      this.commits.ready(r, (base) => ({ entries: at(base), recordCount: 1 }));
      return result;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * The produce path's append. Whatever needs no conversion is validated and committed before this
   * returns (as `append`), unless earlier appends of this partition are still in the pipeline: then
   * it queues behind them. What needs conversion gets its offsets reserved now, in arrival order,
   * its CPU work runs on the converter (worker pool), and it is committed strictly in reservation
   * order. Rejects with a LogError (Kafka error code) when the records are refused; a refused
   * append writes nothing and leaves no gap: the appends reserved after it move down at commit.
   */
  appendAsync(records: Buffer, opts: AppendOptions): Promise<AppendResult> {
    try {
      this.ensureWritable();
      const now = opts.now ?? Date.now();
      const origin = opts.origin ?? AppendOrigin.CLIENT;
      const config = this.config;
      const plan = planAppend(records, config);
      if (plan === null) {
        const v = this.validateFast(records, now);
        if (this.commits.length === 0) {
          if (v.entries.length === 0) return Promise.resolve(this.commitEntries([], 0, now, origin));
          return Promise.resolve(this.commitEntries(this.assignFast(v, this._logEndOffset, opts.leaderEpoch, now), v.recordCount, now, origin));
        }
        const { r, result } = this.commits.reserve(v.recordCount, now, opts.leaderEpoch, origin);
        this.commits.ready(r, (base) => ({ entries: v.entries.length === 0 ? [] : this.assignFast(v, base, opts.leaderEpoch, now), recordCount: v.recordCount }));
        return result;
      }
      const { r, result } = this.commits.reserve(plan.count, now, opts.leaderEpoch, origin);
      const converted = (c: ConvertedAppend) => this.commits.ready(r, (base) => ({ entries: rebaseConverted(c, base, r.leaderEpoch, config), recordCount: c.recordCount }));
      const runner = this.opts.converter;
      if (runner === undefined) {
        try {
          converted(convertForAppend(records, config, r.base, now));
        } catch (err) {
          this.commits.fail(r, err);
        }
      } else {
        runner.convertForAppend(records, config, r.base, now).then(converted, (err: unknown) => this.commits.fail(r, err));
      }
      return result;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private validateFast(records: Buffer, now: number) {
    const config = this.config;
    // a convert hook sees one entry per message; otherwise uncompressed magic 0/1 messages are runs
    if (this.opts.convert === undefined) return validateRecords(records, config, now, { legacyRuns: true });
    let v = validateRecords(records, config, now);
    v = this.opts.convert(v, config) ?? v;
    return v;
  }

  private assignFast(v: ReturnType<typeof validateRecords>, base: bigint, leaderEpoch: number, now: number): AssignedEntry[] {
    try {
      return assignOffsets(v, base, leaderEpoch, this.config, now);
    } catch (err) {
      throw fromProtocolError(err);
    }
  }

  /**
   * Puts assigned entries (offsets from the log end offset, in order) into the active segment, after
   * the producer state accepted them. An exact retry of a cached producer batch is not appended: it
   * is answered with the original offsets.
   */
  private commitEntries(assigned: AssignedEntry[], recordCount: number, now: number, origin: AppendOrigin): AppendResult {
    const config = this.config;
    const logAppendTime = config.messageTimestampType === 'LogAppendTime' ? BigInt(now) : -1n;
    if (assigned.length === 0) {
      const info = { firstOffset: -1n, lastOffset: -1n, logAppendTime, logStartOffset: this._logStartOffset, recordCount: 0, maxTimestamp: -1n };
      return { info, written: Promise.resolve() };
    }
    const producerAppend = this.producers.analyze(assigned, origin);
    if (producerAppend !== null && 'duplicate' in producerAppend) return this.duplicateOf(producerAppend.duplicate);
    const firstOffset = this._logEndOffset;
    let bytes = 0;
    let maxTimestamp = -1n;
    for (const e of assigned) {
      bytes += e.buf.length;
      if (e.maxTimestamp > maxTimestamp) maxTimestamp = e.maxTimestamp;
    }
    const lastOffset = firstOffset + BigInt(recordCount - 1);
    this.maybeRoll(bytes, lastOffset, maxTimestamp, now);
    const seg = this.active;
    for (const e of assigned) {
      if (e.runOffsetOfMaxTimestamp !== undefined) {
        // uncompressed magic 0/1 messages: one chunk, indexed at message boundaries
        seg.appendRun(e.buf, e.firstOffset, e.lastOffset, e.maxTimestamp, e.runOffsetOfMaxTimestamp, config.indexIntervalBytes, now);
        this.cache.add(e.firstOffset, e.lastOffset, e.buf, e.firstOffset !== e.lastOffset);
      } else {
        seg.append(e.buf, e.lastOffset, e.maxTimestamp, config.indexIntervalBytes, now);
        this.cache.add(e.firstOffset, e.lastOffset, e.buf, false);
      }
      if (e.magic === 2) this.epochs.assign(e.partitionLeaderEpoch, e.firstOffset);
    }
    if (producerAppend !== null) for (const a of this.producers.apply(producerAppend, this._highWatermark)) seg.txnIndex.append(a);
    this._logEndOffset = lastOffset + 1n;
    const written = this.queue.add(seg, recordCount, this._logEndOffset);
    const info = { firstOffset, lastOffset, logAppendTime, logStartOffset: this._logStartOffset, recordCount, maxTimestamp };
    return { info, written };
  }

  /** A retried batch the producer state still holds: its original offsets, once they are written. */
  private duplicateOf(b: BatchMetadata): AppendResult {
    const logAppendTime = this.config.messageTimestampType === 'LogAppendTime' ? b.timestamp : -1n;
    const info = { firstOffset: b.firstOffset, lastOffset: b.lastOffset, logAppendTime, logStartOffset: this._logStartOffset, recordCount: 0, maxTimestamp: b.timestamp };
    const written = this.queue.written().then(() => {
      if (this.offline !== null) throw this.offline;
    });
    return { info, written };
  }

  /** Writes the producer-state snapshot for offset `at` and drops the oldest beyond the few kept. */
  private async takeSnapshot(at: bigint, data: Buffer): Promise<void> {
    await writeSnapshot(this.dir, at, data);
    const list = [at, ...this.snapshots.filter((o) => o !== at)].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
    this.snapshots = list.slice(0, SNAPSHOTS_KEPT);
    for (const o of list.slice(SNAPSHOTS_KEPT)) await deleteSnapshot(this.dir, o);
  }

  /**
   * The last stable offset: below it every transaction is decided (read_committed reads stop here).
   * The high watermark when no transaction is open.
   */
  get lastStableOffset(): bigint {
    const unstable = this.producers.firstUnstableOffset();
    const lso = unstable === null || unstable > this._highWatermark ? this._highWatermark : unstable;
    return lso < this._logStartOffset ? this._logStartOffset : lso;
  }

  /**
   * The aborted transactions a read_committed fetch of [fetchOffset, upperBound) must be told about,
   * by first offset (Kafka's collectAbortedTxns over the segments from the one holding fetchOffset).
   */
  abortedTransactions(fetchOffset: bigint, upperBound: bigint): AbortedTxn[] {
    return abortedTransactionsIn(this.segments, fetchOffset, upperBound);
  }

  /** producer.id.expiration.ms: forgets idle producers without an open transaction. */
  expireProducers(now: number, expirationMs: number): number {
    return this.producers.expire(now, expirationMs);
  }

  /** Kafka's shouldRoll: size, time (by record timestamps), full indexes, relative offset overflow. */
  private maybeRoll(bytes: number, lastOffset: bigint, maxTimestamp: bigint, now: number): void {
    const seg = this.active;
    if (seg.isEmpty) return;
    const c = this.config;
    const base = seg.rollBaseTimestamp;
    const waited = base !== null && maxTimestamp >= 0n ? Number(maxTimestamp) - base : now - seg.created;
    if (seg.size > c.segmentBytes - bytes || waited > c.segmentMs || seg.offsetIndex.isFull || seg.timeIndex.isFull || !seg.canHold(lastOffset)) {
      this.roll(now);
    }
  }

  private roll(now: number): void {
    const old = this.active;
    old.onBecomeInactive();
    this.segments.push(LogSegment.create(this.dir, this._logEndOffset, this.config.segmentIndexBytes, now, this.stats));
    // the old segment's tail is written by the pending groups; then its indexes and data go to disk,
    // and then the producer state as of the new segment's base (so a snapshot never refers to
    // aborted-transaction index entries that are not on disk)
    const wait = this.queue.written();
    const snapshot = serializeSnapshot(this.producers.producers.values());
    const at = this._logEndOffset;
    this.track(
      wait
        .then(() => old.persistIndexes())
        .then(() => old.sync())
        .then(() => this.takeSnapshot(at, snapshot)),
      'finishing a rolled segment',
    );
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
      if (this.config.flushPolicy === 'always' || this.unflushedMessages >= this.config.flushMessages) await this.syncAll();
      else this.armFlushTimer();
      this.advanceHighWatermark(g.endOffset);
      g.resolve();
    } catch (err) {
      this.offline = storageError(`writing ${this.dir} failed: ${(err as Error).message}`, err);
      this.logger.error({ err, dir: this.dir }, 'log write failed; the partition is offline');
      g.reject(this.offline);
    }
  }

  private advanceHighWatermark(offset: bigint): void {
    if (offset <= this._highWatermark) return;
    this._highWatermark = offset;
    this.producers.onHighWatermark(offset);
    this.opts.onHighWatermark?.(offset);
  }

  private async syncAll(): Promise<void> {
    this.unflushedMessages = 0;
    this.lastFlushTime = Date.now();
    if (this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    for (const s of this.segments) await s.sync();
  }

  private armFlushTimer(): void {
    if (this.flushTimer !== null || this.unflushedMessages === 0 || this.config.flushMs >= MAX_TIMER_MS) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      if (!this.closed) this.track(this.flush(), 'flush by flush.ms');
    }, Math.max(0, this.config.flushMs));
    this.flushTimer.unref();
  }

  private track(p: Promise<unknown>, what: string): void {
    const q = p.catch((err: unknown) => this.logger.error({ err, dir: this.dir }, `${what} failed`));
    this.background.add(q);
    void q.finally(() => this.background.delete(q));
  }

  /** Whole stored entries from the one holding fetchOffset, up to maxBytes (KIP-74 with minOneMessage). */
  async read(fetchOffset: bigint, maxBytes: number, opts: { minOneMessage: boolean; maxOffset?: bigint }): Promise<ReadResult> {
    if (this.closed) throw closedError(this.dir);
    if (fetchOffset < this._logStartOffset || fetchOffset > this._logEndOffset) {
      throw new LogError(ErrorCode.OFFSET_OUT_OF_RANGE, `offset ${fetchOffset} is outside [${this._logStartOffset}, ${this._logEndOffset}] of ${this.dir}`);
    }
    const limit = opts.maxOffset === undefined || opts.maxOffset > this._logEndOffset ? this._logEndOffset : opts.maxOffset;
    if (fetchOffset >= limit) return EMPTY_READ;
    const lim: ReadLimits = { fetchOffset, maxBytes, minOneMessage: opts.minOneMessage, maxOffset: limit };
    if (this.cache.covers(fetchOffset)) return this.cache.read(lim);
    const segs = this.segments;
    for (let i = segmentIndexFor(segs, fetchOffset); i < segs.length; i++) {
      const seg = segs[i] as LogSegment;
      if (seg.nextOffset <= fetchOffset) continue;
      const start = fetchOffset > seg.baseOffset ? seg.offsetIndex.lookup(fetchOffset).position : 0;
      let r;
      try {
        r = await readSegment(seg, start, lim, this.config.indexIntervalBytes);
      } catch (err) {
        // retention may have removed the segment under the read
        if (seg.deleted) throw new LogError(ErrorCode.OFFSET_OUT_OF_RANGE, `offset ${fetchOffset} was deleted from ${this.dir}`);
        throw storageError(`reading ${seg.logPath} failed: ${(err as Error).message}`, err);
      }
      if (r.records.length > 0 || r.ended) return { records: r.records, size: r.size };
    }
    return EMPTY_READ;
  }

  /**
   * ListOffsets: the first record with timestamp >= `timestamp`, or the special -1 (latest), -2
   * (earliest), -3 (max timestamp), -4 (earliest local). Null when no record qualifies.
   */
  offsetForTimestamp(timestamp: bigint): TimestampOffset | null {
    if (this.closed) throw closedError(this.dir);
    if (timestamp === ListOffsetsTimestamp.EARLIEST || timestamp === ListOffsetsTimestamp.EARLIEST_LOCAL) {
      return { offset: this._logStartOffset, timestamp: -1n, leaderEpoch: this.epochs.epochForOffset(this._logStartOffset) };
    }
    if (timestamp === ListOffsetsTimestamp.LATEST) return { offset: this._logEndOffset, timestamp: -1n, leaderEpoch: this.epochs.latestEpoch };
    if (timestamp === ListOffsetsTimestamp.MAX_TIMESTAMP) {
      let best: LogSegment | null = null;
      for (const s of this.segments) if (s.maxTimestamp >= 0n && (best === null || s.maxTimestamp > best.maxTimestamp)) best = s;
      return best === null ? null : searchTimestamp([best], best.maxTimestamp, this._logStartOffset, decompressLimit(this.config));
    }
    if (timestamp < 0n) return null;
    return searchTimestamp(this.segments, timestamp, this._logStartOffset, decompressLimit(this.config));
  }

  /** OffsetForLeaderEpoch: the end offset of `leaderEpoch` (start of the next higher epoch, or LEO). */
  endOffsetForEpoch(leaderEpoch: number): { leaderEpoch: number; endOffset: bigint } {
    return this.epochs.endOffsetFor(leaderEpoch, this._logEndOffset);
  }

  /** DeleteRecords: moves the log start offset (-1 means the high watermark); returns the new one. */
  deleteRecordsBefore(offset: bigint): bigint {
    this.ensureWritable();
    const target = offset === -1n ? this._highWatermark : offset;
    if (target < 0n || target > this._highWatermark) {
      throw new LogError(ErrorCode.OFFSET_OUT_OF_RANGE, `cannot delete records before ${offset}: the high watermark is ${this._highWatermark}`);
    }
    if (target > this._logStartOffset) {
      this.setLogStartOffset(target);
      this.deleteOldSegments(Date.now(), false);
    }
    return this._logStartOffset;
  }

  private setLogStartOffset(offset: bigint): void {
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
    if (this.closed || this.offline !== null) return;
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
  private deleteOldSegments(now: number, retention: boolean): void {
    const segs = this.segments;
    const i = deletableSegments(segs, retention ? this.config : null, now, this._highWatermark, this._logStartOffset);
    if (i === 0) return;
    const victims = segs.slice(0, i);
    this.segments = segs.slice(i);
    const first = (this.segments[0] as LogSegment).baseOffset;
    if (first > this._logStartOffset) this.setLogStartOffset(first);
    this.logger.info({ dir: this.dir, segments: victims.map((s) => s.baseOffset.toString()), logStartOffset: this._logStartOffset.toString() }, 'deleting segments');
    for (const s of victims) this.scheduleDelete(s);
  }

  private scheduleDelete(seg: LogSegment): void {
    const delay = this.config.fileDeleteDelayMs;
    const p = seg.markDeleted().then(async () => {
      if (delay <= 0 || this.closed) return seg.destroy();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.pendingDeletes.delete(seg);
          seg.destroy().then(resolve, resolve);
        }, Math.min(delay, MAX_TIMER_MS));
        timer.unref();
        this.pendingDeletes.set(seg, { timer, done: resolve });
      });
    });
    this.track(p, 'deleting a segment');
  }

  /** Writes out everything appended so far and fsyncs data and indexes. */
  async flush(): Promise<void> {
    await this.queue.written();
    if (this.offline !== null) throw this.offline;
    await this.syncAll();
    for (const s of this.segments) await s.persistIndexes();
  }

  private async shutdownIo(): Promise<void> {
    this.closed = true;
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    // reserved appends still commit (or fail) in order before the files close
    await this.commits.drain();
    await this.queue.idle();
    for (const [seg, d] of this.pendingDeletes) {
      clearTimeout(d.timer);
      await seg.destroy().catch(noop);
      d.done();
    }
    this.pendingDeletes.clear();
    while (this.background.size > 0) await Promise.all([...this.background]);
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
        for (const s of this.segments) await s.sync();
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
