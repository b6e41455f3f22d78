/**
 * Follower appends (the leader's entries stored as they are) and the high watermark the
 * replication layer moves: a follower fed from a leader's log ends up with the same files, offsets,
 * leader epochs and producer state.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { CompressionCodec, TimestampType } from '../../../protocol/records/index.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { expectLogErrorAsync, legacy, openLog, readAll, rmDir, tmpDir, v2 } from './helpers.js';
import { PID, expectSameFiles, idem, partitionFiles, replicaState, replicate } from './replication-helpers.js';

const OVER = { segmentBytes: 1200, indexIntervalBytes: 200 };
const CODECS = [CompressionCodec.NONE, CompressionCodec.GZIP, CompressionCodec.SNAPPY, CompressionCodec.LZ4, CompressionCodec.ZSTD];

describe('lib/log follower append', () => {
  let leaderDir: string;
  let followerDir: string;
  let leader: PartitionLog | undefined;
  let follower: PartitionLog | undefined;
  beforeEach(() => {
    leaderDir = tmpDir('leader');
    followerDir = tmpDir('follower');
  });
  afterEach(async () => {
    await leader?.close().catch(() => undefined);
    await follower?.close().catch(() => undefined);
    leader = follower = undefined;
    rmDir(leaderDir);
    rmDir(followerDir);
  });

  it('stores the leader entries byte for byte: same segments, indexes, offsets and leader epochs', async () => {
    leader = await openLog(leaderDir, OVER);
    follower = await openLog(followerDir, OVER);
    let epoch = 0;
    for (let i = 0; i < 30; i++) {
      if (i % 7 === 6) epoch += 2;
      const codec = CODECS[i % CODECS.length] as number;
      const batch =
        i % 11 === 3
          ? legacy(3, { magic: 1 })
          : i % 13 === 5
            ? legacy(2, { magic: 1, compression: CompressionCodec.GZIP })
            : v2(1 + (i % 4), {
                compression: codec,
                prefix: `b${i}`,
                ...(i % 9 === 4 ? { timestampType: TimestampType.LOG_APPEND_TIME } : {}),
              });
      await leader.append(batch, { leaderEpoch: epoch }).written;
      // sometimes the follower is fed batch by batch, sometimes several at once
      if (i % 3 === 0) await replicate(leader, follower, i % 2 === 0 ? 1 : 1 << 20);
    }
    await replicate(leader, follower);
    expect(leader.segmentBaseOffsets.length).to.be.greaterThan(3);
    expect(replicaState(follower)).to.deep.equal(replicaState(leader));
    for (const e of [0, 1, 2, 4, 6, 8, 20]) expect(follower.endOffsetForEpoch(e)).to.deep.equal(leader.endOffsetForEpoch(e));
    expect((await readAll(follower)).map((b) => b.toString('hex'))).to.deep.equal((await readAll(leader)).map((b) => b.toString('hex')));
    await leader.close();
    await follower.close();
    expectSameFiles(leaderDir, followerDir);
  });

  it('keeps the producer state: after it becomes leader, a retried batch is a duplicate and sequences continue', async () => {
    leader = await openLog(leaderDir);
    follower = await openLog(followerDir);
    const sent: Buffer[] = [];
    for (let i = 0; i < 6; i++) {
      const b = idem(2, i * 2);
      sent.push(Buffer.from(b));
      await leader.append(b, { leaderEpoch: 1 }).written;
    }
    await replicate(leader, follower);
    expect([...follower.producers.producers.values()]).to.deep.equal([...leader.producers.producers.values()]);
    // the follower takes over (epoch 2): the producer retries its last batch, then goes on
    const retry = follower.append(Buffer.from(sent[5] as Buffer), { leaderEpoch: 2 });
    expect(retry.info.firstOffset).to.equal(10n);
    expect(follower.logEndOffset).to.equal(12n);
    await expectLogErrorAsync(follower.appendAsync(idem(1, 20), { leaderEpoch: 2 }), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER);
    expect(follower.append(idem(1, 12), { leaderEpoch: 2 }).info.firstOffset).to.equal(12n);
    expect(follower.latestEpoch).to.equal(2);
    expect(follower.endOffsetForEpoch(1)).to.deep.equal({ leaderEpoch: 1, endOffset: 12n });
  });

  it('replicates transactions, markers and the aborted-transaction index', async () => {
    leader = await openLog(leaderDir, OVER);
    follower = await openLog(followerDir, OVER);
    const marker = async (pid: bigint, commit: boolean): Promise<void> => {
      await (
        await leader!.appendMarker({ producerId: pid, producerEpoch: 0, coordinatorEpoch: 3, commit }, { leaderEpoch: 0 })
      ).written;
    };
    for (let round = 0; round < 4; round++) {
      await leader.append(idem(2, round * 4, { txn: true }), { leaderEpoch: 0 }).written;
      await leader.append(idem(3, round * 3, { pid: 77n, txn: true }), { leaderEpoch: 0 }).written;
      await leader.append(v2(2, { prefix: `plain${round}` }), { leaderEpoch: 0 }).written;
      await leader.append(idem(2, round * 4 + 2, { txn: true }), { leaderEpoch: 0 }).written;
      await marker(PID, round % 2 === 0);
      await marker(77n, round % 2 === 1);
    }
    await leader.append(idem(1, 16, { txn: true }), { leaderEpoch: 0 }).written; // left open
    await replicate(leader, follower, 300);
    expect(replicaState(follower)).to.deep.equal(replicaState(leader));
    expect(follower.abortedTransactions(0n, follower.logEndOffset)).to.have.length(4);
    expect(follower.lastStableOffset).to.equal(leader.lastStableOffset);
    await leader.close();
    await follower.close();
    expectSameFiles(leaderDir, followerDir);
    expect([...partitionFiles(followerDir).keys()].filter((n) => n.endsWith('.txnindex'))).to.have.length.greaterThan(0);
    // the open transaction can be ended on the former follower (its producer state knows it)
    follower = await openLog(followerDir, OVER);
    await (
      await follower.appendMarker({ producerId: PID, producerEpoch: 0, coordinatorEpoch: 3, commit: false }, { leaderEpoch: 1 })
    ).written;
    expect(follower.lastStableOffset).to.equal(follower.logEndOffset);
    expect(follower.abortedTransactions(0n, follower.logEndOffset)).to.have.length(5);
  });

  it('refuses entries that do not start at the log end offset, or are broken, and changes nothing', async () => {
    leader = await openLog(leaderDir);
    follower = await openLog(followerDir);
    for (let i = 0; i < 3; i++) await leader.append(v2(3), { leaderEpoch: 4 }).written;
    await replicate(leader, follower);
    await leader.append(v2(2), { leaderEpoch: 5 }).written;
    // the follower's leader-epoch checkpoint is written in the background on append (durable at the
    // next flush): flush so the files compared below are the settled ones
    await follower.flush();
    const before = partitionFiles(followerDir);
    const at = async (offset: bigint): Promise<Buffer> =>
      Buffer.concat((await leader!.read(offset, 1 << 20, { minOneMessage: true })).records);
    const ahead = v2(2, { baseOffset: 11n, partitionLeaderEpoch: 5 });
    await expectLogErrorAsync(follower.appendAsFollower(await at(6n)), ErrorCode.UNKNOWN_SERVER_ERROR);
    await expectLogErrorAsync(follower.appendAsFollower(ahead), ErrorCode.UNKNOWN_SERVER_ERROR);
    // in order, then a batch that overlaps the one before
    const tail = await at(9n);
    await expectLogErrorAsync(follower.appendAsFollower(Buffer.concat([tail, tail])), ErrorCode.UNKNOWN_SERVER_ERROR);
    const corrupt = Buffer.from(tail);
    corrupt.writeUInt8(corrupt.readUInt8(corrupt.length - 1) ^ 0xff, corrupt.length - 1);
    await expectLogErrorAsync(follower.appendAsFollower(corrupt), ErrorCode.CORRUPT_MESSAGE);
    expect(follower.logEndOffset).to.equal(9n);
    expect(follower.latestEpoch).to.equal(4);
    await new Promise((r) => setImmediate(r));
    expect(partitionFiles(followerDir)).to.deep.equal(before);
    // a partial entry at the end is left for the next fetch
    const r = await follower.appendAsFollower(Buffer.concat([tail, tail.subarray(0, 30)]));
    expect([r.info.firstOffset, r.info.lastOffset, follower.logEndOffset]).to.deep.equal([9n, 10n, 11n]);
    expect(follower.latestEpoch).to.equal(5);
  });

  it('with an external high watermark, consumers see what the replication layer committed', async () => {
    leader = await openLog(leaderDir);
    follower = await openLog(followerDir);
    const reported: bigint[] = [];
    follower.useExternalHighWatermark((end) => reported.push(end));
    await leader.append(v2(3), { leaderEpoch: 0 }).written;
    await leader.append(idem(2, 0, { txn: true }), { leaderEpoch: 0 }).written;
    await (
      await leader.appendMarker({ producerId: PID, producerEpoch: 0, coordinatorEpoch: 0, commit: true }, { leaderEpoch: 0 })
    ).written;
    await leader.append(v2(2), { leaderEpoch: 0 }).written;
    await replicate(leader, follower);
    expect(follower.logEndOffset).to.equal(8n);
    expect(follower.writtenEndOffset).to.equal(8n);
    expect(reported[reported.length - 1]).to.equal(8n);
    expect(follower.highWatermark).to.equal(0n);
    expect(follower.lastStableOffset).to.equal(0n);
    expect(follower.setHighWatermark(5n)).to.equal(5n);
    // the transaction [3, 5] ends at 5, not below the high watermark: not stable yet
    expect(follower.lastStableOffset).to.equal(3n);
    expect(follower.setHighWatermark(2n)).to.equal(5n); // never back
    const upToHw = await follower.read(0n, 1 << 20, { minOneMessage: true, maxOffset: follower.highWatermark });
    expect(upToHw.records).to.have.length(2);
    expect(() => follower!.deleteRecordsBefore(6n)).to.throw(/high watermark is 5/);
    expect(follower.setHighWatermark(6n)).to.equal(6n);
    expect(follower.lastStableOffset).to.equal(6n);
    expect(follower.setHighWatermark(100n)).to.equal(8n); // clamped to the log end
    // leader side: a write does not move it until told
    const leaderHw: bigint[] = [];
    leader.useExternalHighWatermark((end) => leaderHw.push(end));
    await leader.append(v2(1), { leaderEpoch: 0 }).written;
    expect([leader.highWatermark, leader.writtenEndOffset, leaderHw]).to.deep.equal([8n, 9n, [9n]]);
    leader.useLocalHighWatermark();
    expect(leader.highWatermark).to.equal(9n);
    await leader.append(v2(1), { leaderEpoch: 0 }).written;
    expect(leader.highWatermark).to.equal(10n);
  });

  it('property: any sequence of leader appends, fed in any chunks, gives the same log on the follower', async function () {
    this.timeout(60_000);
    const batchArb = fc.record({
      n: fc.integer({ min: 1, max: 4 }),
      codec: fc.constantFrom(...CODECS),
      epochStep: fc.integer({ min: 0, max: 2 }),
      producer: fc.constantFrom('none', 'idem', 'txn-commit', 'txn-abort'),
      size: fc.integer({ min: 5, max: 200 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(batchArb, { minLength: 1, maxLength: 25 }), fc.integer({ min: 1, max: 2000 }), async (batches, chunk) => {
        const ld = tmpDir('pleader');
        const fdir = tmpDir('pfollower');
        const l = await openLog(ld, OVER);
        const f = await openLog(fdir, OVER);
        try {
          let epoch = 0;
          let seq = 0;
          for (const [i, b] of batches.entries()) {
            epoch += b.epochStep;
            const opts = { compression: b.codec, size: b.size, prefix: `p${i}` };
            if (b.producer === 'none') await l.append(v2(b.n, opts), { leaderEpoch: epoch }).written;
            else {
              const txn = b.producer !== 'idem';
              await l.append(v2(b.n, { ...opts, producerId: PID, producerEpoch: 0, baseSequence: seq, isTransactional: txn }), {
                leaderEpoch: epoch,
              }).written;
              seq += b.n;
              if (txn) {
                const m = { producerId: PID, producerEpoch: 0, coordinatorEpoch: 0, commit: b.producer === 'txn-commit' };
                await (
                  await l.appendMarker(m, { leaderEpoch: epoch })
                ).written;
              }
            }
          }
          await replicate(l, f, chunk);
          expect(replicaState(f)).to.deep.equal(replicaState(l));
          await l.close();
          await f.close();
          expectSameFiles(ld, fdir);
        } finally {
          await l.close();
          await f.close();
          rmDir(ld);
          rmDir(fdir);
        }
      }),
      { numRuns: 12 },
    );
  });

  it('works on a log not open yet (it opens first)', async () => {
    leader = await openLog(leaderDir);
    await leader.append(v2(2), { leaderEpoch: 0 }).written;
    const records = Buffer.concat((await leader.read(0n, 1 << 20, { minOneMessage: true })).records);
    fs.mkdirSync(path.join(followerDir, 'topic-0'));
    const { PartitionLog } = await import('../../../lib/log/partition-log.js');
    const { config } = await import('./helpers.js');
    follower = PartitionLog.lazy(followerDir, 'topic', 0, config(), { recover: false }, null);
    follower.useExternalHighWatermark();
    const r = await follower.appendAsFollower(records);
    await r.written;
    expect([follower.logEndOffset, follower.highWatermark]).to.deep.equal([2n, 0n]);
  });
});
