import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ListGroupsRequest, ListGroupsResponse } from '../../protocol/generated/list-groups.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { listGroups } from '../group/group-admin.js';
import { AclOperation, allowed, authorizing, clusterAllowed, ResourceType } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** States filter from v4, types filter ("classic" / "consumer" / "share") from v5. */
export const listGroupsHandler = defineHandler<ListGroupsRequest, ListGroupsResponse>({
  apiKey: ApiKey.ListGroups,
  minVersion: 0,
  maxVersion: 5,
  handle(req, ctx) {
    const v = ctx.apiVersion;
    const states = v >= 4 ? (req.statesFilter ?? []) : [];
    const types = v >= 5 ? (req.typesFilter ?? []) : [];
    const r = listGroups(ctx.services.groups, states, types);
    if (r.errorCode === ErrorCode.NONE) {
      const wantStates = new Set(states.map((s) => s.toLowerCase().trim()));
      const shareWanted = types.length === 0 || types.some((t) => t.toLowerCase() === 'share');
      for (const g of shareWanted ? ctx.services.share.coordinator.groups.values() : []) {
        if (g.dead || (states.length > 0 && !wantStates.has(g.state.toLowerCase()))) continue;
        // Kafka lists a share group with the protocol type "share"
        r.groups.push({ groupId: g.groupId, protocolType: 'share', groupState: g.state, groupType: 'share' });
      }
    }
    // without DESCRIBE on the cluster, only the groups the principal may describe are listed
    const all = !authorizing(ctx) || clusterAllowed(ctx, AclOperation.DESCRIBE, false);
    const groups = all ? r.groups : r.groups.filter((g) => allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.groupId, false));
    return { throttleTimeMs: 0, errorCode: r.errorCode, groups };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, groups: [] };
  },
});
