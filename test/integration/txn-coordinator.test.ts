/**
 * The transaction coordinator's less travelled paths, over the raw protocol against real brokers:
 * KIP-360 InitProducerId with the caller's producer id and epoch (bump, retry, fencing, bad
 * requests), epoch exhaustion rotating to a new producer id, transactional.id.expiration.ms, and
 * DeleteRecords under producer state and an open transaction (librdkafka's 0103 KIP-360 case).
 */
import { expect } from 'chai';
import { readdirSync, rmSync } from 'node:fs';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { partitionFor } from '../../lib/group/records.js';
import { defaultLogConfig } from '../../lib/log/log-config.js';
import { PartitionLog } from '../../lib/log/partition-log.js';
import { TRANSACTION_STATE_TOPIC, TxnState, txnLogKey, txnLogValue } from '../../lib/txn/txn-metadata.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { RawClient } from '../helpers/raw-client.js';
import {
  addPartitions,
  createTopic,
  endTxn,
  fetchPartition,
  initProducerId,
  produce,
  producerBatch,
  RETRIED,
  type Pid,
} from '../helpers/txn-raw.js';

type InitResult = Pid & { errorCode: number };

/** InitProducerId v3+ with the caller's current producer id and epoch (KIP-360). */
async function initWith(
  raw: RawClient,
  transactionalId: string | null,
  producerId: bigint,
  producerEpoch: number,
  version = 4,
): Promise<InitResult> {
  // retried as clients retry while the coordinator loads (right after a restart the transaction state
  // partition may still be read: COORDINATOR_LOAD_IN_PROGRESS), up to ~10 s; no test here expects these codes
  for (let attempt = 0; ; attempt++) {
    const r = await raw.request<InitResult>(22, version, { transactionalId, transactionTimeoutMs: 60_000, producerId, producerEpoch });
    if (!RETRIED.has(r.errorCode) || attempt >= 100) return r;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function deleteRecords(
  raw: RawClient,
  topic: string,
  partition: number,
  offset: bigint,
): Promise<{ errorCode: number; lowWatermark: bigint }> {
  const r = await raw.request<{ topics: { partitions: { errorCode: number; lowWatermark: bigint }[] }[] }>(21, 1, {
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, offset }] }],
    timeoutMs: 5000,
  });
  const p = r.topics[0]?.partitions[0];
  return { errorCode: p?.errorCode ?? -1, lowWatermark: p?.lowWatermark ?? -1n };
}

