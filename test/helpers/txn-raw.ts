/**
 * Transactions step by step over the raw protocol (InitProducerId, AddPartitionsToTxn, Produce,
 * EndTxn, read_committed Fetch), for tests that need exact control over what a producer sends.
 */
import { buildRecordBatch, logEntries } from '../../protocol/records/index.js';
import { expect } from 'chai';
import type { RawClient } from './raw-client.js';

/** CreateTopics v1 of one topic; fails the test unless it was created. */
export async function createTopic(raw: RawClient, name: string, partitions = 1): Promise<void> {
  const r = await raw.request<{ topics: { errorCode: number }[] }>(19, 1, {
    topics: [{ name, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 5000,
    validateOnly: false,
  });
  expect(r.topics[0]?.errorCode).to.equal(0);
}

export interface Pid {
  producerId: bigint;
  producerEpoch: number;
}

/** Coordinator answers a client retries (COORDINATOR_LOAD_IN_PROGRESS right after a start, CONCURRENT_TRANSACTIONS). */
/** InitProducerId errors a client retries: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, CONCURRENT_TRANSACTIONS */
export const RETRIED = new Set([14, 15, 51]);

/** InitProducerId, retried as clients do while the coordinator loads (up to ~10 s). */
export async function initProducerId(
  raw: RawClient,
  transactionalId: string | null,
  transactionTimeoutMs = 60_000,
  version = 1,
): Promise<Pid & { errorCode: number }> {
  for (let attempt = 0; ; attempt++) {
    const r = await raw.request<Pid & { errorCode: number }>(22, version, {
      transactionalId,
      transactionTimeoutMs,
      producerId: -1n,
      producerEpoch: -1,
    });
    if (!RETRIED.has(r.errorCode) || attempt >= 100) return r;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function addPartitions(
  raw: RawClient,
  transactionalId: string,
  p: Pid,
  topic: string,
  partitions: number[],
): Promise<number[]> {
  const r = await raw.request<{ resultsByTopicV3AndBelow: { resultsByPartition: { partitionErrorCode: number }[] }[] }>(24, 1, {
    v3AndBelowTransactionalId: transactionalId,
    v3AndBelowProducerId: p.producerId,
    v3AndBelowProducerEpoch: p.producerEpoch,
    v3AndBelowTopics: [{ name: topic, partitions }],
  });
  return r.resultsByTopicV3AndBelow.flatMap((t) => t.resultsByPartition.map((x) => x.partitionErrorCode));
}

export async function endTxn(raw: RawClient, transactionalId: string, p: Pid, committed: boolean, version = 1): Promise<number> {
  return (
    await raw.request<{ errorCode: number }>(26, version, {
      transactionalId,
      producerId: p.producerId,
      producerEpoch: p.producerEpoch,
      committed,
    })
  ).errorCode;
}

/** A v2 batch of `n` records `<prefix>-<i>` from producer `p` starting at `baseSequence`. */
export function producerBatch(p: Pid, baseSequence: number, n: number, opts: { prefix?: string; transactional?: boolean } = {}): Buffer {
  const ts = BigInt(Date.now());
  return buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({ key: null, value: Buffer.from(`${opts.prefix ?? 'v'}-${baseSequence + i}`), timestamp: ts })),
    { producerId: p.producerId, producerEpoch: p.producerEpoch, baseSequence, isTransactional: opts.transactional === true },
  );
}

export async function produce(
  raw: RawClient,
  topic: string,
  partition: number,
  records: Buffer,
  transactionalId: string | null = null,
  version = 7,
): Promise<{ errorCode: number; baseOffset: bigint }> {
  const r = await raw.request<{ responses: { partitionResponses: { errorCode: number; baseOffset: bigint }[] }[] }>(0, version, {
    transactionalId,
    acks: -1,
    timeoutMs: 5000,
    topicData: [{ name: topic, partitionData: [{ index: partition, records }] }],
  });
  const pr = r.responses[0]?.partitionResponses[0];
  return { errorCode: pr?.errorCode ?? -1, baseOffset: pr?.baseOffset ?? -1n };
}

export interface FetchedPartition {
  errorCode: number;
  highWatermark: bigint;
  lastStableOffset: bigint;
  abortedTransactions: { producerId: bigint; firstOffset: bigint }[] | null;
  /** Values of the data records returned (control batches left out), with their offsets. */
  values: { offset: bigint; value: string | null; producerId: bigint; control: boolean }[];
}

/** One Fetch v11 of a partition from `offset` (isolation 1: read_committed). */
export async function fetchPartition(
  raw: RawClient,
  topic: string,
  partition: number,
  offset: bigint,
  isolationLevel: 0 | 1,
): Promise<FetchedPartition> {
  const r = await raw.request<{ responses: { partitions: (Omit<FetchedPartition, 'values'> & { records: Buffer | null })[] }[] }>(1, 11, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    isolationLevel,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      { topic, partitions: [{ partition, currentLeaderEpoch: -1, fetchOffset: offset, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }] },
    ],
    forgottenTopicsData: [],
    rackId: '',
  });
  const p = r.responses[0]?.partitions[0];
  if (p === undefined) throw new Error('no partition in the fetch response');
  const values: FetchedPartition['values'] = [];
  for (const e of logEntries(p.records ?? Buffer.alloc(0))) {
    if (e.kind !== 'batch') continue;
    for (const rec of e.batch.records({ maxOutput: 1 << 24 })) {
      values.push({
        offset: rec.offset,
        value: rec.value === null ? null : rec.value.toString(),
        producerId: e.batch.producerId,
        control: e.batch.isControl,
      });
    }
  }
  return {
    errorCode: p.errorCode,
    highWatermark: p.highWatermark,
    lastStableOffset: p.lastStableOffset,
    abortedTransactions: p.abortedTransactions,
    values,
  };
}

