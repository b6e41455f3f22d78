/**
 * Logs open on first use (issue 14): a restart reads the partition summary checkpoint and the open
 * journal and touches no partition directory; the first produce, read, timestamp search, retention
 * pass with work, or DeleteRecords opens one log; after an unclean shutdown the logs opened since
 * the last clean one are recovered before use, and a log opened lazily whose files differ from its
 * summary is recovered too. Last, the same through a broker process (SIGTERM and kill -9), with
 * its open files read from /proc.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { RecordBatch } from '../../../protocol/records/index.js';
import { BrokerConfig } from '../../../lib/config.js';
import { GregorLogErrorCode } from '../../../lib/log/errors.js';
import { CLEAN_SHUTDOWN_MARKER } from '../../../lib/log/log-manager.js';
import { OPEN_JOURNAL, SUMMARY_CHECKPOINT } from '../../../lib/log/log-summary.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { type ChildBroker, startChildBroker } from '../../helpers/broker.js';
import { RawClient, rawCreateTopics, rawFetch, rawListOffset } from '../../helpers/raw-client.js';
import { initProducerId, produce, producerBatch } from '../../helpers/txn-raw.js';
import { captureLog, config, expectLogError, readAll, rmDir, T0, tearTail, tmpDir, v2, managerRuns } from './helpers.js';

const broker = new BrokerConfig({ overrides: { 'log.retention.bytes': '-1' } });
const PID = { producerId: 4242n, producerEpoch: 0 };

/** An idempotent batch of `n` records from PID at sequence `seq`. */
const idem = (seq: number, n = 3): Buffer =>
  v2(n, { producerId: PID.producerId, producerEpoch: PID.producerEpoch, baseSequence: seq, prefix: `s${seq}` });

interface Seen {
  logStartOffset: bigint;
  logEndOffset: bigint;
  highWatermark: bigint;
  lastStableOffset: bigint;
  size: number;
  segmentBaseOffsets: bigint[];
  latestEpoch: number;
}
const seen = (l: PartitionLog): Seen => ({
  logStartOffset: l.logStartOffset,
  logEndOffset: l.logEndOffset,
  highWatermark: l.highWatermark,
  lastStableOffset: l.lastStableOffset,
  size: l.size,
  segmentBaseOffsets: l.segmentBaseOffsets,
  latestEpoch: l.latestEpoch,
});

