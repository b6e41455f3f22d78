import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse } from '../../protocol/generated/consumer-group-describe.js';
import { consumerGroupDescribeError, describeConsumerGroup } from '../group/group-admin.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import {
  AclOperation,
  AUTHORIZED_OPERATIONS_OMITTED,
  GROUP_TOPICS_NOT_AUTHORIZED,
  groupAllowed,
  groupAuthorizedOperations,
  groupTopicsHidden,
} from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const consumerGroupDescribeHandler = defineHandler<ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse>({
  apiKey: ApiKey.ConsumerGroupDescribe,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    return {
      throttleTimeMs: 0,
      groups: req.groupIds.map((id) => {
        if (!groupAllowed(ctx, AclOperation.DESCRIBE, id)) return consumerGroupDescribeError(id, ErrorCode.GROUP_AUTHORIZATION_FAILED);
        const d = describeConsumerGroup(ctx.services.groups, id, req.includeAuthorizedOperations);
        // as Kafka: a group whose assignments name a topic the principal may not describe is not shown
        if (groupTopicsHidden(ctx, d.members))
          return consumerGroupDescribeError(id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, GROUP_TOPICS_NOT_AUTHORIZED);
        // the principal's operations on the group, on answers without error (as KafkaApis sets them)
        d.authorizedOperations = groupAuthorizedOperations(ctx, id, d.authorizedOperations !== AUTHORIZED_OPERATIONS_OMITTED);
        return d;
      }),
    };
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, groups: req.groupIds.map((groupId) => consumerGroupDescribeError(groupId, errorCode)) };
  },
});
