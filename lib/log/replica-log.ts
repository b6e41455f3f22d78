/**
 * The replication side of an open partition log (between LocalLog's files and UnifiedLog's leader
 * appends): follower appends of the leader's entries as they are, a high watermark the replication
 * layer moves, and truncation (to where the leader's log and this one agree, or fully, to start
 * over at the leader's log start).
 *
 * Offsets, for the replication layer:
 * - `logEndOffset`: the next offset; everything below it is readable (some maybe still on its way
 *   to the kernel). A follower fetches from here; the high watermark is clamped to it.
 * - `writtenEndOffset`: the end of what reached the kernel (or the disk, under flush.policy=always
 *   or flush.messages). The leader counts this as its own log end when it takes the minimum over
 *   the ISR; `onWritten` reports each move of it.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { fsyncDir } from './checkpoint.js';
import { LogError, RateLimitedLog, storageError } from './errors.js';
import { LocalLog } from './local-log.js';
import { walkSegmentSync } from './log-read.js';
import type { AppendResult } from './commit-queue.js';
import type { AssignedEntry } from './assign-offsets.js';
import { validateReplicated } from './replica-validate.js';
import { LogSegment } from './segment.js';
import { AppendOrigin } from '../txn/producer-state.js';
import { recoverProducerState } from '../txn/producer-recovery.js';
import { deleteSnapshot } from '../txn/producer-snapshot.js';

export interface ExternalHighWatermarkOptions {
  /** where the high watermark starts (see ReplicaLog.resetHighWatermark); absent: where it is */
  initialHighWatermark?: bigint;
  onAdvanced?: (highWatermark: bigint) => void;
}

/** One line per 10 s for discarded appends, process-wide (on a full disk every append fails). */
const discardLog = new RateLimitedLog(10_000);

export abstract class ReplicaLog extends LocalLog {
  /** Appends reserved and not yet committed (UnifiedLog's conversion pipeline). */
  abstract get pendingAppends(): number;

  /** See the file comment. */
  get writtenEndOffset(): bigint {
    return this._writtenEndOffset;
  }

  /** Whether the replication layer moves the high watermark (else it follows the written end). */
  get externalHighWatermark(): boolean {
    return this.externalHw !== null;
  }

  /**
   * From now on the high watermark moves only by setHighWatermark (it stays where it is, or starts
   * at `initialHighWatermark`: see resetHighWatermark); `onWritten` is called whenever
   * writtenEndOffset moves, `onAdvanced` whenever the high watermark does.
   */
  useExternalHighWatermark(onWritten: ((writtenEndOffset: bigint) => void) | null = null, opts: ExternalHighWatermarkOptions = {}): void {
    this.externalHw = { onWritten, onAdvanced: opts.onAdvanced ?? null };
    if (opts.initialHighWatermark !== undefined) this.resetHighWatermark(opts.initialHighWatermark);
  }

  /**
   * The high watermark of a replica just loaded: `offset` (the replication-offset-checkpoint's),
   * clamped to [logStartOffset, logEndOffset]. Unlike setHighWatermark it may lower it: a log opens
   * with its high watermark at its end, which holds records the ISR may never have had.
   */
  resetHighWatermark(offset: bigint): void {
    let hw = offset < this._logEndOffset ? offset : this._logEndOffset;
    if (hw < this._logStartOffset) hw = this._logStartOffset;
    if (hw < this._highWatermark) this._highWatermark = hw;
    else this.advanceHighWatermark(hw);
  }

  /** Back to the single-node behaviour: the high watermark follows the written end (now at once). */
  useLocalHighWatermark(): void {
    this.externalHw = null;
    this.advanceHighWatermark(this._writtenEndOffset);
  }

  /**
   * Moves the high watermark to `offset`, clamped to [logStartOffset, logEndOffset] (to the written
   * end while it is not external); it never moves back (only a truncation lowers it). Returns the
   * high watermark after the call.
   */
  setHighWatermark(offset: bigint): bigint {
    const top = this.externalHw === null ? this._writtenEndOffset : this._logEndOffset;
    let hw = offset > top ? top : offset;
    if (hw < this._logStartOffset) hw = this._logStartOffset;
    this.advanceHighWatermark(hw);
    return this._highWatermark;
  }

