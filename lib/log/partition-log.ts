/**
 * The log of one partition as the broker holds it. Every partition has one from start, but its
 * files are opened on first use, as Kafka opens segments and indexes lazily: until then it answers
 * from the partition's summary (log-summary.ts: offsets, last stable offset, segment list), which
 * is all that Metadata, Fetch's caught-up check, ListOffsets earliest/latest, the metrics and the
 * retention pass need. Produce, a read, a timestamp search, DeleteRecords, producer state, or a
 * retention pass with something to delete open it (UnifiedLog: appends, reads, offsets; LocalLog:
 * segments, recovery, retention). The object stays the same across the open, so the purgatory and
 * the topic manager key on it. How it opens, and what it answers until then, is lazy-log.ts's.
 */
import fsp from 'node:fs/promises';
import { closedError } from './errors.js';
import type { LogConfig } from './log-config.js';
import type { ReadOptions, ReadResult } from './log-read.js';
import type { LogSummary } from './log-summary.js';
import type { PartitionLogOptions } from './local-log.js';
import type { ExternalHighWatermarkOptions } from './replica-log.js';
import type { ConversionRunner } from './convert.js';
import type { AppendResult } from './commit-queue.js';
import { LazyLog, noop, type OpenHooks } from './lazy-log.js';
import { deletableSegments } from './segment-list.js';
import type { TimestampOffset } from './segment-list.js';
import type { AbortedTxn } from './transaction-index.js';
import { ListOffsetsTimestamp } from './unified-log.js';
import type { AppendOptions, TxnMarker, UnifiedLog } from './unified-log.js';
import type { ProducerStateManager } from '../txn/producer-state.js';

export { LogError } from './errors.js';
export type { AppendInfo, AppendResult } from './commit-queue.js';
export type { LogLogger } from './log-loader.js';
export type { PartitionLogOptions } from './local-log.js';
export type { TimestampOffset } from './segment-list.js';
export { ListOffsetsTimestamp } from './unified-log.js';
export type { AppendOptions, TxnMarker } from './unified-log.js';
export type { OpenHooks } from './lazy-log.js';

export class PartitionLog extends LazyLog {
  /** Opens (creating if needed) the log in `<dataDir>/<topic>-<partition>` now. */
  static async open(
    dataDir: string,
    topic: string,
    partition: number,
    config: LogConfig,
    opts: PartitionLogOptions,
  ): Promise<PartitionLog> {
    const log = new PartitionLog(dataDir, topic, partition, config, opts, null, null);
    await log.open();
    return log;
  }

  /**
   * The log of `<dataDir>/<topic>-<partition>`, opened on first use. `summary`: what its files hold
   * (the partition summary checkpoint, or EMPTY_SUMMARY for a partition without files); null when
   * unknown: then the caller must `open()` it before anything reads it.
   */
  static lazy(
    dataDir: string,
    topic: string,
    partition: number,
    config: LogConfig,
    opts: PartitionLogOptions,
    summary: LogSummary | null,
    hooks?: OpenHooks,
  ): PartitionLog {
    return new PartitionLog(dataDir, topic, partition, config, opts, summary, hooks ?? null);
  }

  get logStartOffset(): bigint {
    return this.log?.logStartOffset ?? this.state.logStartOffset;
  }
  get logEndOffset(): bigint {
    return this.log?.logEndOffset ?? this.state.logEndOffset;
  }
  get highWatermark(): bigint {
    return this.log?.highWatermark ?? this.closedHighWatermark(this.state);
  }

