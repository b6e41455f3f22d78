import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ShareAcknowledgeRequest, ShareAcknowledgeResponse } from '../../protocol/generated/share-acknowledge.js';
import { shareAcknowledge } from '../share/share-fetch.js';
import { shareRequestContext } from './share-fetch.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** KIP-932 v1: accept, release or reject acquired records (epoch -1 also ends the share session). */
export const shareAcknowledgeHandler = defineHandler<ShareAcknowledgeRequest, ShareAcknowledgeResponse>({
  apiKey: ApiKey.ShareAcknowledge,
  minVersion: 1,
  maxVersion: 1,
  async handle(req, ctx) {
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId ?? '')) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    return { throttleTimeMs: 0, ...(await shareAcknowledge(ctx.services.share, req, shareRequestContext(ctx))) };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, responses: [], nodeEndpoints: [] };
  },
});