describe('lib/log lazy open', () => {
  const runs = managerRuns('lazy', broker);
  const open = runs.open;
  /** The crash of a run: its manager is dropped without a shutdown. */
  const crash = runs.crash;

  it('restarts without opening a log: offsets, LSO, epochs, sizes and segments come from the summary checkpoint', async () => {
    const cfg = config({ segmentBytes: 1500, retentionMs: -1 });
    let mgr = await open();
    const logs = Array.from({ length: 300 }, (_, p) => mgr.attach('wide', p, cfg));
    expect(logs.every((l) => !l.isOpen && l.servable)).to.equal(true);
    // three partitions get data: several segments, two leader epochs, an open transaction
    for (let i = 0; i < 20; i++) await logs[0]!.appendAsync(v2(3, { size: 60 }), { leaderEpoch: i < 10 ? 1 : 4 });
    await logs[7]!.appendAsync(v2(5), { leaderEpoch: 2 });
    await logs[7]!.appendAsync(v2(2, { producerId: 77n, producerEpoch: 0, baseSequence: 0, isTransactional: true }), { leaderEpoch: 2 });
    await logs[299]!.appendAsync(v2(1), { leaderEpoch: 0 });
    logs[0]!.deleteRecordsBefore(4n);
    for (const l of logs) await l.flush();
    const before = new Map([0, 7, 299, 1, 150].map((p) => [p, seen(logs[p]!)]));
    const epochs = logs[0]!.endOffsetForEpoch(1);
    expect(before.get(0)!.segmentBaseOffsets.length).to.be.greaterThan(2);
    expect(before.get(7)!.lastStableOffset).to.equal(5n);
    expect(logs.filter((l) => l.isOpen).length).to.equal(3);
    await mgr.shutdown();
    expect(fs.existsSync(path.join(runs.dir, SUMMARY_CHECKPOINT))).to.equal(true);
    expect(fs.existsSync(path.join(runs.dir, OPEN_JOURNAL))).to.equal(false);
    // partitions never used have no directory at all
    expect(
      fs
        .readdirSync(runs.dir)
        .filter((n) => n.startsWith('wide-'))
        .sort(),
    ).to.deep.equal(['wide-0', 'wide-299', 'wide-7']);

    const c = captureLog();
    mgr = await open(c.logger);
    expect(mgr.hadCleanShutdown).to.equal(true);
    const again = Array.from({ length: 300 }, (_, p) => mgr.attach('wide', p, cfg));
    expect(again.every((l) => !l.isOpen && l.servable)).to.equal(true);
    for (const [p, s] of before) expect(seen(again[p]!), `partition ${p}`).to.deep.equal(s);
    expect(again[0]!.endOffsetForEpoch(1)).to.deep.equal(epochs);
    expect(again[0]!.offsetForTimestamp(-2n)).to.deep.equal({ offset: 4n, timestamp: -1n, leaderEpoch: 1 });
    expect(again[0]!.offsetForTimestamp(-1n)).to.deep.equal({ offset: 60n, timestamp: -1n, leaderEpoch: 4 });
    await mgr.runMaintenance();
    expect(mgr.expireProducers(Date.now(), 0)).to.equal(0);
    expect(again.filter((l) => l.isOpen)).to.deep.equal([]);
    expect(c.lines).to.not.include('log recovered');
    // the journal is written only when a log opens
    expect(fs.existsSync(path.join(runs.dir, OPEN_JOURNAL))).to.equal(false);
  });

  it('the first produce, read or timestamp search opens just that log; appends continue at its end', async () => {
    let mgr = await open();
    for (let p = 0; p < 10; p++)
      await (await mgr.getOrCreate('t', p, config())).appendAsync(v2(p + 1, { ts: T0 + BigInt(p) }), { leaderEpoch: 0 });
    await mgr.shutdown();
    mgr = await open();
    const logs = Array.from({ length: 10 }, (_, p) => mgr.attach('t', p, config()));
    const opened = (): number[] => logs.flatMap((l, p) => (l.isOpen ? [p] : []));

    const r = await logs[3]!.appendAsync(v2(2), { leaderEpoch: 0 });
    expect(r.info.firstOffset).to.equal(4n);
    expect(opened()).to.deep.equal([3]);
    expect(fs.readFileSync(path.join(runs.dir, OPEN_JOURNAL), 'utf8')).to.equal('t 3\n');

    const read = await logs[5]!.read(0n, 1 << 20, { minOneMessage: true });
    expect(RecordBatch.at(read.records[0] as Buffer).lastOffset).to.equal(5n);
    expect(opened()).to.deep.equal([3, 5]);

    // synchronous calls that need the files refuse (retriable) and start the open
    const err = expectLogError(() => logs[6]!.offsetForTimestamp(T0), ErrorCode.REQUEST_TIMED_OUT);
    expect(err.code).to.equal(GregorLogErrorCode.NOT_OPEN);
    expectLogError(() => logs[8]!.append(v2(1), { leaderEpoch: 0 }), ErrorCode.REQUEST_TIMED_OUT);
    await logs[6]!.open();
    await logs[8]!.open();
    expect(logs[6]!.offsetForTimestamp(T0)).to.deep.equal({ offset: 0n, timestamp: T0 + 6n, leaderEpoch: 0 });
    expect(logs[8]!.append(v2(1), { leaderEpoch: 0 }).info.firstOffset).to.equal(9n);
    expect(opened()).to.deep.equal([3, 5, 6, 8]);
    expect(
      fs
        .readFileSync(path.join(runs.dir, OPEN_JOURNAL), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .sort(),
    ).to.deep.equal(['t 3', 't 5', 't 6', 't 8']);
  });

  it('appends made while a log opens keep their arrival order', async () => {
    let mgr = await open();
    await (await mgr.getOrCreate('t', 0, config())).appendAsync(v2(2), { leaderEpoch: 0 });
    await mgr.shutdown();
    mgr = await open();
    const log = mgr.attach('t', 0, config());
    const results = Array.from({ length: 20 }, (_, i) => log.appendAsync(v2(1 + (i % 3), { prefix: `a${i}` }), { leaderEpoch: 0 }));
    expect(log.pendingAppends).to.equal(20);
    let next = 2n;
    for (const r of await Promise.all(results)) {
      expect(r.info.firstOffset).to.equal(next);
      next = r.info.lastOffset + 1n;
    }
    expect((await readAll(log)).length).to.equal(21);
  });

  it('after an unclean shutdown the logs opened since the last clean one are recovered before use (torn tail, producer state); the others stay closed', async () => {
    let mgr = await open();
    for (const p of [3, 5]) {
      const log = await mgr.getOrCreate('t', p, config());
      for (let i = 0; i < 4; i++) await log.appendAsync(idem(i * 3), { leaderEpoch: 0 });
    }
    await mgr.shutdown();

    // run 2 writes to partition 3 only, then "crashes" with its tail torn
    mgr = await open();
    const p3 = mgr.attach('t', 3, config());
    const last = idem(12);
    expect((await p3.appendAsync(idem(12), { leaderEpoch: 0 })).info.firstOffset).to.equal(12n);
    expect((await p3.appendAsync(idem(15), { leaderEpoch: 0 })).info.firstOffset).to.equal(15n);
    await p3.flush();
    tearTail(p3.dir, idem(15).length);
    crash(mgr);

    const c = captureLog();
    mgr = await open(c.logger);
    expect(mgr.hadCleanShutdown).to.equal(false);
    const r3 = mgr.attach('t', 3, config());
    const r5 = mgr.attach('t', 5, config());
    expect(r3.servable, 'a partition in the open journal waits for recovery').to.equal(false);
    expect(r5.servable && !r5.isOpen, 'a partition not opened since the clean shutdown is served closed').to.equal(true);
    expect(r5.logEndOffset).to.equal(12n);
    await r3.open();
    expect(c.lines).to.include('truncating log tail');
    expect(c.lines).to.include('log recovered');
    expect(r3.logEndOffset).to.equal(15n);
    // the producer state came back: a retry of the last whole batch gets its offsets, no new write
    const dup = await r3.appendAsync(last, { leaderEpoch: 0 });
    expect([dup.info.firstOffset, dup.info.recordCount, r3.logEndOffset]).to.deep.equal([12n, 0, 15n]);
    // and the torn batch, sent again, is next in sequence
    expect((await r3.appendAsync(idem(15), { leaderEpoch: 0 })).info.firstOffset).to.equal(15n);
    expect(r5.isOpen).to.equal(false);
  });

  it('a log opened lazily whose files differ from its summary is recovered: torn tail cut, producer state kept', async () => {
    let mgr = await open();
    const log = await mgr.getOrCreate('t', 0, config());
    for (let i = 0; i < 5; i++) await log.appendAsync(idem(i * 3), { leaderEpoch: 0 });
    await mgr.shutdown();
    // the files change while the broker is down (the summary cannot know)
    tearTail(log.dir, idem(12).length);

    const c = captureLog();
    mgr = await open(c.logger);
    expect(mgr.hadCleanShutdown).to.equal(true);
    const lazy = mgr.attach('t', 0, config());
    expect(lazy.isOpen).to.equal(false);
    expect(lazy.logEndOffset, 'the summary').to.equal(15n);
    const dup = await lazy.appendAsync(idem(9), { leaderEpoch: 0 });
    expect(lazy.isOpen).to.equal(true);
    expect(c.lines).to.include('the log files differ from its summary checkpoint; recovering the log');
    expect(c.lines).to.include('truncating log tail');
    expect([dup.info.firstOffset, dup.info.recordCount]).to.deep.equal([9n, 0]);
    expect(lazy.logEndOffset).to.equal(12n);
    expect((await lazy.appendAsync(idem(12), { leaderEpoch: 0 })).info.firstOffset).to.equal(12n);
  });

  it('retention opens a closed log only when it has segments to delete', async () => {
    const small = config({ segmentBytes: 1000 });
    let mgr = await open();
    const big = await mgr.getOrCreate('r', 0, small);
    for (let i = 0; i < 30; i++) big.append(v2(2, { size: 40 }), { leaderEpoch: 0 });
    const one = await mgr.getOrCreate('r', 1, small);
    one.append(v2(2, { size: 40 }), { leaderEpoch: 0 });
    await mgr.shutdown();

    mgr = await open();
    const limited = config({ segmentBytes: 1000, retentionBytes: 1500 });
    const [a, b] = [mgr.attach('r', 0, limited), mgr.attach('r', 1, limited)];
    const segments = a.segmentBaseOffsets.length;
    expect(a.maintenanceDue(Date.now())).to.equal(true);
    expect(b.maintenanceDue(Date.now())).to.equal(false);
    await mgr.runMaintenance();
    expect(a.isOpen).to.equal(true);
    expect(a.segmentBaseOffsets.length).to.be.lessThan(segments);
    expect(b.isOpen).to.equal(false);
  });

  it('deleting a topic forgets its summaries: a topic created again under its name starts empty, also after a crash', async () => {
    let mgr = await open();
    await (await mgr.getOrCreate('gone', 0, config())).appendAsync(v2(7), { leaderEpoch: 0 });
    await mgr.shutdown();
    mgr = await open();
    expect(mgr.attach('gone', 0, config()).logEndOffset).to.equal(7n);
    await mgr.deleteTopic('gone');
    expect(mgr.attach('gone', 0, config()).logEndOffset).to.equal(0n);
    crash(mgr);
    mgr = await open();
    const again = mgr.attach('gone', 0, config());
    expect([again.servable, again.logEndOffset]).to.deep.equal([true, 0n]);
    expect(fs.existsSync(path.join(runs.dir, CLEAN_SHUTDOWN_MARKER))).to.equal(false);
  });
});

/** Paths of the files a process has open under `under` (from /proc/<pid>/fd). */
function openFiles(pid: number, under: string): string[] {
  const out: string[] = [];
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (target.startsWith(under)) out.push(path.relative(under, target));
    } catch {
      // closed meanwhile
    }
  }
  return out.sort();
}

