import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { InitProducerIdRequest, InitProducerIdResponse } from '../../protocol/generated/init-producer-id.js';
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
