import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { HeartbeatRequest, HeartbeatResponse } from '../../protocol/generated/heartbeat.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const heartbeatHandler = defineHandler<HeartbeatRequest, HeartbeatResponse>({
  apiKey: ApiKey.Heartbeat,
  minVersion: 0,
  maxVersion: 4,
  handle(req, ctx) {
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId)) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const groups = ctx.services.groups;
    const status = groups.validateGroupStatus(req.groupId, 'heartbeat');
    // While loading, answer blindly: the member learns of any rebalance once the group is back.
    if (status === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) return { throttleTimeMs: 0, errorCode: ErrorCode.NONE };
    if (status !== ErrorCode.NONE) return { throttleTimeMs: 0, errorCode: status };
    return {
      throttleTimeMs: 0,
      errorCode: groups.classic.heartbeat(req.groupId, req.memberId, req.groupInstanceId ?? null, req.generationId),
    };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode };
  },
});
