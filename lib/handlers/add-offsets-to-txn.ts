import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { AddOffsetsToTxnRequest, AddOffsetsToTxnResponse } from '../../protocol/generated/add-offsets-to-txn.js';
import { OFFSETS_TOPIC } from '../group/records.js';
import { fencedForVersion } from './init-producer-id.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, groupAllowed, transactionalIdError } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** Adds the group's `__consumer_offsets` partition to the transaction (before TxnOffsetCommit). */
export const addOffsetsToTxnHandler = defineHandler<AddOffsetsToTxnRequest, AddOffsetsToTxnResponse>({
  apiKey: ApiKey.AddOffsetsToTxn,
  minVersion: 0,
  maxVersion: 4,
  async handle(req, ctx) {
    const s = ctx.services;
    const denied = transactionalIdError(ctx, AclOperation.WRITE, req.transactionalId);
    if (denied !== ErrorCode.NONE) return this.errorResponse(req, denied, ctx);
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId)) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const partition = s.groups.partitionFor(req.groupId);
    const errorCode = await s.txn.addPartitions(req.transactionalId, req.producerId, req.producerEpoch, [
      { topic: OFFSETS_TOPIC, partition },
    ]);
    return { throttleTimeMs: 0, errorCode: fencedForVersion(errorCode, ctx.apiVersion, 2) };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode };
  },
});
