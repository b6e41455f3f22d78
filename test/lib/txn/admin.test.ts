/**
 * lib/txn/admin.ts over a stand-in coordinator: the states a real broker rarely shows (loading,
 * stopped, Dead), filters and field mapping; and that emulated old releases do not advertise the
 * KIP-664 APIs. The integration test (test/integration/txn-admin.test.ts) covers the rest.
 */
import { expect } from 'chai';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { partitionFor } from '../../../lib/group/records.js';
import { advertisedVersions, HANDLERS } from '../../../lib/handlers/index.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { activeProducers, describeProducers, describeTransaction, listTransactions, txnStateByName } from '../../../lib/txn/admin.js';
import type { TransactionCoordinator } from '../../../lib/txn/coordinator.js';
import { ProducerStateManager, type ProducerStateEntry } from '../../../lib/txn/producer-state.js';
import { TXN_STATE_NAMES, TxnState, type TxnMetadata } from '../../../lib/txn/txn-metadata.js';

const NUM_PARTITIONS = 5;
const NOW = 1_000_000;

function txn(transactionalId: string, producerId: bigint, state: TxnState, extra: Partial<TxnMetadata> = {}): TxnMetadata {
  return {
    transactionalId,
    producerId,
    previousProducerId: -1n,
    producerEpoch: 3,
    lastProducerEpoch: -1,
    txnTimeoutMs: 60_000,
    state,
    partitions: new Map(),
    txnStartTimestamp: -1,
    txnLastUpdateTimestamp: NOW,
    pending: null,
    ...extra,
  };
}

/** The parts of TransactionCoordinator admin.ts reads, with loading partitions and activity to set. */
class FakeCoordinator {
  readonly txns = new Map<string, TxnMetadata>();
  readonly numPartitions = NUM_PARTITIONS;
  isActive = true;
  ready = true;
  loading = new Set<number>();
  now = (): number => NOW;
  add(m: TxnMetadata): this {
    this.txns.set(m.transactionalId, m);
    return this;
  }
  get isLoading(): boolean {
    return this.loading.size > 0;
  }
  status(id: string): number {
    if (!this.isActive || !this.ready) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    return this.loading.has(partitionFor(id, NUM_PARTITIONS)) ? ErrorCode.COORDINATOR_LOAD_IN_PROGRESS : ErrorCode.NONE;
  }
  get c(): TransactionCoordinator {
    return this as unknown as TransactionCoordinator;
  }
}

const NO_FILTER = { stateFilters: [], producerIdFilters: [], durationFilter: -1n } as const;

