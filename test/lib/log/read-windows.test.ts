/**
 * How many bytes a Fetch-sized read copies from a segment. The offset index is keyed by each batch's
 * last offset, so a read from the first offset of a batch is pointed at the batch before it; with
 * batches near the fetch size (librdkafka's 1 MB batches against its 1 MiB max.partition.fetch.bytes)
 * a window-sized read from there used to copy the batch it skips, then a window past the one it
 * takes, then that one again: three ~1 MB reads for one.
 */
import { expect } from 'chai';
import { segmentReads } from '../../../lib/log/file-io.js';
import { PROBE_BYTES } from '../../../lib/log/log-read.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { ReadBufferPool } from '../../../lib/log/read-buffer-pool.js';
import { openLog, rmDir, tmpDir, v2 } from './helpers.js';

describe('lib/log read windows', () => {
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

  it('a read from the first offset of a ~900 KB batch copies it once (plus a probe of the batch before)', async () => {
    log = await openLog(dir, {}, false, { recentCacheBytes: 0 });
    // four batches of 10 records of 90,000 bytes: offsets 0-9, 10-19, 20-29, 30-39
    for (let i = 0; i < 4; i++) await log.append(v2(10, { prefix: `b${i}`, size: 90_000 }), { leaderEpoch: 0 }).written;
    const maxBytes = 1 << 20;
    const pool = new ReadBufferPool(32 << 20);
    for (const fetchOffset of [10n, 20n]) {
      const plain = await log.read(fetchOffset, maxBytes, { minOneMessage: true });
      const before = { ...segmentReads };
      const r = await log.read(fetchOffset, maxBytes, { minOneMessage: true, pool });
      const reads = segmentReads.cached + segmentReads.pooled - before.cached - before.pooled;
      const bytes = segmentReads.bytes - before.bytes;
      expect(r.records).to.have.length(1);
      expect(Buffer.concat(r.records).equals(Buffer.concat(plain.records))).to.equal(true);
      const batch = r.size;
      expect(batch).to.be.greaterThan(900_000);
      // the probe of the batch before, then one window from the batch taken (its end shows where the next starts)
      expect(reads, `reads from offset ${fetchOffset}`).to.equal(2);
      expect(bytes, `bytes read from offset ${fetchOffset}`).to.be.at.most(PROBE_BYTES + maxBytes + 2 * 4096);
      r.lease?.release();
    }
  });

  it('a read from the start of a batch of small ones, or inside one, still takes one window', async () => {
    log = await openLog(dir, {}, false, { recentCacheBytes: 0 });
    for (let i = 0; i < 200; i++) await log.append(v2(5, { prefix: `s${i}`, size: 1000 }), { leaderEpoch: 0 }).written;
    for (const fetchOffset of [0n, 5n, 502n, 995n]) {
      const plain = await log.read(fetchOffset, 100_000, { minOneMessage: true });
      const before = { ...segmentReads };
      const r = await log.read(fetchOffset, 100_000, { minOneMessage: true, pool: new ReadBufferPool(1 << 20) });
      expect(Buffer.concat(r.records).equals(Buffer.concat(plain.records))).to.equal(true);
      expect(r.records.length).to.be.greaterThan(0);
      expect(segmentReads.cached + segmentReads.pooled - before.cached - before.pooled, `reads from offset ${fetchOffset}`).to.equal(1);
    }
  });
});
