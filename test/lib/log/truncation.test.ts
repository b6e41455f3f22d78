/**
 * Truncation of a replica's log (to where it agrees with a new leader, or fully): the files, the
 * indexes, the leader epochs, the producer state and the high watermark, then appends again, and a
 * reopen after a clean or an unclean stop.
 */
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { expectLogErrorAsync, openLog, readAll, rmDir, segmentFiles, tmpDir, v2 } from './helpers.js';
import { PID, crashCopy, expectSameFiles, idem, replicaState, replicate } from './replication-helpers.js';

const OVER = { segmentBytes: 1000, indexIntervalBytes: 150 };

/** 20 batches of 3 records (offsets 3i..3i+2), epoch 1 for the first 10 and 2 after; some transactional. */
async function fill(log: PartitionLog): Promise<void> {
  let seq = 0;
  for (let i = 0; i < 20; i++) {
    const epoch = i < 10 ? 1 : 2;
    if (i % 5 === 2) {
      await log.append(idem(2, i, { txn: true, pid: 50n + BigInt(i) }), { leaderEpoch: epoch }).written;
      const m = { producerId: 50n + BigInt(i), producerEpoch: 0, coordinatorEpoch: 0, commit: false };
      await (
        await log.appendMarker(m, { leaderEpoch: epoch })
      ).written;
    } else {
      await log.append(idem(3, seq), { leaderEpoch: epoch }).written;
      seq += 3;
    }
  }
}

