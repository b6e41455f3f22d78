import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { buildRecordBatch, RecordBatch } from '../../../../protocol/records/index.js';
import { cleanLog } from '../../../../lib/log/cleaner/clean.js';
import { swapCleaned } from '../../../../lib/log/cleaner/swap.js';
import { OffsetMap } from '../../../../lib/log/cleaner/offset-map.js';
import { cleanableSection, jobSettings, makeJob } from '../../../../lib/log/cleaner/section.js';
import type { PartitionLog } from '../../../../lib/log/partition-log.js';
import { ErrorCode } from '../../../../protocol/generated/error-codes.js';
import { T0, expectLogErrorAsync, openLog, readAll, rmDir, segmentFiles, tmpDir } from '../helpers.js';
import { allRecords, batch, expectCompacted, inlineCleaner, latest, settled } from './helpers.js';

const COMPACT = { cleanupPolicy: ['compact'], segmentBytes: 1500 };
const KEYS = Array.from({ length: 10 }, (_, i) => `k${i}`);

/** Offsets strictly increase (a swap completed at load may leave an old segment whose records all lie past the swap's last offset: uncleaned, not duplicated). */
function increasing(recs: readonly { offset: bigint }[]): void {
  for (let i = 1; i < recs.length; i++)
    expect((recs[i] as { offset: bigint }).offset > (recs[i - 1] as { offset: bigint }).offset).to.equal(true);
}

async function rounds(l: PartitionLog, n: number, from = 0): Promise<void> {
  for (let r = from; r < from + n; r++) l.append(batch(KEYS, r), { leaderEpoch: 0 });
  l.append(buildRecordBatch([{ key: Buffer.from('filler'), value: Buffer.alloc(1300), timestamp: T0 }]), { leaderEpoch: 0 });
  await settled(l);
}

