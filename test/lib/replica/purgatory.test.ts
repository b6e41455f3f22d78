/** The purgatory's standing watches (what a connection's long-polling fetches wait behind). */
import { expect } from 'chai';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { fetchWatchFor, sameLogs } from '../../../lib/replica/fetch-watch.js';
import { type PartitionChange, Purgatory, waitFor } from '../../../lib/replica/purgatory.js';

/** An append of `n` bytes on a single node (readable at once). */
const bytes = (n: number): PartitionChange => ({ appendedBytes: n, readableBytes: n });

describe('purgatory: standing watches', () => {
  const a = { name: 'a' };
  const b = { name: 'b' };
  const c = { name: 'c' };

  it('is told of every change to its keys until closed, and never counts as waiting', () => {
    const p = new Purgatory();
    const seen: (number | undefined)[] = [];
    const s = p.standing((change) => seen.push(change?.readableBytes));
    s.setKeys([a, b]);
    expect(p.size).to.equal(0);
    p.checkAndComplete(a, bytes(10));
    p.checkAndComplete(b, bytes(20));
    p.checkAndComplete(c, bytes(30));
    p.checkAndComplete(a, bytes(40));
    expect(seen).to.deep.equal([10, 20, 40]);
    s.close();
    p.checkAndComplete(a, bytes(50));
    expect(seen).to.deep.equal([10, 20, 40]);
  });

  it('setKeys replaces the watched set; the same keys in another order change nothing', () => {
    const p = new Purgatory();
    const seen: number[] = [];
    const s = p.standing((change) => seen.push(change?.readableBytes ?? -1));
    s.setKeys([a, b]);
    s.setKeys([b, a]);
    p.checkAndComplete(a, bytes(1));
    expect(seen).to.deep.equal([1]);
    s.setKeys([c]);
    p.checkAndComplete(a, bytes(2));
    p.checkAndComplete(b, bytes(3));
    p.checkAndComplete(c, bytes(4));
    expect(seen).to.deep.equal([1, 4]);
    s.setKeys([c, a, a]);
    p.checkAndComplete(a, bytes(5));
    p.checkAndComplete(c, bytes(6));
    expect(seen).to.deep.equal([1, 4, 5, 6]);
  });

  it('forwards changes to an operation waiting on its own key, which completes once and stops watching', async () => {
    const p = new Purgatory();
    const conn = { name: 'connection' };
    const s = p.standing((change) => p.checkAndComplete(conn, change));
    s.setKeys([a, b]);
    let total = 0;
    const done = waitFor(p, [conn], 10_000, (change) => (total += change?.readableBytes ?? 0) >= 100);
    expect(p.size).to.equal(1);
    p.checkAndComplete(c, bytes(500)); // not watched
    p.checkAndComplete(a, bytes(60));
    expect(p.size).to.equal(1);
    p.checkAndComplete(b, bytes(60));
    expect(await done).to.equal(true);
    expect(p.size).to.equal(0);
    expect(total).to.equal(120);
    p.checkAndComplete(a, bytes(1000)); // nothing waits now: no error, nothing counted
    expect(total).to.equal(120);
  });

  it('expireAll expires waiting operations and leaves standing watches in place', async () => {
    const p = new Purgatory();
    const seen: number[] = [];
    const s = p.standing((change) => seen.push(change?.readableBytes ?? -1));
    s.setKeys([a]);
    const waiting = waitFor(p, [b], 10_000, () => false);
    p.expireAll();
    expect(await waiting).to.equal(false);
    expect(p.size).to.equal(0);
    p.checkAndComplete(a, bytes(7));
    expect(seen).to.deep.equal([7]);
    s.close();
  });
});

