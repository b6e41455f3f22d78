/**
 * How a partition log opens on first use (the machinery under PartitionLog): until its files are
 * open it answers from the partition's summary (log-summary.ts) and its leader-epoch checkpoint; a
 * call that needs the files starts the open, synchronous calls then get a retriable error, async
 * ones wait and run in arrival order once it is open. A failed open leaves the log offline.
 */
import { type ChangeMark, ChangeMarks } from './change-marks.js';
import path from 'node:path';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { LeaderEpochCache } from './checkpoint.js';
import { GregorLogErrorCode, LogError, closedError, storageError } from './errors.js';
import type { LogConfig } from './log-config.js';
import { NOOP_LOGGER } from './log-loader.js';
import type { LogLogger } from './log-loader.js';
import { EMPTY_SUMMARY } from './log-summary.js';
import type { LogSummary } from './log-summary.js';
import type { PartitionLogOptions } from './local-log.js';
import type { ExternalHighWatermarkOptions } from './replica-log.js';
import type { IoStats } from './segment.js';
import { UnifiedLog } from './unified-log.js';
import { asError } from '../as-error.js';

export const noop = (): void => undefined;

/** Changes announced by all logs together (LazyLog.noteChange), counted since the process started. */
let changesAnnounced = 0;

/**
 * How many changes the logs have announced so far: while it stays the same, no log's end, high
 * watermark, last stable offset or start moved (a reader's answers built from them still hold).
 */
export function announcedChanges(): number {
  return changesAnnounced;
}

/** How the log manager takes part in opening a log. */
export interface OpenHooks {
  /** Runs before the files are touched (the open journal). */
  beforeOpen(topic: string, partition: number): Promise<void>;
  /** Runs the open itself (the manager bounds how many run at once). */
  schedule<T>(open: () => Promise<T>): Promise<T>;
  /** The open finished, opened or failed (the log needs no recovery any more, or is offline). */
  settled(topic: string, partition: number): void;
}

export abstract class LazyLog {
  readonly topic: string;
  readonly partition: number;
  /** `<dataDir>/<topic>-<partition>`. */
  readonly dir: string;
  /** Writes and fsyncs of this log (tests use them to check write coalescing). */
  readonly stats: IoStats = { writes: 0, syncs: 0 };
  /** Marks cleared by the next announced change (`markUntilChange`, `noteChange`). */
  private readonly marks = new ChangeMarks(this);
  private readonly dataDir: string;
  protected config: LogConfig;
  protected readonly opts: PartitionLogOptions;
  /** What the log looks like until it opens; null when only its files can tell (open before use). */
  protected readonly closedState: LogSummary | null;
  private readonly hooks: OpenHooks | null;
  /** When this object was made: the active segment of a log not opened counts as created then (segment.ms). */
  protected readonly since = Date.now();
  protected log: UnifiedLog | null = null;
  protected opening: Promise<UnifiedLog> | null = null;
  /** Calls that came while the log was opening, run in arrival order once it is open. */
  protected waiting: ((log: UnifiedLog | null, err: unknown) => void)[] = [];
  /** Opening failed (corruption, I/O): the log is offline, every use gets this error. */
  protected failed: LogError | null = null;
  protected closed = false;
  /** leader-epoch-checkpoint read for OffsetForLeaderEpoch while the log is not open. */
  private epochs: LeaderEpochCache | null = null;
  /** Replicated: the replication layer moves the high watermark (see useExternalHighWatermark); else null. */
  protected externalHw: { onWritten: ((writtenEndOffset: bigint) => void) | null; opts: ExternalHighWatermarkOptions } | null = null;

  protected constructor(
    dataDir: string,
    topic: string,
    partition: number,
    config: LogConfig,
    opts: PartitionLogOptions,
    state: LogSummary | null,
    hooks: OpenHooks | null,
  ) {
    this.dataDir = dataDir;
    this.topic = topic;
    this.partition = partition;
    this.dir = path.join(dataDir, `${topic}-${partition}`);
    this.config = config;
    this.opts = opts;
    this.closedState = state;
    this.hooks = hooks;
  }

  protected get logger(): LogLogger {
    return this.opts.logger ?? NOOP_LOGGER;
  }

  /**
   * Announces a change to what a leader answers a follower for this log: an append written, a high
   * watermark move (both also announced to the purgatory), a log start move. Together these are every
   * way the log end, high watermark, last stable offset and log start of a led log move. Clears the
   * marks left on the log (`markUntilChange`).
   */
  noteChange(): void {
    changesAnnounced++;
    this.marks.changed();
  }

  /**
   * Leaves `m` on the log until its next announced change, which clears `m.idleOn` (if it is this
   * log): a follower's fetch session marks a partition it found idle and skips it until then
   * (lib/handlers/fetch-replica.ts). Listed once per log (`m.listedOn`) however often it is marked.
   */
  markUntilChange(m: ChangeMark): void {
    this.marks.mark(m);
  }

  /** Whether the files are open (otherwise the summary answers). */
  get isOpen(): boolean {
    return this.log !== null;
  }

  /**
   * Not open and known to be empty without its files: a partition never written (no directory yet),
   * or one empty at the last clean shutdown. Opening it can wait for its first write.
   */
  get knownEmpty(): boolean {
    return this.log === null && this.closedState === EMPTY_SUMMARY;
  }

