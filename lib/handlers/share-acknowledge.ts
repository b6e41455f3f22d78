import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ShareAcknowledgeRequest, ShareAcknowledgeResponse } from '../../protocol/generated/share-acknowledge.js';
import { shareAcknowledge } from '../share/share-fetch.js';
import { readableShareTopics, shareRequestContext } from './share-fetch.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/**
 * KIP-932 v1: accept, release or reject acquired records (epoch -1 also ends the share session). Needs
 * READ on the group, and READ on each topic (else its partitions answer TOPIC_AUTHORIZATION_FAILED).
 */
export const shareAcknowledgeHandler = defineHandler<ShareAcknowledgeRequest, ShareAcknowledgeResponse>({
  apiKey: ApiKey.ShareAcknowledge,
  minVersion: 1,
  maxVersion: 1,
  async handle(req, ctx) {
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId ?? '')) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const topics = readableShareTopics(ctx, req.topics);
    await ctx.services.share.readStates(req.groupId, req.memberId, topics.allowed); // clusters: a new leader's share partitions
    const out = await shareAcknowledge(ctx.services.share, { ...req, topics: topics.allowed }, shareRequestContext(ctx));
    if (out.errorCode === ErrorCode.NONE)
      for (const t of topics.denied)
        out.responses.push({
          topicId: t.topicId,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            errorMessage: null,
            currentLeader: { leaderId: -1, leaderEpoch: -1 },
          })),
        });
    return { throttleTimeMs: 0, ...out };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, responses: [], nodeEndpoints: [] };
  },
});
