import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DescribeGroupsRequest, DescribeGroupsResponse, DescribeGroupsResponseDescribedGroup } from '../../protocol/generated/describe-groups.js';
import { describeGroup } from '../group/offset-manager.js';
import { defineHandler } from './types.js';

const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

export const describeGroupsHandler = defineHandler<DescribeGroupsRequest, DescribeGroupsResponse>({
  apiKey: ApiKey.DescribeGroups,
  minVersion: 0,
  maxVersion: 5,
  handle(req, ctx) {
    const v = ctx.apiVersion;
    return {
      throttleTimeMs: 0,
      groups: req.groups.map((id) => {
        const d: DescribeGroupsResponseDescribedGroup = describeGroup(ctx.services.groups, id);
        if (v >= 3) d.authorizedOperations = AUTHORIZED_OPERATIONS_OMITTED;
        return d;
      }),
    };
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, groups: req.groups.map((groupId) => ({ errorCode, groupId, groupState: '', protocolType: '', protocolData: '', members: [] })) };
  },
});
