import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { LeaveGroupRequest, LeaveGroupResponse } from '../../protocol/generated/leave-group.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** v0–2 name one member; v3+ a batch (with group instance ids), answered per member; classic or consumer group. */
export const leaveGroupHandler = defineHandler<LeaveGroupRequest, LeaveGroupResponse>({
  apiKey: ApiKey.LeaveGroup,
  minVersion: 0,
  maxVersion: 5,
  async handle(req, ctx) {
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId)) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const v = ctx.apiVersion;
    const groups = ctx.services.groups;
    const members =
      v >= 3
        ? (req.members ?? []).map((m) => ({
            memberId: m.memberId ?? '',
            groupInstanceId: m.groupInstanceId ?? null,
            reason: m.reason ?? null,
          }))
        : [{ memberId: req.memberId ?? '', groupInstanceId: null, reason: null }];
    const reply = (errorCode: number, codes: number[]): LeaveGroupResponse => {
      if (v < 3) return { throttleTimeMs: 0, errorCode: errorCode !== ErrorCode.NONE ? errorCode : (codes[0] ?? ErrorCode.NONE) };
      return {
        throttleTimeMs: 0,
        errorCode,
        members: members.map((m, i) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, errorCode: codes[i] ?? errorCode })),
      };
    };
    const status = groups.validateGroupStatus(req.groupId, 'leave');
    if (status !== ErrorCode.NONE) return v < 3 ? reply(status, []) : { throttleTimeMs: 0, errorCode: status, members: [] };
    const g = groups.groups.get(req.groupId);
    if (g === undefined)
      return reply(
        ErrorCode.NONE,
        members.map(() => ErrorCode.UNKNOWN_MEMBER_ID),
      );
    // A consumer group serves its classic members (Kafka's classicGroupLeaveToConsumerGroup).
    if (g.type === 'consumer') return reply(ErrorCode.NONE, await groups.inConsumerGroup.leave(g, members));
    if (g.is('Dead'))
      return v < 3
        ? reply(ErrorCode.COORDINATOR_NOT_AVAILABLE, [])
        : { throttleTimeMs: 0, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, members: [] };
    return reply(ErrorCode.NONE, groups.classic.leaveGroup(g, members));
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, members: [] };
  },
});
