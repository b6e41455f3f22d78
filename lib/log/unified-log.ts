/**
 * An open partition log (Kafka's UnifiedLog): validated leader appends with offsets assigned
 * synchronously (and the reserve → convert → commit pipeline), producer-state checks, reads by
 * offset and timestamp, leader-epoch lookups and DeleteRecords, over ReplicaLog (follower appends,
 * truncation, the replicated high watermark) and LocalLog's files.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fsyncDir } from './checkpoint.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { LogError, closedError, storageError } from './errors.js';
import type { LogConfig } from './log-config.js';
import { sliceSegment } from './file-slices.js';
import { EMPTY_READ, readSegment } from './log-read.js';
import { corruptReadError, verifyRead } from './read-verify.js';
import type { ReadLimits, ReadOptions, ReadResult } from './log-read.js';
import type { LogSummary } from './log-summary.js';
import { ReplicaLog } from './replica-log.js';
import type { PartitionLogOptions } from './local-log.js';
import type { IoStats, LogSegment } from './segment.js';
import { convertForAppend, planAppend, rebaseConverted } from './convert.js';
import type { ConversionRunner, ConvertedAppend } from './convert.js';
import { assignOffsets, type AssignedEntry } from './assign-offsets.js';
import { decompressLimit, fromProtocolError, validateRecords } from './validator.js';
import { CommitQueue } from './commit-queue.js';
import type { AppendResult } from './commit-queue.js';
import { abortedTransactionsIn, bytesBetween, searchTimestamp, segmentIndexFor } from './segment-list.js';
import type { TimestampOffset } from './segment-list.js';
import type { AbortedTxn } from './transaction-index.js';
import { ControlRecordType, buildEndTxnBatch } from '../../protocol/records/index.js';
import { AppendOrigin } from '../txn/producer-state.js';
import type { BatchMetadata } from '../txn/producer-state.js';
import { asError } from '../as-error.js';

/** ListOffsets special timestamps. */
export const ListOffsetsTimestamp = { LATEST: -1n, EARLIEST: -2n, MAX_TIMESTAMP: -3n, EARLIEST_LOCAL: -4n } as const;

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

export class UnifiedLog extends ReplicaLog {
  /**
   * Appends waiting for their CPU work or for an earlier one, in reservation (= commit) order: made
   * by the first append that reserves (the conversion pipeline; a log only appended to inline, or
   * idle, has none: ~600 bytes of heap with its target and closures).
   */
  private commitQueue: CommitQueue | null = null;

  private constructor(dataDir: string, topic: string, partition: number, config: LogConfig, opts: PartitionLogOptions, stats: IoStats) {
    super(dataDir, topic, partition, config, opts, stats);
  }

  private get commits(): CommitQueue {
    if (this.commitQueue !== null) return this.commitQueue;
    // The queue's getters read this log's fields as they change; inside them `this` is the literal.
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- see above
    const self = this;
    this.commitQueue = new CommitQueue({
      get logEndOffset() {
        return self._logEndOffset;
      },
      get offlineError() {
        return self.offline;
      },
      commit: (entries, recordCount, now, origin) => this.commitEntries(entries, recordCount, now, origin),
    });
    return this.commitQueue;
  }

  /**
   * Opens (creating if needed) the log in `<dataDir>/<topic>-<partition>`. `expected`: the summary
   * it was served from while closed (files that differ from it are recovered).
   */
  static async open(
    dataDir: string,
    topic: string,
    partition: number,
    config: LogConfig,
    opts: PartitionLogOptions,
    stats: IoStats = { writes: 0, syncs: 0 },
    expected: LogSummary | null = null,
  ): Promise<UnifiedLog> {
    const log = new UnifiedLog(dataDir, topic, partition, config, opts, stats);
    // a new partition directory's name must survive a power loss before anything in it is acknowledged
    const created = (await fsp.mkdir(log.dir, { recursive: true })) !== undefined;
    if (created) await fsyncDir(path.dirname(log.dir));
    // a directory made just now holds nothing to list, read or recover
    await log.load(expected, created);
    return log;
  }

  protected drainAppends(): Promise<void> {
    return this.commitQueue === null ? Promise.resolve() : this.commitQueue.drain();
  }

