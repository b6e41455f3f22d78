import { expect } from 'chai';
import { MAX_CLASS_BYTES, MIN_CLASS_BYTES, ReadBufferPool, classOf } from '../../../lib/log/read-buffer-pool.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { openLog, rmDir, tmpDir, v2 } from './helpers.js';

describe('lib/log ReadBufferPool', () => {
  it('serves powers of two from 64 KiB to 8 MiB, larger reads unpooled', () => {
    expect(classOf(1)).to.equal(0);
    expect(classOf(MIN_CLASS_BYTES)).to.equal(0);
    expect(classOf(MIN_CLASS_BYTES + 1)).to.equal(1);
    expect(classOf((1 << 20) + 8192)).to.equal(classOf(2 << 20));
    expect(classOf(MAX_CLASS_BYTES)).to.equal(7);
    expect(classOf(MAX_CLASS_BYTES + 1)).to.equal(-1);
    const pool = new ReadBufferPool(32 << 20);
    expect(pool.lease(100).buf.length).to.equal(MIN_CLASS_BYTES);
    expect(pool.lease((1 << 20) + 8192).buf.length).to.equal(2 << 20);
    const big = pool.lease(MAX_CLASS_BYTES + 1);
    expect(big.buf.length).to.equal(MAX_CLASS_BYTES + 1);
    big.release();
    expect(pool.idleBytes, 'an unpooled buffer is not kept').to.equal(0);
  });

  it('hands a released buffer out again, and never one that is leased', () => {
    const pool = new ReadBufferPool(32 << 20);
    const a = pool.lease(300_000);
    const b = pool.lease(300_000);
    expect(b.buf.buffer).to.not.equal(a.buf.buffer);
    a.release();
    const c = pool.lease(300_000);
    expect(c.buf.buffer, 'the released buffer').to.equal(a.buf.buffer);
    const d = pool.lease(300_000);
    expect([a.buf.buffer, b.buf.buffer]).to.not.include(d.buf.buffer);
    // a second release of the same lease does not put its buffer in the free list twice
    b.release();
    b.release();
    const e = pool.lease(300_000);
    const f = pool.lease(300_000);
    expect(e.buf.buffer).to.equal(b.buf.buffer);
    expect(f.buf.buffer).to.not.equal(b.buf.buffer);
    expect(pool.stats).to.deep.include({ reused: 2, kept: 2 });
    // another size class never gets this one
    c.release();
    expect(pool.lease(100).buf.buffer).to.not.equal(c.buf.buffer);
  });

  it('keeps at most maxBytes of idle buffers', () => {
    const pool = new ReadBufferPool(4 * MIN_CLASS_BYTES);
    const leases = Array.from({ length: 6 }, () => pool.lease(1000));
    for (const l of leases) l.release();
    expect(pool.idleBytes).to.equal(4 * MIN_CLASS_BYTES);
    expect(pool.stats).to.deep.include({ allocated: 6, kept: 4, dropped: 2 });
    // a buffer larger than the bound is never kept
    pool.clear();
    pool.lease(8 * MIN_CLASS_BYTES).release();
    expect(pool.idleBytes).to.equal(0);
    // 0: nothing kept, every lease allocates
    const none = new ReadBufferPool(0);
    none.lease(1000).release();
    none.lease(1000).release();
    expect(none.stats).to.deep.include({ allocated: 2, reused: 0, kept: 0 });
  });

  describe('PartitionLog.read with a pool', () => {
    let dir: string;
    let log: PartitionLog | undefined;
    beforeEach(() => {
      dir = tmpDir();
    });
    afterEach(async () => {
      await log?.close().catch(() => undefined);
      log = undefined;
      rmDir(dir);
    });

    it('returns views of the leased buffer, the same bytes as without; a read past the end holds nothing', async () => {
      log = await openLog(dir, {}, false, { recentCacheBytes: 0 });
      for (let i = 0; i < 40; i++) await log.append(v2(10, { prefix: `b${i}`, size: 1000 }), { leaderEpoch: 0 }).written;
      const pool = new ReadBufferPool(32 << 20);
      const plain = await log.read(0n, 1 << 20, { minOneMessage: true });
      expect(plain.lease ?? null).to.equal(null);
      const pooled = await log.read(0n, 1 << 20, { minOneMessage: true, pool });
      const lease = pooled.lease ?? null;
      expect(lease).to.not.equal(null);
      expect(Buffer.concat(pooled.records).equals(Buffer.concat(plain.records))).to.equal(true);
      expect(pooled.records.length).to.equal(40);
      for (const r of pooled.records) expect(r.buffer).to.equal(lease?.buf.buffer);
      expect(pool.idleBytes).to.equal(0);
      lease?.release();
      expect(pool.idleBytes).to.equal(lease?.buf.length);
      // a read past the end returns nothing and holds nothing
      const idle = pool.idleBytes;
      const none = await log.read(400n, 1000, { minOneMessage: true, pool });
      expect(none.records).to.have.length(0);
      expect(none.lease ?? null).to.equal(null);
      expect(pool.idleBytes).to.equal(idle);
    });

    it('an entry larger than the read window: read anew into its own buffer, the window goes back', async () => {
      log = await openLog(dir, {}, false, { recentCacheBytes: 0 });
      for (let i = 0; i < 3; i++) await log.append(v2(1, { prefix: `big${i}`, size: 200_000 }), { leaderEpoch: 0 }).written;
      const pool = new ReadBufferPool(32 << 20);
      const plain = await log.read(1n, 1000, { minOneMessage: true });
      const r = await log.read(1n, 1000, { minOneMessage: true, pool });
      expect(r.records).to.have.length(1);
      expect(Buffer.concat(r.records).equals(Buffer.concat(plain.records))).to.equal(true);
      expect(r.lease?.buf.length).to.equal(256 << 10);
      expect(r.records[0]?.buffer).to.equal(r.lease?.buf.buffer);
      // the 64 KiB window the header was found in is free again, the entry's buffer is not
      expect(pool.stats).to.deep.include({ allocated: 2, kept: 1 });
      expect(pool.idleBytes).to.equal(MIN_CLASS_BYTES);
    });
  });
});