describe('transaction coordinator: KIP-360, epoch exhaustion, id expiry, DeleteRecords', function () {
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

  async function start(config: Record<string, string> = {}, dataDir?: string): Promise<RawClient> {
    tb = await startTestBroker(config, dataDir === undefined ? {} : { dataDir });
    raw = await RawClient.connect(tb.bootstrap);
    return raw;
  }

  it('a fresh broker answers the first InitProducerId at the first attempt; __transaction_state makes only the log written to', async () => {
    const dataDir = tempDir();
    dirs.push(dataDir);
    const c = await start({}, dataDir);
    // FindCoordinator creates the topic and waits for it; the id's state partition has no log until written
    const found = await c.request<{ errorCode: number }>(10, 2, { key: 'tx-first', keyType: 1 }, 30_000);
    expect(found.errorCode).to.equal(ErrorCode.NONE);
    const stateDirs = (): string[] => readdirSync(dataDir).filter((d) => d.startsWith(`${TRANSACTION_STATE_TOPIC}-`));
    expect(stateDirs()).to.deep.equal([]);
    // one request, no retry: its write makes the partition's log and is stored
    const init = await c.request<InitResult>(22, 1, { transactionalId: 'tx-first', transactionTimeoutMs: 60_000 }, 30_000);
    expect(init.errorCode).to.equal(ErrorCode.NONE);
    expect(init.producerId >= 0n).to.equal(true);
    expect(stateDirs()).to.deep.equal([`${TRANSACTION_STATE_TOPIC}-${partitionFor('tx-first', 50)}`]);
  });

  it('KIP-360: the current producer is bumped, a retry of that call gets the same epoch back, anyone else is fenced; bad pid/epoch pairs are refused', async () => {
    const c = await start();
    const first = await initProducerId(c, 'k360');
    expect(first).to.include({ errorCode: ErrorCode.NONE, producerEpoch: 0 });
    const bumped = await initWith(c, 'k360', first.producerId, 0);
    expect(bumped).to.include({ errorCode: ErrorCode.NONE, producerId: first.producerId, producerEpoch: 1 });
    // the same call again (its answer was lost): the current epoch, not another bump
    expect(await initWith(c, 'k360', first.producerId, 0)).to.include({ errorCode: ErrorCode.NONE, producerEpoch: 1 });
    // an older instance asking with an epoch that is neither current nor the last: fenced
    const zombie = await initWith(c, 'k360', first.producerId, 5);
    expect(zombie.errorCode).to.equal(ErrorCode.PRODUCER_FENCED);
    expect((await initWith(c, 'k360', first.producerId, 5, 3)).errorCode).to.equal(ErrorCode.INVALID_PRODUCER_EPOCH);
    expect((await initWith(c, 'k360', first.producerId + 77n, 1)).errorCode).to.equal(ErrorCode.PRODUCER_FENCED);
    expect((await initWith(c, 'k360', first.producerId, -1)).errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    expect((await initWith(c, 'k360', -1n, 3)).errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    expect((await initWith(c, '', -1n, -1)).errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    // an idempotent producer asking for a bump gets a fresh producer id, as Kafka does
    const idem = await initProducerId(c, null);
    const again = await initWith(c, null, idem.producerId, 0);
    expect(again.errorCode).to.equal(ErrorCode.NONE);
    expect(again.producerId).to.not.equal(idem.producerId);
    expect(again.producerEpoch).to.equal(0);
  });

  it('an exhausted epoch moves the transactional id to a new producer id; the KIP-360 retry across the rotation is recognised', async () => {
    const dir = tempDir();
    dirs.push(dir);
    let c = await start({}, dir);
    const p = await initProducerId(c, 'tired');
    raw?.destroy();
    await tb?.stop();
    tb = undefined;
    // the id's producer at epoch 32766, as 32766 bumps would leave it
    const log = await PartitionLog.open(
      dir,
      TRANSACTION_STATE_TOPIC,
      partitionFor('tired', 50),
      defaultLogConfig({ cleanupPolicy: ['compact'] }),
      { recover: false },
    );
    const now = Date.now();
    const value = txnLogValue({
      transactionalId: 'tired',
      producerId: p.producerId,
      previousProducerId: -1n,
      producerEpoch: 32766,
      lastProducerEpoch: -1,
      txnTimeoutMs: 60_000,
      state: TxnState.COMPLETE_COMMIT,
      partitions: new Map(),
      txnStartTimestamp: now,
      txnLastUpdateTimestamp: now,
      pending: null,
    });
    await log.append(buildRecordBatch([{ key: txnLogKey('tired'), value, timestamp: BigInt(now) }]), { leaderEpoch: 0 }).written;
    await log.close();
    c = await start({}, dir);
    const rotated = await initWith(c, 'tired', p.producerId, 32766);
    expect(rotated.errorCode).to.equal(ErrorCode.NONE);
    expect(rotated.producerId).to.not.equal(p.producerId);
    expect(rotated.producerEpoch).to.equal(0);
    // the same request again (answer lost): the old id with its exhausted epoch is still accepted and gets the current producer back
    const retried = await initWith(c, 'tired', p.producerId, 32766);
    expect(retried).to.include({ errorCode: ErrorCode.NONE, producerId: rotated.producerId, producerEpoch: 0 });
    // the rotated producer works
    await createTopic(c, 'rot');
    expect(await addPartitions(c, 'tired', rotated, 'rot', [0])).to.deep.equal([ErrorCode.NONE]);
    expect((await produce(c, 'rot', 0, producerBatch(rotated, 0, 1, { transactional: true }), 'tired')).errorCode).to.equal(ErrorCode.NONE);
    expect(await endTxn(c, 'tired', rotated, true)).to.equal(ErrorCode.NONE);
  });

  it('transactional.id.expiration.ms: an idle id is forgotten (tombstone) and starts over with a new producer id; an open one is kept', async () => {
    const c = await start({ 'transactional.id.expiration.ms': '800', 'transaction.remove.expired.transaction.cleanup.interval.ms': '200' });
    await createTopic(c, 'exp');
    const idle = await initProducerId(c, 'idle-id');
    const busy = await initProducerId(c, 'busy-id');
    expect(await addPartitions(c, 'busy-id', busy, 'exp', [0])).to.deep.equal([ErrorCode.NONE]);
    await new Promise((r) => setTimeout(r, 1600));
    const described = await c.request<{ transactionStates: { errorCode: number; transactionState: string }[] }>(65, 0, {
      transactionalIds: ['idle-id', 'busy-id'],
    });
    expect(described.transactionStates.map((t) => t.errorCode)).to.deep.equal([ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, ErrorCode.NONE]);
    expect(described.transactionStates[1]?.transactionState).to.equal('Ongoing');
    expect(await endTxn(c, 'idle-id', idle, true)).to.equal(ErrorCode.INVALID_PRODUCER_ID_MAPPING);
    const fresh = await initProducerId(c, 'idle-id');
    expect(fresh.errorCode).to.equal(ErrorCode.NONE);
    expect(fresh.producerId).to.not.equal(idle.producerId);
    expect(fresh.producerEpoch).to.equal(0);
    expect(await endTxn(c, 'busy-id', busy, false)).to.equal(ErrorCode.NONE);
  });

  it('DeleteRecords keeps producer state and does not break an open transaction: sequences continue, the transaction commits and is read', async () => {
    const c = await start();
    await createTopic(c, 'dr');
    const idem = await initProducerId(c, null);
    for (let i = 0; i < 3; i++)
      expect((await produce(c, 'dr', 0, producerBatch(idem, i * 2, 2, { prefix: 'idem' }))).errorCode).to.equal(ErrorCode.NONE);
    // transaction 1 commits, transaction 2 stays open while everything before it is deleted
    const p = await initProducerId(c, 'dr-txn');
    expect(await addPartitions(c, 'dr-txn', p, 'dr', [0])).to.deep.equal([ErrorCode.NONE]);
    await produce(c, 'dr', 0, producerBatch(p, 0, 2, { prefix: 't1', transactional: true }), 'dr-txn');
    expect(await endTxn(c, 'dr-txn', p, true)).to.equal(ErrorCode.NONE);
    expect(await addPartitions(c, 'dr-txn', p, 'dr', [0])).to.deep.equal([ErrorCode.NONE]);
    const t2 = await produce(c, 'dr', 0, producerBatch(p, 2, 2, { prefix: 't2', transactional: true }), 'dr-txn');
    expect(t2.baseOffset).to.equal(9n);
    expect((await fetchPartition(c, 'dr', 0, 0n, 1)).lastStableOffset).to.equal(9n);
    expect(await deleteRecords(c, 'dr', 0, 10n)).to.deep.equal({ errorCode: ErrorCode.NONE, lowWatermark: 10n });
    // the open transaction's first offset is below the log start now: the LSO is the log start
    expect((await fetchPartition(c, 'dr', 0, 10n, 1)).lastStableOffset).to.equal(10n);
    // the idempotent producer's state survived: its retry is still a duplicate, its next batch in sequence
    expect(await produce(c, 'dr', 0, producerBatch(idem, 4, 2, { prefix: 'idem' }))).to.deep.equal({
      errorCode: ErrorCode.NONE,
      baseOffset: 4n,
    });
    expect((await produce(c, 'dr', 0, producerBatch(idem, 9, 1))).errorCode).to.equal(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER);
    expect((await produce(c, 'dr', 0, producerBatch(idem, 6, 1, { prefix: 'idem' }))).baseOffset).to.equal(11n);
    // transaction 2 continues in sequence and commits
    expect((await produce(c, 'dr', 0, producerBatch(p, 4, 1, { prefix: 't2', transactional: true }), 'dr-txn')).baseOffset).to.equal(12n);
    expect(await endTxn(c, 'dr-txn', p, true)).to.equal(ErrorCode.NONE);
    const f = await fetchPartition(c, 'dr', 0, 10n, 1);
    expect(f.lastStableOffset).to.equal(14n);
    // (the batch holding offset 10 starts at 9: returned whole, as Kafka does; clients skip what is below the fetch offset)
    expect(f.values.filter((v) => !v.control && v.offset >= 10n).map((v) => `${v.offset}:${v.value}`)).to.deep.equal([
      '10:t2-3',
      '11:idem-6',
      '12:t2-4',
    ]);
    expect(f.abortedTransactions).to.deep.equal([]);
  });
});
