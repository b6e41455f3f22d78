/**
 * The KIP-664 admin views of producer and transaction state (DescribeProducers, DescribeTransactions,
 * ListTransactions): read-only functions over the transaction coordinator and the partition logs.
 * Nothing here changes state. The semantics follow Kafka's UnifiedLog.activeProducers,
 * KafkaApis.handleDescribeProducersRequest, TransactionCoordinator.handleDescribeTransactions and
 * TransactionStateManager.listTransactionStates.
 */
import type {
  DescribeProducersRequestTopicRequest,
  DescribeProducersResponsePartitionResponse,
  DescribeProducersResponseProducerState,
  DescribeProducersResponseTopicResponse,
} from '../../protocol/generated/describe-producers.js';
import {
  defaultDescribeTransactionsResponseTransactionState,
  type DescribeTransactionsResponseTransactionState,
} from '../../protocol/generated/describe-transactions.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ListTransactionsResponse, ListTransactionsResponseTransactionState } from '../../protocol/generated/list-transactions.js';
import type { PartitionLog } from '../log/partition-log.js';
import { invalidTopicName } from '../metadata/local-store.js';
import type { TransactionCoordinator } from './coordinator.js';
import { TXN_STATE_NAMES, TxnState, type TxnMetadata } from './txn-metadata.js';

/** Kafka's message for an unknown topic in DescribeProducers (ApiError(UNKNOWN_TOPIC_OR_PARTITION)). */
export const UNKNOWN_TOPIC_MESSAGE = 'This server does not host this topic-partition.';

// ---- DescribeProducers ----

/**
 * The active producers of a partition, as Kafka's UnifiedLog.activeProducers reports them: every
 * producer id in the partition's producer state, with the last sequence of its newest batch (-1
 * when none is cached), the timestamp of its last batch or marker (-1 when unknown), the
 * coordinator epoch of its last marker (-1 before any) and the first offset of its open transaction
 * (-1 when none). Ordered by producer id.
 */
export function activeProducers(log: PartitionLog): DescribeProducersResponseProducerState[] {
  const out: DescribeProducersResponseProducerState[] = [];
  for (const e of log.producers.producers.values()) {
    out.push({
      producerId: e.producerId,
      producerEpoch: e.producerEpoch,
      lastSequence: e.batches[e.batches.length - 1]?.lastSeq ?? -1,
      lastTimestamp: e.lastTimestamp,
      coordinatorEpoch: e.coordinatorEpoch,
      currentTxnStartOffset: e.currentTxnFirstOffset ?? -1n,
    });
  }
  return out.sort((a, b) => (a.producerId < b.producerId ? -1 : a.producerId > b.producerId ? 1 : 0));
}

/** What DescribeProducers needs to know about topics. */
export interface PartitionLookup {
  topicExists(topic: string): boolean;
  partition(topic: string, partition: number): PartitionLog | undefined;
  /** The error for a partition without a log here (default UNKNOWN_TOPIC_OR_PARTITION; clusters: led elsewhere). */
  notHereError?(topic: string, partition: number): number;
}

function partitionError(
  partitionIndex: number,
  errorCode: number,
  errorMessage: string | null,
): DescribeProducersResponsePartitionResponse {
  return { partitionIndex, errorCode, errorMessage, activeProducers: [] };
}

/**
 * DescribeProducers over the requested topics, in request order. A topic error (invalid name:
 * INVALID_TOPIC_EXCEPTION; unknown topic: UNKNOWN_TOPIC_OR_PARTITION with Kafka's message) goes to
 * each of its partitions; a partition the topic does not have gets UNKNOWN_TOPIC_OR_PARTITION
 * without a message (Kafka's ReplicaManager.getPartitionOrError).
 */
export function describeProducers(
  lookup: PartitionLookup,
  topics: readonly DescribeProducersRequestTopicRequest[],
): DescribeProducersResponseTopicResponse[] {
  return topics.map((t) => {
    const invalid = invalidTopicName(t.name);
    const topicError: [number, string] | null =
      invalid !== undefined
        ? [ErrorCode.INVALID_TOPIC_EXCEPTION, invalid]
        : !lookup.topicExists(t.name)
          ? [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE]
          : null;
    return {
      name: t.name,
      partitions: t.partitionIndexes.map((p) => {
        if (topicError !== null) return partitionError(p, topicError[0], topicError[1]);
        const log = lookup.partition(t.name, p);
        if (log === undefined) return partitionError(p, lookup.notHereError?.(t.name, p) ?? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, null);
        return { partitionIndex: p, errorCode: ErrorCode.NONE, errorMessage: null, activeProducers: activeProducers(log) };
      }),
    };
  });
}

// ---- DescribeTransactions ----

/** Expired (or being expired): Kafka's Dead, which the admin APIs never show. */
function isDead(m: TxnMetadata): boolean {
  return m.state === TxnState.DEAD || m.pending === TxnState.DEAD;
}

