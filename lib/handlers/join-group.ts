import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { JoinGroupRequest, JoinGroupResponse } from '../../protocol/generated/join-group.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { type JoinGroupResult, joinError } from '../group/classic-group.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

function toResponse(r: JoinGroupResult, v: number): JoinGroupResponse {
  const res: JoinGroupResponse = {
    throttleTimeMs: 0,
    errorCode: r.errorCode,
    generationId: r.generationId,
    protocolType: r.protocolType,
    // Before v7 the protocol name is not nullable.
    protocolName: v >= 7 ? r.protocolName : (r.protocolName ?? ''),
    leader: r.leaderId,
    memberId: r.memberId,
    members: r.members.map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, metadata: m.metadata })),
  };
  if (v >= 9) res.skipAssignment = r.skipAssignment;
  return res;
}

export const joinGroupHandler = defineHandler<JoinGroupRequest, JoinGroupResponse>({
  apiKey: ApiKey.JoinGroup,
  minVersion: 0,
  maxVersion: 9,
  async handle(req, ctx) {
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId)) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const v = ctx.apiVersion;
    const groups = ctx.services.groups;
    const status = groups.validateGroupStatus(req.groupId, 'join');
    if (status !== ErrorCode.NONE) return toResponse(joinError(req.memberId, status), v);
    const groupInstanceId = req.groupInstanceId ?? null;
    const r = await groups.classic.joinGroup({
      groupId: req.groupId,
      memberId: req.memberId,
      groupInstanceId,
      requireKnownMemberId: v >= 4 && groupInstanceId === null,
      supportSkippingAssignment: v >= 9,
      clientId: ctx.clientId ?? '',
      clientHost: `/${ctx.conn.remoteAddress}`,
      rebalanceTimeoutMs: v === 0 ? req.sessionTimeoutMs : (req.rebalanceTimeoutMs ?? req.sessionTimeoutMs),
      sessionTimeoutMs: req.sessionTimeoutMs,
      protocolType: req.protocolType,
      protocols: req.protocols.map((p) => ({ name: p.name, metadata: p.metadata })),
      reason: req.reason ?? null,
    });
    return toResponse(r, v);
  },
  errorResponse(req, errorCode, ctx) {
    return toResponse(joinError(req.memberId, errorCode), ctx.apiVersion);
  },
});