  /** Settles once the appends in the pipeline now (and those queued meanwhile) committed or failed. */
  settleAppends(): Promise<void> {
    return this.drainAppends();
  }

  /** The runner of conversion work given to this log (the fetch path's down-conversion uses it too). */
  get converter(): ConversionRunner | undefined {
    return this.opts.converter;
  }

  /** Appends reserved and not yet committed (waiting for the worker pool or an earlier append). */
  get pendingAppends(): number {
    return this.commitQueue === null ? 0 : this.commitQueue.length;
  }

  /** See PartitionLog.append. */
  append(records: Buffer, opts: AppendOptions): AppendResult {
    this.ensureWritable();
    if (this.pendingAppends > 0) {
      throw new LogError(ErrorCode.REQUEST_TIMED_OUT, `${this.dir} has ${this.pendingAppends} appends in the conversion pipeline; retry`);
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

  /** See PartitionLog.appendMarker. */
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
        return [
          { buf: batch, magic: 2, firstOffset: base, lastOffset: base, maxTimestamp: BigInt(now), partitionLeaderEpoch: opts.leaderEpoch },
        ];
      };
      if (this.pendingAppends === 0) return Promise.resolve(this.commitEntries(at(this._logEndOffset), 1, now, AppendOrigin.COORDINATOR));
      const { r, result } = this.commits.reserve(1, now, opts.leaderEpoch, AppendOrigin.COORDINATOR);
      this.commits.ready(r, (base) => ({ entries: at(base), recordCount: 1 }));
      return result;
    } catch (err) {
      return Promise.reject(asError(err));
    }
  }

  /** See PartitionLog.appendAsync. */
  appendAsync(records: Buffer, opts: AppendOptions): Promise<AppendResult> {
    try {
      this.ensureWritable();
      const now = opts.now ?? Date.now();
      const origin = opts.origin ?? AppendOrigin.CLIENT;
      const config = this.config;
      const plan = planAppend(records, config);
      if (plan === null) {
        const v = this.validateFast(records, now);
        if (this.pendingAppends === 0) {
          if (v.entries.length === 0) return Promise.resolve(this.commitEntries([], 0, now, origin));
          return Promise.resolve(
            this.commitEntries(this.assignFast(v, this._logEndOffset, opts.leaderEpoch, now), v.recordCount, now, origin),
          );
        }
        const { r, result } = this.commits.reserve(v.recordCount, now, opts.leaderEpoch, origin);
        this.commits.ready(r, (base) => ({
          entries: v.entries.length === 0 ? [] : this.assignFast(v, base, opts.leaderEpoch, now),
          recordCount: v.recordCount,
        }));
        return result;
      }
      const { r, result } = this.commits.reserve(plan.count, now, opts.leaderEpoch, origin);
      const converted = (c: ConvertedAppend) =>
        this.commits.ready(r, (base) => ({ entries: rebaseConverted(c, base, r.leaderEpoch, config), recordCount: c.recordCount }));
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
      return Promise.reject(asError(err));
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
      const info = {
        firstOffset: -1n,
        lastOffset: -1n,
        logAppendTime,
        logStartOffset: this._logStartOffset,
        recordCount: 0,
        maxTimestamp: -1n,
      };
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
    const info = {
      firstOffset: b.firstOffset,
      lastOffset: b.lastOffset,
      logAppendTime,
      logStartOffset: this._logStartOffset,
      recordCount: 0,
      maxTimestamp: b.timestamp,
    };
    const written = this.queue.written().then(() => {
      if (this.offline !== null) throw this.offline;
    });
    return { info, written };
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

  /** The bytes between the entries holding `from` and `to` (see segment-list's bytesBetween). */
  bytesBetween(from: bigint, to: bigint): number {
    return bytesBetween(this.segments, from, to);
  }

  /** producer.id.expiration.ms: forgets idle producers without an open transaction. */
  expireProducers(now: number, expirationMs: number): number {
    return this.producers.expire(now, expirationMs);
  }

  /**
   * Whole stored entries from the one holding fetchOffset, up to maxBytes (KIP-74 with minOneMessage).
   * With `opts.pool`, segment bytes are read into its buffers: the result's lease (see ReadResult).
   */
  async read(fetchOffset: bigint, maxBytes: number, opts: ReadOptions): Promise<ReadResult> {
    if (this.closed) throw closedError(this.dir);
    if (fetchOffset < this._logStartOffset || fetchOffset > this._logEndOffset) {
      throw new LogError(
        ErrorCode.OFFSET_OUT_OF_RANGE,
        `offset ${fetchOffset} is outside [${this._logStartOffset}, ${this._logEndOffset}] of ${this.dir}`,
      );
    }
    let limit = opts.maxOffset === undefined || opts.maxOffset > this._logEndOffset ? this._logEndOffset : opts.maxOffset;
    const bad = this.corruption;
    if (bad !== null) {
      // nothing at or after a corrupt entry is served (what follows it goes at the repair)
      if (fetchOffset >= bad.offset) throw corruptReadError(this.dir, bad);
      if (limit > bad.offset) limit = bad.offset;
    }
    if (fetchOffset >= limit) return EMPTY_READ;
    const lim: ReadLimits = { fetchOffset, maxBytes, minOneMessage: opts.minOneMessage, maxOffset: limit };
    if (this.cache.covers(fetchOffset)) return this.cache.read(lim);
    const segs = this.segments;
    for (let i = segmentIndexFor(segs, fetchOffset); i < segs.length; i++) {
      const seg = segs[i] as LogSegment;
      if (seg.nextOffset <= fetchOffset) continue;
      let start = 0;
      // bytes from `start` that may all be skipped: the indexed entry there ends before the fetch
      // offset (entries are indexed by their last offset), and the next indexed one starts after it
      let skippable = 0;
      if (fetchOffset > seg.baseOffset) {
        const at = seg.offsetIndex.lookup(fetchOffset);
        start = at.position;
        if (at.offset < fetchOffset) {
          const next = seg.offsetIndex.positionAfter(fetchOffset);
          skippable = (next < 0 ? seg.size : next) - start;
        }
      }
      if (opts.fileSlices === true) {
        const slice = sliceSegment(seg, start, lim);
        if (slice !== null) return { records: [], size: slice.size, file: slice };
      }
      let r;
      try {
        r = await readSegment(seg, start, lim, this.config.indexIntervalBytes, opts.pool ?? null, skippable);
      } catch (err) {
        // retention may have removed the segment under the read
        if (seg.deleted) throw new LogError(ErrorCode.OFFSET_OUT_OF_RANGE, `offset ${fetchOffset} was deleted from ${this.dir}`);
        throw storageError(`reading ${seg.logPath} failed: ${(err as Error).message}`, err);
      }
      const v = verifyRead(seg, r, fetchOffset);
      if (v.corruption !== null) {
        const err = this.noteCorruption(v.corruption);
        if (v.records.length === 0) {
          r.lease?.release();
          throw err;
        }
        return { records: v.records, size: v.size, lease: r.lease };
      }
      if (r.records.length > 0) return { records: r.records, size: r.size, lease: r.lease };
      r.lease?.release();
      if (r.ended) return EMPTY_READ;
    }
    return EMPTY_READ;
  }

  /** See PartitionLog.offsetForTimestamp. */
  offsetForTimestamp(timestamp: bigint): TimestampOffset | null {
    if (this.closed) throw closedError(this.dir);
    if (timestamp === ListOffsetsTimestamp.EARLIEST || timestamp === ListOffsetsTimestamp.EARLIEST_LOCAL) {
      return { offset: this._logStartOffset, timestamp: -1n, leaderEpoch: this.epochs.epochForOffset(this._logStartOffset) };
    }
    if (timestamp === ListOffsetsTimestamp.LATEST)
      return { offset: this._logEndOffset, timestamp: -1n, leaderEpoch: this.epochs.latestEpoch };
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
      throw new LogError(
        ErrorCode.OFFSET_OUT_OF_RANGE,
        `cannot delete records before ${offset}: the high watermark is ${this._highWatermark}`,
      );
    }
    if (target > this._logStartOffset) {
      this.setLogStartOffset(target);
      this.deleteOldSegments(Date.now(), false);
    }
    return this._logStartOffset;
  }
}
