import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse } from '../../protocol/generated/offset-for-leader-epoch.js';
import { AclOperation, byTopicAllowed, clusterAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const offsetForLeaderEpochHandler = defineHandler<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse>({
  apiKey: ApiKey.OffsetForLeaderEpoch,
  minVersion: 2,
  maxVersion: 4,
  async handle(req, ctx) {
    // a follower's request (replica id >= 0) needs CLUSTER_ACTION; a client's DESCRIBE on each topic
    if ((req.replicaId ?? -2) >= 0 && !clusterAllowed(ctx, AclOperation.CLUSTER_ACTION))
      return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const described = byTopicAllowed(ctx, AclOperation.DESCRIBE, req.topics, (t) => t.topic);
    // a log not recovered yet (after an unclean shutdown) is recovered before its epochs are read
    for (const t of described.allowed)
      await ctx.services.topics.recoverPartitions(
        t.topic,
        t.partitions.map((p) => p.partition),
      );
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        topic: t.topic,
        partitions: t.partitions.map((p) => {
          if (described.denied.includes(t))
            return { errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition: p.partition, leaderEpoch: -1, endOffset: -1n };
          const log = ctx.services.topics.partition(t.topic, p.partition);
          if (log === undefined)
            return {
              errorCode: ctx.services.topics.notHereError(t.topic, p.partition),
              partition: p.partition,
              leaderEpoch: -1,
              endOffset: -1n,
            };
          if (!log.servable) return { errorCode: ErrorCode.KAFKA_STORAGE_ERROR, partition: p.partition, leaderEpoch: -1, endOffset: -1n };
          // one node: 0 for every partition; a cluster: the partition's epoch from the controller
          const currentEpoch = ctx.services.topics.leaderEpoch(t.topic, p.partition);
          const current = p.currentLeaderEpoch ?? -1;
          if (current > currentEpoch)
            return { errorCode: ErrorCode.UNKNOWN_LEADER_EPOCH, partition: p.partition, leaderEpoch: -1, endOffset: -1n };
          if (current !== -1 && current < currentEpoch)
            return { errorCode: ErrorCode.FENCED_LEADER_EPOCH, partition: p.partition, leaderEpoch: -1, endOffset: -1n };
          // Kafka's leader puts its current epoch in the leader-epoch cache at the log end offset when it
          // becomes leader (Partition.makeLeader), so LeaderEpochFileCache.endOffsetFor answers the current
          // epoch with the log end offset even before anything is written in it. Here the cache learns
          // epoch only from the first append in it: answer the current epoch directly, whatever the cache holds.
          if (p.leaderEpoch === currentEpoch)
            return { errorCode: ErrorCode.NONE, partition: p.partition, leaderEpoch: currentEpoch, endOffset: log.logEndOffset };
          const r = log.endOffsetForEpoch(p.leaderEpoch);
          return { errorCode: ErrorCode.NONE, partition: p.partition, leaderEpoch: r.leaderEpoch, endOffset: r.endOffset };
        }),
      })),
    };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        topic: t.topic,
        partitions: t.partitions.map((p) => ({ errorCode, partition: p.partition, leaderEpoch: -1, endOffset: -1n })),
      })),
    };
  },
});