  /** The high watermark of a log not open: its end, or (replicated) where it will start when opened. */
  private closedHighWatermark(s: LogSummary): bigint {
    const start = this.externalHw?.opts.initialHighWatermark;
    if (start === undefined || start >= s.logEndOffset) return s.logEndOffset;
    return start < s.logStartOffset ? s.logStartOffset : start;
  }
  /**
   * The end of the data that reached the kernel (or the disk under flush.policy=always): what the
   * leader counts as its own log end for the high watermark. `logEndOffset` is the next offset
   * (data below it is readable, some perhaps still being written): where a follower fetches from.
   */
  get writtenEndOffset(): bigint {
    return this.log?.writtenEndOffset ?? this.state.logEndOffset;
  }
  get latestEpoch(): number {
    return this.log?.latestEpoch ?? this.closedEpochs().latestEpoch;
  }
  /**
   * recovery-point-offset-checkpoint's entry: below it every segment is on disk. A log not open: its
   * summary's end (it was closed cleanly), or the checkpoint's offset when it waits for recovery.
   */
  get recoveryPoint(): bigint {
    return this.log?.recoveryPoint ?? this.closedState?.logEndOffset ?? this.opts.recoveryPoint ?? 0n;
  }
  /** A read met a corrupt entry: the log is repaired at the next open (it must not be summarised as it is). */
  get needsRepair(): boolean {
    return this.log?.needsRepair ?? false;
  }
  /** Bytes in all segments. */
  get size(): number {
    return this.log?.size ?? this.state.segments.reduce((n, s) => n + s.size, 0);
  }
  get segmentBaseOffsets(): bigint[] {
    return this.log?.segmentBaseOffsets ?? this.state.segments.map((s) => s.baseOffset);
  }
  /** A write (or the open) failed: the log refuses appends until reopened. */
  get isOffline(): boolean {
    return this.failed !== null || (this.log?.isOffline ?? false);
  }
  get currentConfig(): LogConfig {
    return this.config;
  }
  /** The runner of conversion work given to this log (the fetch path's down-conversion uses it too). */
  get converter(): ConversionRunner | undefined {
    return this.opts.converter;
  }
  /** Appends reserved and not yet committed (waiting for the open, the worker pool or an earlier append). */
  get pendingAppends(): number {
    return (this.log?.pendingAppends ?? 0) + this.waiting.length;
  }
  /** Idempotence and transactions: producer ids, their sequences, open transactions (needs the open log). */
  get producers(): ProducerStateManager {
    return this.requireLog('producer state').producers;
  }

  /**
   * The last stable offset: below it every transaction is decided (read_committed reads stop here).
   * The high watermark when no transaction is open.
   */
  get lastStableOffset(): bigint {
    if (this.log !== null) return this.log.lastStableOffset;
    const s = this.state;
    const unstable = s.firstUnstableOffset;
    const hw = this.closedHighWatermark(s);
    const lso = unstable === null || unstable > hw ? hw : unstable;
    return lso < s.logStartOffset ? s.logStartOffset : lso;
  }

  /** The summary the partition summary checkpoint keeps (of the open log: as it is now). */
  summary(): LogSummary {
    return this.log?.summary() ?? this.state;
  }

  /**
   * Validates and appends `records` (one produce request's partition data) synchronously: offsets
   * are assigned now, in call order; the data is readable on return; `written` resolves once it is
   * in the kernel (and on disk under flush.policy=always or flush.messages). Conversion the topic
   * needs (compression.type, message format, validation.deep) runs inline here; the broker's
   * produce path uses `appendAsync`, which runs it on the worker pool. Refused with a retriable
   * REQUEST_TIMED_OUT while pool work for this partition is pending, since the offsets could not
   * be given now, and while the log is not open yet (the call starts the open).
   */
  append(records: Buffer, opts: AppendOptions): AppendResult {
    return this.requireLog('append').append(records, opts);
  }

  /**
   * Appends a transaction marker (a control batch) for the coordinator, in commit order behind any
   * append still in the conversion pipeline. Rejects with INVALID_PRODUCER_EPOCH or
   * TRANSACTION_COORDINATOR_FENCED when the producer state refuses it.
   */
  appendMarker(m: TxnMarker, opts: { leaderEpoch: number; now?: number }): Promise<AppendResult> {
    return this.withLog((log) => log.appendMarker(m, opts));
  }

  /**
   * The produce path's append. Whatever needs no conversion is validated and committed before this
   * returns (as `append`), unless earlier appends of this partition are still in the pipeline (or
   * the log is opening): then it queues behind them. What needs conversion gets its offsets
   * reserved now, in arrival order, its CPU work runs on the converter (worker pool), and it is
   * committed strictly in reservation order. Rejects with a LogError (Kafka error code) when the
   * records are refused; a refused append writes nothing and leaves no gap: the appends reserved
   * after it move down at commit.
   */
  appendAsync(records: Buffer, opts: AppendOptions): Promise<AppendResult> {
    return this.withLog((log) => log.appendAsync(records, opts));
  }

