/** DescribeShareGroupOffsets (key 90) v0–1: share-partition start offsets of share groups (lag from v1). */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  DescribeShareGroupOffsetsRequest,
  DescribeShareGroupOffsetsResponse,
} from '../../protocol/generated/describe-share-group-offsets.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { describeShareGroupOffsets } from '../share/share-offsets.js';
import { describeShareGroupOffsetsInCluster } from '../share/share-offsets-cluster.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const describeShareGroupOffsetsHandler = defineHandler<DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse>({
  apiKey: ApiKey.DescribeShareGroupOffsets,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    const s = ctx.services;
    const groups = await Promise.all(
      req.groups.map(async (g) => {
        const status = groupAllowed(ctx, AclOperation.DESCRIBE, g.groupId)
          ? s.groups.validateGroupStatus(g.groupId, 'describe')
          : ErrorCode.GROUP_AUTHORIZATION_FAILED;
        if (status !== ErrorCode.NONE) return { groupId: g.groupId, topics: [], errorCode: status, errorMessage: null };
        const otherType = s.groups.groups.has(g.groupId);
        // clusters: each share partition's state from its share coordinator, wherever its leader is
        return s.share.clustered
          ? describeShareGroupOffsetsInCluster(s.share, g, otherType, ctx.apiVersion >= 1)
          : describeShareGroupOffsets(s.share, g, otherType);
      }),
    );
    return { throttleTimeMs: 0, groups };
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, groups: req.groups.map((g) => ({ groupId: g.groupId, topics: [], errorCode, errorMessage: null })) };
  },
});
