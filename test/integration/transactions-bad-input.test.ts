/**
 * Bad idempotent and transactional input on the wire (issue 11), raw requests encoded with the
 * generated codecs against a running broker: control batches from a client, transactional records
 * without a transactional id, negative sequences, unknown producer ids and transactional ids, invalid
 * transaction timeouts, out-of-order sequences, old epochs, exact retries, EndTxn in the wrong state
 * or with an old epoch (per version), transactional writes to partitions outside the transaction, and
 * OffsetFetch require_stable against a pending TxnOffsetCommit. Every check answers Kafka's error code
 * and then verifies nothing changed: the log end offsets are as before and another producer still
 * appends exactly where expected.
 */
import { expect } from 'chai';
import { ControlRecordType, buildEndTxnBatch, buildRecordBatch } from '../../protocol/records/index.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { rawOffsetFetch } from '../helpers/eos.js';
import { RawClient, rawCreateTopics, rawListOffset, type PartitionProduceResult } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';

const E = {
  NONE: 0,
  OUT_OF_ORDER_SEQUENCE_NUMBER: 45,
  INVALID_PRODUCER_EPOCH: 47,
  INVALID_TXN_STATE: 48,
  INVALID_PRODUCER_ID_MAPPING: 49,
  INVALID_TRANSACTION_TIMEOUT: 50,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 53,
  INVALID_RECORD: 87,
  UNSTABLE_OFFSET_COMMIT: 88,
  PRODUCER_FENCED: 90,
} as const;

const TOPIC = 'txn-bad';
const PARTITIONS = 2;
const MAX_TIMEOUT = 900_000; // transaction.max.timeout.ms (default)

interface Pid {
  producerId: bigint;
  producerEpoch: number;
}

interface BatchOpts {
  producerId?: bigint;
  producerEpoch?: number;
  baseSequence?: number;
  transactional?: boolean;
}

/** `n` records `tag-0..` as one v2 batch, optionally with a producer id, epoch, sequence and the transactional flag. */
function batch(tag: string, n: number, o: BatchOpts = {}): Buffer {
  const now = BigInt(Date.now());
  return buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({ key: null, value: Buffer.from(`${tag}-${i}`), timestamp: now })),
    {
      producerId: o.producerId ?? -1n,
      producerEpoch: o.producerEpoch ?? -1,
      baseSequence: o.baseSequence ?? -1,
      isTransactional: o.transactional === true,
    },
  );
}

