import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { OffsetCommitRequest, OffsetCommitResponse } from '../../protocol/generated/offset-commit.js';
import { commitOffsets } from '../group/offset-manager.js';
import { AclOperation, byTopicAllowed, deniedTopics, groupAllowed } from '../security/acl/checks.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { defineHandler } from './types.js';

export const offsetCommitHandler = defineHandler<OffsetCommitRequest, OffsetCommitResponse>({
  apiKey: ApiKey.OffsetCommit,
  minVersion: 0,
  maxVersion: 9,
  async handle(req, ctx) {
    const s = ctx.services;
    const v = ctx.apiVersion;
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId)) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const readable = byTopicAllowed(ctx, AclOperation.READ, req.topics, (t) => t.name);
    const topics = await commitOffsets(
      s.groups,
      {
        groupId: req.groupId,
        memberId: req.memberId ?? '',
        groupInstanceId: req.groupInstanceId ?? null,
        generationIdOrMemberEpoch: v === 0 ? -1 : (req.generationIdOrMemberEpoch ?? -1),
        retentionTimeMs: Number(req.retentionTimeMs ?? -1n),
        apiVersion: v,
        topics: readable.allowed.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            committedOffset: p.committedOffset,
            committedLeaderEpoch: p.committedLeaderEpoch ?? -1,
            commitTimestamp: v === 1 ? Number(p.commitTimestamp ?? -1n) : -1,
            committedMetadata: p.committedMetadata,
          })),
        })),
      },
      (topic, partition) => s.topics.exists(topic, partition),
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
