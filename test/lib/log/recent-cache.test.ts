/**
 * The recent-batches cache (lib/log/recent-cache.ts): its per-log bound, and the broker-wide budget
 * that evicts the oldest entries of any log first and charges what the entries keep alive: each
 * backing buffer (a whole multi-partition produce request) once, while any cached entry views it.
 */
import { expect } from 'chai';
import { ENTRY_OVERHEAD as O, RecentCache, RecentCacheBudget } from '../../../lib/log/recent-cache.js';
import type { ReadLimits } from '../../../lib/log/log-read.js';

/** An entry of `size` bytes whose first byte tags it. */
function entry(tag: number, size: number): Buffer {
  const b = Buffer.alloc(size, 0);
  b[0] = tag;
  return b;
}

function readFrom(c: RecentCache, fetchOffset: bigint, maxBytes = 1 << 30): Buffer[] {
  const lim: ReadLimits = { fetchOffset, maxBytes, minOneMessage: true, maxOffset: 1n << 62n };
  return c.read(lim).records;
}

describe('recent-batches cache', () => {
  describe('one log', () => {
    it('keeps the newest entries within its own budget, at least one, oldest dropped first', () => {
      const c = new RecentCache(3 * (300 + O) + 100);
      for (let i = 0; i < 10; i++) c.add(BigInt(i), BigInt(i), entry(i, 300));
      // 3 entries of 300 bytes (and their overhead each) fit
      expect(c.size).to.equal(3 * (300 + O));
      expect(c.covers(7n)).to.equal(true);
      expect(c.covers(6n)).to.equal(false);
      expect(readFrom(c, 7n).map((b) => b[0])).to.deep.equal([7, 8, 9]);
      // an entry larger than the budget is still kept alone
      c.add(10n, 10n, entry(10, 5000));
      expect(c.size).to.equal(5000 + O);
      expect(readFrom(c, 10n).map((b) => b[0])).to.deep.equal([10]);
    });

    it('holds nothing with a budget of 0', () => {
      const c = new RecentCache(0);
      c.add(0n, 0n, entry(0, 10));
      expect(c.covers(0n)).to.equal(false);
      expect(c.size).to.equal(0);
    });
  });

  describe('the broker-wide budget', () => {
    it('evicts the oldest entries of any log first, and counts exactly what the caches hold', () => {
      const U = 200 + O;
      const budget = new RecentCacheBudget(5 * U);
      const a = new RecentCache(1 << 20, budget);
      const b = new RecentCache(1 << 20, budget);
      for (let i = 0; i < 3; i++) a.add(BigInt(i), BigInt(i), entry(i, 200)); // a: 0,1,2
      expect(budget.bytes).to.equal(3 * U);
      for (let i = 0; i < 3; i++) b.add(BigInt(i), BigInt(i), entry(100 + i, 200)); // 6 over a limit of 5: a's 0 goes
      expect(budget.bytes).to.equal(5 * U);
      expect(budget.entries).to.equal(5);
      expect(a.size + b.size).to.equal(budget.bytes);
      expect(a.covers(0n)).to.equal(false);
      expect(a.covers(1n)).to.equal(true);
      expect(b.covers(0n)).to.equal(true);
      expect(readFrom(a, 1n).map((x) => x[0])).to.deep.equal([1, 2]);
      // the idle log loses its last entries before the busy one loses its oldest
      b.add(3n, 3n, entry(103, 200));
      b.add(4n, 4n, entry(104, 200));
      expect(a.covers(2n)).to.equal(false);
      expect(a.size).to.equal(0);
      expect(b.covers(0n)).to.equal(true);
      expect(budget.bytes).to.equal(5 * U);
      b.add(5n, 5n, entry(105, 200));
      expect(b.covers(0n)).to.equal(false);
      expect(readFrom(b, 1n).map((x) => x[0])).to.deep.equal([101, 102, 103, 104, 105]);
      expect(budget.bytes).to.equal(5 * U);
      expect(budget.entries).to.equal(5);
    });

    it('is told of entries that leave by their own log’s bound or a clear', () => {
      const budget = new RecentCacheBudget(1 << 20);
      const a = new RecentCache(2 * (200 + O) + 100, budget);
      const b = new RecentCache(1 << 20, budget);
      for (let i = 0; i < 10; i++) a.add(BigInt(i), BigInt(i), entry(i, 200));
      b.add(0n, 0n, entry(50, 300));
      expect(a.size).to.equal(2 * (200 + O));
      expect(budget.bytes).to.equal(2 * (200 + O) + 300 + O);
      expect(budget.entries).to.equal(3);
      a.clear();
      expect(budget.bytes).to.equal(300 + O);
      expect(budget.entries).to.equal(1);
      // entries added after a clear are counted and evicted as any others
      a.add(10n, 10n, entry(10, 200));
      expect(budget.bytes).to.equal(500 + 2 * O);
      expect(readFrom(a, 10n).map((x) => x[0])).to.deep.equal([10]);
    });

    it('keeps its queue proportional to what is held while the limit is never reached', () => {
      const budget = new RecentCacheBudget(1 << 30);
      const logs = Array.from({ length: 4 }, () => new RecentCache(20 * (100 + O), budget));
      for (let i = 0; i < 50_000; i++) logs[i % 4]?.add(BigInt(i), BigInt(i), entry(i & 0xff, 100));
      // each log holds its newest 20 entries
      expect(budget.entries).to.equal(80);
      expect(budget.bytes).to.equal(80 * (100 + O));
      expect(budget.queued).to.be.at.most(2 * 80 + 1024);
    });

    it('turns every cache off with a limit of 0', () => {
      const budget = new RecentCacheBudget(0);
      const a = new RecentCache(1 << 20, budget);
      a.add(0n, 0n, entry(0, 10));
      expect(a.covers(0n)).to.equal(false);
      expect(budget.bytes).to.equal(0);
    });

    it('charges each request buffer once, whole, while any cached entry views it', () => {
      const budget = new RecentCacheBudget(1 << 30);
      const logs = Array.from({ length: 6 }, () => new RecentCache(4 * (8192 + O), budget));
      // 10 produce requests of ~48 KiB, each carrying one 8 KiB batch for each of 6 partitions
      const requests = Array.from({ length: 10 }, (_, r) => Buffer.alloc(6 * 8192 + 300, r));
      requests.forEach((request, r) =>
        logs.forEach((c, p) => c.add(BigInt(r), BigInt(r), request.subarray(300 + p * 8192, 300 + (p + 1) * 8192))),
      );
      // each log keeps its newest 4 batches: those of requests 6..9, each request charged once
      expect(budget.entries).to.equal(24);
      expect(budget.buffers).to.equal(4);
      expect(budget.bytes).to.equal(4 * requests[0]!.length + 24 * O);
      for (const c of logs) expect(readFrom(c, 6n).map((b) => b[0])).to.deep.equal([6, 7, 8, 9]);
      // a request stays charged until the last entry viewing it is gone
      logs.slice(0, 5).forEach((c) => c.clear());
      expect(budget.buffers).to.equal(4);
      expect(budget.bytes).to.equal(4 * requests[0]!.length + 4 * O);
      logs[5]?.clear();
      expect(budget.buffers).to.equal(0);
      expect(budget.bytes).to.equal(0);
    });

    it('evicts by the memory held: small batches of large requests leave sooner', () => {
      const budget = new RecentCacheBudget(3 * (64 * 1024) + 10 * O);
      const c = new RecentCache(1 << 20, budget);
      // 1 KiB batches, each alone in a 64 KiB request: three fit, whatever their own size
      for (let i = 0; i < 10; i++) c.add(BigInt(i), BigInt(i), Buffer.alloc(64 * 1024, i).subarray(0, 1024));
      expect(budget.buffers).to.equal(3);
      expect(c.covers(7n)).to.equal(true);
      expect(c.covers(6n)).to.equal(false);
      expect(budget.bytes).to.be.at.most(budget.limit);
    });
  });
});