describe('bad idempotent and transactional input (raw protocol): Kafka error codes, nothing changed', function () {
  this.timeout(60_000);
  let b: TestBroker;
  let c: RawClient;

  const cleanup = new Cleanup();

  before(async () => {
    b = cleanup.add(await startTestBroker(), (t) => t.stop());
    c = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    await rawCreateTopics(c, [{ name: TOPIC, partitions: PARTITIONS }]);
  });
  after(() => cleanup.run());

  async function initPid(transactionalId: string | null, transactionTimeoutMs = 60_000, v = 1): Promise<Pid & { errorCode: number }> {
    return c.request<Pid & { errorCode: number }>(22, v, { transactionalId, transactionTimeoutMs, producerId: -1n, producerEpoch: -1 });
  }

  async function initOk(transactionalId: string | null): Promise<Pid> {
    const r = await initPid(transactionalId);
    expect(r.errorCode, `InitProducerId ${transactionalId}`).to.equal(E.NONE);
    return { producerId: r.producerId, producerEpoch: r.producerEpoch };
  }

  async function produce(transactionalId: string | null, parts: [number, Buffer][], v = 8): Promise<PartitionProduceResult[]> {
    const res = await c.request<{ responses: { partitionResponses: PartitionProduceResult[] }[] }>(0, v, {
      transactionalId,
      acks: -1,
      timeoutMs: 10_000,
      topicData: [{ name: TOPIC, partitionData: parts.map(([index, records]) => ({ index, records })) }],
    });
    return res.responses.flatMap((t) => t.partitionResponses).sort((x, y) => x.index - y.index);
  }

  async function endTxn(transactionalId: string, p: Pid, committed: boolean, v = 1): Promise<number> {
    return (
      await c.request<{ errorCode: number }>(26, v, {
        transactionalId,
        producerId: p.producerId,
        producerEpoch: p.producerEpoch,
        committed,
      })
    ).errorCode;
  }

  async function addPartitions(transactionalId: string, p: Pid, partitions: number[]): Promise<number[]> {
    const res = await c.request<{ resultsByTopicV3AndBelow: { resultsByPartition: { partitionErrorCode: number }[] }[] }>(24, 1, {
      v3AndBelowTransactionalId: transactionalId,
      v3AndBelowProducerId: p.producerId,
      v3AndBelowProducerEpoch: p.producerEpoch,
      v3AndBelowTopics: [{ name: TOPIC, partitions }],
    });
    return res.resultsByTopicV3AndBelow.flatMap((t) => t.resultsByPartition.map((r) => r.partitionErrorCode));
  }

  /** High watermarks (one request at a time: a RawClient matches responses in order). */
  async function logEnds(): Promise<bigint[]> {
    const out: bigint[] = [];
    for (let p = 0; p < PARTITIONS; p++) out.push(await rawListOffset(c, TOPIC, p));
    return out;
  }

  /**
   * Runs a bad-input check, then verifies nothing changed: the log end offsets are those before it
   * (plus `appended`, for checks that append on purpose), and a fresh idempotent producer appends to
   * every partition right there.
   */
  async function check(fn: () => Promise<void>, appended: number[] = []): Promise<void> {
    const before = await logEnds();
    await fn();
    const after = await logEnds();
    expect(after, 'log end offsets').to.deep.equal(before.map((o, p) => o + BigInt(appended[p] ?? 0)));
    const other = await initOk(null);
    const res = await produce(
      null,
      after.map((_, p) => [p, batch('other', 2, { ...other, baseSequence: 0 })]),
    );
    expect(
      res.map((r) => [r.errorCode, r.baseOffset]),
      'another producer appends where the log ended',
    ).to.deep.equal(after.map((o) => [E.NONE, o]));
  }

  it('a client Produce carrying a control batch → INVALID_RECORD (transactional marker within a transaction, and a bare control batch)', async () => {
    const txnId = 'bad-control';
    const p = await initOk(txnId);
    expect(await addPartitions(txnId, p, [0])).to.deep.equal([E.NONE]);
    await check(async () => {
      const marker = buildEndTxnBatch({ type: ControlRecordType.COMMIT, ...p, coordinatorEpoch: 0, timestamp: BigInt(Date.now()) });
      expect((await produce(txnId, [[0, marker]]))[0]?.errorCode, 'COMMIT marker from a client').to.equal(E.INVALID_RECORD);
      const bare = buildRecordBatch(
        [{ key: Buffer.from([0, 0, 0, 1]), value: Buffer.from([0, 0, 0, 0, 0, 0]), timestamp: BigInt(Date.now()) }],
        { isControl: true },
      );
      expect((await produce(null, [[1, bare]]))[0]?.errorCode, 'non-transactional control batch').to.equal(E.INVALID_RECORD);
    });
    // the transaction is still usable
    expect((await produce(txnId, [[0, batch('ok', 1, { ...p, baseSequence: 0, transactional: true })]]))[0]?.errorCode).to.equal(E.NONE);
    expect(await endTxn(txnId, p, true)).to.equal(E.NONE);
  });

  it('transactional records in a Produce whose transactional_id is null → every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED, nothing written', async () => {
    const txnId = 'bad-null-txn-id';
    const p = await initOk(txnId);
    expect(await addPartitions(txnId, p, [0, 1])).to.deep.equal([E.NONE, E.NONE]);
    await check(async () => {
      const res = await produce(null, [
        [0, batch('txn', 3, { ...p, baseSequence: 0, transactional: true })],
        [1, batch('plain', 3)],
      ]);
      expect(res.map((r) => r.errorCode)).to.deep.equal([E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]);
    });
    expect(await endTxn(txnId, p, false)).to.equal(E.NONE);
  });

  it('an idempotent batch with a negative base sequence → INVALID_RECORD', async () => {
    const p = await initOk(null);
    await check(async () => {
      expect((await produce(null, [[0, batch('neg', 2, { ...p, baseSequence: -5 })]]))[0]?.errorCode).to.equal(E.INVALID_RECORD);
      expect((await produce(null, [[0, batch('neg', 2, { ...p, baseSequence: -1 })]]))[0]?.errorCode).to.equal(E.INVALID_RECORD);
    });
  });

  it('EndTxn for an unknown producer id or an unknown transactional id → INVALID_PRODUCER_ID_MAPPING', async () => {
    const txnId = 'bad-endtxn-mapping';
    const p = await initOk(txnId);
    expect(await addPartitions(txnId, p, [0])).to.deep.equal([E.NONE]);
    await check(async () => {
      expect(
        await endTxn(txnId, { producerId: p.producerId + 1000n, producerEpoch: p.producerEpoch }, true),
        'unknown producer id',
      ).to.equal(E.INVALID_PRODUCER_ID_MAPPING);
      expect(await endTxn('never-initialised', p, true), 'unknown transactional id').to.equal(E.INVALID_PRODUCER_ID_MAPPING);
      expect(await endTxn('never-initialised', p, false, 3), 'unknown transactional id, v3').to.equal(E.INVALID_PRODUCER_ID_MAPPING);
    });
    // the real transaction was not touched: it still takes data and commits
    expect((await produce(txnId, [[0, batch('ok', 1, { ...p, baseSequence: 0, transactional: true })]]))[0]?.errorCode).to.equal(E.NONE);
    expect(await endTxn(txnId, p, true)).to.equal(E.NONE);
  });

  it('InitProducerId with transaction timeout 0 or above transaction.max.timeout.ms → INVALID_TRANSACTION_TIMEOUT (and no transactional id is created)', async () => {
    await check(async () => {
      for (const v of [1, 4]) {
        for (const timeout of [0, -1, MAX_TIMEOUT + 1]) {
          const r = await initPid('bad-timeout', timeout, v);
          expect({ errorCode: r.errorCode, producerId: r.producerId }, `v${v} timeout ${timeout}`).to.deep.equal({
            errorCode: E.INVALID_TRANSACTION_TIMEOUT,
            producerId: -1n,
          });
        }
      }
      expect(await endTxn('bad-timeout', { producerId: 0n, producerEpoch: 0 }, false), 'the id was not created').to.equal(
        E.INVALID_PRODUCER_ID_MAPPING,
      );
    });
    expect((await initPid('bad-timeout', MAX_TIMEOUT)).errorCode, 'the maximum itself is fine').to.equal(E.NONE);
  });

  it('sequences: out of order → OUT_OF_ORDER_SEQUENCE_NUMBER, old epoch → INVALID_PRODUCER_EPOCH, exact retry → NONE with the original offset (not appended twice)', async () => {
    const p = await initOk(null);
    const seq = (baseSequence: number, n: number, producerEpoch = p.producerEpoch) =>
      batch(`seq${baseSequence}e${producerEpoch}`, n, { producerId: p.producerId, producerEpoch, baseSequence });
    const first = await produce(null, [[0, seq(0, 5)]]);
    const second = await produce(null, [[0, seq(5, 5)]]);
    expect(first[0]?.errorCode).to.equal(E.NONE);
    expect(second[0]?.baseOffset).to.equal(first[0]!.baseOffset + 5n);
    await check(async () => {
      expect((await produce(null, [[0, seq(20, 1)]]))[0]?.errorCode, 'a gap').to.equal(E.OUT_OF_ORDER_SEQUENCE_NUMBER);
      expect((await produce(null, [[0, seq(3, 5)]]))[0]?.errorCode, 'overlapping, not an exact retry').to.equal(
        E.OUT_OF_ORDER_SEQUENCE_NUMBER,
      );
      expect((await produce(null, [[0, seq(1, 1, p.producerEpoch + 1)]]))[0]?.errorCode, 'a new epoch must start at 0').to.equal(
        E.OUT_OF_ORDER_SEQUENCE_NUMBER,
      );
      // exact retries of cached batches: the original offsets, nothing appended
      const retry1 = await produce(null, [[0, seq(0, 5)]]);
      const retry2 = await produce(null, [[0, seq(5, 5)]]);
      expect([retry1[0]?.errorCode, retry1[0]?.baseOffset], 'retry of the first batch').to.deep.equal([E.NONE, first[0]!.baseOffset]);
      expect([retry2[0]?.errorCode, retry2[0]?.baseOffset], 'retry of the second batch').to.deep.equal([E.NONE, second[0]!.baseOffset]);
    });
    // five more batches push the first two out of the cache: a retry of those is out of order now
    for (let i = 0; i < 5; i++) expect((await produce(null, [[0, seq(10 + i, 1)]]))[0]?.errorCode).to.equal(E.NONE);
    await check(async () => {
      expect((await produce(null, [[0, seq(5, 5)]]))[0]?.errorCode, 'retry of a batch no longer cached').to.equal(
        E.OUT_OF_ORDER_SEQUENCE_NUMBER,
      );
    });
    // the producer bumps its epoch (as librdkafka does locally): seq 0 at epoch+1 is fine, the old epoch is fenced
    const bumped = await produce(null, [[0, seq(0, 2, p.producerEpoch + 1)]]);
    expect(bumped[0]?.errorCode, 'new epoch from sequence 0').to.equal(E.NONE);
    await check(async () => {
      expect((await produce(null, [[0, seq(10, 1)]]))[0]?.errorCode, 'the old epoch').to.equal(E.INVALID_PRODUCER_EPOCH);
      expect((await produce(null, [[0, seq(0, 5)]]))[0]?.errorCode, "the old epoch's retry").to.equal(E.INVALID_PRODUCER_EPOCH);
    });
    expect((await produce(null, [[0, seq(2, 1, p.producerEpoch + 1)]]))[0]?.baseOffset, 'the new epoch continues').to.equal(
      bumped[0]!.baseOffset + 2n + 2n,
    );
  });

  it('EndTxn on a transactional id in state Empty → INVALID_TXN_STATE; with an old epoch → INVALID_PRODUCER_EPOCH (v0/v1), PRODUCER_FENCED (v2+)', async () => {
    const txnId = 'bad-endtxn-state';
    const old = await initOk(txnId);
    await check(async () => {
      expect(await endTxn(txnId, old, true), 'commit in Empty').to.equal(E.INVALID_TXN_STATE);
      expect(await endTxn(txnId, old, false), 'abort in Empty').to.equal(E.INVALID_TXN_STATE);
    });
    const cur = await initOk(txnId);
    expect(cur.producerEpoch).to.equal(old.producerEpoch + 1);
    expect(await addPartitions(txnId, cur, [1])).to.deep.equal([E.NONE]);
    await check(async () => {
      for (const [v, code] of [
        [0, E.INVALID_PRODUCER_EPOCH],
        [1, E.INVALID_PRODUCER_EPOCH],
        [2, E.PRODUCER_FENCED],
        [3, E.PRODUCER_FENCED],
        [4, E.PRODUCER_FENCED],
      ] as const) {
        expect(await endTxn(txnId, old, true, v), `EndTxn v${v} with the old epoch`).to.equal(code);
      }
    });
    // the current producer's transaction is intact
    expect((await produce(txnId, [[1, batch('cur', 1, { ...cur, baseSequence: 0, transactional: true })]]))[0]?.errorCode).to.equal(E.NONE);
    expect(await endTxn(txnId, cur, true)).to.equal(E.NONE);
  });

  it('a transactional Produce (v3-v10) to a partition not added to the transaction → INVALID_TXN_STATE', async () => {
    const txnId = 'bad-not-added';
    const p = await initOk(txnId);
    expect(await addPartitions(txnId, p, [0])).to.deep.equal([E.NONE]);
    await check(async () => {
      for (const v of [3, 8, 10]) {
        const res = await produce(txnId, [[1, batch(`v${v}`, 1, { ...p, baseSequence: 0, transactional: true })]], v);
        expect(res[0]?.errorCode, `Produce v${v}`).to.equal(E.INVALID_TXN_STATE);
      }
    });
    expect(
      (await produce(txnId, [[0, batch('added', 1, { ...p, baseSequence: 0, transactional: true })]]))[0]?.errorCode,
      'the added partition',
    ).to.equal(E.NONE);
    expect(await endTxn(txnId, p, false)).to.equal(E.NONE);
  });

  it('OffsetFetch v7 require_stable with a pending TxnOffsetCommit → UNSTABLE_OFFSET_COMMIT; without: the old offset; after EndTxn(commit): the new one', async () => {
    const groupId = 'bad-offsets-group';
    const txnId = 'bad-offsets-txn';
    const commit = await c.request<{ topics: { partitions: { errorCode: number }[] }[] }>(8, 2, {
      groupId,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      retentionTimeMs: -1n,
      topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, committedOffset: 5n, committedMetadata: null }] }],
    });
    expect(commit.topics[0]?.partitions[0]?.errorCode).to.equal(E.NONE);
    const offsets = async (requireStable: boolean) =>
      (await rawOffsetFetch(c, groupId, TOPIC, [0, 1], requireStable)).partitions.map((p) => [p.errorCode, p.committedOffset]);
    const txnCommit = async (p: Pid, offset: bigint) => {
      expect(
        (await c.request<{ errorCode: number }>(25, 1, { transactionalId: txnId, ...p, groupId })).errorCode,
        'AddOffsetsToTxn',
      ).to.equal(E.NONE);
      const r = await c.request<{ topics: { partitions: { errorCode: number }[] }[] }>(28, 1, {
        transactionalId: txnId,
        groupId,
        ...p,
        topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, committedOffset: offset, committedMetadata: null }] }],
      });
      expect(r.topics[0]?.partitions[0]?.errorCode, 'TxnOffsetCommit').to.equal(E.NONE);
    };
    const p = await initOk(txnId);
    await check(async () => {
      await txnCommit(p, 10n);
      expect(await offsets(true), 'require_stable, pending').to.deep.equal([
        [E.UNSTABLE_OFFSET_COMMIT, -1n],
        [E.NONE, -1n],
      ]);
      expect(await offsets(false), 'not require_stable, pending').to.deep.equal([
        [E.NONE, 5n],
        [E.NONE, -1n],
      ]);
      expect(await endTxn(txnId, p, true)).to.equal(E.NONE);
      expect(await offsets(true), 'require_stable, committed').to.deep.equal([
        [E.NONE, 10n],
        [E.NONE, -1n],
      ]);
      // an aborted transactional commit leaves the committed offset alone
      await txnCommit(p, 20n);
      expect(await offsets(true), 'require_stable, pending again').to.deep.equal([
        [E.UNSTABLE_OFFSET_COMMIT, -1n],
        [E.NONE, -1n],
      ]);
      expect(await endTxn(txnId, p, false)).to.equal(E.NONE);
      expect(await offsets(true), 'require_stable, aborted').to.deep.equal([
        [E.NONE, 10n],
        [E.NONE, -1n],
      ]);
      expect(await offsets(false), 'not require_stable, aborted').to.deep.equal([
        [E.NONE, 10n],
        [E.NONE, -1n],
      ]);
    });
  });
});
