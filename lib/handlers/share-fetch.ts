import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ShareFetchRequest, ShareFetchResponse } from '../../protocol/generated/share-fetch.js';
import { shareFetch, type ShareRequestContext } from '../share/share-fetch.js';
import type { RequestContext } from './types.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** What the share fetch and acknowledge paths need of a request's context. */
export function shareRequestContext(ctx: RequestContext): ShareRequestContext {
  const s = ctx.services;
  return {
    purgatory: s.purgatory,
    nodeId: s.nodeId,
    leaderEpoch: (topicId, p) => {
      const name = s.metadata.topicById(topicId)?.name;
      return name === undefined ? -1 : s.topics.leaderEpoch(name, p);
    },
    connectionClosed: ctx.conn.closed,
  };
}

/** KIP-932 v1: records acquired for the member (with their acquired ranges and delivery counts), acknowledgements piggy-backed. */
export const shareFetchHandler = defineHandler<ShareFetchRequest, ShareFetchResponse>({
  apiKey: ApiKey.ShareFetch,
  minVersion: 1,
  maxVersion: 1,
  async handle(req, ctx) {
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId ?? '')) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    return { throttleTimeMs: 0, ...(await shareFetch(ctx.services.share, req, shareRequestContext(ctx))) };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, acquisitionLockTimeoutMs: 0, responses: [], nodeEndpoints: [] };
  },
});
