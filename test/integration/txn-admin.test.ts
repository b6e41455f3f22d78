/**
 * The KIP-664 admin APIs against a real broker: transactions and idempotent producers driven by
 * kafkajs, DescribeProducers / DescribeTransactions / ListTransactions sent over the raw protocol.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ApiVersionsResponse } from '../../protocol/generated/api-versions.js';
import type {
  DescribeProducersResponse,
  DescribeProducersResponsePartitionResponse,
  DescribeProducersResponseProducerState,
} from '../../protocol/generated/describe-producers.js';
import type {
  DescribeTransactionsResponse,
  DescribeTransactionsResponseTransactionState,
} from '../../protocol/generated/describe-transactions.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ListTransactionsResponse } from '../../protocol/generated/list-transactions.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawClient, rawCreateTopics, rawProduce } from '../helpers/raw-client.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { Cleanup } from '../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');
type Kafka = InstanceType<typeof Kafka>;
type Producer = ReturnType<Kafka['producer']>;

const TXN_TIMEOUT_MS = 45_000;

async function describeProducers(
  raw: RawClient,
  topic: string,
  partitions: number[],
): Promise<DescribeProducersResponsePartitionResponse[]> {
  const r = await raw.request<DescribeProducersResponse>(ApiKey.DescribeProducers, 0, {
    topics: [{ name: topic, partitionIndexes: partitions }],
  });
  expect(r.topics.map((t) => t.name)).to.deep.equal([topic]);
  return r.topics[0]?.partitions ?? [];
}

/** The single active producer of one partition (asserts there is exactly one). */
async function onlyProducer(raw: RawClient, topic: string, partition: number): Promise<DescribeProducersResponseProducerState> {
  const [p] = await describeProducers(raw, topic, [partition]);
  expect(p?.errorCode).to.equal(ErrorCode.NONE);
  expect(p?.activeProducers).to.have.length(1);
  return p!.activeProducers[0]!;
}

async function describeTxns(raw: RawClient, ids: string[]): Promise<DescribeTransactionsResponseTransactionState[]> {
  const r = await raw.request<DescribeTransactionsResponse>(ApiKey.DescribeTransactions, 0, { transactionalIds: ids });
  return r.transactionStates;
}

async function describeTxn(raw: RawClient, id: string): Promise<DescribeTransactionsResponseTransactionState> {
  const [s] = await describeTxns(raw, [id]);
  expect(s?.transactionalId).to.equal(id);
  return s!;
}

async function listTxns(
  raw: RawClient,
  f: { states?: string[]; pids?: bigint[]; durationMs?: bigint } = {},
  version = 1,
): Promise<ListTransactionsResponse> {
  const body: Record<string, unknown> = { stateFilters: f.states ?? [], producerIdFilters: f.pids ?? [] };
  if (version >= 1) body['durationFilter'] = f.durationMs ?? -1n;
  return raw.request<ListTransactionsResponse>(ApiKey.ListTransactions, version, body);
}

/** [transactionalId, state] of a ListTransactions answer. */
function listed(r: ListTransactionsResponse): [string, string][] {
  expect(r.errorCode).to.equal(ErrorCode.NONE);
  return r.transactionStates.map((s) => [s.transactionalId, s.transactionState]);
}