export async function addOffsets(raw: RawClient, transactionalId: string, p: Pid, groupId: string): Promise<number> {
  return (
    await raw.request<{ errorCode: number }>(25, 1, { transactionalId, producerId: p.producerId, producerEpoch: p.producerEpoch, groupId })
  ).errorCode;
}

/** TxnOffsetCommit v1 of one partition; returns its error code. */
export async function txnOffsetCommit(
  raw: RawClient,
  transactionalId: string,
  p: Pid,
  groupId: string,
  topic: string,
  partition: number,
  offset: bigint,
): Promise<number> {
  const r = await raw.request<{ topics: { partitions: { errorCode: number }[] }[] }>(28, 1, {
    transactionalId,
    groupId,
    producerId: p.producerId,
    producerEpoch: p.producerEpoch,
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, committedOffset: offset, committedMetadata: '' }] }],
  });
  return r.topics[0]?.partitions[0]?.errorCode ?? -1;
}

/** A plain OffsetCommit v2 (no group membership) of one partition; returns its error code. */
export async function offsetCommit(raw: RawClient, groupId: string, topic: string, partition: number, offset: bigint): Promise<number> {
  const r = await raw.request<{ topics: { partitions: { errorCode: number }[] }[] }>(8, 2, {
    groupId,
    generationIdOrMemberEpoch: -1,
    memberId: '',
    retentionTimeMs: -1n,
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, committedOffset: offset, committedMetadata: '' }] }],
  });
  return r.topics[0]?.partitions[0]?.errorCode ?? -1;
}

/** OffsetFetch v7 of one partition: the committed offset and the partition's error code. */
export async function offsetFetch(
  raw: RawClient,
  groupId: string,
  topic: string,
  partition: number,
  requireStable: boolean,
): Promise<{ errorCode: number; committedOffset: bigint }> {
  for (let attempt = 0; ; attempt++) {
    const r = await raw.request<{ errorCode: number; topics: { partitions: { errorCode: number; committedOffset: bigint }[] }[] }>(9, 7, {
      groupId,
      topics: [{ name: topic, partitionIndexes: [partition] }],
      requireStable,
    });
    if (RETRIED.has(r.errorCode) && attempt < 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    const p = r.topics[0]?.partitions[0];
    return { errorCode: p?.errorCode ?? r.errorCode, committedOffset: p?.committedOffset ?? -2n };
  }
}