describe('lib/txn/admin (KIP-664 views)', () => {
  it('state names map both ways, case-sensitively', () => {
    for (const [state, name] of Object.entries(TXN_STATE_NAMES)) expect(txnStateByName(name)).to.equal(Number(state));
    expect(txnStateByName('ongoing')).to.equal(undefined);
    expect(txnStateByName('')).to.equal(undefined);
  });

  it('while any partition loads, ListTransactions gets COORDINATOR_LOAD_IN_PROGRESS and lists nothing', () => {
    const f = new FakeCoordinator().add(txn('a', 1n, TxnState.ONGOING));
    expect(listTransactions(f.c, NO_FILTER).transactionStates).to.have.length(1);
    for (let p = 0; p < NUM_PARTITIONS; p++) {
      f.loading = new Set([p]);
      expect(listTransactions(f.c, NO_FILTER)).to.deep.equal({
        errorCode: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        unknownStateFilters: [],
        transactionStates: [],
      });
    }
    // DescribeTransactions: only the ids on a loading partition wait
    f.loading = new Set([partitionFor('a', NUM_PARTITIONS)]);
    expect(describeTransaction(f.c, 'a').errorCode).to.equal(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    const other = ['b', 'c', 'd', 'e', 'f', 'g'].find((id) => partitionFor(id, NUM_PARTITIONS) !== partitionFor('a', NUM_PARTITIONS))!;
    expect(describeTransaction(f.c, other).errorCode).to.equal(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
  });

  it('a stopped coordinator: COORDINATOR_NOT_AVAILABLE for both; never created: ListTransactions NONE and empty', () => {
    const f = new FakeCoordinator().add(txn('a', 1n, TxnState.ONGOING));
    f.isActive = false;
    expect(listTransactions(f.c, NO_FILTER).errorCode).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(listTransactions(f.c, NO_FILTER).transactionStates).to.deep.equal([]);
    expect(describeTransaction(f.c, 'a').errorCode).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(describeTransaction(f.c, '').errorCode).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    const fresh = new FakeCoordinator();
    fresh.ready = false;
    expect(listTransactions(fresh.c, { ...NO_FILTER, stateFilters: ['Nope'] })).to.deep.equal({
      errorCode: ErrorCode.NONE,
      unknownStateFilters: ['Nope'],
      transactionStates: [],
    });
    expect(describeTransaction(fresh.c, 'a').errorCode).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  it('Dead ids (and ids whose tombstone is being written) are neither listed nor described', () => {
    const f = new FakeCoordinator()
      .add(txn('dead', 1n, TxnState.DEAD))
      .add(txn('expiring', 2n, TxnState.COMPLETE_COMMIT, { pending: TxnState.DEAD }))
      .add(txn('busy', 3n, TxnState.ONGOING, { pending: TxnState.PREPARE_COMMIT, txnStartTimestamp: NOW - 10 }));
    expect(listTransactions(f.c, NO_FILTER).transactionStates).to.deep.equal([
      { transactionalId: 'busy', producerId: 3n, transactionState: 'Ongoing' },
    ]);
    expect(listTransactions(f.c, { ...NO_FILTER, stateFilters: ['Dead'] }).transactionStates).to.deep.equal([]);
    expect(describeTransaction(f.c, 'dead').errorCode).to.equal(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
    expect(describeTransaction(f.c, 'expiring').errorCode).to.equal(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
    // a transition in flight is described by the state it is in
    expect(describeTransaction(f.c, 'busy').transactionState).to.equal('Ongoing');
  });

  it('DescribeTransactions: every field, topics and partitions sorted; errors carry the schema defaults', () => {
    const partitions = new Map([
      ['zeta', new Set([3, 1])],
      ['alpha', new Set([2, 0, 1])],
      ['empty', new Set<number>()],
    ]);
    const f = new FakeCoordinator().add(
      txn('t', 77n, TxnState.PREPARE_COMMIT, { partitions, txnStartTimestamp: NOW - 500, txnTimeoutMs: 12_345, producerEpoch: 9 }),
    );
    expect(describeTransaction(f.c, 't')).to.deep.equal({
      errorCode: ErrorCode.NONE,
      transactionalId: 't',
      transactionState: 'PrepareCommit',
      transactionTimeoutMs: 12_345,
      transactionStartTimeMs: BigInt(NOW - 500),
      producerId: 77n,
      producerEpoch: 9,
      topics: [
        { topic: 'alpha', partitions: [0, 1, 2] },
        { topic: 'zeta', partitions: [1, 3] },
      ],
    });
    expect(describeTransaction(f.c, 'nope')).to.deep.equal({
      errorCode: ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
      transactionalId: 'nope',
      transactionState: '',
      transactionTimeoutMs: 0,
      transactionStartTimeMs: 0n,
      producerId: 0n,
      producerEpoch: 0,
      topics: [],
    });
    expect(describeTransaction(f.c, '').errorCode).to.equal(ErrorCode.INVALID_REQUEST);
  });

  it('ListTransactions: the duration filter compares now - start with the duration, strictly', () => {
    const f = new FakeCoordinator()
      .add(txn('young', 1n, TxnState.ONGOING, { txnStartTimestamp: NOW - 100 }))
      .add(txn('old', 2n, TxnState.ONGOING, { txnStartTimestamp: NOW - 5000 }))
      .add(txn('never', 3n, TxnState.EMPTY));
    const ids = (durationFilter: bigint) =>
      listTransactions(f.c, { ...NO_FILTER, durationFilter }).transactionStates.map((s) => s.transactionalId);
    expect(ids(-1n)).to.deep.equal(['never', 'old', 'young']);
    expect(ids(99n)).to.deep.equal(['never', 'old', 'young']);
    expect(ids(100n)).to.deep.equal(['never', 'old']);
    expect(ids(4999n)).to.deep.equal(['never', 'old']);
    expect(ids(5000n)).to.deep.equal(['never']);
    expect(
      listTransactions(f.c, { ...NO_FILTER, durationFilter: 100n }, NOW + 1).transactionStates.map((s) => s.transactionalId),
    ).to.deep.equal(['never', 'old', 'young']);
  });

  it('activeProducers maps the producer state entries as Kafka does, by producer id', () => {
    const entries: ProducerStateEntry[] = [
      {
        producerId: 9n,
        producerEpoch: 2,
        batches: [
          { firstSeq: 0, lastSeq: 4, firstOffset: 0n, lastOffset: 4n, timestamp: 50n },
          { firstSeq: 5, lastSeq: 6, firstOffset: 10n, lastOffset: 11n, timestamp: 60n },
        ],
        lastTimestamp: 60n,
        coordinatorEpoch: -1,
        currentTxnFirstOffset: 10n,
      },
      { producerId: 4n, producerEpoch: -1, batches: [], lastTimestamp: 70n, coordinatorEpoch: 3, currentTxnFirstOffset: null },
    ];
    const producers = new ProducerStateManager('t-0');
    producers.load(entries);
    const log = { producers } as unknown as PartitionLog;
    expect(activeProducers(log)).to.deep.equal([
      { producerId: 4n, producerEpoch: -1, lastSequence: -1, lastTimestamp: 70n, coordinatorEpoch: 3, currentTxnStartOffset: -1n },
      { producerId: 9n, producerEpoch: 2, lastSequence: 6, lastTimestamp: 60n, coordinatorEpoch: -1, currentTxnStartOffset: 10n },
    ]);
    const lookup = { topicExists: (t: string) => t === 't', partition: (t: string, p: number) => (t === 't' && p === 0 ? log : undefined) };
    const res = describeProducers(lookup, [
      { name: 't', partitionIndexes: [0, 1] },
      { name: '..', partitionIndexes: [0] },
    ]);
    expect(res[0]?.partitions.map((p) => [p.partitionIndex, p.errorCode, p.activeProducers.length])).to.deep.equal([
      [0, ErrorCode.NONE, 2],
      [1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0],
    ]);
    expect(res[1]?.partitions[0]?.errorCode).to.equal(ErrorCode.INVALID_TOPIC_EXCEPTION);
    expect(res[1]?.partitions[0]?.errorMessage).to.be.a('string');
  });

  it('emulated releases: 2.8 advertises DescribeProducers v0 only, older ones none of the three; latest all three', () => {
    const keys = [ApiKey.DescribeProducers, ApiKey.DescribeTransactions, ApiKey.ListTransactions];
    const has = (emulate: string | null) =>
      advertisedVersions(HANDLERS, emulate).filter((a) => keys.includes(a.apiKey as (typeof keys)[number]));
    expect(has(null)).to.deep.equal([
      { apiKey: ApiKey.DescribeProducers, minVersion: 0, maxVersion: 0 },
      { apiKey: ApiKey.DescribeTransactions, minVersion: 0, maxVersion: 0 },
      { apiKey: ApiKey.ListTransactions, minVersion: 0, maxVersion: 1 },
    ]);
    expect(has('2.8')).to.deep.equal([{ apiKey: ApiKey.DescribeProducers, minVersion: 0, maxVersion: 0 }]);
    for (const r of ['2.7', '2.0', '0.11.0', '0.10.0']) expect(has(r), r).to.deep.equal([]);
  });
});
