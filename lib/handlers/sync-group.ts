import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { SyncGroupRequest, SyncGroupResponse } from '../../protocol/generated/sync-group.js';
import { type SyncGroupResult, syncError } from '../group/classic-group.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

function toResponse(r: SyncGroupResult): SyncGroupResponse {
  return {
    throttleTimeMs: 0,
    errorCode: r.errorCode,
    protocolType: r.protocolType,
    protocolName: r.protocolName,
    assignment: r.assignment,
  };
}

export const syncGroupHandler = defineHandler<SyncGroupRequest, SyncGroupResponse>({
  apiKey: ApiKey.SyncGroup,
  minVersion: 0,
  maxVersion: 5,
  async handle(req, ctx) {
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId)) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const groups = ctx.services.groups;
    let status = groups.validateGroupStatus(req.groupId, 'sync');
    // A coordinator that is loading lost the rebalance: make the member rejoin (older clients do not know LOAD_IN_PROGRESS here).
    if (status === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) status = ErrorCode.REBALANCE_IN_PROGRESS;
    if (status !== ErrorCode.NONE) return toResponse(syncError(status));
    const r = await groups.classic.syncGroup({
      groupId: req.groupId,
      generationId: req.generationId,
      memberId: req.memberId,
      groupInstanceId: req.groupInstanceId ?? null,
      protocolType: req.protocolType ?? null,
      protocolName: req.protocolName ?? null,
      assignments: req.assignments.map((a) => ({ memberId: a.memberId, assignment: a.assignment })),
    });
    return toResponse(r);
  },
  errorResponse(_req, errorCode) {
    return toResponse(syncError(errorCode));
  },
});