  /**
   * Appends the leader's entries as they are (see PartitionLog.appendAsFollower). Synchronous, like
   * `append`: the data is readable on return and `written` settles once it is in the kernel.
   */
  appendAsFollower(records: Buffer, now: number = Date.now()): AppendResult {
    this.ensureWritable();
    if (this.pendingAppends > 0) {
      throw new LogError(ErrorCode.REQUEST_TIMED_OUT, `${this.dir} has ${this.pendingAppends} leader appends in the pipeline; retry`);
    }
    const v = validateReplicated(records, this.config, this._logEndOffset);
    const logStartOffset = this._logStartOffset;
    if (v.entries.length === 0) {
      const info = { firstOffset: -1n, lastOffset: -1n, logAppendTime: -1n, logStartOffset, recordCount: 0, maxTimestamp: -1n };
      return { info, written: Promise.resolve() };
    }
    // refused as a whole before anything changes (the producer state of a leader's log always passes)
    const plan = this.producers.analyze(v.entries, AppendOrigin.REPLICATION);
    const firstOffset = this._logEndOffset;
    const config = this.config;
    let seg = this.active;
    let maxTimestamp = -1n;
    let messages = 0;
    let applied = 0;
    const entries = v.entries;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i] as AssignedEntry;
      // rolls by entry, as the leader rolled by (one-batch) request: the segments stay alike
      if (this.shouldRoll(e.buf.length, e.lastOffset, e.maxTimestamp, now)) {
        // the producer state as of the new segment's base goes into the roll's snapshot
        for (; applied < i; applied++) this.applyProducerEntry(entries[applied] as AssignedEntry, seg);
        this.queue.add(seg, messages, this._logEndOffset).catch(() => undefined);
        messages = 0;
        this.roll(now);
        seg = this.active;
      }
      if (e.runOffsetOfMaxTimestamp !== undefined) {
        seg.appendRun(e.buf, e.firstOffset, e.lastOffset, e.maxTimestamp, e.runOffsetOfMaxTimestamp, config.indexIntervalBytes, now);
        this.cache.add(e.firstOffset, e.lastOffset, e.buf, e.firstOffset !== e.lastOffset);
      } else {
        seg.append(e.buf, e.lastOffset, e.maxTimestamp, config.indexIntervalBytes, now);
        this.cache.add(e.firstOffset, e.lastOffset, e.buf, false);
      }
      if (e.magic === 2) this.epochs.assign(e.partitionLeaderEpoch, e.firstOffset);
      if (e.maxTimestamp > maxTimestamp) maxTimestamp = e.maxTimestamp;
      messages += Number(e.lastOffset - e.firstOffset) + 1;
      this._logEndOffset = e.lastOffset + 1n;
    }
    if (applied === 0 && plan !== null && !('duplicate' in plan)) {
      for (const a of this.producers.apply(plan, this._highWatermark)) seg.txnIndex.append(a);
    } else if (applied > 0) {
      for (; applied < entries.length; applied++) this.applyProducerEntry(entries[applied] as AssignedEntry, seg);
    }
    const written = this.queue.add(seg, messages, this._logEndOffset);
    const lastOffset = this._logEndOffset - 1n;
    const info = { firstOffset, lastOffset, logAppendTime: -1n, logStartOffset, recordCount: v.recordCount, maxTimestamp };
    return { info, written };
  }

  private applyProducerEntry(e: AssignedEntry, seg: LogSegment): void {
    const plan = this.producers.analyze([e], AppendOrigin.REPLICATION);
    if (plan !== null && !('duplicate' in plan)) for (const a of this.producers.apply(plan, this._highWatermark)) seg.txnIndex.append(a);
  }

  /**
   * Removes every entry holding an offset at or after `offset` (an entry that straddles it goes
   * whole, so the log may end below it): whole segments, the tail of the one holding it, their
   * index entries, the leader epochs from there, producer snapshots above the new end; the
   * producer state is rebuilt from the newest snapshot left and the log after it. Waits for the
   * appends and writes in flight; appends arriving meanwhile are refused (retriable). Below the log
   * start offset it is truncateFullyAndStartAt(offset). Resolves to whether anything was removed.
   */
  async truncateTo(offset: bigint): Promise<boolean> {
    this.ensureWritable();
    if (offset < this._logStartOffset) {
      await this.truncateFullyAndStartAt(offset);
      return true;
    }
    return this.truncation(async () => {
      if (offset >= this._logEndOffset) return false;
      const segs = this.segments;
      let keep = segs.length;
      while (keep > 1 && (segs[keep - 1] as LogSegment).baseOffset >= offset) keep--;
      const seg = segs[keep - 1] as LogSegment;
      if (seg.baseOffset >= offset) {
        // nothing before `offset` remains (it is the log start offset): start over there
        await this.startOver(offset);
        return true;
      }
      // the first entry that holds `offset` or a later one, and the end of the one before it
      let position = seg.size;
      let end = seg.baseOffset;
      const from = offset - 1n > seg.baseOffset ? seg.offsetIndex.lookup(offset - 1n).position : 0;
      walkSegmentSync(seg, from, (h) => {
        if (h.lastOffset >= offset) {
          position = h.position;
          return true;
        }
        end = h.lastOffset + 1n;
        return false;
      });
      if (position === seg.size) end = seg.nextOffset;
      const victims = segs.slice(keep);
      // the offsets move first, so reads stop at the new end while the files change
      this.segments = segs.slice(0, keep);
      this.setEnd(end);
      await this.dropSnapshotsAbove(end);
      // newest first, and durable before the cut: a crash in between leaves a prefix of the log
      for (let i = victims.length - 1; i >= 0; i--) await (victims[i] as LogSegment).markDeleted();
      if (victims.length > 0) await fsyncDir(this.dir);
      if (position < seg.size) await cutSegment(seg, position, end, this.config.indexIntervalBytes);
      await this.rebuildProducerState();
      for (const s of this.segments) await s.persistIndexes();
      for (const v of victims) await v.destroy();
      this.logger.info({ dir: this.dir, logEndOffset: end.toString(), segmentsDeleted: victims.length }, 'log truncated');
      return true;
    });
  }

  /**
   * Empties the log and makes it start (and end) at `offset`: a follower whose fetch offset is
   * below the leader's log start. The leader epochs and the producer state are forgotten.
   */
  async truncateFullyAndStartAt(offset: bigint): Promise<void> {
    this.ensureWritable();
    if (offset < 0n) throw new LogError(ErrorCode.OFFSET_OUT_OF_RANGE, `cannot start ${this.dir} at ${offset}`);
    await this.truncation(() => this.startOver(offset));
  }

  /** Set while discardUnwritten runs. */
  private discarding = false;

  /**
   * A write failed (a full disk, typically): the appends not written are discarded in the
   * background and the log takes appends again, so writes resume once space is freed, without a
   * restart. A replicated partition's followers may already hold those offsets (they fetch up to
   * the log end offset): it stays offline, as Kafka takes a failed log dir offline.
   */
  protected override afterWriteFailure(): void {
    if (this.discarding || this.closed || this.externalHw !== null) return;
    this.discarding = true;
    const p = this.discardUnwritten().finally(() => (this.discarding = false));
    this.track(p, 'discarding the appends a failed write left');
  }

  /**
   * Removes everything after the written end (the last write group that reached the file): the
   * appends held in memory, the segments rolled for them, the bytes a failed writev left in the
   * file past it, their index entries, leader epochs, producer snapshots and producer state. Only
   * truncations and deletions run on the full disk; index and checkpoint rewrites that fail are
   * retried by the next write of them. Appends are refused (`offline`) until it is done.
   */
  private async discardUnwritten(): Promise<void> {
    await this.drainAppends();
    await this.queue.idle();
    if (this.rolling !== null) await this.rolling;
    if (this.closed) return;
    const end = this._writtenEndOffset;
    const dropped = this._logEndOffset - end;
    const segs = this.segments;
    let keep = segs.length;
    while (keep > 1 && (segs[keep - 1] as LogSegment).baseOffset >= end) keep--;
    const victims = segs.slice(keep);
    this.segments = segs.slice(0, keep);
    const seg = this.active;
    for (const s of [seg, ...victims]) s.dropPending();
    this.setEnd(end);
    await this.dropSnapshotsAbove(end);
    for (const v of victims) await v.destroy();
    // the first entry at or past `end` (a group whose other segment's write failed), else the written end
    let position = seg.size;
    const from = end - 1n > seg.baseOffset ? seg.offsetIndex.lookup(end - 1n).position : 0;
    walkSegmentSync(seg, from, (h) => {
      if (h.lastOffset < end) return false;
      position = h.position;
      return true;
    });
    // cutting the file also removes the part of a batch a failed writev left after the written end
    await cutSegment(seg, position, end, this.config.indexIntervalBytes);
    await this.rebuildProducerState();
    this.offline = null;
    this.track(seg.persistIndexes(), 'rewriting the index after discarding unwritten appends');
    discardLog.event((suppressed) =>
      this.logger.warn(
        { dir: this.dir, logEndOffset: end.toString(), discardedOffsets: dropped.toString(), segmentsDeleted: victims.length, suppressed },
        'discarded the appends a failed write left; the log takes appends again',
      ),
    );
  }

  /** Runs `fn` with appends refused, after those in flight settled; a failure takes the log offline. */
  private async truncation<T>(fn: () => Promise<T>): Promise<T> {
    this.truncating = true;
    try {
      await this.drainAppends();
      await this.queue.idle();
      if (this.rolling !== null) await this.rolling;
      if (this.offline !== null) throw this.offline;
      return await fn();
    } catch (err) {
      if (!(err instanceof LogError)) {
        this.offline = storageError(`truncating ${this.dir} failed: ${(err as Error).message}`, err);
        this.logger.error({ err, dir: this.dir }, 'log truncation failed; the partition is offline');
        throw this.offline;
      }
      throw err;
    } finally {
      this.truncating = false;
    }
  }

  private async startOver(offset: bigint): Promise<void> {
    const old = this.segments;
    // the new start first: a crash after the segments went opens an empty log there
    await this.startCheckpoint.write([[this.topic, this.partition, offset]]);
    await this.dropSnapshotsAbove(-1n);
    for (let i = old.length - 1; i >= 0; i--) await (old[i] as LogSegment).markDeleted();
    await fsyncDir(this.dir);
    this.segments = [LogSegment.create(this.dir, offset, this.config.segmentIndexBytes, Date.now(), this.stats)];
    this._logStartOffset = offset;
    this._highWatermark = offset;
    this.setEnd(offset);
    this.epochs.clear();
    this.producers.load([]);
    for (const s of old) await s.destroy();
    this.logger.info({ dir: this.dir, offset: offset.toString() }, 'log emptied; it starts over');
  }

  /** The log now ends at `end`: offsets, high watermark, recent cache and leader epochs follow. */
  private setEnd(end: bigint): void {
    this._logEndOffset = end;
    if (this._recoveryPoint > end) this._recoveryPoint = end;
    this._writtenEndOffset = end;
    if (this._highWatermark > end) this._highWatermark = end;
    this.cache.clear();
    this.epochs.truncateFromEnd(end);
  }

  private async dropSnapshotsAbove(end: bigint): Promise<void> {
    for (const o of this.snapshots) if (o > end) await deleteSnapshot(this.dir, o);
    this.snapshots = this.snapshots.filter((o) => o <= end);
  }

  /**
   * The producer state as of the log end: the newest snapshot left, then the log after it (which
   * also rebuilds the transaction index from there). Transactions ended at or above the high
   * watermark stay unstable.
   */
  private async rebuildProducerState(): Promise<void> {
    const hw = this._highWatermark;
    // snapshots above the high watermark cannot serve here (the replay treats their end as stable)
    const usable = this.snapshots.filter((o) => o <= hw);
    const r = await recoverProducerState(this.dir, this.segments, usable, this.producers, hw, this.logger);
    const above = this.snapshots.filter((o) => o > hw);
    this.snapshots = [...above, ...r.snapshots].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
  }
}

/**
 * Cuts `seg` at `position` (the start of the first entry removed), `end` being the offset there:
 * the file, the indexes, and the trackers the removed entries set (max timestamp, next offset).
 */
async function cutSegment(seg: LogSegment, position: number, end: bigint, indexIntervalBytes: number): Promise<void> {
  seg.nextOffset = end;
  await seg.truncateTo(position);
  const last = seg.timeIndex.last();
  seg.maxTimestamp = last?.timestamp ?? -1n;
  seg.offsetOfMaxTimestamp = last?.offset ?? -1n;
  if (position === 0) seg.rollBaseTimestamp = null;
  // the entries after the last index entry may hold a larger timestamp than the time index has
  const from = seg.offsetIndex.last()?.position ?? 0;
  if (from < position) await seg.scan(from, false, indexIntervalBytes, seg.baseOffset);
  seg.nextOffset = end;
}
