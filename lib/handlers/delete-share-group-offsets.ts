/** DeleteShareGroupOffsets (key 92) v0: forgets an empty share group's state of whole topics. */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  DeleteShareGroupOffsetsRequest,
  DeleteShareGroupOffsetsResponse,
} from '../../protocol/generated/delete-share-group-offsets.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { deleteShareGroupOffsets } from '../share/share-offsets.js';
import { deleteShareGroupOffsetsInCluster } from '../share/share-offsets-cluster.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const deleteShareGroupOffsetsHandler = defineHandler<DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse>({
  apiKey: ApiKey.DeleteShareGroupOffsets,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const s = ctx.services;
    const status = groupAllowed(ctx, AclOperation.DELETE, req.groupId)
      ? s.groups.validateGroupStatus(req.groupId, 'delete')
      : ErrorCode.GROUP_AUTHORIZATION_FAILED;
    if (status !== ErrorCode.NONE) return { throttleTimeMs: 0, errorCode: status, errorMessage: null, responses: [] };
    const serve = s.share.clustered ? deleteShareGroupOffsetsInCluster : deleteShareGroupOffsets;
    return { throttleTimeMs: 0, ...(await serve(s.share, req, s.groups.groups.has(req.groupId))) };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, responses: [] };
  },
});
