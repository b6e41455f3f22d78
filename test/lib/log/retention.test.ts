import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { RecordBatch } from '../../../protocol/records/index.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { expectLogError, expectLogErrorAsync, openLog, rmDir, segmentFiles, tmpDir, v2 } from './helpers.js';

describe('lib/log retention and DeleteRecords', () => {
  let dir: string;
  let log: PartitionLog | undefined;
  beforeEach(() => {
    dir = tmpDir('ret');
  });
  afterEach(async () => {
    await log?.close().catch(() => undefined);
    log = undefined;
    rmDir(dir);
  });

  async function fill(l: PartitionLog, batches: number, ts: (i: number) => bigint): Promise<void> {
    for (let i = 0; i < batches; i++) l.append(v2(5, { ts: ts(i), size: 50 }), { leaderEpoch: 0 });
    await l.flush();
  }

  it('deletes the oldest segments beyond retention.bytes, never the active one', async () => {
    const over = { segmentBytes: 2000, retentionBytes: 5000 };
    log = await openLog(dir, over);
    const now = Date.now();
    await fill(log, 60, () => BigInt(now));
    const before = log.segmentBaseOffsets;
    expect(before.length).to.be.greaterThan(5);
    await log.maintenance(now);
    const after = log.segmentBaseOffsets;
    expect(after.length).to.be.lessThan(before.length);
    expect(after[after.length - 1]).to.equal(before[before.length - 1]);
    expect(log.size).to.be.at.least(5000 - 2000);
    expect(log.logStartOffset).to.equal(after[0]);
    await expectLogErrorAsync(log.read(0n, 100, { minOneMessage: true }), ErrorCode.OFFSET_OUT_OF_RANGE);
    const r = await log.read(log.logStartOffset, 100, { minOneMessage: true });
    expect(RecordBatch.at(r.records[0] as Buffer).baseOffset).to.equal(log.logStartOffset);
    await log.close();
    const logs = segmentFiles(dir).filter((f) => f.endsWith('.log'));
    expect(logs).to.have.length(after.length);
    log = await openLog(dir, over);
    expect(log.logStartOffset).to.equal(after[0]);
  });

  it('deletes segments whose newest record is older than retention.ms', async () => {
    log = await openLog(dir, { segmentBytes: 2000, retentionMs: 60_000 });
    const now = Date.now();
    await fill(log, 40, (i) => BigInt(now - (i < 20 ? 120_000 : 1000)));
    const segs = log.segmentBaseOffsets;
    await log.maintenance(now);
    expect(log.logStartOffset > 0n).to.equal(true);
    expect(log.logStartOffset <= 100n).to.equal(true);
    expect(log.segmentBaseOffsets.length).to.be.lessThan(segs.length);
    // all old: everything but the active segment goes
    await log.maintenance(now + 10_000_000);
    expect(log.segmentBaseOffsets).to.deep.equal([segs[segs.length - 1]]);
    expect(log.logEndOffset).to.equal(200n);
  });

  it('keeps deleted files renamed until file.delete.delay.ms', async () => {
    log = await openLog(dir, { segmentBytes: 2000, retentionBytes: 0, fileDeleteDelayMs: 60_000 });
    await fill(log, 20, () => BigInt(Date.now()));
    await log.maintenance(Date.now());
    await new Promise((r) => setTimeout(r, 50));
    expect(segmentFiles(dir).some((f) => f.endsWith('.log.deleted'))).to.equal(true);
    await log.close();
    expect(segmentFiles(dir).some((f) => f.endsWith('.deleted'))).to.equal(false);
  });

  it('deleteRecordsBefore moves the log start offset, deletes whole segments below it, and persists', async () => {
    log = await openLog(dir, { segmentBytes: 2000 });
    await fill(log, 30, () => BigInt(Date.now()));
    const segs = log.segmentBaseOffsets;
    const opened = log;
    expectLogError(() => opened.deleteRecordsBefore(opened.highWatermark + 1n), ErrorCode.OFFSET_OUT_OF_RANGE);
    const target = (segs[2] as bigint) + 2n;
    expect(log.deleteRecordsBefore(target)).to.equal(target);
    expect(log.logStartOffset).to.equal(target);
    expect(log.segmentBaseOffsets[0]).to.equal(segs[2]);
    expect(log.offsetForTimestamp(-2n)?.offset).to.equal(target);
    await expectLogErrorAsync(log.read(target - 1n, 100, { minOneMessage: true }), ErrorCode.OFFSET_OUT_OF_RANGE);
    // the batch holding the start offset is returned whole
    const r = await log.read(target, 100, { minOneMessage: true });
    expect(RecordBatch.at(r.records[0] as Buffer).baseOffset <= target).to.equal(true);
    expect(log.deleteRecordsBefore(1n)).to.equal(target); // never backwards
    await log.close();
    const cp = fs.readFileSync(path.join(dir, 'topic-0', 'log-start-offset-checkpoint'), 'utf8');
    expect(cp).to.equal(`0\n1\ntopic 0 ${target}\n`);
    log = await openLog(dir, { segmentBytes: 2000 });
    expect(log.logStartOffset).to.equal(target);
    expect(log.deleteRecordsBefore(-1n)).to.equal(log.highWatermark);
    expect((await log.read(log.logEndOffset, 100, { minOneMessage: true })).records).to.have.length(0);
    log.append(v2(1), { leaderEpoch: 0 });
    expect((await log.read(150n, 100, { minOneMessage: true })).records).to.have.length(1);
  });
});
