import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { EndTxnRequest, EndTxnResponse } from '../../protocol/generated/end-txn.js';
import { fencedForVersion } from './init-producer-id.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, transactionalIdError } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/**
 * Commits or aborts the producer's transaction. Answered once the markers are written, so a
 * read_committed consumer sees the outcome as soon as the producer does. v5 (KIP-890 part 2,
 * transaction version 2) is not served.
 */
export const endTxnHandler = defineHandler<EndTxnRequest, EndTxnResponse>({
  apiKey: ApiKey.EndTxn,
  minVersion: 0,
  maxVersion: 4,
  async handle(req, ctx) {
    const denied = transactionalIdError(ctx, AclOperation.WRITE, req.transactionalId);
    if (denied !== ErrorCode.NONE) return this.errorResponse(req, denied, ctx);
    const errorCode = await ctx.services.txn.endTxn(req.transactionalId, req.producerId, req.producerEpoch, req.committed);
    return { throttleTimeMs: 0, errorCode: fencedForVersion(errorCode, ctx.apiVersion, 2) };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode };
  },
});
