/**
 * Transactions and producer state across restarts, over the raw protocol against real brokers: a
 * transaction caught between prepare and complete is finished at start; one left open times out and
 * is aborted (its producer fenced); producer ids are never handed out twice, after a clean stop or a
 * kill -9; an idempotent retry after a restart is still recognised. Also the exact read_committed
 * view (last stable offset, aborted list, control batches) with interleaved producers.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { buildRecordBatch, logEntries } from '../../protocol/records/index.js';
import { defaultLogConfig } from '../../lib/log/log-config.js';
import { PartitionLog } from '../../lib/log/partition-log.js';
import { partitionFor } from '../../lib/group/records.js';
import { TRANSACTION_STATE_TOPIC, TxnState, txnLogKey, txnLogValue } from '../../lib/txn/txn-metadata.js';
import { startChildBroker, startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { RawClient } from '../helpers/raw-client.js';
import {
  addOffsets,
  addPartitions,
  createTopic,
  endTxn,
  fetchPartition,
  initProducerId,
  offsetCommit,
  offsetFetch,
  produce,
  producerBatch,
  txnOffsetCommit,
  type Pid,
} from '../helpers/txn-raw.js';

async function until<T>(what: string, f: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (ok(v)) return v;
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${what}: ${JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x))}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts a transaction on t-0 with 3 records; returns the producer. */
async function openTransaction(raw: RawClient, txnId: string, topic: string, timeoutMs = 60_000): Promise<Pid> {
  const p = await initProducerId(raw, txnId, timeoutMs);
  expect(p.errorCode).to.equal(ErrorCode.NONE);
  expect(await addPartitions(raw, txnId, p, topic, [0])).to.deep.equal([ErrorCode.NONE]);
  const r = await produce(raw, topic, 0, producerBatch(p, 0, 3, { prefix: 'open', transactional: true }), txnId);
  expect(r.errorCode).to.equal(ErrorCode.NONE);
  return p;
}

