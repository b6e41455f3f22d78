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

/**
 * The logs a fetch waits on, as the lists they came in: a kept topic answer's logs (the same list poll
 * after poll while it holds), a topic's logs walked afresh, a follower session's logs. Two waits on the
 * same lists are compared list by list, and only the logs of lists not in both are looked at.
 */
export type WatchedLogs = readonly (readonly PartitionLog[])[];

export class FetchWatch {
  private readonly standing: StandingWatch;
  /** the connection's fetches wait one at a time (a connection runs its requests in order): one reusable wait */
  private readonly waiting: ReusableWait;
  /** The logs of the last wait, as its lists (the standing watch holds the same set). */
  private watched: WatchedLogs = [];

  constructor(purgatory: Purgatory) {
    // A change to any watched partition re-checks the fetch waiting on this connection, if any.
    this.standing = purgatory.standing((change) => purgatory.checkAndComplete(this, change));
    this.waiting = purgatory.reusable([this]);
  }

  /**
   * Waits until `ready(change)` holds after a change (an append, a high watermark move) to one of the
   * logs in `lists`, or `timeoutMs` passes; resolves true when ready.
   */
  wait(lists: WatchedLogs, timeoutMs: number, ready: (change?: PartitionChange) => boolean): Promise<boolean> {
    if (!sameLogs(lists, this.watched)) this.standing.setKeys(lists.flat());
    this.watched = lists;
    return this.waiting.wait(timeoutMs, ready);
  }

  close(): void {
    this.standing.close();
    this.waiting.close();
  }
}

/**
 * Whether two waits' lists hold the same logs, each as often. A sessionless consumer on thousands of
 * partitions (librdkafka) sends the same topics poll after poll, most of them answered from kept
 * answers whose log lists are the same objects; its rotation (each Fetch starts one partition later)
 * changes only the one or two topic blocks it splits. So lists are matched by identity first, and the
 * logs of the lists left over on either side are counted against each other: a poll costs a look at
 * each list and at the logs of the few lists that changed, not at every partition. False when in doubt
 * (the same logs, counted differently): the standing watch then compares the sets itself.
 */
export function sameLogs(a: WatchedLogs, b: WatchedLogs): boolean {
  if (a === b) return true;
  const n = a.length;
  if (n === b.length) {
    let i = 0;
    while (i < n && a[i] === b[i]) i++;
    if (i === n) return true; // the same lists in the same order
  }
  const lists = new Map<readonly PartitionLog[], number>();
  for (const list of a) lists.set(list, (lists.get(list) ?? 0) + 1);
  for (const list of b) lists.set(list, (lists.get(list) ?? 0) - 1);
  const logs = new Map<PartitionLog, number>();
  for (const [list, times] of lists) {
    if (times === 0) continue;
    for (const log of list) logs.set(log, (logs.get(log) ?? 0) + times);
  }
  for (const times of logs.values()) if (times !== 0) return false;
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
