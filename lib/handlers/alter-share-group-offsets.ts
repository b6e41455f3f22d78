/** AlterShareGroupOffsets (key 91) v0: moves share-partition start offsets of an empty share group. */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse } from '../../protocol/generated/alter-share-group-offsets.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { alterShareGroupOffsets } from '../share/share-offsets.js';
import { alterShareGroupOffsetsInCluster } from '../share/share-offsets-cluster.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const alterShareGroupOffsetsHandler = defineHandler<AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse>({
  apiKey: ApiKey.AlterShareGroupOffsets,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const s = ctx.services;
    const status = groupAllowed(ctx, AclOperation.READ, req.groupId)
      ? s.groups.validateGroupStatus(req.groupId, 'commit')
      : ErrorCode.GROUP_AUTHORIZATION_FAILED;
    if (status !== ErrorCode.NONE) return { throttleTimeMs: 0, errorCode: status, errorMessage: null, responses: [] };
    const serve = s.share.clustered ? alterShareGroupOffsetsInCluster : alterShareGroupOffsets;
    return { throttleTimeMs: 0, ...(await serve(s.share, req, s.groups.groups.has(req.groupId))) };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, responses: [] };
  },
});
