import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { InitProducerIdRequest, InitProducerIdResponse } from '../../protocol/generated/init-producer-id.js';
import { AclOperation, anyAllowed, clusterAllowed, ResourceType, transactionalIdError } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** PRODUCER_FENCED is new in InitProducerId v4; older versions get INVALID_PRODUCER_EPOCH. */
export function fencedForVersion(errorCode: number, apiVersion: number, since: number): number {
  return errorCode === ErrorCode.PRODUCER_FENCED && apiVersion < since ? ErrorCode.INVALID_PRODUCER_EPOCH : errorCode;
}

/** A new producer id (idempotence), or the transactional id's producer bumped and fenced from older instances. */
export const initProducerIdHandler = defineHandler<InitProducerIdRequest, InitProducerIdResponse>({
  apiKey: ApiKey.InitProducerId,
  minVersion: 0,
  maxVersion: 5,
  async handle(req, ctx) {
    // a transactional producer needs WRITE on its id; an idempotent one IDEMPOTENT_WRITE on the cluster or WRITE on some topic
    if (req.transactionalId !== null) {
      const denied = transactionalIdError(ctx, AclOperation.WRITE, req.transactionalId);
      if (denied !== ErrorCode.NONE) return this.errorResponse(req, denied, ctx);
    } else if (!clusterAllowed(ctx, AclOperation.IDEMPOTENT_WRITE, false) && !anyAllowed(ctx, AclOperation.WRITE, ResourceType.TOPIC)) {
      clusterAllowed(ctx, AclOperation.IDEMPOTENT_WRITE); // logs the denial
      return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    }
    const expected = ctx.apiVersion >= 3 ? { producerId: req.producerId ?? -1n, producerEpoch: req.producerEpoch ?? -1 } : null;
    const r = await ctx.services.txn.initProducerId(req.transactionalId, req.transactionTimeoutMs, expected);
    return {
      throttleTimeMs: 0,
      errorCode: fencedForVersion(r.errorCode, ctx.apiVersion, 4),
      producerId: r.producerId,
      producerEpoch: r.producerEpoch,
    };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 };
  },
});
