import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse } from '../../protocol/generated/consumer-group-describe.js';
import { consumerGroupDescribeError, describeConsumerGroup } from '../group/group-admin.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const consumerGroupDescribeHandler = defineHandler<ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse>({
  apiKey: ApiKey.ConsumerGroupDescribe,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    return {
      throttleTimeMs: 0,
      groups: req.groupIds.map((id) =>
        groupAllowed(ctx, AclOperation.DESCRIBE, id)
          ? describeConsumerGroup(ctx.services.groups, id, req.includeAuthorizedOperations)
          : consumerGroupDescribeError(id, ErrorCode.GROUP_AUTHORIZATION_FAILED),
      ),
    };
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, groups: req.groupIds.map((groupId) => consumerGroupDescribeError(groupId, errorCode)) };
  },
});
