import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ShareGroupDescribeRequest, ShareGroupDescribeResponse } from '../../protocol/generated/share-group-describe.js';
import { describedShareGroupError } from '../share/share-coordinator.js';
import {
  AclOperation,
  authorizedOperations,
  GROUP_TOPICS_NOT_AUTHORIZED,
  groupAllowed,
  groupTopicsHidden,
  ResourceType,
} from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** KIP-932: members, epochs and assignments of share groups (a group of another type: GROUP_ID_NOT_FOUND). */
export const shareGroupDescribeHandler = defineHandler<ShareGroupDescribeRequest, ShareGroupDescribeResponse>({
  apiKey: ApiKey.ShareGroupDescribe,
  minVersion: 1,
  maxVersion: 1,
  handle(req, ctx) {
    const groups = req.groupIds.map((groupId) => {
      if (!groupAllowed(ctx, AclOperation.DESCRIBE, groupId))
        return describedShareGroupError(groupId, ErrorCode.GROUP_AUTHORIZATION_FAILED);
      const status = ctx.services.groups.validateGroupStatus(groupId, 'describe');
      if (status !== ErrorCode.NONE) return describedShareGroupError(groupId, status);
      const d = ctx.services.share.coordinator.describe(
        groupId,
        req.includeAuthorizedOperations,
        authorizedOperations(ctx, ResourceType.GROUP, groupId),
      );
      // as Kafka: a group whose assignments name a topic the principal may not describe is not shown
      return groupTopicsHidden(ctx, d.members)
        ? describedShareGroupError(groupId, ErrorCode.TOPIC_AUTHORIZATION_FAILED, GROUP_TOPICS_NOT_AUTHORIZED)
        : d;
    });
    return { throttleTimeMs: 0, groups };
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, groups: req.groupIds.map((groupId) => describedShareGroupError(groupId, errorCode)) };
  },
});
