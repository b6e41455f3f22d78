/**
 * The commit order of a partition's appends (KAFKA-1933's reserve → parallel → commit): offsets are
 * reserved when an append arrives, its CPU work (conversion, recompression, deep validation) may
 * finish in any order on the worker pool, and appends commit strictly in reservation order.
 * Reservations are provisional: an append commits at the log end offset of its turn, so one that
 * is refused (or is a duplicate) leaves no gap, and those behind it move down.
 */
import type { AppendOrigin } from '../txn/producer-state.js';
import { LogError } from './errors.js';
import { fromProtocolError } from './validator.js';
import type { AssignedEntry } from './assign-offsets.js';

export interface AppendInfo {
  firstOffset: bigint;
  lastOffset: bigint;
  /** The broker time stamped on the records under LogAppendTime, else -1n. */
  logAppendTime: bigint;
  logStartOffset: bigint;
  recordCount: number;
  maxTimestamp: bigint;
}

export interface AppendResult {
  info: AppendInfo;
  written: Promise<void>;
}

/** What a queue commits into (the partition log). */
export interface CommitTarget {
  /** Where the next commit lands. */
  readonly logEndOffset: bigint;
  /** The error that refuses every commit (the log went offline), or null. */
  readonly offlineError: LogError | null;
  /** Commits entries assigned from the log end offset; throws a LogError when they are refused. */
  commit(entries: AssignedEntry[], recordCount: number, now: number, origin: AppendOrigin): AppendResult;
}

/** The entries of a reserved append at its final base offset. */
export type Assign = (finalBase: bigint) => { entries: AssignedEntry[]; recordCount: number };

/** A place in the commit order: offsets [base, base + count) as reserved on arrival. */
export interface Reservation {
  readonly base: bigint;
  readonly count: number;
  readonly now: number;
  readonly leaderEpoch: number;
  readonly origin: AppendOrigin;
  done: boolean;
  assign: Assign | null;
  error: unknown;
  resolve: (r: AppendResult) => void;
  reject: (err: unknown) => void;
}

const noop = (): void => undefined;

export class CommitQueue {
  private readonly reservations: Reservation[] = [];
  /** End of the reserved offsets: the log end offset plus what the reservations are expected to take. */
  private reservedEnd = 0n;
  /** Settles when the latest reservation did (they settle in order); null before the first. */
  private last: Promise<unknown> | null = null;

  constructor(private readonly target: CommitTarget) {}

  /** Appends reserved and not yet committed. */
  get length(): number {
    return this.reservations.length;
  }

  /** Reserves `count` offsets behind the appends already queued; `result` settles at its commit. */
  reserve(count: number, now: number, leaderEpoch: number, origin: AppendOrigin): { r: Reservation; result: Promise<AppendResult> } {
    if (this.reservations.length === 0) this.reservedEnd = this.target.logEndOffset;
    const r: Reservation = {
      base: this.reservedEnd,
      count,
      now,
      leaderEpoch,
      origin,
      done: false,
      assign: null,
      error: null,
      resolve: noop,
      reject: noop,
    };
    this.reservedEnd += BigInt(count);
    this.reservations.push(r);
    const result = new Promise<AppendResult>((resolve, reject) => {
      r.resolve = resolve;
      r.reject = reject;
    });
    this.last = result.catch(noop);
    return { r, result };
  }

  /** The reservation's entries are known: it commits when its turn comes. */
  ready(r: Reservation, assign: Assign): void {
    r.assign = assign;
    r.done = true;
    this.commitReady();
  }

  /** The reservation's work failed: it is refused in its turn, writing nothing. */
  fail(r: Reservation, err: unknown): void {
    r.error = err instanceof LogError ? err : fromProtocolError(err);
    r.done = true;
    this.commitReady();
  }

  /** Resolves once every reservation made so far (and those made meanwhile) has settled. */
  async drain(): Promise<void> {
    while (this.reservations.length > 0) await this.last;
  }

  /** Commits (or refuses) the completed reservations at the head of the queue, in order. */
  private commitReady(): void {
    const t = this.target;
    while (this.reservations.length > 0 && (this.reservations[0] as Reservation).done) {
      const r = this.reservations.shift() as Reservation;
      if (r.error !== null || r.assign === null) {
        // nothing written: the reservations behind this one move down by its count at their commit
        this.reservedEnd -= BigInt(r.count);
        r.reject(r.error);
        continue;
      }
      const before = t.logEndOffset;
      try {
        if (t.offlineError !== null) throw t.offlineError;
        const { entries, recordCount } = r.assign(before);
        r.resolve(t.commit(entries, recordCount, r.now, r.origin));
      } catch (err) {
        r.reject(err instanceof LogError ? err : fromProtocolError(err));
      }
      // what it took (nothing for a refused append or a duplicate) replaces what it reserved
      this.reservedEnd += t.logEndOffset - before - BigInt(r.count);
    }
    if (this.reservations.length === 0) this.reservedEnd = t.logEndOffset;
  }
}