describe('lib/log lazy open in a broker process', function () {
  this.timeout(120_000);
  const PARTITIONS = 2000;
  let dataDir: string;
  let b: ChildBroker | null = null;
  beforeEach(() => {
    dataDir = fs.realpathSync(tmpDir('lazy-broker'));
  });
  afterEach(async () => {
    if (b !== null && b.child.exitCode === null && b.child.signalCode === null) {
      b.child.kill('SIGKILL');
      await b.exited;
    }
    b = null;
    rmDir(dataDir);
  });
  const wideLogs = (): string[] => openFiles(b?.child.pid ?? -1, dataDir).filter((f) => f.startsWith('wide-') && f.endsWith('.log'));

  it(`restarts with ${PARTITIONS} partitions without opening them; the first fetch or produce opens one; kill -9 recovers what was open and lazily what changed`, async () => {
    b = await startChildBroker(dataDir);
    let c = await RawClient.connect(b.bootstrap);
    await rawCreateTopics(c, [{ name: 'wide', partitions: PARTITIONS }]);
    const pid = await initProducerId(c, null);
    expect(pid.errorCode).to.equal(0);
    // partitions 3, 5 and 7: four idempotent batches of 3 records each
    const batches = new Map<number, Buffer[]>();
    for (const p of [3, 5, 7]) {
      batches.set(p, []);
      for (let i = 0; i < 4; i++) {
        const batch = producerBatch(pid, i * 3, 3, { prefix: `p${p}` });
        batches.get(p)!.push(batch);
        expect(await produce(c, 'wide', p, batch)).to.deep.equal({ errorCode: 0, baseOffset: BigInt(i * 3) });
      }
    }
    c.destroy();
    b.child.kill('SIGTERM');
    expect(await b.exited).to.equal(0);

    // clean restart: no partition log is open, and the offsets are there
    b = await startChildBroker(dataDir);
    expect(wideLogs()).to.deep.equal([]);
    c = await RawClient.connect(b.bootstrap);
    for (const p of [3, 5, 7, 1999]) expect(await rawListOffset(c, 'wide', p)).to.equal(p === 1999 ? 0n : 12n);
    expect(await rawListOffset(c, 'wide', 7, -2n)).to.equal(0n);
    const idle = await rawFetch(c, 'wide', 1999, 0n, { maxWaitMs: 0 });
    expect([idle.errorCode, idle.highWatermark]).to.deep.equal([0, 0n]);
    expect(wideLogs(), 'ListOffsets and a caught-up fetch open nothing').to.deep.equal([]);
    // a fetch with data to read opens that one log
    const f = await rawFetch(c, 'wide', 3, 0n, { maxWaitMs: 0 });
    expect([f.errorCode, f.highWatermark, (f.records?.length ?? 0) > 0]).to.deep.equal([0, 12n, true]);
    expect(wideLogs()).to.deep.equal(['wide-3/00000000000000000000.log']);
    // a produce to 5 opens it; partition 5 is then killed with a torn tail
    const fifth = producerBatch(pid, 12, 3, { prefix: 'p5' });
    expect(await produce(c, 'wide', 5, fifth)).to.deep.equal({ errorCode: 0, baseOffset: 12n });
    expect(wideLogs()).to.deep.equal(['wide-3/00000000000000000000.log', 'wide-5/00000000000000000000.log']);
    c.destroy();
    b.child.kill('SIGKILL');
    await b.exited;
    tearTail(path.join(dataDir, 'wide-5'), fifth.length);
    // partition 7 was not open when the broker died; its files change while it is down
    tearTail(path.join(dataDir, 'wide-7'), batches.get(7)![3]!.length);

    // kill -9 restart: the logs opened since the clean shutdown (3, 5) are recovered after ready,
    // by their first use or the background pass, whichever comes first; 7 stays closed
    b = await startChildBroker(dataDir);
    c = await RawClient.connect(b.bootstrap);
    expect(await rawListOffset(c, 'wide', 5)).to.equal(12n);
    while (wideLogs().length < 2) await new Promise((r) => setTimeout(r, 20));
    expect(wideLogs()).to.deep.equal(['wide-3/00000000000000000000.log', 'wide-5/00000000000000000000.log']);
    // the producer state of 5 survived: a retry of its last whole batch gets the original offsets
    expect(await produce(c, 'wide', 5, batches.get(5)![3]!)).to.deep.equal({ errorCode: 0, baseOffset: 9n });
    expect(await produce(c, 'wide', 5, fifth)).to.deep.equal({ errorCode: 0, baseOffset: 12n });
    // partition 7 opens on first use, finds its files changed, recovers the tail and its producer state
    expect(await produce(c, 'wide', 7, batches.get(7)![2]!)).to.deep.equal({ errorCode: 0, baseOffset: 6n });
    expect(await rawListOffset(c, 'wide', 7)).to.equal(9n);
    expect(await produce(c, 'wide', 7, batches.get(7)![3]!)).to.deep.equal({ errorCode: 0, baseOffset: 9n });
    expect(wideLogs()).to.have.length(3);
    c.destroy();
    b.child.kill('SIGTERM');
    expect(await b.exited).to.equal(0);
  });
});