describe('transactions and producer state across restarts', function () {
  this.timeout(60_000);
  const dirs: string[] = [];
  let tb: TestBroker | undefined;
  let raw: RawClient | undefined;
  afterEach(async () => {
    raw?.destroy();
    raw = undefined;
    await tb?.stop();
    tb = undefined;
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  async function start(dataDir: string, config: Record<string, string> = {}): Promise<RawClient> {
    tb = await startTestBroker(config, { dataDir });
    raw = await RawClient.connect(tb.bootstrap);
    return raw;
  }

  async function restart(dataDir: string, config: Record<string, string> = {}): Promise<RawClient> {
    raw?.destroy();
    await tb?.stop();
    return start(dataDir, config);
  }

  it('a transaction left between prepare and complete is finished at start: markers written, data visible, state CompleteCommit', async () => {
    const dir = tempDir();
    dirs.push(dir);
    let c = await start(dir);
    await createTopic(c, 'crash', 1);
    const p = await openTransaction(c, 'tx-crash', 'crash');
    expect((await fetchPartition(c, 'crash', 0, 0n, 1)).lastStableOffset).to.equal(0n);
    raw?.destroy();
    await tb?.stop();
    tb = undefined;
    // what a crash right after the PrepareCommit write leaves behind
    const stateLog = await PartitionLog.open(
      dir,
      TRANSACTION_STATE_TOPIC,
      partitionFor('tx-crash', 50),
      defaultLogConfig({ cleanupPolicy: ['compact'] }),
      { recover: false },
    );
    const now = Date.now();
    const prepare = {
      transactionalId: 'tx-crash',
      producerId: p.producerId,
      previousProducerId: -1n,
      producerEpoch: p.producerEpoch,
      lastProducerEpoch: -1,
      txnTimeoutMs: 60_000,
      state: TxnState.PREPARE_COMMIT,
      partitions: new Map([['crash', new Set([0])]]),
      txnStartTimestamp: now,
      txnLastUpdateTimestamp: now,
      pending: null,
    };
    await stateLog.append(buildRecordBatch([{ key: txnLogKey('tx-crash'), value: txnLogValue(prepare), timestamp: BigInt(now) }]), {
      leaderEpoch: 0,
    }).written;
    await stateLog.close();
    c = await start(dir);
    const f = await until(
      'the commit marker',
      () => fetchPartition(c, 'crash', 0, 0n, 1),
      (x) => x.lastStableOffset === 4n,
    );
    expect(f.values.filter((v) => !v.control).map((v) => v.value)).to.deep.equal(['open-0', 'open-1', 'open-2']);
    expect(f.values.filter((v) => v.control).map((v) => v.offset)).to.deep.equal([3n]);
    expect(f.abortedTransactions).to.deep.equal([]);
    // the producer's own retry of EndTxn(commit) is answered as done; an abort no longer can be
    expect(await endTxn(c, 'tx-crash', p, true)).to.equal(ErrorCode.NONE);
    expect(await endTxn(c, 'tx-crash', p, false)).to.equal(ErrorCode.INVALID_TXN_STATE);
  });

  it('a transaction still open after a restart is aborted by its timeout and its producer fenced', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const fast = { 'transaction.abort.timed.out.transaction.cleanup.interval.ms': '200' };
    let c = await start(dir, fast);
    await createTopic(c, 'late', 1);
    const p = await openTransaction(c, 'tx-late', 'late', 1500);
    expect((await fetchPartition(c, 'late', 0, 0n, 1)).lastStableOffset).to.equal(0n);
    c = await restart(dir, fast);
    const f = await until(
      'the timeout abort',
      () => fetchPartition(c, 'late', 0, 0n, 1),
      (x) => x.lastStableOffset === 4n,
      15_000,
    );
    expect(f.abortedTransactions).to.deep.equal([{ producerId: p.producerId, firstOffset: 0n }]);
    // the marker carries the bumped epoch: the old producer is fenced everywhere
    expect(await endTxn(c, 'tx-late', p, true, 1)).to.equal(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect(await endTxn(c, 'tx-late', p, true, 3)).to.equal(ErrorCode.PRODUCER_FENCED);
    expect((await produce(c, 'late', 0, producerBatch(p, 3, 1, { transactional: true }), 'tx-late')).errorCode).to.equal(
      ErrorCode.INVALID_PRODUCER_EPOCH,
    );
    // a new instance gets epoch + 2 (one bump for the fence, one for itself)
    const next = await initProducerId(c, 'tx-late', 60_000);
    expect(next.errorCode).to.equal(ErrorCode.NONE);
    expect(next.producerId).to.equal(p.producerId);
    expect(next.producerEpoch).to.equal(p.producerEpoch + 2);
  });

  it('producer ids are never handed out twice: clean restart and kill -9', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const seen = new Set<bigint>();
    const take = async (cl: RawClient, n: number) => {
      for (let i = 0; i < n; i++) {
        const r = await initProducerId(cl, null);
        expect(r.errorCode).to.equal(ErrorCode.NONE);
        expect(r.producerEpoch).to.equal(0);
        expect(seen.has(r.producerId), `producer id ${r.producerId} handed out twice`).to.equal(false);
        seen.add(r.producerId);
      }
    };
    await take(await start(dir), 3);
    await take(await restart(dir), 3);
    raw?.destroy();
    await tb?.stop();
    tb = undefined;
    for (let round = 0; round < 2; round++) {
      const child = await startChildBroker(dir);
      const cl = await RawClient.connect(child.bootstrap);
      try {
        await take(cl, 3);
      } finally {
        cl.destroy();
        child.child.kill('SIGKILL');
        await child.exited;
      }
    }
    await take(await start(dir), 3);
    expect(seen.size).to.equal(15);
  });

  it('an idempotent retry of the last five batches after kill -9 gets the original offsets and is not written again', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const child = await startChildBroker(dir);
    let cl = await RawClient.connect(child.bootstrap);
    await createTopic(cl, 'idem', 1);
    const p = await initProducerId(cl, null);
    const sent: { batch: Buffer; offset: bigint }[] = [];
    for (let i = 0; i < 8; i++) {
      const batch = producerBatch(p, i * 4, 4);
      const r = await produce(cl, 'idem', 0, Buffer.from(batch));
      expect(r.errorCode).to.equal(ErrorCode.NONE);
      sent.push({ batch, offset: r.baseOffset });
    }
    cl.destroy();
    child.child.kill('SIGKILL');
    await child.exited;
    const again = await startChildBroker(dir, child.port);
    cl = await RawClient.connect(again.bootstrap);
    try {
      for (const s of sent.slice(3)) {
        const r = await produce(cl, 'idem', 0, Buffer.from(s.batch));
        expect(r).to.deep.equal({ errorCode: ErrorCode.NONE, baseOffset: s.offset });
      }
      expect((await produce(cl, 'idem', 0, Buffer.from((sent[0] as { batch: Buffer }).batch))).errorCode).to.equal(
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
      );
      const f = await fetchPartition(cl, 'idem', 0, 0n, 0);
      expect(f.highWatermark).to.equal(32n);
      expect(f.values.map((v) => v.value)).to.deep.equal(Array.from({ length: 32 }, (_, i) => `v-${i}`));
      expect((await produce(cl, 'idem', 0, producerBatch(p, 32, 1))).baseOffset).to.equal(32n);
    } finally {
      cl.destroy();
      again.child.kill('SIGKILL');
      await again.exited;
    }
  });

  it('producer.id.expiration.ms: an idle producer is forgotten, after which any sequence is accepted; one with an open transaction is kept', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const c = await start(dir, { 'producer.id.expiration.ms': '1000', 'producer.id.expiration.check.interval.ms': '100' });
    await createTopic(c, 'exp', 1);
    const idle = await initProducerId(c, null);
    expect((await produce(c, 'exp', 0, producerBatch(idle, 0, 2))).errorCode).to.equal(ErrorCode.NONE);
    expect((await produce(c, 'exp', 0, producerBatch(idle, 50, 1))).errorCode).to.equal(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER);
    const open = await openTransaction(c, 'tx-exp', 'exp');
    await new Promise((r) => setTimeout(r, 1600));
    expect((await produce(c, 'exp', 0, producerBatch(idle, 50, 1))).errorCode).to.equal(ErrorCode.NONE);
    // the transactional producer was kept: its next batch must still be in sequence
    expect((await produce(c, 'exp', 0, producerBatch(open, 9, 1, { transactional: true }), 'tx-exp')).errorCode).to.equal(
      ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    );
    expect((await produce(c, 'exp', 0, producerBatch(open, 3, 1, { transactional: true }), 'tx-exp')).errorCode).to.equal(ErrorCode.NONE);
  });

  it('offsets committed in a transaction stay pending across a restart, then commit; a later plain commit wins over an earlier transactional one', async () => {
    const dir = tempDir();
    dirs.push(dir);
    let c = await start(dir);
    await createTopic(c, 'src', 2);
    expect(await offsetCommit(c, 'g', 'src', 0, 5n)).to.equal(ErrorCode.NONE);
    const p = await initProducerId(c, 'tx-off');
    expect(await addOffsets(c, 'tx-off', p, 'g')).to.equal(ErrorCode.NONE);
    expect(await txnOffsetCommit(c, 'tx-off', p, 'g', 'src', 0, 10n)).to.equal(ErrorCode.NONE);
    expect(await txnOffsetCommit(c, 'tx-off', p, 'g', 'src', 1, 20n)).to.equal(ErrorCode.NONE);
    c = await restart(dir);
    expect(await offsetFetch(c, 'g', 'src', 0, true)).to.deep.equal({ errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT, committedOffset: -1n });
    expect(await offsetFetch(c, 'g', 'src', 0, false)).to.deep.equal({ errorCode: ErrorCode.NONE, committedOffset: 5n });
    // a plain commit of partition 1 after the transactional one: it must win when the transaction commits
    expect(await offsetCommit(c, 'g', 'src', 1, 7n)).to.equal(ErrorCode.NONE);
    expect(await endTxn(c, 'tx-off', p, true)).to.equal(ErrorCode.NONE);
    expect(await offsetFetch(c, 'g', 'src', 0, true)).to.deep.equal({ errorCode: ErrorCode.NONE, committedOffset: 10n });
    expect(await offsetFetch(c, 'g', 'src', 1, true)).to.deep.equal({ errorCode: ErrorCode.NONE, committedOffset: 7n });
    // an aborted transaction's offsets never show; all of it survives another restart
    const p2 = await initProducerId(c, 'tx-off');
    expect(await addOffsets(c, 'tx-off', p2, 'g')).to.equal(ErrorCode.NONE);
    expect(await txnOffsetCommit(c, 'tx-off', p2, 'g', 'src', 0, 99n)).to.equal(ErrorCode.NONE);
    expect(await endTxn(c, 'tx-off', p2, false)).to.equal(ErrorCode.NONE);
    c = await restart(dir);
    expect(await offsetFetch(c, 'g', 'src', 0, true)).to.deep.equal({ errorCode: ErrorCode.NONE, committedOffset: 10n });
    expect(await offsetFetch(c, 'g', 'src', 1, true)).to.deep.equal({ errorCode: ErrorCode.NONE, committedOffset: 7n });
    // without AddOffsetsToTxn the commit is refused (KIP-890), and so is a fenced producer
    const p3 = await initProducerId(c, 'tx-off');
    expect(await txnOffsetCommit(c, 'tx-off', p3, 'g', 'src', 0, 11n)).to.equal(ErrorCode.INVALID_TXN_STATE);
    expect(await txnOffsetCommit(c, 'tx-off', p2, 'g', 'src', 0, 11n)).to.equal(ErrorCode.INVALID_PRODUCER_EPOCH);
  });

  it('read_committed: the last stable offset waits for the earliest open transaction; aborted list exact and sorted; control batches returned', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const c = await start(dir);
    await createTopic(c, 'mix', 1);
    const a = await openTransaction(c, 'tx-a', 'mix'); // offsets 0..2
    const b = await initProducerId(c, 'tx-b');
    expect(await addPartitions(c, 'tx-b', b, 'mix', [0])).to.deep.equal([ErrorCode.NONE]);
    expect((await produce(c, 'mix', 0, producerBatch(b, 0, 2, { prefix: 'b', transactional: true }), 'tx-b')).baseOffset).to.equal(3n);
    const plain = await initProducerId(c, null);
    expect((await produce(c, 'mix', 0, producerBatch(plain, 0, 1, { prefix: 'plain' }))).baseOffset).to.equal(5n);
    // b aborts first (marker at 6), a is still open: nothing is stable yet
    expect(await endTxn(c, 'tx-b', b, false)).to.equal(ErrorCode.NONE);
    let f = await fetchPartition(c, 'mix', 0, 0n, 1);
    expect(f.lastStableOffset).to.equal(0n);
    expect(f.values).to.deep.equal([]);
    const uncommitted = await fetchPartition(c, 'mix', 0, 0n, 0);
    expect(uncommitted.abortedTransactions).to.equal(null);
    expect(uncommitted.highWatermark).to.equal(7n);
    expect(uncommitted.lastStableOffset).to.equal(0n);
    // a commits (marker at 7): everything is stable; b's abort is listed with b's first offset
    expect(await endTxn(c, 'tx-a', a, true)).to.equal(ErrorCode.NONE);
    f = await fetchPartition(c, 'mix', 0, 0n, 1);
    expect(f.lastStableOffset).to.equal(8n);
    expect(f.abortedTransactions).to.deep.equal([{ producerId: b.producerId, firstOffset: 3n }]);
    expect(f.values.map((v) => `${v.offset}:${v.control ? 'marker' : v.value}`)).to.deep.equal([
      '0:open-0',
      '1:open-1',
      '2:open-2',
      '3:b-0',
      '4:b-1',
      '5:plain-0',
      '6:marker',
      '7:marker',
    ]);
    // from past b's marker the abort is no longer listed
    f = await fetchPartition(c, 'mix', 0, 7n, 1);
    expect(f.abortedTransactions).to.deep.equal([]);
    // ListOffsets latest: read_committed answers the LSO, read_uncommitted the high watermark
    const c2 = await initProducerId(c, 'tx-c');
    await addPartitions(c, 'tx-c', c2, 'mix', [0]);
    await produce(c, 'mix', 0, producerBatch(c2, 0, 1, { transactional: true }), 'tx-c');
    const latest = async (isolationLevel: number) =>
      (
        await c.request<{ topics: { partitions: { offset: bigint }[] }[] }>(2, 2, {
          replicaId: -1,
          isolationLevel,
          topics: [{ name: 'mix', partitions: [{ partitionIndex: 0, timestamp: -1n }] }],
        })
      ).topics[0]?.partitions[0]?.offset;
    expect(await latest(1)).to.equal(8n);
    expect(await latest(0)).to.equal(9n);
    // an old fetcher (Fetch v2: message format 1, no isolation level) gets the data to the high watermark, aborted and open included, without the markers
    const v2 = await c.request<{ responses: { partitions: { errorCode: number; records: Buffer | null }[] }[] }>(1, 2, {
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      topics: [{ topic: 'mix', partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }] }],
    });
    const legacy = [...logEntries(v2.responses[0]?.partitions[0]?.records ?? Buffer.alloc(0))].flatMap((e) =>
      e.kind === 'message' ? [{ offset: e.message.offset, magic: e.message.magic, value: e.message.value?.toString() }] : [],
    );
    expect(legacy.map((m) => m.magic)).to.satisfy((ms: number[]) => ms.every((x) => x === 1));
    expect(legacy.map((m) => `${m.offset}:${m.value}`)).to.deep.equal([
      '0:open-0',
      '1:open-1',
      '2:open-2',
      '3:b-0',
      '4:b-1',
      '5:plain-0',
      '8:v-0',
    ]);
  });
});