  /**
   * Replication, follower side: appends the leader's entries (one or more stored entries, as a
   * Fetch returned them) as they are: their offsets, leader epochs, producer ids and timestamps.
   * Checked at the header level (CRC, magic, codec; compressed magic 0/1 wrappers are opened to
   * count their messages); the first must start at the log end offset and each later one right
   * after the one before, else UNKNOWN_SERVER_ERROR (Kafka's UnexpectedAppendOffsetException: the
   * fetch position and the log disagree, a bug or a race with a truncation, not a client error)
   * and nothing changes. A partial entry at the end is left out (fetched again). The leader epochs,
   * producer state, transaction index and indexes follow the entries. Waits for leader appends
   * still in the pipeline.
   */
  appendAsFollower(records: Buffer, opts: { now?: number } = {}): Promise<AppendResult> {
    return this.withLog((log) =>
      log.pendingAppends === 0
        ? log.appendAsFollower(records, opts.now)
        : log.settleAppends().then(() => log.appendAsFollower(records, opts.now)),
    );
  }

  /**
   * Replication: from now on the high watermark moves only by setHighWatermark, not when appended
   * data is written (the single-node default); it stays where it is, or starts at
   * `opts.initialHighWatermark` (the replication-offset-checkpoint's, clamped to the log; before
   * the log opens too). `onWritten` is told each move of writtenEndOffset (the leader recomputes
   * the minimum over the ISR then), `opts.onAdvanced` each advance of the high watermark.
   */
  useExternalHighWatermark(onWritten: ((writtenEndOffset: bigint) => void) | null = null, opts: ExternalHighWatermarkOptions = {}): void {
    this.externalHw = { onWritten, opts };
    this.log?.useExternalHighWatermark(onWritten, opts);
  }

  /** Whether the replication layer moves the high watermark (appended data is not readable to consumers until it does). */
  get externalHighWatermark(): boolean {
    return this.externalHw !== null;
  }

  /** Back to the default: the high watermark follows the written data (moves there now). */
  useLocalHighWatermark(): void {
    this.externalHw = null;
    this.log?.useLocalHighWatermark();
  }

  /**
   * Moves the high watermark (leader: the minimum log end over the ISR; follower: min(the leader's
   * high watermark, its own log end)), clamped to [logStartOffset, logEndOffset]; never backwards.
   * Returns the high watermark now. Needs the open log.
   */
  setHighWatermark(offset: bigint): bigint {
    return this.requireLog('high watermark').setHighWatermark(offset);
  }

  /**
   * Replication: removes every entry at or after `offset` (an entry straddling it goes whole) with
   * its index entries, leader epochs, aborted-transaction entries and producer state; the high
   * watermark comes down with it. Below the log start it starts over there (truncateFullyAndStartAt).
   * Waits for appends and writes in flight; appends meanwhile are refused (retriable). Resolves to
   * whether anything was removed.
   */
  truncateTo(offset: bigint): Promise<boolean> {
    return this.withLog((log) => log.truncateTo(offset));
  }

  /** Replication: empties the log, which then starts and ends at `offset` (the leader's log start was above the fetch offset). */
  truncateFullyAndStartAt(offset: bigint): Promise<void> {
    return this.withLog((log) => log.truncateFullyAndStartAt(offset));
  }

  /** Whole stored entries from the one holding fetchOffset, up to maxBytes (KIP-74 with minOneMessage); see UnifiedLog.read. */
  read(fetchOffset: bigint, maxBytes: number, opts: ReadOptions): Promise<ReadResult> {
    if (this.closed && this.log === null) return Promise.reject(closedError(this.dir));
    return this.withLog((log) => log.read(fetchOffset, maxBytes, opts));
  }

  /**
   * The aborted transactions a read_committed fetch of [fetchOffset, upperBound) must be told about,
   * by first offset (Kafka's collectAbortedTxns over the segments from the one holding fetchOffset).
   * Needs the open log (a read opens it).
   */
  abortedTransactions(fetchOffset: bigint, upperBound: bigint): AbortedTxn[] {
    return this.requireLog('aborted transactions').abortedTransactions(fetchOffset, upperBound);
  }

  /** The bytes between the entries holding `from` and `to` (segment-list's bytesBetween); 0 when the log is not open. */
  bytesBetween(from: bigint, to: bigint): number {
    return this.log?.bytesBetween(from, to) ?? 0;
  }

