import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type {
  AddPartitionsToTxnRequest,
  AddPartitionsToTxnRequestAddPartitionsToTxnTopic,
  AddPartitionsToTxnResponse,
  AddPartitionsToTxnResponseAddPartitionsToTxnTopicResult,
} from '../../protocol/generated/add-partitions-to-txn.js';
import { fencedForVersion } from './init-producer-id.js';
import { AclOperation, byTopicAllowed, clusterAllowed, transactionalIdError } from '../security/acl/checks.js';
import { defineHandler, type RequestContext } from './types.js';

type TopicResult = AddPartitionsToTxnResponseAddPartitionsToTxnTopicResult;

function results(
  topics: readonly AddPartitionsToTxnRequestAddPartitionsToTxnTopic[],
  code: (topic: string, partition: number) => number,
): TopicResult[] {
  return topics.map((t) => ({
    name: t.name,
    resultsByPartition: t.partitions.map((partitionIndex) => ({ partitionIndex, partitionErrorCode: code(t.name, partitionIndex) })),
  }));
}

/**
 * One transaction's partitions: unknown ones get UNKNOWN_TOPIC_OR_PARTITION and the rest
 * OPERATION_NOT_ATTEMPTED (nothing is added); otherwise every partition gets the coordinator's answer.
 * `verifyOnly` (v4+, KIP-890) only checks that they are in the ongoing transaction.
 */
async function addOne(
  ctx: RequestContext,
  txnId: string,
  producerId: bigint,
  producerEpoch: number,
  topics: AddPartitionsToTxnRequestAddPartitionsToTxnTopic[],
  verifyOnly: boolean,
): Promise<TopicResult[]> {
  const s = ctx.services;
  const txnDenied = transactionalIdError(ctx, AclOperation.WRITE, txnId);
  if (txnDenied !== ErrorCode.NONE) return results(topics, () => txnDenied);
  const writable = byTopicAllowed(ctx, AclOperation.WRITE, topics, (t) => t.name);
  if (writable.denied.length > 0) {
    const denied = new Set(writable.denied.map((t) => t.name));
    return results(topics, (t) => (denied.has(t) ? ErrorCode.TOPIC_AUTHORIZATION_FAILED : ErrorCode.OPERATION_NOT_ATTEMPTED));
  }
  const exists = (t: string, p: number) => s.topics.exists(t, p);
  if (topics.some((t) => t.partitions.some((p) => !exists(t.name, p)))) {
    return results(topics, (t, p) => (exists(t, p) ? ErrorCode.OPERATION_NOT_ATTEMPTED : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION));
  }
  if (verifyOnly) return results(topics, (t, p) => s.txn.verify(txnId, producerId, producerEpoch, t, p));
  const partitions = topics.flatMap((t) => t.partitions.map((partition) => ({ topic: t.name, partition })));
  const code = fencedForVersion(await s.txn.addPartitions(txnId, producerId, producerEpoch, partitions), ctx.apiVersion, 2);
  return results(topics, () => code);
}

export const addPartitionsToTxnHandler = defineHandler<AddPartitionsToTxnRequest, AddPartitionsToTxnResponse>({
  apiKey: ApiKey.AddPartitionsToTxn,
  minVersion: 0,
  maxVersion: 5,
  async handle(req, ctx) {
    if (ctx.apiVersion <= 3) {
      const topics = req.v3AndBelowTopics ?? [];
      const r = await addOne(
        ctx,
        req.v3AndBelowTransactionalId ?? '',
        req.v3AndBelowProducerId ?? -1n,
        req.v3AndBelowProducerEpoch ?? -1,
        topics,
        false,
      );
      return { throttleTimeMs: 0, resultsByTopicV3AndBelow: r };
    }
    // v4+ is the brokers' own (KIP-890 verification): CLUSTER_ACTION
    if (!clusterAllowed(ctx, AclOperation.CLUSTER_ACTION)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const resultsByTransaction = await Promise.all(
      (req.transactions ?? []).map(async (t) => ({
        transactionalId: t.transactionalId ?? '',
        topicResults: await addOne(
          ctx,
          t.transactionalId ?? '',
          t.producerId ?? -1n,
          t.producerEpoch ?? -1,
          t.topics ?? [],
          t.verifyOnly === true,
        ),
      })),
    );
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, resultsByTransaction };
  },
  errorResponse(req, errorCode, ctx) {
    if (ctx.apiVersion <= 3) return { throttleTimeMs: 0, resultsByTopicV3AndBelow: results(req.v3AndBelowTopics ?? [], () => errorCode) };
    return { throttleTimeMs: 0, errorCode, resultsByTransaction: [] };
  },
});
