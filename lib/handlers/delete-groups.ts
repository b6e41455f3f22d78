import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DeleteGroupsRequest, DeleteGroupsResponse } from '../../protocol/generated/delete-groups.js';
import { deleteGroups } from '../group/group-admin.js';
import { defineHandler } from './types.js';

/**
 * DeleteGroups v0–2. The request has no timeout in any version: Kafka bounds the write with
 * offsets.commit.timeout.ms; here the answer comes once the tombstones are written.
 */
export const deleteGroupsHandler = defineHandler<DeleteGroupsRequest, DeleteGroupsResponse>({
  apiKey: ApiKey.DeleteGroups,
  minVersion: 0,
  maxVersion: 2,
  async handle(req, ctx) {
    return { throttleTimeMs: 0, results: await deleteGroups(ctx.services.groups, req.groupsNames) };
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, results: req.groupsNames.map((groupId) => ({ groupId, errorCode })) };
  },
});