  /** producer.id.expiration.ms: forgets idle producers without an open transaction (a log not open has none loaded). */
  expireProducers(now: number, expirationMs: number): number {
    return this.log?.expireProducers(now, expirationMs) ?? 0;
  }

  /**
   * ListOffsets: the first record with timestamp >= `timestamp`, or the special -1 (latest), -2
   * (earliest), -3 (max timestamp), -4 (earliest local). Null when no record qualifies. A search
   * by timestamp (and -3) needs the open log: `open()` it first.
   */
  offsetForTimestamp(timestamp: bigint): TimestampOffset | null {
    if (this.log !== null) return this.log.offsetForTimestamp(timestamp);
    if (this.closed) throw closedError(this.dir);
    if (timestamp === ListOffsetsTimestamp.EARLIEST || timestamp === ListOffsetsTimestamp.EARLIEST_LOCAL) {
      const start = this.logStartOffset;
      return { offset: start, timestamp: -1n, leaderEpoch: this.closedEpochs().epochForOffset(start) };
    }
    if (timestamp === ListOffsetsTimestamp.LATEST) return { offset: this.logEndOffset, timestamp: -1n, leaderEpoch: this.latestEpoch };
    if (timestamp < 0n && timestamp !== ListOffsetsTimestamp.MAX_TIMESTAMP) return null;
    return this.requireLog('offset by timestamp').offsetForTimestamp(timestamp);
  }

  /** OffsetForLeaderEpoch: the end offset of `leaderEpoch` (start of the next higher epoch, or LEO). */
  endOffsetForEpoch(leaderEpoch: number): { leaderEpoch: number; endOffset: bigint } {
    return this.log?.endOffsetForEpoch(leaderEpoch) ?? this.closedEpochs().endOffsetFor(leaderEpoch, this.logEndOffset);
  }

  /** DeleteRecords: moves the log start offset (-1 means the high watermark); returns the new one. Needs the open log. */
  deleteRecordsBefore(offset: bigint): bigint {
    const before = this.logStartOffset;
    const start = this.requireLog('DeleteRecords').deleteRecordsBefore(offset);
    if (start !== before) this.noteChange();
    return start;
  }

  updateConfig(c: LogConfig): void {
    this.config = c;
    this.log?.updateConfig(c);
    // what a fetch may answer can depend on it (an old Fetch version and zstd): kept answers are re-checked
    this.noteChange();
  }

  /** The open log, or null while it is not open (the log cleaner judges such a log from its summary). */
  get openLog(): UnifiedLog | null {
    return this.log;
  }

  /**
   * Whether a maintenance pass would change this log while it is not open: a roll by segment.ms
   * (of a non-empty active segment, counted from when this object was made, as an open at start
   * would count it) or segments to delete.
   */
  maintenanceDue(now: number): boolean {
    if (this.log !== null) return true;
    // a log to recover is opened by the manager's recovery pass (or its first use), not here
    if (this.closed || this.failed !== null || this.opening !== null || this.closedState === null) return false;
    const s = this.state;
    const active = s.segments[s.segments.length - 1];
    if (active !== undefined && active.size > 0 && now - this.since > this.config.segmentMs) return true;
    return deletableSegments(s.segments, this.config, now, s.logEndOffset, s.logStartOffset) > 0;
  }

  /** Periodic work: roll by segment.ms, retention by time and size, flush by flush.ms (opens the log only when due). */
  async maintenance(now: number): Promise<void> {
    if (this.log === null && !this.maintenanceDue(now)) return;
    const before = this.logStartOffset;
    await (await this.opened()).maintenance(now);
    if (this.logStartOffset !== before) this.noteChange();
  }

  /** Writes out everything appended so far and fsyncs data and indexes. */
  async flush(): Promise<void> {
    if (this.opening !== null) await this.opening.catch(noop);
    if (this.log !== null) await this.log.flush();
    else if (this.failed !== null) throw this.failed;
  }

  /** Flushes and closes; the log can be reopened afterwards (by a new PartitionLog). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.opening !== null) await this.opening.catch(noop);
    if (this.log !== null) await this.log.close();
  }

  /** Closes and removes the partition directory. */
  async delete(): Promise<void> {
    this.closed = true;
    if (this.opening !== null) await this.opening.catch(noop);
    if (this.log !== null) await this.log.delete();
    else await fsp.rm(this.dir, { recursive: true, force: true });
  }
}