describe('purgatory: reusable waits', () => {
  const conn = { name: 'connection' };

  it('runs wait after wait under one registration: woken, expired, ready at once', async () => {
    const p = new Purgatory();
    const r = p.reusable([conn]);
    for (let i = 0; i < 3; i++) {
      let total = 0;
      const woken = r.wait(10_000, (change) => (total += change?.readableBytes ?? 0) >= 100);
      expect(p.size, `wait ${i} counts as waiting`).to.equal(1);
      p.checkAndComplete(conn, bytes(60));
      p.checkAndComplete(conn, bytes(60));
      expect(await woken).to.equal(true);
      expect(total).to.equal(120);
      expect(p.size).to.equal(0);
      p.checkAndComplete(conn, bytes(1000)); // nothing waits now: the finished wait is not asked again
      expect(total).to.equal(120);
    }
    // a wait that times out, then one woken on the re-armed timer's watch
    expect(await r.wait(10, () => false)).to.equal(false);
    expect(p.size).to.equal(0);
    const again = r.wait(10_000, (change) => (change?.readableBytes ?? 0) > 0);
    p.checkAndComplete(conn, bytes(1));
    expect(await again).to.equal(true);
    // the same timeout again and again: the timer, fired or not, is re-armed each time
    expect(await r.wait(20, () => false)).to.equal(false);
    expect(await r.wait(20, () => false)).to.equal(false);
    const woken = r.wait(20, (change) => change?.readableBytes === 5);
    p.checkAndComplete(conn, bytes(5));
    expect(await woken).to.equal(true);
    expect(await r.wait(20, () => false)).to.equal(false);
    // ready at once: no wait at all
    expect(await r.wait(10_000, () => true)).to.equal(true);
    expect(p.size).to.equal(0);
    r.close();
  });

  it("a wait's timer is re-armed: the timeout of an earlier, woken wait does not end a later one", async () => {
    const p = new Purgatory();
    const r = p.reusable([conn]);
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const first = r.wait(400, (change) => change?.readableBytes === 1);
    p.checkAndComplete(conn, bytes(1));
    expect(await first).to.equal(true);
    await sleep(250);
    const second = r.wait(400, (change) => change?.readableBytes === 2); // its 400 ms run from here, not from the first wait
    await sleep(250); // past the first wait's 400 ms
    expect(p.size, 'still waiting').to.equal(1);
    p.checkAndComplete(conn, bytes(2));
    expect(await second).to.equal(true);
    r.close();
  });

  it('expireAll and close end a pending wait as expired; after close, waits resolve at once', async () => {
    const p = new Purgatory();
    const r = p.reusable([conn]);
    const a = r.wait(10_000, () => false);
    p.expireAll();
    expect(await a).to.equal(false);
    expect(p.size).to.equal(0);
    const b = r.wait(10_000, () => false);
    const c = r.wait(10_000, (change) => change?.readableBytes === 1); // a second wait ends the first as expired
    expect(await b).to.equal(false);
    expect(p.size).to.equal(1);
    p.checkAndComplete(conn, bytes(1));
    expect(await c).to.equal(true);
    const d = r.wait(10_000, () => false);
    r.close();
    expect(await d).to.equal(false);
    expect(p.size).to.equal(0);
    expect(await r.wait(10_000, () => true)).to.equal(true);
    expect(await r.wait(10_000, () => false)).to.equal(false);
  });
});

