import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { TxnOffsetCommitRequest, TxnOffsetCommitResponse } from '../../protocol/generated/txn-offset-commit.js';
import { OFFSETS_TOPIC } from '../group/records.js';
import { commitTxnOffsets } from '../group/txn-offsets.js';
import { AclOperation, byTopicAllowed, deniedTopics, groupAllowed, transactionalIdError } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** Offsets committed inside a transaction: visible to the group only once the transaction commits. */
export const txnOffsetCommitHandler = defineHandler<TxnOffsetCommitRequest, TxnOffsetCommitResponse>({
  apiKey: ApiKey.TxnOffsetCommit,
  minVersion: 0,
  maxVersion: 4,
  async handle(req, ctx) {
    const s = ctx.services;
    const v = ctx.apiVersion;
    const denied = transactionalIdError(ctx, AclOperation.WRITE, req.transactionalId);
    if (denied !== ErrorCode.NONE) return this.errorResponse(req, denied, ctx);
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId)) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const readable = byTopicAllowed(ctx, AclOperation.READ, req.topics, (t) => t.name);
    const map = (code: number): number => {
      if (code === ErrorCode.PRODUCER_FENCED) return ErrorCode.INVALID_PRODUCER_EPOCH;
      if (code === ErrorCode.TRANSACTION_ABORTABLE && v < 4) return ErrorCode.INVALID_TXN_STATE;
      return code;
    };
    // clusters: a transactional id another broker coordinates is checked there
    const routing = s.txn.routing;
    const verify = (offsetsPartition: number): number | Promise<number> => {
      const code = routing.verifyForWrite(req.transactionalId, req.producerId, req.producerEpoch, OFFSETS_TOPIC, offsetsPartition, () => {
        const e = s.topics.partition(OFFSETS_TOPIC, offsetsPartition)?.producers.producers.get(req.producerId);
        return e !== undefined && e.producerEpoch === req.producerEpoch && e.currentTxnFirstOffset !== null;
      });
      return typeof code === 'number' ? map(code) : code.then(map);
    };
    const topics = await commitTxnOffsets(
      s.groups,
      {
        transactionalId: req.transactionalId,
        groupId: req.groupId,
        producerId: req.producerId,
        producerEpoch: req.producerEpoch,
        generationId: req.generationId ?? -1,
        memberId: req.memberId ?? '',
        groupInstanceId: req.groupInstanceId ?? null,
        topics: readable.allowed.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            committedOffset: p.committedOffset,
            committedLeaderEpoch: p.committedLeaderEpoch ?? -1,
            committedMetadata: p.committedMetadata,
          })),
        })),
      },
      (topic, partition) => s.topics.exists(topic, partition),
      verify,
    );
    return { throttleTimeMs: 0, topics: [...topics, ...deniedTopics(readable.denied)] };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })),
      })),
    };
  },
});
