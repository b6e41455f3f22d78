import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse } from '../../protocol/generated/share-group-heartbeat.js';
import { AclOperation, groupAllowed, undescribedTopicsMessage } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** KIP-932: share group membership; the coordinator assigns partitions (several members may share one). */
export const shareGroupHeartbeatHandler = defineHandler<ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse>({
  apiKey: ApiKey.ShareGroupHeartbeat,
  minVersion: 1,
  maxVersion: 1,
  async handle(req, ctx) {
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId)) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    // Kafka: every subscribed topic must be describable
    const hidden = undescribedTopicsMessage(ctx, req.subscribedTopicNames);
    if (hidden !== null) return { ...this.errorResponse(req, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ctx), errorMessage: hidden };
    const status = ctx.services.groups.validateGroupStatus(req.groupId, 'consumer');
    if (status !== ErrorCode.NONE && status !== ErrorCode.INVALID_GROUP_ID) return this.errorResponse(req, status, ctx);
    const r = await ctx.services.share.coordinator.heartbeat(req, ctx.clientId ?? '', `/${ctx.conn.remoteAddress}`);
    return { throttleTimeMs: 0, ...r };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, memberId: null, memberEpoch: -1, heartbeatIntervalMs: 0, assignment: null };
  },
});
