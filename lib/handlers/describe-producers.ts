/**
 * DescribeProducers (key 61) v0 (KIP-664): the active producers of each requested partition, from its
 * producer state (see lib/txn/admin.ts for the field semantics and errors).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DescribeProducersRequest, DescribeProducersResponse } from '../../protocol/generated/describe-producers.js';
import { describeProducers } from '../txn/admin.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, byTopicAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const describeProducersHandler = defineHandler<DescribeProducersRequest, DescribeProducersResponse>({
  apiKey: ApiKey.DescribeProducers,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const s = ctx.services;
    const readable = byTopicAllowed(ctx, AclOperation.READ, req.topics, (t) => t.name);
    // Logs of a just-created topic may still be opening.
    for (const t of readable.allowed) if (s.metadata.topic(t.name) !== undefined) await s.topics.openPartitions(t.name, t.partitionIndexes);
    const lookup = {
      topicExists: (topic: string) => s.metadata.topic(topic) !== undefined,
      partition: (topic: string, p: number) => s.topics.partition(topic, p),
      // clusters: a partition another broker leads (Kafka's NOT_LEADER_OR_FOLLOWER)
      notHereError: (topic: string, p: number) => s.topics.notHereError(topic, p),
    };
    const denied = this.errorResponse({ ...req, topics: readable.denied }, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ctx).topics;
    return { throttleTimeMs: 0, topics: [...describeProducers(lookup, readable.allowed), ...denied] };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode, errorMessage: null, activeProducers: [] })),
      })),
    };
  },
});
