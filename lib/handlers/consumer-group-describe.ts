import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse } from '../../protocol/generated/consumer-group-describe.js';
import { describeConsumerGroup } from '../group/offset-manager.js';
import { defineHandler } from './types.js';

export const consumerGroupDescribeHandler = defineHandler<ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse>({
  apiKey: ApiKey.ConsumerGroupDescribe,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    return { throttleTimeMs: 0, groups: req.groupIds.map((id) => describeConsumerGroup(ctx.services.groups, id)) };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      groups: req.groupIds.map((groupId) => ({ errorCode, errorMessage: null, groupId, groupState: '', groupEpoch: -1, assignmentEpoch: -1, assignorName: '', members: [], authorizedOperations: -2147483648 })),
    };
  },
});
