import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse } from '../../protocol/generated/consumer-group-heartbeat.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, groupAllowed, undescribedTopicsMessage } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** KIP-848: the broker computes assignments; members reconcile one heartbeat at a time. */
export const consumerGroupHeartbeatHandler = defineHandler<ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse>({
  apiKey: ApiKey.ConsumerGroupHeartbeat,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    const groups = ctx.services.groups;
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId)) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    // Kafka: every subscribed topic must be describable
    const hidden = undescribedTopicsMessage(ctx, req.subscribedTopicNames);
    if (hidden !== null) return { ...this.errorResponse(req, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ctx), errorMessage: hidden };
    const status = groups.validateGroupStatus(req.groupId, 'consumer');
    if (status !== ErrorCode.NONE && status !== ErrorCode.INVALID_GROUP_ID) {
      return {
        throttleTimeMs: 0,
        errorCode: status,
        errorMessage: null,
        memberId: null,
        memberEpoch: -1,
        heartbeatIntervalMs: 0,
        assignment: null,
      };
    }
    const r = await groups.consumer.heartbeat(req, ctx.apiVersion, ctx.clientId ?? '', `/${ctx.conn.remoteAddress}`);
    return { throttleTimeMs: 0, ...r };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, memberId: null, memberEpoch: -1, heartbeatIntervalMs: 0, assignment: null };
  },
});
