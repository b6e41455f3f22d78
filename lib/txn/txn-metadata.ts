/**
 * The state of one transactional id and its records on `__transaction_state` (Kafka's
 * TransactionMetadata and TransactionLog): key = int16 version 0 + TransactionLogKey, value = int16
 * version 0 + TransactionLogValue, a tombstone when the id expires. Kafka's tools can read them.
 */
import { Reader } from '../../protocol/codec/reader.js';
import type { PartitionLog } from '../log/partition-log.js';
import { replayBatches } from '../log/replay.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { Writer } from '../../protocol/codec/writer.js';
import { TransactionLogKeySchema } from '../../protocol/generated/data/transaction-log-key.js';
import { TransactionLogValueSchema } from '../../protocol/generated/data/transaction-log-value.js';

export const TRANSACTION_STATE_TOPIC = '__transaction_state';

/** Kafka's TransactionState ids, as persisted (int8). */
export const TxnState = {
  EMPTY: 0,
  ONGOING: 1,
  PREPARE_COMMIT: 2,
  PREPARE_ABORT: 3,
  COMPLETE_COMMIT: 4,
  COMPLETE_ABORT: 5,
  DEAD: 6,
  PREPARE_EPOCH_FENCE: 7,
} as const;
export type TxnState = (typeof TxnState)[keyof typeof TxnState];

/** The names DescribeTransactions and ListTransactions use. */
export const TXN_STATE_NAMES: Record<TxnState, string> = {
  [TxnState.EMPTY]: 'Empty',
  [TxnState.ONGOING]: 'Ongoing',
  [TxnState.PREPARE_COMMIT]: 'PrepareCommit',
  [TxnState.PREPARE_ABORT]: 'PrepareAbort',
  [TxnState.COMPLETE_COMMIT]: 'CompleteCommit',
  [TxnState.COMPLETE_ABORT]: 'CompleteAbort',
  [TxnState.DEAD]: 'Dead',
  [TxnState.PREPARE_EPOCH_FENCE]: 'PrepareEpochFence',
};

/** Epochs at or above this are used up: the next InitProducerId moves to a new producer id. */
export const MAX_USABLE_EPOCH = 32766;

export interface TxnMetadata {
  transactionalId: string;
  producerId: bigint;
  /** The producer id before the last rotation (KIP-360 retries), else -1. */
  previousProducerId: bigint;
  producerEpoch: number;
  /** The epoch before the last bump (a retried InitProducerId gets the current one back); not persisted. */
  lastProducerEpoch: number;
  txnTimeoutMs: number;
  state: TxnState;
  /** topic → partitions in the transaction. */
  partitions: Map<string, Set<number>>;
  txnStartTimestamp: number;
  txnLastUpdateTimestamp: number;
  /** A transition being written: every other request for this id gets CONCURRENT_TRANSACTIONS. */
  pending: TxnState | null;
}

/** A copy of `m` (its own partition sets, no pending transition) with `changes` applied. */
export function withChanges(m: TxnMetadata, changes: Partial<TxnMetadata>): TxnMetadata {
  return { ...m, partitions: new Map([...m.partitions].map(([t, s]) => [t, new Set(s)])), pending: null, ...changes };
}

export function isEpochExhausted(epoch: number): boolean {
  return epoch >= MAX_USABLE_EPOCH;
}

export function partitionCount(m: TxnMetadata): number {
  let n = 0;
  for (const s of m.partitions.values()) n += s.size;
  return n;
}

export function hasPartition(m: TxnMetadata, topic: string, partition: number): boolean {
  return m.partitions.get(topic)?.has(partition) === true;
}

export function txnLogKey(transactionalId: string): Buffer {
  const w = Writer.alloc(2 + TransactionLogKeySchema.size({ transactionalId }, 0));
  w.int16(0);
  TransactionLogKeySchema.write(w, { transactionalId }, 0);
  return w.done();
}

export function txnLogValue(m: TxnMetadata): Buffer {
  const partitions =
    m.state === TxnState.EMPTY
      ? null
      : [...m.partitions]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([topic, ps]) => ({ topic, partitionIds: [...ps].sort((a, b) => a - b) }));
  const v = {
    producerId: m.producerId,
    producerEpoch: m.producerEpoch,
    transactionTimeoutMs: m.txnTimeoutMs,
    transactionStatus: m.state,
    transactionPartitions: partitions,
    transactionLastUpdateTimestampMs: BigInt(m.txnLastUpdateTimestamp),
    transactionStartTimestampMs: BigInt(m.txnStartTimestamp),
  };
  const w = Writer.alloc(2 + TransactionLogValueSchema.size(v, 0));
  w.int16(0);
  TransactionLogValueSchema.write(w, v, 0);
  return w.done();
}

/** Decodes a `__transaction_state` record; metadata null for a tombstone. Throws ProtocolError on bad bytes. */
export function decodeTxnRecord(key: Buffer, value: Buffer | null): { transactionalId: string; metadata: TxnMetadata | null } {
  const kr = new Reader(key);
  const kv = kr.int16();
  const { transactionalId } = TransactionLogKeySchema.read(kr, kv);
  kr.check();
  if (value === null) return { transactionalId, metadata: null };
  const r = new Reader(value);
  const vv = r.int16();
  const v = TransactionLogValueSchema.read(r, vv);
  const partitions = new Map<string, Set<number>>();
  for (const p of v.transactionPartitions ?? []) partitions.set(p.topic, new Set(p.partitionIds));
  return {
    transactionalId,
    metadata: {
      transactionalId,
      producerId: v.producerId,
      previousProducerId: v.previousProducerId ?? -1n,
      producerEpoch: v.producerEpoch,
      lastProducerEpoch: -1,
      txnTimeoutMs: v.transactionTimeoutMs,
      state: v.transactionStatus as TxnState,
      partitions,
      txnStartTimestamp: Number(v.transactionStartTimestampMs),
      txnLastUpdateTimestamp: Number(v.transactionLastUpdateTimestampMs),
      pending: null,
    },
  };
}

/** Kafka's mapping of a failed `__transaction_state` append to what the client is told. */
export function persistError(errorCode: number): number {
  switch (errorCode) {
    case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case ErrorCode.REQUEST_TIMED_OUT:
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
    case ErrorCode.KAFKA_STORAGE_ERROR:
      return ErrorCode.NOT_COORDINATOR;
    default:
      return ErrorCode.UNKNOWN_SERVER_ERROR;
  }
}

/** Replays one `__transaction_state` partition into `txns`: the last record of each id wins, a tombstone removes it. */
export async function replayTxnLog(log: PartitionLog, txns: Map<string, TxnMetadata>): Promise<void> {
  if (log.logEndOffset <= log.logStartOffset) return;
  await replayBatches(log, (batch) => {
    if (batch.isControl) return;
    for (const r of batch.records({ maxOutput: 64 << 20 })) {
      if (r.key === null) continue;
      const { transactionalId, metadata } = decodeTxnRecord(r.key, r.value);
      if (metadata === null) txns.delete(transactionalId);
      else txns.set(transactionalId, metadata);
    }
  });
}
