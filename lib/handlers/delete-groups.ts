import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DeleteGroupsRequest, DeleteGroupsResponse } from '../../protocol/generated/delete-groups.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { deleteGroups } from '../group/group-admin.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/**
 * DeleteGroups v0–2. The request has no timeout in any version: Kafka bounds the write with
 * offsets.commit.timeout.ms; here the answer comes once the tombstones are written. A share group
 * without members goes with its share-partition state.
 */
export const deleteGroupsHandler = defineHandler<DeleteGroupsRequest, DeleteGroupsResponse>({
  apiKey: ApiKey.DeleteGroups,
  minVersion: 0,
  maxVersion: 2,
  async handle(req, ctx) {
    const share = ctx.services.share;
    const others: string[] = [];
    const shared = new Map<string, number>();
    const deletable = req.groupsNames.filter((id) => groupAllowed(ctx, AclOperation.DELETE, id));
    for (const id of deletable) {
      const status = ctx.services.groups.validateGroupStatus(id, 'delete');
      const code = status === ErrorCode.NONE ? await share.coordinator.delete(id) : undefined;
      if (code === undefined) others.push(id);
      else {
        if (code === ErrorCode.NONE) await share.deleteGroupState(id);
        shared.set(id, code);
      }
    }
    const rest = new Map((await deleteGroups(ctx.services.groups, others)).map((r) => [r.groupId, r.errorCode]));
    return {
      throttleTimeMs: 0,
      results: req.groupsNames.map((groupId) => ({
        groupId,
        errorCode: !deletable.includes(groupId)
          ? ErrorCode.GROUP_AUTHORIZATION_FAILED
          : (shared.get(groupId) ?? rest.get(groupId) ?? ErrorCode.GROUP_ID_NOT_FOUND),
      })),
    };
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, results: req.groupsNames.map((groupId) => ({ groupId, errorCode })) };
  },
});
