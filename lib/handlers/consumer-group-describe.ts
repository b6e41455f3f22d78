import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse } from '../../protocol/generated/consumer-group-describe.js';
import { consumerGroupDescribeError, describeConsumerGroup } from '../group/group-admin.js';
import { defineHandler } from './types.js';

export const consumerGroupDescribeHandler = defineHandler<ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse>({
  apiKey: ApiKey.ConsumerGroupDescribe,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    return {
      throttleTimeMs: 0,
      groups: req.groupIds.map((id) => describeConsumerGroup(ctx.services.groups, id, req.includeAuthorizedOperations)),
    };
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, groups: req.groupIds.map((groupId) => consumerGroupDescribeError(groupId, errorCode)) };
  },
});