describe('lib/log/cleaner: crash safety, transactions, bad input, threads', () => {
  let dir: string;
  let log: PartitionLog | undefined;
  beforeEach(() => {
    dir = tmpDir('clean-safety');
  });
  afterEach(async () => {
    await log?.close().catch(() => undefined);
    log = undefined;
    rmDir(dir);
  });

  /** Cleans into .cleaned files without swapping (what a crash before the swap leaves), then closes the log. */
  async function cleanedNotSwapped(): Promise<{ want: ReturnType<typeof latest>; count: number; bases: bigint[] }> {
    log = await openLog(dir, COMPACT);
    await rounds(log, 60);
    const recs = await allRecords(log);
    const open = log.openLog;
    if (open === null) throw new Error('not open');
    const job = makeJob(open, cleanableSection(open, undefined, Date.now()), Date.now(), jobSettings());
    const result = cleanLog(job, new OffsetMap(1 << 20));
    expect(result.groups.length).to.be.greaterThan(1);
    await log.close();
    log = undefined;
    return { want: latest(recs), count: recs.length, bases: result.groups.map((g) => g.baseOffset) };
  }

  const file = (base: bigint, suffix: string): string => path.join(dir, 'topic-0', base.toString().padStart(20, '0') + suffix);
  const renameAll = (from: string, to: string): void => {
    for (const n of segmentFiles(dir))
      if (n.endsWith(from)) fs.renameSync(path.join(dir, 'topic-0', n), path.join(dir, 'topic-0', n.slice(0, -from.length) + to));
  };

  it('a crash before the swap: .cleaned files are dropped at load and the log is as it was', async () => {
    const { want, count } = await cleanedNotSwapped();
    expect(segmentFiles(dir).some((n) => n.endsWith('.cleaned'))).to.equal(true);
    log = await openLog(dir, COMPACT, true);
    expect(segmentFiles(dir).some((n) => n.endsWith('.cleaned'))).to.equal(false);
    const recs = await allRecords(log);
    expect(recs.length).to.equal(count);
    expect(latest(recs)).to.deep.equal(want);
  });

  it('a crash after .cleaned became .swap: the swap is completed at load', async () => {
    const { want, count } = await cleanedNotSwapped();
    renameAll('.cleaned', '.swap');
    log = await openLog(dir, COMPACT, true);
    expect(segmentFiles(dir).some((n) => n.endsWith('.swap'))).to.equal(false);
    const recs = await allRecords(log);
    expect(recs.length).to.be.lessThan(count);
    expect(latest(recs)).to.deep.equal(want);
    increasing(recs);
  });

  it('a crash in the middle of the renames (some old segments .deleted, one swap already in place): complete at load', async () => {
    const { want, bases } = await cleanedNotSwapped();
    renameAll('.cleaned', '.swap');
    const [first, second] = bases as [bigint, bigint];
    // the first group is swapped in; the segments of the second still have their names
    for (const n of segmentFiles(dir).filter((x) => /^\d{20}\./.test(x))) {
      const base = BigInt(n.slice(0, 20));
      if (/\.(log|index|timeindex|txnindex)$/.test(n) && base >= first && base < second)
        fs.renameSync(path.join(dir, 'topic-0', n), path.join(dir, 'topic-0', `${n}.deleted`));
    }
    for (const s of ['.log', '.index', '.timeindex']) fs.renameSync(file(first, `${s}.swap`), file(first, s));
    log = await openLog(dir, COMPACT, true);
    const recs = await allRecords(log);
    expect(latest(recs)).to.deep.equal(want);
    increasing(recs);
    expect(segmentFiles(dir).filter((n) => /\.(swap|cleaned|deleted)$/.test(n))).to.deep.equal([]);
  });

  it("removes aborted transactional data, keeps committed data, keeps a producer's last batch (empty), and drops markers only once safe", async () => {
    log = await openLog(dir, { ...COMPACT, deleteRetentionMs: 1000 });
    log.append(batch(['a', 'b'], 1, { producerId: 7n, producerEpoch: 0, baseSequence: 0, isTransactional: true }), { leaderEpoch: 0 });
    await log.appendMarker({ producerId: 7n, producerEpoch: 0, coordinatorEpoch: 0, commit: false }, { leaderEpoch: 0 });
    log.append(batch(['c', 'd'], 2, { producerId: 8n, producerEpoch: 0, baseSequence: 0, isTransactional: true }), { leaderEpoch: 0 });
    await log.appendMarker({ producerId: 8n, producerEpoch: 0, coordinatorEpoch: 0, commit: true }, { leaderEpoch: 0 });
    await rounds(log, 30);
    const now = Date.now();
    const { cleaner } = inlineCleaner(dir, [log]);
    expect(await cleaner.runOnce(now)).to.equal(1);
    const keys = (await allRecords(log)).map((r) => String(r.key));
    expect(keys).to.not.include('a');
    expect(keys).to.include.members(['c', 'd']);
    const batches = (await readAll(log)).map((e) => RecordBatch.at(e));
    const of7 = batches.filter((b) => b.producerId === 7n);
    // the aborted batch stays as an empty batch (producer 7's last), and its marker stays (its data was met in this cleaning)
    expect(of7.map((b) => [b.isControl, b.recordCount])).to.deep.equal([
      [false, 0],
      [true, 1],
    ]);
    expect(batches.filter((b) => b.producerId === 8n && b.isControl).length).to.equal(1);
    // producer 7 writes again: the aborted batch is no longer its last, so it goes; then its marker gets a
    // delete horizon (its data is gone) and goes after delete.retention.ms
    log.append(batch(['e'], 99, { producerId: 7n, producerEpoch: 0, baseSequence: 2 }), { leaderEpoch: 0 });
    let markers = 1;
    for (let pass = 1; pass <= 4 && markers > 0; pass++) {
      await rounds(log, 30, pass * 30);
      expect(await cleaner.runOnce(now + pass * 2000)).to.equal(1);
      markers = (await readAll(log)).map((e) => RecordBatch.at(e)).filter((b) => b.producerId === 7n && b.isControl).length;
    }
    expect(markers).to.equal(0);
    expect((await allRecords(log)).map((r) => String(r.key))).to.include('e');
  });

  for (const [what, change] of [
    ['a truncation', (l: PartitionLog) => l.truncateTo(100n)],
    ['DeleteRecords (segments deleted)', (l: PartitionLog) => Promise.resolve(l.deleteRecordsBefore(600n))],
  ] as const) {
    it(`${what} during a cleaning drops the cleaning: nothing is swapped in, its files are removed`, async () => {
      log = await openLog(dir, COMPACT);
      await rounds(log, 60);
      const open = log.openLog;
      if (open === null) throw new Error('not open');
      const job = makeJob(open, cleanableSection(open, undefined, Date.now()), Date.now(), jobSettings());
      const result = cleanLog(job, new OffsetMap(1 << 20));
      await change(log);
      const segs = log.segmentBaseOffsets;
      expect(swapCleaned(open, job, result)).to.equal(false);
      expect(log.segmentBaseOffsets).to.deep.equal(segs);
      expect(segmentFiles(dir).filter((n) => n.endsWith('.cleaned'))).to.deep.equal([]);
      increasing(await allRecords(log));
    });
  }

  it('min.compaction.lag.ms keeps young segments out of the cleaning', async () => {
    log = await openLog(dir, { ...COMPACT, minCompactionLagMs: 3_600_000 });
    // record timestamps of now: every segment is younger than the lag
    const now = BigInt(Date.now());
    for (let r = 0; r < 60; r++) {
      log.append(buildRecordBatch(KEYS.map((k) => ({ key: Buffer.from(k), value: Buffer.from(`${k}=${r}`), timestamp: now }))), {
        leaderEpoch: 0,
      });
    }
    await rounds(log, 0);
    const { cleaner } = inlineCleaner(dir, [log]);
    const before = (await allRecords(log)).length;
    expect(await cleaner.runOnce()).to.equal(0);
    expect((await allRecords(log)).length).to.equal(before);
    // an hour later they are old enough
    expect(await cleaner.runOnce(Date.now() + 3_700_000)).to.equal(1);
    expect((await allRecords(log)).length).to.be.lessThan(before);
  });

  it('a corrupt batch marks the log uncleanable; reads refuse the corrupt batch (CORRUPT_MESSAGE) rather than serve it', async () => {
    log = await openLog(dir, COMPACT);
    await rounds(log, 60);
    const before = await readAll(log);
    await log.close();
    // flip a byte inside the first batch's records: its CRC no longer matches
    const f = file(0n, '.log');
    const buf = fs.readFileSync(f);
    buf[80] = (buf[80] as number) ^ 0xff;
    fs.writeFileSync(f, buf);
    log = await openLog(dir, COMPACT);
    await settled(log);
    const { cleaner, lines } = inlineCleaner(dir, [log]);
    expect(await cleaner.runOnce()).to.equal(0);
    expect(cleaner.isUncleanable('topic', 0)).to.equal(true);
    expect(lines.filter((l) => l.includes('log cleaning failed')).length).to.equal(1);
    expect(cleaner.stats.uncleanablePartitions).to.equal(1);
    expect(before.length).to.be.greaterThan(0);
    await expectLogErrorAsync(readAll(log), ErrorCode.CORRUPT_MESSAGE);
    expect(await cleaner.runOnce()).to.equal(0);
    expect(segmentFiles(dir).filter((n) => n.endsWith('.cleaned'))).to.deep.equal([]);
  });

  it('stop() abandons a cleaning in flight on its thread: nothing swapped in, no .cleaned files left', async () => {
    log = await openLog(dir, COMPACT);
    await rounds(log, 60);
    const segs = log.segmentBaseOffsets;
    // 2 KB/s: the cleaning would take a minute
    const { cleaner } = inlineCleaner(dir, [log], { threads: 1, ioMaxBytesPerSecond: 2000 });
    const round = cleaner.runOnce();
    await new Promise((r) => setTimeout(r, 300));
    await cleaner.stop();
    expect(await round).to.equal(0);
    expect(log.segmentBaseOffsets).to.deep.equal(segs);
    expect(segmentFiles(dir).filter((n) => n.endsWith('.cleaned'))).to.deep.equal([]);
    expect(cleaner.isUncleanable('topic', 0)).to.equal(false);
  });

  it('cleans on a worker thread', async () => {
    log = await openLog(dir, COMPACT);
    await rounds(log, 60);
    const want = latest(await allRecords(log));
    const { cleaner } = inlineCleaner(dir, [log], { threads: 1 });
    try {
      expect(await cleaner.runOnce()).to.equal(1);
      const recs = await allRecords(log);
      expect(latest(recs)).to.deep.equal(want);
      expectCompacted(recs.filter((r) => String(r.key) !== 'filler'));
    } finally {
      await cleaner.stop();
    }
  });
});
