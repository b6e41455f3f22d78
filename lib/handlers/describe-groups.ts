import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  DescribeGroupsRequest,
  DescribeGroupsResponse,
  DescribeGroupsResponseDescribedGroup,
} from '../../protocol/generated/describe-groups.js';
import { describeGroup } from '../group/group-admin.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, AUTHORIZED_OPERATIONS_OMITTED, groupAllowed, groupAuthorizedOperations } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** DescribeGroups v0–5; v3+ carries the group's authorized operations when the request asks for them. */
export const describeGroupsHandler = defineHandler<DescribeGroupsRequest, DescribeGroupsResponse>({
  apiKey: ApiKey.DescribeGroups,
  minVersion: 0,
  maxVersion: 5,
  handle(req, ctx) {
    const v = ctx.apiVersion;
    const include = v >= 3 && req.includeAuthorizedOperations === true;
    return {
      throttleTimeMs: 0,
      groups: req.groups.map((id) => {
        if (!groupAllowed(ctx, AclOperation.DESCRIBE, id))
          return this.errorResponse({ groups: [id] }, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx)
            .groups[0] as DescribeGroupsResponseDescribedGroup;
        const { authorizedOperations, ...d } = describeGroup(ctx.services.groups, id, include);
        const out: DescribeGroupsResponseDescribedGroup = d;
        // the coordinator answers every GROUP operation (or INT32_MIN); the principal's own are these
        if (v >= 3) out.authorizedOperations = groupAuthorizedOperations(ctx, id, authorizedOperations !== AUTHORIZED_OPERATIONS_OMITTED);
        return out;
      }),
    };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      groups: req.groups.map((groupId) => ({ errorCode, groupId, groupState: '', protocolType: '', protocolData: '', members: [] })),
    };
  },
});