  /** Whether the log can be served before it opens (it has a summary, or it is open). */
  get servable(): boolean {
    return this.log !== null || this.closedState !== null;
  }

  /** Opens the files (once; concurrent calls share it). Rejects with the open's LogError. */
  async open(): Promise<void> {
    await this.opened();
  }

  protected opened(): Promise<UnifiedLog> {
    if (this.log !== null) return Promise.resolve(this.log);
    if (this.failed !== null) return Promise.reject(this.failed);
    if (this.opening === null) {
      if (this.closed) return Promise.reject(closedError(this.dir));
      this.opening = this.load();
    }
    return this.opening;
  }

  private async load(): Promise<UnifiedLog> {
    let log: UnifiedLog;
    try {
      const open = (): Promise<UnifiedLog> =>
        UnifiedLog.open(this.dataDir, this.topic, this.partition, this.config, this.opts, this.stats, this.closedState);
      if (this.hooks === null) log = await open();
      else {
        await this.hooks.beforeOpen(this.topic, this.partition);
        log = await this.hooks.schedule(open);
      }
      const s = this.closedState;
      if (s !== null && (log.logEndOffset !== s.logEndOffset || log.logStartOffset !== s.logStartOffset)) {
        this.logger.warn(
          {
            dir: this.dir,
            logStartOffset: log.logStartOffset.toString(),
            logEndOffset: log.logEndOffset.toString(),
            summary: [s.logStartOffset.toString(), s.logEndOffset.toString()],
          },
          'the log opened with other offsets than its summary checkpoint said',
        );
      }
    } catch (err) {
      this.failed = err instanceof LogError ? err : storageError(`opening ${this.dir} failed: ${(err as Error).message}`, err);
      this.logger.error({ err, dir: this.dir }, 'opening the log failed; the partition is offline');
      this.opening = null;
      this.hooks?.settled(this.topic, this.partition);
      this.settleWaiting(null, this.failed);
      throw this.failed;
    }
    if (log.currentConfig !== this.config) log.updateConfig(this.config);
    if (this.externalHw !== null) log.useExternalHighWatermark(this.externalHw.onWritten, this.externalHw.opts);
    this.log = log;
    this.epochs = null;
    this.opening = null;
    this.hooks?.settled(this.topic, this.partition);
    this.settleWaiting(log, null);
    return log;
  }

  private settleWaiting(log: UnifiedLog | null, err: unknown): void {
    const w = this.waiting;
    this.waiting = [];
    for (const f of w) f(log, err);
  }

  /** Runs `fn` on the open log, opening it first if needed; calls made meanwhile run in arrival order. */
  protected withLog<T>(fn: (log: UnifiedLog) => T | Promise<T>): Promise<T> {
    if (this.log !== null) {
      try {
        return Promise.resolve(fn(this.log));
      } catch (err) {
        return Promise.reject(asError(err));
      }
    }
    if (this.failed !== null) return Promise.reject(this.failed);
    if (this.closed && this.opening === null) return Promise.reject(closedError(this.dir));
    return new Promise<T>((resolve, reject) => {
      this.waiting.push((log, err) => {
        if (log === null) {
          reject(asError(err));
          return;
        }
        try {
          resolve(fn(log));
        } catch (e) {
          reject(asError(e));
        }
      });
      this.opened().catch(noop);
    });
  }

  /** The open log for a synchronous call; while it is not open, starts opening and throws a retriable error. */
  protected requireLog(what: string): UnifiedLog {
    if (this.log !== null) return this.log;
    if (this.failed !== null) throw this.failed;
    if (this.closed) throw closedError(this.dir);
    this.opened().catch(noop);
    throw new LogError(ErrorCode.REQUEST_TIMED_OUT, `${this.dir} is not open yet (${what}); retry`, GregorLogErrorCode.NOT_OPEN);
  }

  /**
   * What a log not open answers from: its summary. A log without one (to be recovered after an
   * unclean shutdown) answers nothing before it is open: this starts the open and throws a
   * retriable error (or the open's error once it failed), as the callers should have opened it.
   */
  protected get state(): LogSummary {
    if (this.closedState === null) this.requireLog('offsets of a log not recovered yet');
    return this.closedState ?? EMPTY_SUMMARY;
  }

  /** leader-epoch-checkpoint of a log not open (small; read once, synchronously). */
  protected closedEpochs(): LeaderEpochCache {
    // recovery may cut epochs past the end: a log to recover has to be open first
    if (this.closedState === null) this.requireLog('leader epochs of a log not recovered yet');
    if (this.epochs === null) {
      const epochs = new LeaderEpochCache(this.dir);
      let found = false;
      try {
        found = epochs.load();
      } catch (err) {
        this.logger.warn({ err, dir: this.dir }, 'ignoring an unreadable leader-epoch-checkpoint: the log opens to rebuild it');
      }
      // a log with data and no usable checkpoint: opening it rebuilds the epochs from its batches
      const state = this.closedState ?? EMPTY_SUMMARY;
      if (!found && state.logEndOffset > state.logStartOffset)
        this.requireLog('leader epochs of a log without a usable leader-epoch-checkpoint');
      this.epochs = epochs;
    }
    return this.epochs;
  }
}