/** A partition log for FetchWatch, which only keys the purgatory by it (compared by identity) and never reads it. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment -- only the object's identity is used (see above)
const standInLog = (): PartitionLog => ({}) as PartitionLog;

describe('fetch watch (per connection)', () => {
  it("wakes the connection's waiting fetch on an append to any partition it fetched, until the connection closes", async () => {
    const p = new Purgatory();
    let close!: () => void;
    const conn = { closed: new Promise<void>((r) => (close = r)) };
    const logA = standInLog();
    const logB = standInLog();
    const watch = fetchWatchFor(p, conn);
    expect(fetchWatchFor(p, conn), 'one watch per connection').to.equal(watch);
    const woken = watch.wait([[logA, logB]], 10_000, (change) => (change?.readableBytes ?? 0) > 0);
    p.checkAndComplete(logB, bytes(10));
    expect(await woken).to.equal(true);
    close();
    await conn.closed;
    // closed: appends no longer reach anything waiting under the connection's key
    const after = waitFor(p, [watch], 50, (change) => (change?.readableBytes ?? 0) > 0);
    p.checkAndComplete(logA, bytes(10));
    expect(await after, 'expired, not woken').to.equal(false);
    expect(await watch.wait([[logA]], 10_000, () => false), 'a closed watch does not wait').to.equal(false);
    expect(p.size).to.equal(0);
  });
});

describe('fetch watch: comparing the lists of two waits (sameLogs)', () => {
  const logs = Array.from({ length: 6 }, standInLog);
  const [a, b, c, d, e, f] = logs as [PartitionLog, PartitionLog, PartitionLog, PartitionLog, PartitionLog, PartitionLog];
  const kept1 = [a, b];
  const kept2 = [c, d];

  it('holds for the same lists in any order, and for a rotation that splits one list differently', () => {
    expect(sameLogs([kept1, kept2], [kept1, kept2])).to.equal(true);
    expect(sameLogs([kept2, kept1], [kept1, kept2])).to.equal(true);
    // librdkafka's rotation: the topic block [e, f] arrives split as [f] ... [e], then as [e, f]
    expect(sameLogs([[f], kept1, kept2, [e]], [kept1, [e, f], kept2])).to.equal(true);
    expect(sameLogs([[e, f]], [[f, e]])).to.equal(true);
    expect(sameLogs([], [])).to.equal(true);
  });

  it('holds for the same logs in another order that is no rotation, and counts a list given twice', () => {
    expect(sameLogs([[e, f, c]], [[f, e, c]])).to.equal(true);
    expect(sameLogs([kept1, [e, f, c]], [[f, e, c], kept1])).to.equal(true);
    // kept1 twice against kept1 and a new list of its logs: the same logs as often
    expect(sameLogs([kept1, kept1], [kept1, [a, b]])).to.equal(true);
    expect(sameLogs([kept1, kept1, kept2], [kept1, kept2, kept2])).to.equal(false);
    // empty lists in between, a rotation across lists, and a last log that differs
    expect(sameLogs([[], [e, f], [], [a]], [[f], [], [a, e]])).to.equal(true);
    expect(sameLogs([[a, b, c]], [[a, b], [d]])).to.equal(false);
    expect(sameLogs([[a], [b, c]], [[c, a], [d]])).to.equal(false);
  });

  it('fails for a log added, dropped or swapped, also when the number of lists or logs stays', () => {
    expect(sameLogs([kept1, kept2, [e]], [kept1, kept2])).to.equal(false);
    expect(sameLogs([kept1], [kept1, kept2])).to.equal(false);
    expect(sameLogs([kept1, [c, e]], [kept1, kept2])).to.equal(false);
    expect(sameLogs([kept1, [c]], [kept1, [d]])).to.equal(false);
    expect(sameLogs([kept1, kept1], [kept1, kept2]), 'a list twice is not the other list').to.equal(false);
    expect(sameLogs([[a, a]], [[a, b]])).to.equal(false);
    expect(sameLogs([[]], [[a]])).to.equal(false);
  });

  it("re-keys the connection's watch when the logs change, and keeps it when only the lists do", async () => {
    const p = new Purgatory();
    const conn = { closed: new Promise<void>(() => {}) };
    const watch = fetchWatchFor(p, conn);
    const wake = (log: PartitionLog) => {
      const woken = watch.wait(current, 10_000, (change) => (change?.readableBytes ?? 0) > 0);
      p.checkAndComplete(log, bytes(10));
      return Promise.race([woken, new Promise((r) => setTimeout(() => r('still waiting'), 50))]);
    };
    let current: PartitionLog[][] = [kept1, [e, f]];
    expect(await wake(f)).to.equal(true);
    // the same logs as other lists: f is still watched
    current = [[f], kept1, [e]];
    expect(await wake(f)).to.equal(true);
    // f dropped for c: an append to f no longer wakes the wait, one to c does
    current = [kept1, [e, c]];
    expect(await wake(f)).to.equal('still waiting');
    // (the wait left pending ends as expired when the next one starts)
    expect(await wake(c)).to.equal(true);
  });
});