describe('lib/log truncation', () => {
  const dirs: string[] = [];
  const logs: PartitionLog[] = [];
  const dir = (): string => {
    const d = tmpDir('trunc');
    dirs.push(d);
    return d;
  };
  const open = async (d: string, recover = false): Promise<PartitionLog> => {
    const l = await openLog(d, OVER, recover);
    logs.push(l);
    return l;
  };
  afterEach(async () => {
    for (const l of logs.splice(0)) await l.close().catch(() => undefined);
    for (const d of dirs.splice(0)) rmDir(d);
  });

  /** A fresh log with `fill`, and a follower truncated to `offset`, then compared with a log that only ever held [0, offset). */
  async function truncatedAgainstPrefix(offset: bigint): Promise<{ follower: PartitionLog; dirs: string[] }> {
    const full = await open(dir());
    await fill(full);
    const fd = dir();
    const follower = await open(fd);
    await replicate(full, follower);
    expect(await follower.truncateTo(offset)).to.equal(true);
    // the reference: a replica that fetched only up to `offset`
    const refDir = dir();
    const ref = await open(refDir);
    while (ref.logEndOffset < follower.logEndOffset) {
      const r = await full.read(ref.logEndOffset, 1, { minOneMessage: true });
      await (
        await ref.appendAsFollower(Buffer.concat(r.records))
      ).written;
    }
    expect(replicaState(follower)).to.deep.equal(replicaState(ref));
    expect(follower.highWatermark).to.equal(follower.logEndOffset);
    expect((await readAll(follower)).map((b) => b.toString('hex'))).to.deep.equal((await readAll(ref)).map((b) => b.toString('hex')));
    return { follower, dirs: [fd, refDir] };
  }

  it('in the middle of a segment (inside a batch: the batch goes whole)', async () => {
    const { follower } = await truncatedAgainstPrefix(31n);
    expect(follower.logEndOffset).to.equal(30n);
    expect(follower.latestEpoch).to.equal(1);
  });

  it('at a batch boundary, a segment boundary and across several segments; then appends again', async () => {
    for (const offset of [33n, 12n]) {
      const { follower } = await truncatedAgainstPrefix(offset);
      expect(follower.logEndOffset).to.equal(offset);
    }
    const { follower } = await truncatedAgainstPrefix(0n);
    expect(follower.logEndOffset).to.equal(0n);
    expect(follower.segmentBaseOffsets).to.deep.equal([0n]);
    // a segment boundary
    const full = await open(dir());
    await fill(full);
    const bases = full.segmentBaseOffsets;
    expect(bases.length).to.be.greaterThan(3);
    const boundary = bases[2] as bigint;
    const { follower: f2 } = await truncatedAgainstPrefix(boundary);
    expect(f2.segmentBaseOffsets).to.deep.equal(bases.slice(0, 2));
    // appends go on from the new end, as leader or as follower
    await f2.append(v2(2), { leaderEpoch: 7 }).written;
    expect(f2.logEndOffset).to.equal(boundary + 2n);
    expect(f2.endOffsetForEpoch(2).endOffset).to.equal(boundary);
    expect(f2.latestEpoch).to.equal(7);
  });

  it('rolls the producer state back: a retry of a removed batch is appended again, of a kept one is a duplicate', async () => {
    const l = await open(dir());
    const sent: Buffer[] = [];
    for (let i = 0; i < 8; i++) {
      const b = idem(2, i * 2);
      sent.push(Buffer.from(b));
      await l.append(b, { leaderEpoch: 0 }).written;
    }
    await l.truncateTo(10n);
    expect(l.producers.producers.get(PID)?.batches.map((b) => b.firstSeq)).to.deep.equal([0, 2, 4, 6, 8]);
    expect(l.append(Buffer.from(sent[4] as Buffer), { leaderEpoch: 1 }).info.firstOffset).to.equal(8n);
    expect(l.logEndOffset).to.equal(10n);
    const again = l.append(Buffer.from(sent[5] as Buffer), { leaderEpoch: 1 });
    expect([again.info.firstOffset, l.logEndOffset]).to.deep.equal([10n, 12n]);
    await again.written;
  });

  it('removes aborted transactions and open ones above the new end; the high watermark comes down', async () => {
    const l = await open(dir());
    l.useExternalHighWatermark();
    await l.append(v2(2), { leaderEpoch: 0 }).written;
    await l.append(idem(2, 0, { txn: true }), { leaderEpoch: 0 }).written;
    await (
      await l.appendMarker({ producerId: PID, producerEpoch: 0, coordinatorEpoch: 0, commit: false }, { leaderEpoch: 0 })
    ).written;
    await l.append(idem(1, 2, { txn: true }), { leaderEpoch: 0 }).written; // open at 5
    l.setHighWatermark(6n);
    expect(l.abortedTransactions(0n, 6n)).to.have.length(1);
    expect(l.lastStableOffset).to.equal(5n);
    await l.truncateTo(5n);
    expect([l.logEndOffset, l.highWatermark, l.lastStableOffset]).to.deep.equal([5n, 5n, 5n]);
    await l.truncateTo(4n);
    expect(l.abortedTransactions(0n, 6n)).to.deep.equal([]);
    // the transaction [2, 3] has no marker now: it is open again
    expect([l.logEndOffset, l.highWatermark, l.lastStableOffset]).to.deep.equal([4n, 4n, 2n]);
    expect(await l.truncateTo(9n)).to.equal(false);
  });

  it('reopens to the same log after a clean stop and after a kill -9', async () => {
    const fd = dir();
    const l = await open(fd);
    await fill(l);
    await l.truncateTo(28n);
    await l.append(v2(4, { prefix: 'after' }), { leaderEpoch: 3 }).written;
    const state = replicaState(l);
    const data = (await readAll(l)).map((b) => b.toString('hex'));
    const crashed = dir();
    crashCopy(fd, crashed);
    await l.close();
    for (const [d, recover] of [
      [fd, false],
      [crashed, true],
    ] as const) {
      const r = await open(d, recover);
      expect(replicaState(r), d).to.deep.equal(state);
      expect((await readAll(r)).map((b) => b.toString('hex'))).to.deep.equal(data);
      await r.append(v2(1), { leaderEpoch: 3 }).written;
      await r.close();
    }
    expectSameFiles(fd, crashed, ['.snapshot', '.timeindex']);
  });

  it('truncateFullyAndStartAt empties the log and starts it over at the offset, also after a reopen', async () => {
    const fd = dir();
    const l = await open(fd);
    await fill(l);
    await l.truncateFullyAndStartAt(500n);
    expect([l.logStartOffset, l.logEndOffset, l.highWatermark, l.latestEpoch]).to.deep.equal([500n, 500n, 500n, -1]);
    expect(l.producers.size).to.equal(0);
    expect(segmentFiles(fd).filter((f) => f.endsWith('.log'))).to.deep.equal(['00000000000000000500.log']);
    await expectLogErrorAsync(l.read(10n, 100, { minOneMessage: true }), ErrorCode.OFFSET_OUT_OF_RANGE);
    const leaderDir = dir();
    const leader = await open(leaderDir);
    await leader.truncateFullyAndStartAt(500n);
    await leader.append(v2(3), { leaderEpoch: 9 }).written;
    await replicate(leader, l);
    expect([l.logEndOffset, l.latestEpoch]).to.deep.equal([503n, 9]);
    await l.close();
    const r = await open(fd);
    expect([r.logStartOffset, r.logEndOffset, r.latestEpoch]).to.deep.equal([500n, 503n, 9]);
    // below the log start, truncateTo starts over too
    await r.truncateTo(100n);
    expect([r.logStartOffset, r.logEndOffset]).to.deep.equal([100n, 100n]);
  });

  it('waits for appends in flight and refuses those that arrive meanwhile', async () => {
    const l = await open(dir());
    await fill(l);
    const inFlight = l.append(v2(2), { leaderEpoch: 2 });
    const t = l.truncateTo(30n);
    await expectLogErrorAsync(l.appendAsync(v2(1), { leaderEpoch: 2 }), ErrorCode.REQUEST_TIMED_OUT);
    await inFlight.written;
    await t;
    expect(l.logEndOffset).to.equal(30n);
    await l.append(v2(1), { leaderEpoch: 2 }).written;
    expect(l.logEndOffset).to.equal(31n);
  });
});