function txnProducer(kafka: Kafka, transactionalId: string): Producer {
  return kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout: TXN_TIMEOUT_MS });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('KIP-664 admin APIs: DescribeProducers, DescribeTransactions, ListTransactions', function () {
  this.timeout(60_000);

  describe('one broker, transactions driven by kafkajs', () => {
    let b: TestBroker;
    let raw: RawClient;
    let kafka: Kafka;
    const producers: Producer[] = [];
    const cleanup = new Cleanup();
    before(async () => {
      b = cleanup.add(await startTestBroker({ 'transaction.state.log.num.partitions': 3 }), (t) => t.stop());
      raw = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
      kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'txn-admin-test', logLevel: logLevel.NOTHING });
    });
    after(async () => {
      for (const p of producers) await p.disconnect().catch(() => undefined);
      await cleanup.run();
    });

    it('advertises DescribeProducers v0, DescribeTransactions v0 and ListTransactions v0-1', async () => {
      const r = await raw.request<ApiVersionsResponse>(ApiKey.ApiVersions, 3, {
        clientSoftwareName: 'gregor-test',
        clientSoftwareVersion: '1.0',
      });
      const ranges = new Map(r.apiKeys.map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]));
      expect(ranges.get(ApiKey.DescribeProducers)).to.deep.equal([0, 0]);
      expect(ranges.get(ApiKey.DescribeTransactions)).to.deep.equal([0, 0]);
      expect(ranges.get(ApiKey.ListTransactions)).to.deep.equal([0, 1]);
    });

    it('before __transaction_state exists: ListTransactions lists nothing with NONE (and creates nothing); DescribeTransactions is retriable', async () => {
      for (const v of [0, 1]) {
        const r = await listTxns(raw, { states: ['Ongoing', 'NoSuchState'] }, v);
        expect(r.errorCode).to.equal(ErrorCode.NONE);
        expect(r.transactionStates).to.deep.equal([]);
        expect(r.unknownStateFilters).to.deep.equal(['NoSuchState']);
      }
      expect((await describeTxn(raw, 'not-yet')).errorCode).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
      const md = await raw.request<{ topics: { name: string }[] }>(ApiKey.Metadata, 1, { topics: null });
      expect(md.topics.map((t) => t.name)).to.not.include('__transaction_state');
    });

    it('an open transaction is Ongoing with its partitions and start time; each partition shows the first offset written in it; after commit: CompleteCommit, no partitions, no open transaction', async () => {
      const topic = 'adm-open';
      await rawCreateTopics(raw, [{ name: topic, partitions: 3 }]);
      // two plain records first, so the transaction's first offset on partition 0 is 2, not 0
      const plain = buildRecordBatch([0, 1].map((i) => ({ key: null, value: Buffer.from(`plain-${i}`), timestamp: BigInt(Date.now()) })));
      expect((await rawProduce(raw, topic, [[0, plain]]))[0]?.errorCode).to.equal(ErrorCode.NONE);

      const producer = txnProducer(kafka, 'tx-open');
      producers.push(producer);
      await producer.connect();
      const before = Date.now();
      const tx = await producer.transaction();
      const ts = Date.now() - 10_000;
      const sent0 = await tx.send({
        topic,
        messages: [
          { value: 'a', partition: 0, timestamp: String(ts) },
          { value: 'b', partition: 0, timestamp: String(ts + 7) },
        ],
      });
      const sent2 = await tx.send({ topic, messages: [{ value: 'c', partition: 2, timestamp: String(ts + 3) }] });
      const after = Date.now();
      expect(sent0[0]?.baseOffset).to.equal('2');
      expect(sent2[0]?.baseOffset).to.equal('0');

      const open = await describeTxn(raw, 'tx-open');
      expect(open.errorCode).to.equal(ErrorCode.NONE);
      expect(open.transactionState).to.equal('Ongoing');
      expect(open.transactionTimeoutMs).to.equal(TXN_TIMEOUT_MS);
      expect(open.topics).to.deep.equal([{ topic, partitions: [0, 2] }]);
      expect(Number(open.transactionStartTimeMs)).to.be.within(before, after);

      const [p0, p1, p2] = await describeProducers(raw, topic, [0, 1, 2]);
      expect(p0?.errorCode).to.equal(ErrorCode.NONE);
      expect(p0?.errorMessage).to.equal(null);
      expect(p0?.activeProducers).to.deep.equal([
        {
          producerId: open.producerId,
          producerEpoch: open.producerEpoch,
          lastSequence: 1,
          lastTimestamp: BigInt(ts + 7),
          coordinatorEpoch: -1,
          currentTxnStartOffset: 2n,
        },
      ]);
      expect(p1).to.deep.equal({ partitionIndex: 1, errorCode: ErrorCode.NONE, errorMessage: null, activeProducers: [] });
      expect(p2?.activeProducers).to.deep.equal([
        {
          producerId: open.producerId,
          producerEpoch: open.producerEpoch,
          lastSequence: 0,
          lastTimestamp: BigInt(ts + 3),
          coordinatorEpoch: -1,
          currentTxnStartOffset: 0n,
        },
      ]);
      expect(listed(await listTxns(raw, { states: ['Ongoing'] }))).to.deep.equal([['tx-open', 'Ongoing']]);

      const beforeCommit = Date.now();
      await tx.commit();
      const done = await describeTxn(raw, 'tx-open');
      expect(done.errorCode).to.equal(ErrorCode.NONE);
      expect(done.transactionState).to.equal('CompleteCommit');
      expect(done.topics).to.deep.equal([]);
      expect(done.producerId).to.equal(open.producerId);
      expect(done.producerEpoch).to.equal(open.producerEpoch);
      // Kafka keeps the start time of the last transaction in Complete*
      expect(done.transactionStartTimeMs).to.equal(open.transactionStartTimeMs);
      for (const [partition, lastSequence] of [
        [0, 1],
        [2, 0],
      ] as const) {
        const s = await onlyProducer(raw, topic, partition);
        expect(s.currentTxnStartOffset).to.equal(-1n);
        expect(s.lastSequence).to.equal(lastSequence);
        // the COMMIT marker was written by this coordinator (epoch 0) at commit time
        expect(s.coordinatorEpoch).to.equal(0);
        expect(Number(s.lastTimestamp)).to.be.at.least(beforeCommit);
      }
      expect(listed(await listTxns(raw, { states: ['Ongoing'] }))).to.deep.equal([]);
      expect(listed(await listTxns(raw, { states: ['CompleteCommit'] }))).to.deep.equal([['tx-open', 'CompleteCommit']]);
    });

    it('lastSequence follows the batches of an idempotent producer; it is no transaction', async () => {
      const topic = 'adm-idem';
      await rawCreateTopics(raw, [{ name: topic, partitions: 1 }]);
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      producers.push(producer);
      await producer.connect();
      const ts = Date.now() - 5000;
      await producer.send({
        topic,
        acks: -1,
        messages: [0, 1, 2].map((i) => ({ value: `v${i}`, partition: 0, timestamp: String(ts + i) })),
      });
      const first = await onlyProducer(raw, topic, 0);
      expect(first).to.deep.include({
        producerEpoch: 0,
        lastSequence: 2,
        lastTimestamp: BigInt(ts + 2),
        coordinatorEpoch: -1,
        currentTxnStartOffset: -1n,
      });
      await producer.send({
        topic,
        acks: -1,
        messages: [3, 4].map((i) => ({ value: `v${i}`, partition: 0, timestamp: String(ts + 10 * i) })),
      });
      await producer.send({ topic, acks: -1, messages: [{ value: 'v5', partition: 0, timestamp: String(ts + 100) }] });
      const later = await onlyProducer(raw, topic, 0);
      expect(later).to.deep.equal({ ...first, lastSequence: 5, lastTimestamp: BigInt(ts + 100) });
      expect(listed(await listTxns(raw, { pids: [first.producerId] }))).to.deep.equal([]);
    });

    it('unknown and invalid names: TRANSACTIONAL_ID_NOT_FOUND, INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION', async () => {
      const states = await describeTxns(raw, ['no-such-id', '', 'tx-open']);
      expect(states.map((s) => [s.transactionalId, s.errorCode])).to.deep.equal([
        ['no-such-id', ErrorCode.TRANSACTIONAL_ID_NOT_FOUND],
        ['', ErrorCode.INVALID_REQUEST],
        ['tx-open', ErrorCode.NONE],
      ]);
      expect(states[0]).to.deep.include({ transactionState: '', topics: [] });

      const r = await raw.request<DescribeProducersResponse>(ApiKey.DescribeProducers, 0, {
        topics: [
          { name: 'no-such-topic', partitionIndexes: [0, 1] },
          { name: 'adm-idem', partitionIndexes: [7, 0] },
          { name: 'bad name!', partitionIndexes: [0] },
        ],
      });
      const unknown = r.topics[0]?.partitions ?? [];
      expect(unknown.map((p) => [p.partitionIndex, p.errorCode, p.errorMessage, p.activeProducers])).to.deep.equal([
        [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.', []],
        [1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.', []],
      ]);
      const known = r.topics[1]?.partitions ?? [];
      expect(known.map((p) => [p.partitionIndex, p.errorCode, p.errorMessage])).to.deep.equal([
        [7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, null],
        [0, ErrorCode.NONE, null],
      ]);
      expect(known[1]?.activeProducers).to.have.length(1);
      expect(r.topics[2]?.partitions.map((p) => p.errorCode)).to.deep.equal([ErrorCode.INVALID_TOPIC_EXCEPTION]);
    });
  });

  describe('ListTransactions filters (a fresh broker with four transactional ids)', () => {
    let b: TestBroker;
    let raw: RawClient;
    const producers: Producer[] = [];
    const pid = new Map<string, bigint>();
    const start = new Map<string, number>();
    const ALL = [
      ['f-aborted', 'CompleteAbort'],
      ['f-committed', 'CompleteCommit'],
      ['f-empty', 'Empty'],
      ['f-ongoing', 'Ongoing'],
    ];

    const cleanup = new Cleanup();

    before(async () => {
      b = cleanup.add(await startTestBroker({ 'transaction.state.log.num.partitions': 2 }), (t) => t.stop());
      raw = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
      const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'txn-admin-filters', logLevel: logLevel.NOTHING });
      await rawCreateTopics(raw, [{ name: 'flt', partitions: 2 }]);
      const run = async (id: string, end: 'commit' | 'abort' | 'open' | 'none') => {
        const p = txnProducer(kafka, id);
        producers.push(p);
        await p.connect();
        const tx = await p.transaction();
        if (end === 'none') {
          await tx.abort(); // nothing was added: kafkajs sends no EndTxn, the id stays Empty
          return;
        }
        await tx.send({ topic: 'flt', messages: [{ value: id, partition: 0 }] });
        if (end === 'commit') await tx.commit();
        if (end === 'abort') await tx.abort();
      };
      await run('f-committed', 'commit');
      await run('f-aborted', 'abort');
      await run('f-empty', 'none');
      // the open transaction starts well after the others, so a duration can tell them apart
      await sleep(1500);
      await run('f-ongoing', 'open');
      for (const s of await describeTxns(
        raw,
        ALL.map(([id]) => id!),
      )) {
        expect(s.errorCode).to.equal(ErrorCode.NONE);
        pid.set(s.transactionalId, s.producerId);
        start.set(s.transactionalId, Number(s.transactionStartTimeMs));
      }
    });
    after(async () => {
      for (const p of producers) await p.disconnect().catch(() => undefined);
      await cleanup.run();
    });

    it('no filter: every id with its state, sorted; the same in v0', async () => {
      expect(listed(await listTxns(raw))).to.deep.equal(ALL);
      expect(listed(await listTxns(raw, {}, 0))).to.deep.equal(ALL);
      expect(start.get('f-empty')).to.equal(-1);
      expect(new Set(pid.values()).size).to.equal(4);
      const r = await listTxns(raw);
      expect(r.transactionStates.map((s) => s.producerId)).to.deep.equal(ALL.map(([id]) => pid.get(id!)));
    });

    it('state filters select exactly those states; unknown names are reported back and match nothing', async () => {
      expect(listed(await listTxns(raw, { states: ['Ongoing'] }))).to.deep.equal([['f-ongoing', 'Ongoing']]);
      expect(listed(await listTxns(raw, { states: ['CompleteCommit', 'CompleteAbort'] }))).to.deep.equal([
        ['f-aborted', 'CompleteAbort'],
        ['f-committed', 'CompleteCommit'],
      ]);
      expect(listed(await listTxns(raw, { states: ['Empty'] }, 0))).to.deep.equal([['f-empty', 'Empty']]);
      expect(listed(await listTxns(raw, { states: ['PrepareCommit', 'Dead'] }))).to.deep.equal([]);

      const mixed = await listTxns(raw, { states: ['Ongoing', 'Bogus', 'ongoing'] });
      expect(listed(mixed)).to.deep.equal([['f-ongoing', 'Ongoing']]);
      expect(mixed.unknownStateFilters).to.deep.equal(['Bogus', 'ongoing']);
      // a filter made only of unknown names lists nothing (Kafka: the filter is non-empty, no state matches)
      const onlyUnknown = await listTxns(raw, { states: ['Bogus'] });
      expect(listed(onlyUnknown)).to.deep.equal([]);
      expect(onlyUnknown.unknownStateFilters).to.deep.equal(['Bogus']);
      expect((await listTxns(raw)).unknownStateFilters).to.deep.equal([]);
    });

    it('producer id filters select exactly those producers, and combine with state filters', async () => {
      expect(listed(await listTxns(raw, { pids: [pid.get('f-committed')!] }))).to.deep.equal([['f-committed', 'CompleteCommit']]);
      expect(listed(await listTxns(raw, { pids: [pid.get('f-empty')!, pid.get('f-ongoing')!] }, 0))).to.deep.equal([
        ['f-empty', 'Empty'],
        ['f-ongoing', 'Ongoing'],
      ]);
      expect(listed(await listTxns(raw, { pids: [123456789n] }))).to.deep.equal([]);
      expect(listed(await listTxns(raw, { pids: [pid.get('f-committed')!], states: ['Ongoing'] }))).to.deep.equal([]);
      expect(listed(await listTxns(raw, { pids: [pid.get('f-committed')!, pid.get('f-ongoing')!], states: ['Ongoing'] }))).to.deep.equal([
        ['f-ongoing', 'Ongoing'],
      ]);
    });

    it('the duration filter (v1) keeps only transactions started more than that many ms ago; -1 is no filter', async () => {
      const ongoing = start.get('f-ongoing')!;
      const older = Math.max(start.get('f-committed')!, start.get('f-aborted')!);
      expect(ongoing - older).to.be.at.least(1000);
      // between the ages of the open transaction (young) and the completed ones (older)
      const between = BigInt(ongoing - older - 1);
      // an id that never started a transaction has start time -1: Kafka's test (now - start > duration) keeps it
      expect(listed(await listTxns(raw, { durationMs: between }))).to.deep.equal([
        ['f-aborted', 'CompleteAbort'],
        ['f-committed', 'CompleteCommit'],
        ['f-empty', 'Empty'],
      ]);
      expect(listed(await listTxns(raw, { durationMs: between, states: ['Ongoing', 'CompleteCommit'] }))).to.deep.equal([
        ['f-committed', 'CompleteCommit'],
      ]);
      expect(listed(await listTxns(raw, { durationMs: 0n, states: ['Ongoing'] }))).to.deep.equal([['f-ongoing', 'Ongoing']]);
      expect(listed(await listTxns(raw, { durationMs: 3_600_000n }))).to.deep.equal([['f-empty', 'Empty']]);
      expect(listed(await listTxns(raw, { durationMs: -1n }))).to.deep.equal(ALL);
    });

    it('DescribeTransactions of several ids at once answers each in request order', async () => {
      const states = await describeTxns(raw, ['f-ongoing', 'f-empty', 'gone']);
      expect(states.map((s) => [s.transactionalId, s.errorCode, s.transactionState])).to.deep.equal([
        ['f-ongoing', ErrorCode.NONE, 'Ongoing'],
        ['f-empty', ErrorCode.NONE, 'Empty'],
        ['gone', ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, ''],
      ]);
      expect(states[0]?.topics).to.deep.equal([{ topic: 'flt', partitions: [0] }]);
      expect(states[1]).to.deep.include({ topics: [], transactionStartTimeMs: -1n, transactionTimeoutMs: TXN_TIMEOUT_MS });
    });
  });
});