function sortedTopics(m: TxnMetadata): { topic: string; partitions: number[] }[] {
  return [...m.partitions]
    .filter(([, ps]) => ps.size > 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([topic, ps]) => ({ topic, partitions: [...ps].sort((a, b) => a - b) }));
}

/**
 * One id of DescribeTransactions. Errors in Kafka's order: COORDINATOR_NOT_AVAILABLE when the
 * coordinator is not running, INVALID_REQUEST for an empty id, the coordinator's status for the id
 * (COORDINATOR_LOAD_IN_PROGRESS while its partition loads, COORDINATOR_NOT_AVAILABLE before
 * `__transaction_state` exists), TRANSACTIONAL_ID_NOT_FOUND for an unknown or Dead id. Otherwise the
 * state name, timeout, start time (-1 when no transaction has started), producer id and epoch, and
 * the partitions of the transaction by topic, sorted.
 */
export function describeTransaction(c: TransactionCoordinator, transactionalId: string): DescribeTransactionsResponseTransactionState {
  // Kafka leaves the other fields at their schema defaults ("", 0) on an error
  const fail = (errorCode: number): DescribeTransactionsResponseTransactionState => ({
    ...defaultDescribeTransactionsResponseTransactionState(),
    errorCode,
    transactionalId,
  });
  if (!c.isActive) return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  if (transactionalId === '') return fail(ErrorCode.INVALID_REQUEST);
  const status = c.status(transactionalId);
  if (status !== ErrorCode.NONE) return fail(status);
  const m = c.txns.get(transactionalId);
  if (m === undefined || isDead(m)) return fail(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
  return {
    errorCode: ErrorCode.NONE,
    transactionalId,
    transactionState: TXN_STATE_NAMES[m.state],
    transactionTimeoutMs: m.txnTimeoutMs,
    transactionStartTimeMs: BigInt(m.txnStartTimestamp),
    producerId: m.producerId,
    producerEpoch: m.producerEpoch,
    topics: sortedTopics(m),
  };
}

// ---- ListTransactions ----

/** The state a ListTransactions state filter names, or undefined (names are case-sensitive, as in Kafka). */
export function txnStateByName(name: string): TxnState | undefined {
  for (const [state, n] of Object.entries(TXN_STATE_NAMES)) if (n === name) return Number(state) as TxnState;
  return undefined;
}

export interface ListTransactionsFilters {
  /** State names; empty: every state. */
  stateFilters: readonly string[];
  /** Producer ids; empty: every producer. */
  producerIdFilters: readonly bigint[];
  /** Only transactions started more than this many ms ago; negative: no filter. */
  durationFilter: bigint;
}

/**
 * ListTransactions as Kafka's TransactionStateManager.listTransactionStates answers it: errorCode
 * COORDINATOR_NOT_AVAILABLE when the coordinator is not running, COORDINATOR_LOAD_IN_PROGRESS while
 * any partition loads (nothing listed), else NONE with every id that passes all filters (Dead ids
 * never). Unknown state names come back in unknownStateFilters and match nothing; as in Kafka, a
 * non-empty state filter whose names are all unknown lists nothing. The duration filter keeps ids
 * with `now - transactionStartTime > durationFilter` (Kafka's test, applied to the start timestamp
 * as stored: -1 for an id that has not started a transaction). Sorted by transactional id.
 */
export function listTransactions(
  c: TransactionCoordinator,
  f: ListTransactionsFilters,
  now: number = c.now(),
): Omit<ListTransactionsResponse, 'throttleTimeMs'> {
  const empty = (errorCode: number) => ({ errorCode, unknownStateFilters: [], transactionStates: [] });
  if (!c.isActive) return empty(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  if (c.isLoading) return empty(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
  const states = new Set<TxnState>();
  const unknownStateFilters: string[] = [];
  for (const name of f.stateFilters) {
    const s = txnStateByName(name);
    if (s === undefined) unknownStateFilters.push(name);
    else states.add(s);
  }
  const producerIds = new Set(f.producerIdFilters);
  const transactionStates: ListTransactionsResponseTransactionState[] = [];
  for (const m of c.txns.values()) {
    if (isDead(m)) continue;
    if (producerIds.size > 0 && !producerIds.has(m.producerId)) continue;
    if (f.stateFilters.length > 0 && !states.has(m.state)) continue;
    if (f.durationFilter >= 0n && BigInt(now - m.txnStartTimestamp) <= f.durationFilter) continue;
    transactionStates.push({ transactionalId: m.transactionalId, producerId: m.producerId, transactionState: TXN_STATE_NAMES[m.state] });
  }
  transactionStates.sort((a, b) => (a.transactionalId < b.transactionalId ? -1 : a.transactionalId > b.transactionalId ? 1 : 0));
  return { errorCode: ErrorCode.NONE, unknownStateFilters, transactionStates };
}
