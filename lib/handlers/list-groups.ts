import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ListGroupsRequest, ListGroupsResponse } from '../../protocol/generated/list-groups.js';
import { listGroups } from '../group/group-admin.js';
import { defineHandler } from './types.js';

/** States filter from v4, types filter ("classic" / "consumer") from v5. */
export const listGroupsHandler = defineHandler<ListGroupsRequest, ListGroupsResponse>({
  apiKey: ApiKey.ListGroups,
  minVersion: 0,
  maxVersion: 5,
  handle(req, ctx) {
    const v = ctx.apiVersion;
    const r = listGroups(ctx.services.groups, v >= 4 ? (req.statesFilter ?? []) : [], v >= 5 ? (req.typesFilter ?? []) : []);
    return { throttleTimeMs: 0, errorCode: r.errorCode, groups: r.groups };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, groups: [] };
  },
});
