/**
 * Producer state on a real partition log: duplicates, sequence and epoch errors, transactions and the
 * last stable offset, the aborted-transaction index, and all of it across clean and unclean restarts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { AppendOrigin, inSequence, lastSequenceOf } from '../../../lib/txn/producer-state.js';
import { parseSnapshot, serializeSnapshot } from '../../../lib/txn/producer-snapshot.js';
import { expectLogError, expectLogErrorAsync, openLog, rmDir, tmpDir, v2 } from '../log/helpers.js';

const PID = 1000n;

function idem(n: number, seq: number, opts: { pid?: bigint; epoch?: number; txn?: boolean; prefix?: string } = {}): Buffer {
  return v2(n, {
    producerId: opts.pid ?? PID,
    producerEpoch: opts.epoch ?? 0,
    baseSequence: seq,
    isTransactional: opts.txn === true,
    prefix: opts.prefix ?? `s${seq}`,
  });
}

describe('lib/txn producer state (on a partition log)', () => {
  let dir: string;
  let log: PartitionLog | undefined;
  beforeEach(() => {
    dir = tmpDir('pstate');
  });
  afterEach(async () => {
    await log?.close().catch(() => undefined);
    log = undefined;
    rmDir(dir);
  });

  it('sequence helpers wrap at int32 max as Kafka does', () => {
    expect(lastSequenceOf(2147483646, 2)).to.equal(0);
    expect(lastSequenceOf(5, 4)).to.equal(9);
    expect(inSequence(2147483647, 0)).to.equal(true);
    expect(inSequence(4, 5)).to.equal(true);
    expect(inSequence(4, 6)).to.equal(false);
  });

  it('an exact retry of any of the last five batches gets its original offsets and is not appended again', async () => {
    log = await openLog(dir);
    const sent: Buffer[] = [];
    const offsets: bigint[] = [];
    for (let i = 0; i < 6; i++) {
      const b = idem(3, i * 3);
      sent.push(Buffer.from(b));
      offsets.push(log.append(b, { leaderEpoch: 0 }).info.firstOffset);
    }
    expect(log.logEndOffset).to.equal(18n);
    for (let i = 1; i < 6; i++) {
      const r = log.append(Buffer.from(sent[i] as Buffer), { leaderEpoch: 0 });
      expect(r.info.firstOffset).to.equal(offsets[i]);
      expect(r.info.lastOffset).to.equal((offsets[i] as bigint) + 2n);
      await r.written;
    }
    expect(log.logEndOffset).to.equal(18n);
    // the first batch fell out of the five kept: its retry is out of order (Kafka's answer)
    expectLogError(() => log!.append(Buffer.from(sent[0] as Buffer), { leaderEpoch: 0 }), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER);
    expect(log.logEndOffset).to.equal(18n);
  });

  it('gaps, old epochs and a new epoch not starting at 0 get Kafka error codes; nothing is appended', async () => {
    log = await openLog(dir);
    log.append(idem(2, 0, { epoch: 3 }), { leaderEpoch: 0 });
    expectLogError(() => log!.append(idem(1, 5, { epoch: 3 }), { leaderEpoch: 0 }), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER);
    expectLogError(() => log!.append(idem(1, 2, { epoch: 2 }), { leaderEpoch: 0 }), ErrorCode.INVALID_PRODUCER_EPOCH);
    expectLogError(() => log!.append(idem(1, 7, { epoch: 4 }), { leaderEpoch: 0 }), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER);
    expect(log.logEndOffset).to.equal(2n);
    // a bumped epoch starting at 0 is accepted and resets the sequence
    log.append(idem(1, 0, { epoch: 4 }), { leaderEpoch: 0 });
    log.append(idem(1, 1, { epoch: 4 }), { leaderEpoch: 0 });
    expect(log.producers.producers.get(PID)?.producerEpoch).to.equal(4);
    expect(log.logEndOffset).to.equal(4n);
  });

  it('an unknown producer may start at any sequence; the sequence wraps past int32 max', async () => {
    log = await openLog(dir);
    log.append(idem(2, 17), { leaderEpoch: 0 });
    log.append(idem(3, 2147483646, { pid: 7n }), { leaderEpoch: 0 });
    log.append(idem(1, 1, { pid: 7n }), { leaderEpoch: 0 });
    expectLogError(() => log!.append(idem(1, 3, { pid: 7n }), { leaderEpoch: 0 }), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER);
    log.append(idem(1, 19), { leaderEpoch: 0 });
    expect(log.logEndOffset).to.equal(7n);
  });

  it('a transaction holds the last stable offset at its first offset until its marker; aborts are indexed', async () => {
    log = await openLog(dir);
    log.append(v2(2), { leaderEpoch: 0 });
    const t1 = log.append(idem(2, 0, { txn: true }), { leaderEpoch: 0 });
    log.append(v2(1), { leaderEpoch: 0 });
    await t1.written;
    await log.append(v2(1), { leaderEpoch: 0 }).written;
    expect(log.highWatermark).to.equal(6n);
    expect(log.lastStableOffset).to.equal(2n);
    // a non-transactional batch from a producer with an open transaction is refused
    expectLogError(() => log!.append(idem(1, 2), { leaderEpoch: 0 }), ErrorCode.INVALID_TXN_STATE);
    const m = await log.appendMarker({ producerId: PID, producerEpoch: 0, coordinatorEpoch: 0, commit: false }, { leaderEpoch: 0 });
    await m.written;
    expect(m.info.firstOffset).to.equal(6n);
    expect(log.lastStableOffset).to.equal(7n);
    expect(log.abortedTransactions(0n, 7n)).to.deep.equal([{ producerId: PID, firstOffset: 2n, lastOffset: 6n, lastStableOffset: 7n }]);
    expect(log.abortedTransactions(7n, 8n)).to.deep.equal([]);
    expect(log.abortedTransactions(0n, 2n)).to.deep.equal([]);
    // sequences continue after the marker (same epoch), the next transaction commits: nothing indexed
    await log.append(idem(1, 2, { txn: true }), { leaderEpoch: 0 }).written;
    expect(log.lastStableOffset).to.equal(7n);
    await (
      await log.appendMarker({ producerId: PID, producerEpoch: 0, coordinatorEpoch: 0, commit: true }, { leaderEpoch: 0 })
    ).written;
    expect(log.lastStableOffset).to.equal(9n);
    expect(log.abortedTransactions(0n, 9n)).to.have.length(1);
  });

  it('markers from an older producer epoch or coordinator epoch are refused', async () => {
    log = await openLog(dir);
    await log.append(idem(1, 0, { epoch: 2, txn: true }), { leaderEpoch: 0 }).written;
    await expectLogErrorAsync(
      log.appendMarker({ producerId: PID, producerEpoch: 1, coordinatorEpoch: 0, commit: true }, { leaderEpoch: 0 }),
      ErrorCode.INVALID_PRODUCER_EPOCH,
    );
    // a fence: abort written with a bumped epoch; the zombie's later batches are refused
    await log.appendMarker({ producerId: PID, producerEpoch: 3, coordinatorEpoch: 5, commit: false }, { leaderEpoch: 0 });
    expectLogError(() => log!.append(idem(1, 1, { epoch: 2, txn: true }), { leaderEpoch: 0 }), ErrorCode.INVALID_PRODUCER_EPOCH);
    await log.append(idem(1, 0, { epoch: 3, txn: true }), { leaderEpoch: 0 }).written;
    await expectLogErrorAsync(
      log.appendMarker({ producerId: PID, producerEpoch: 3, coordinatorEpoch: 4, commit: true }, { leaderEpoch: 0 }),
      ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    );
    expect(log.logEndOffset).to.equal(3n);
  });

  it('coordinator appends (transactional offset commits) skip sequence checks but not epoch checks', async () => {
    log = await openLog(dir);
    log.append(v2(1, { producerId: PID, producerEpoch: 1, baseSequence: 0, isTransactional: true }), {
      leaderEpoch: 0,
      origin: AppendOrigin.COORDINATOR,
    });
    log.append(v2(1, { producerId: PID, producerEpoch: 1, baseSequence: 0, isTransactional: true }), {
      leaderEpoch: 0,
      origin: AppendOrigin.COORDINATOR,
    });
    expectLogError(
      () =>
        log!.append(v2(1, { producerId: PID, producerEpoch: 0, baseSequence: 0, isTransactional: true }), {
          leaderEpoch: 0,
          origin: AppendOrigin.COORDINATOR,
        }),
      ErrorCode.INVALID_PRODUCER_EPOCH,
    );
    expect(log.lastStableOffset).to.equal(0n);
  });

  it('snapshots keep all five batches: after a clean restart every cached retry is still a duplicate', async () => {
    log = await openLog(dir);
    const sent: Buffer[] = [];
    for (let i = 0; i < 5; i++) {
      const b = idem(2, i * 2);
      sent.push(Buffer.from(b));
      log.append(b, { leaderEpoch: 0 });
    }
    await log.close();
    const snaps = fs.readdirSync(log.dir).filter((f) => f.endsWith('.snapshot'));
    expect(snaps).to.deep.equal(['00000000000000000010.snapshot']);
    log = await openLog(dir);
    for (let i = 0; i < 5; i++)
      expect(log.append(Buffer.from(sent[i] as Buffer), { leaderEpoch: 0 }).info.firstOffset).to.equal(BigInt(i * 2));
    expect(log.logEndOffset).to.equal(10n);
    log.append(idem(1, 10), { leaderEpoch: 0 });
    expect(log.logEndOffset).to.equal(11n);
  });

  it('after a crash (no close) the log tail is replayed: retries, open transactions and aborted-index entries come back', async () => {
    const first = await openLog(dir, { segmentBytes: 2000 });
    const sent: Buffer[] = [];
    for (let i = 0; i < 30; i++) {
      const b = idem(2, i * 2, { prefix: `r${i}` });
      sent.push(Buffer.from(b));
      first.append(b, { leaderEpoch: 0 });
    }
    // another producer: an aborted transaction, then an open one
    first.append(idem(2, 0, { pid: 9n, txn: true }), { leaderEpoch: 0 });
    await first.appendMarker({ producerId: 9n, producerEpoch: 0, coordinatorEpoch: 0, commit: false }, { leaderEpoch: 0 });
    const open = first.append(idem(1, 2, { pid: 9n, txn: true }), { leaderEpoch: 0 });
    await open.written;
    expect(first.segmentBaseOffsets.length).to.be.greaterThan(2);
    const abortedBefore = first.abortedTransactions(0n, first.logEndOffset);
    expect(abortedBefore).to.have.length(1);
    // simulate the crash: copy the files as they are (the first log is never closed). A checkpoint being
    // written meanwhile goes through a .tmp file that is renamed away under the copy; recovery discards
    // .tmp files anyway, so the copy leaves them out
    const crashed = tmpDir('pstate-crash');
    fs.cpSync(path.join(dir, 'topic-0'), path.join(crashed, 'topic-0'), { recursive: true, filter: (src) => !src.endsWith('.tmp') });
    for (const f of fs.readdirSync(path.join(crashed, 'topic-0'))) if (f.endsWith('.txnindex')) fs.rmSync(path.join(crashed, 'topic-0', f));
    try {
      log = await openLog(crashed, { segmentBytes: 2000 }, true);
      expect(log.logEndOffset).to.equal(first.logEndOffset);
      expect(log.lastStableOffset).to.equal(open.info.firstOffset);
      expect(log.abortedTransactions(0n, log.logEndOffset)).to.deep.equal(abortedBefore);
      for (let i = 25; i < 30; i++)
        expect(log.append(Buffer.from(sent[i] as Buffer), { leaderEpoch: 0 }).info.firstOffset).to.equal(BigInt(i * 2));
      expect(log.logEndOffset).to.equal(first.logEndOffset);
      await log.close();
      log = undefined;
    } finally {
      await first.close();
      rmDir(crashed);
    }
  });

  it('the aborted-transaction index survives a clean restart and is kept per segment', async () => {
    log = await openLog(dir, { segmentBytes: 1500 });
    for (let t = 0; t < 6; t++) {
      for (let i = 0; i < 3; i++) log.append(idem(2, t * 6 + i * 2, { txn: true, prefix: `t${t}-${i}` }), { leaderEpoch: 0 });
      await log.appendMarker({ producerId: PID, producerEpoch: 0, coordinatorEpoch: 0, commit: t % 2 === 1 }, { leaderEpoch: 0 });
    }
    const all = log.abortedTransactions(0n, log.logEndOffset);
    expect(all.map((a) => a.firstOffset)).to.deep.equal([0n, 14n, 28n]);
    await log.close();
    const files = fs.readdirSync(log.dir).filter((f) => f.endsWith('.txnindex'));
    expect(files.length).to.be.greaterThan(0);
    log = await openLog(dir, { segmentBytes: 1500 });
    expect(log.abortedTransactions(0n, log.logEndOffset)).to.deep.equal(all);
    expect(log.abortedTransactions(15n, log.logEndOffset).map((a) => a.firstOffset)).to.deep.equal([14n, 28n]);
    expect(log.abortedTransactions(21n, log.logEndOffset).map((a) => a.firstOffset)).to.deep.equal([28n]);
    expect(log.abortedTransactions(21n, 28n)).to.deep.equal([]);
  });

  it('producer.id.expiration.ms forgets idle producers without open transactions; then any sequence is accepted', async () => {
    log = await openLog(dir);
    log.append(idem(1, 0), { leaderEpoch: 0 });
    log.append(idem(1, 0, { pid: 2n, txn: true }), { leaderEpoch: 0 });
    const now = Number(1_700_000_000_000n) + 10_000;
    expect(log.expireProducers(now, 5_000)).to.equal(1);
    expect(log.producers.producers.has(PID)).to.equal(false);
    expect(log.producers.producers.has(2n)).to.equal(true);
    log.append(idem(1, 40), { leaderEpoch: 0 });
    expect(log.logEndOffset).to.equal(3n);
  });

  it('snapshot files round-trip and reject corruption', () => {
    const entries = [
      {
        producerId: 5n,
        producerEpoch: 2,
        batches: [{ firstSeq: 0, lastSeq: 3, firstOffset: 10n, lastOffset: 13n, timestamp: 99n }],
        lastTimestamp: 99n,
        coordinatorEpoch: 1,
        currentTxnFirstOffset: 10n,
      },
      { producerId: 6n, producerEpoch: -1, batches: [], lastTimestamp: -1n, coordinatorEpoch: -1, currentTxnFirstOffset: null },
    ];
    const b = serializeSnapshot(entries);
    expect(parseSnapshot(b)).to.deep.equal(entries);
    const bad = Buffer.from(b);
    bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 1;
    expect(parseSnapshot(bad)).to.equal(null);
    expect(parseSnapshot(b.subarray(0, b.length - 3))).to.equal(null);
  });
});
