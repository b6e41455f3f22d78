/**
 * What a connection's long-polling fetches wait on. A client without fetch sessions (librdkafka,
 * kafkajs, kafka-python) names every assigned partition in every Fetch; registering a delayed
 * operation under each of them on every poll is most of what an idle consumer on thousands of
 * partitions costs. Instead each connection keeps one standing watch under the partitions it last
 * fetched, replaced only when that set changes, and a waiting fetch waits under the connection's
 * key alone: an unchanged idle poll touches one registration, not thousands. That wait is a
 * reusable one (Purgatory.reusable), registered once per connection with one timer re-armed per
 * wait, so a woken long poll neither registers nor creates and cancels a timer.
 */
import type { PartitionLog } from '../log/partition-log.js';
import type { PartitionChange, Purgatory, ReusableWait, StandingWatch } from './purgatory.js';

export class FetchWatch {
  private readonly standing: StandingWatch;
  /** the connection's fetches wait one at a time (a connection runs its requests in order): one reusable wait */
  private readonly waiting: ReusableWait;
  /** The logs of the last wait, in their order (the standing watch holds the same set). */
  private watched: readonly PartitionLog[] = [];

  constructor(purgatory: Purgatory) {
    // A change to any watched partition re-checks the fetch waiting on this connection, if any.
    this.standing = purgatory.standing((change) => purgatory.checkAndComplete(this, change));
    this.waiting = purgatory.reusable([this]);
  }

  /**
   * Waits until `ready(change)` holds after a change (an append, a high watermark move) to one of `logs`, or `timeoutMs` passes;
   * resolves true when ready.
   */
  wait(logs: readonly PartitionLog[], timeoutMs: number, ready: (change?: PartitionChange) => boolean): Promise<boolean> {
    if (!sameRotation(logs, this.watched)) this.standing.setKeys(logs);
    this.watched = logs;
    return this.waiting.wait(timeoutMs, ready);
  }

  close(): void {
    this.standing.close();
    this.waiting.close();
  }
}

/**
 * The same logs in the same cyclic order: librdkafka starts each Fetch's list one partition later
 * than the last, so a rotation is the common change. Two identity compares per partition at most,
 * where the standing watch's own order-free check costs a Set lookup each (any other change still
 * goes to it).
 */
function sameRotation(a: readonly PartitionLog[], b: readonly PartitionLog[]): boolean {
  if (a === b) return true; // a follower's session that stayed idle waits on the same list again
  const n = a.length;
  if (n !== b.length) return false;
  if (n === 0) return true;
  let j = b.indexOf(a[0]!);
  if (j < 0) return false;
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[j]) return false;
    j = j + 1 === n ? 0 : j + 1;
  }
  return true;
}

const watches = new WeakMap<object, FetchWatch>();

/** The fetch watch of a connection, made on first use and closed with the connection. */
export function fetchWatchFor(purgatory: Purgatory, conn: { readonly closed: Promise<void> }): FetchWatch {
  let w = watches.get(conn);
  if (w === undefined) {
    const watch = new FetchWatch(purgatory);
    watches.set(conn, (w = watch));
    void conn.closed.then(() => watch.close());
  }
  return w;
}
