/**
 * lib/log/file-slices.ts: a read asked with `fileSlices` returns large entries as a FileSlice naming
 * exactly the bytes a plain read returns, and goes the usual way (entries in memory) for small
 * entries, bytes the page cache does not hold and bytes no check has vouched for since a restart.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { fileSliceCalls } from '../../../lib/log/file-io.js';
import { sliceReads } from '../../../lib/log/file-slices.js';
import type { ReadResult } from '../../../lib/log/log-read.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { loadAddon } from '../../../protocol/records/native-addon.js';
import { lastOffsetOf, openLog, rmDir, tmpDir, v2 } from './helpers.js';

const LARGE = { minOneMessage: true } as const;

/** The slice's bytes and record count, with the entries a plain read returned. */
function sliceOf(r: ReadResult): NonNullable<ReadResult['file']> {
  if (r.file === undefined) throw new Error('the read returned no slice');
  return r.file;
}

describe('lib/log file slices (Fetch entries sent with sendfile)', () => {
  let dir: string;
  let log: PartitionLog;
  const opened: NonNullable<ReadResult['file']>[] = [];

  before(function () {
    if (fileSliceCalls() === null) {
      // needs the pread addon and Linux 6.5+ (cachestat): elsewhere every read goes the usual way
      this.skip();
    }
  });
  beforeEach(async () => {
    dir = tmpDir();
    log = await openLog(dir, {}, false, { recentCacheBytes: 0 });
  });
  afterEach(async () => {
    for (const f of opened.splice(0)) f.release();
    await log.close();
    rmDir(dir);
  });

  /** Appends `n` batches of 100 records of `size` bytes each and waits until they are in the file. */
  async function appendBatches(n: number, size: number): Promise<void> {
    for (let i = 0; i < n; i++) await log.append(v2(100, { size, prefix: `b${i}` }), { leaderEpoch: 0 }).written;
  }

  async function sliced(offset: bigint, maxBytes: number): Promise<ReadResult> {
    const r = await log.read(offset, maxBytes, { ...LARGE, fileSlices: true });
    if (r.file !== undefined) opened.push(r.file);
    return r;
  }

  it('large entries come back as one slice of exactly the bytes a plain read returns, from any offset', async () => {
    await appendBatches(8, 1000); // ~100 KB batches
    for (const [offset, maxBytes] of [
      [0n, 1 << 20],
      [250n, 1 << 20],
      [799n, 300_000],
    ] as const) {
      const plain = await log.read(offset, maxBytes, LARGE);
      const r = await sliced(offset, maxBytes);
      const f = sliceOf(r);
      expect(r.records, 'no entries in memory').to.deep.equal([]);
      expect(r.size).to.equal(plain.size);
      expect(f.slice.length).to.equal(plain.size);
      expect(f.slice.read().equals(Buffer.concat(plain.records)), `bytes from ${offset}`).to.equal(true);
      expect(f.slice.recordCount).to.equal(plain.records.length * 100);
      expect(f.nextOffset).to.equal(lastOffsetOf(plain.records[plain.records.length - 1] as Buffer) + 1n);
      plain.lease?.release();
    }
  });

  it('small entries, and reads of fewer than 64 KiB, go the usual way', async () => {
    for (let i = 0; i < 300; i++) await log.append(v2(1, { size: 400 }), { leaderEpoch: 0 }).written;
    const small = sliceReads.small;
    const r = await sliced(0n, 1 << 20);
    expect(r.file).to.equal(undefined);
    expect(r.records.length).to.be.greaterThan(32);
    expect(sliceReads.small - small).to.equal(1);
    await appendBatches(1, 1000);
    const tail = await sliced(300n, 1 << 20);
    expect(tail.file, 'one ~100 KB entry').to.not.equal(undefined);
    const few = await sliced(300n, 50_000);
    expect(few.file, 'maxBytes under 64 KiB').to.equal(undefined);
  });

  it('entries whose pages are not in the page cache are read the usual way (sendfile would wait for the disk)', async () => {
    await appendBatches(4, 1000);
    const file = path.join(dir, 'topic-0', '00000000000000000000.log');
    const fd = fs.openSync(file, 'r');
    try {
      fs.fsyncSync(fd);
      const addon = loadAddon<{ dropCached(fd: number): number }>('pread').addon;
      expect(addon?.dropCached(fd)).to.equal(0);
    } finally {
      fs.closeSync(fd);
    }
    const uncached = sliceReads.uncached;
    const r = await log.read(0n, 1 << 20, { ...LARGE, fileSlices: true });
    expect(r.file).to.equal(undefined);
    expect(r.records.length).to.equal(4);
    expect(sliceReads.uncached - uncached).to.equal(1);
    r.lease?.release();
    // read once, the pages are cached again
    expect((await sliced(0n, 1 << 20)).file).to.not.equal(undefined);
  });

  it('after a restart, bytes no check has vouched for come back checked, in memory; once verified, as a slice', async () => {
    await appendBatches(4, 1000);
    await log.close();
    log = await openLog(dir, {}, false, { recentCacheBytes: 0 });
    const unverified = sliceReads.unverified;
    const first = await log.read(0n, 1 << 20, { ...LARGE, fileSlices: true });
    expect(first.file).to.equal(undefined);
    expect(first.records.length).to.equal(4);
    expect(sliceReads.unverified - unverified).to.equal(1);
    const again = await sliced(0n, 1 << 20);
    expect(sliceOf(again).slice.read().equals(Buffer.concat(first.records))).to.equal(true);
    first.lease?.release();
  });

  it('a slice keeps its own descriptor: readable after the log closed its file, closed once by release()', async () => {
    await appendBatches(2, 1000);
    const r = await log.read(0n, 1 << 20, { ...LARGE, fileSlices: true });
    const f = sliceOf(r);
    const bytes = f.slice.read();
    await log.close();
    expect(f.slice.read().equals(bytes)).to.equal(true);
    f.release();
    f.release();
    expect(() => f.slice.read()).to.throw(/EBADF/);
    log = await openLog(dir, {}, false, { recentCacheBytes: 0 });
  });
});
