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
 * changes only the one or two topic blocks it splits. So lists are matched by identity first, and
 * only the logs of the lists left over on either side are compared: as a rotation of each other (the
 * common case: two identity compares per log), else counted against each other. A poll costs a look
 * at each list and at the logs of the lists that changed, not at every partition. False when in doubt
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
  if (n === 1 && b.length === 1) return sameLogsIn(a, b);
  // each list's count in a less its count in b: what is left over on either side, in their order
  const lists = new Map<readonly PartitionLog[], number>();
  for (const list of a) lists.set(list, (lists.get(list) ?? 0) + 1);
  for (const list of b) lists.set(list, (lists.get(list) ?? 0) - 1);
  const leftA: (readonly PartitionLog[])[] = [];
  const leftB: (readonly PartitionLog[])[] = [];
  for (const list of a) {
    const times = lists.get(list) as number;
    if (times <= 0) continue;
    lists.set(list, times - 1);
    leftA.push(list);
  }
  for (const list of b) {
    const times = lists.get(list) as number;
    if (times >= 0) continue;
    lists.set(list, times + 1);
    leftB.push(list);
  }
  return sameLogsIn(leftA, leftB);
}

/** Whether the logs of two lists of lists, each read in order as one sequence, are the same logs as often: a rotation of each other, or counted. */
function sameLogsIn(a: WatchedLogs, b: WatchedLogs): boolean {
  let n = 0;
  for (const list of a) n += list.length;
  for (const list of b) n -= list.length;
  if (n !== 0) return false;
  if (sameRotation(a, b)) return true;
  const times = new Map<PartitionLog, number>();
  for (const list of a) for (const log of list) times.set(log, (times.get(log) ?? 0) + 1);
  for (const list of b) for (const log of list) times.set(log, (times.get(log) ?? 0) - 1);
  for (const t of times.values()) if (t !== 0) return false;
  return true;
}

/**
 * Whether two sequences of the same length (lists read in order) hold the same logs in the same
 * cyclic order: librdkafka starts each Fetch's list one partition later than the last, so a rotation
 * is the common change. Two identity compares per log at most, and nothing copied.
 */
function sameRotation(a: WatchedLogs, b: WatchedLogs): boolean {
  let ai = a.findIndex((list) => list.length > 0);
  if (ai < 0) return true; // both empty
  const first = (a[ai] as readonly PartitionLog[])[0];
  // where the first log of a is in b
  let bi = 0;
  let bj = -1;
  for (; bi < b.length; bi++) {
    bj = (b[bi] as readonly PartitionLog[]).indexOf(first as PartitionLog);
    if (bj >= 0) break;
  }
  if (bj < 0) return false;
  let aList = a[ai] as readonly PartitionLog[];
  let aj = 0;
  let bList = b[bi] as readonly PartitionLog[];
  for (;;) {
    if (aList[aj] !== bList[bj]) return false;
    // the next log of a; done after its last
    if (++aj === aList.length) {
      do if (++ai === a.length) return true;
      while ((a[ai] as readonly PartitionLog[]).length === 0);
      aList = a[ai] as readonly PartitionLog[];
      aj = 0;
    }
    // the next log of b, from its start again after its last
    if (++bj === bList.length) {
      do bi = bi + 1 === b.length ? 0 : bi + 1;
      while ((b[bi] as readonly PartitionLog[]).length === 0);
      bList = b[bi] as readonly PartitionLog[];
      bj = 0;
    }
  }
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
