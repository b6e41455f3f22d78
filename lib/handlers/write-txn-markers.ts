import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { WriteTxnMarkersRequest, WriteTxnMarkersResponse } from '../../protocol/generated/write-txn-markers.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/**
 * Writes COMMIT/ABORT markers to the partitions named (the coordinator's own path, and Admin
 * abortTransaction / `kafka-transactions.sh abort` for a hanging transaction). Each partition gets
 * the error its log or producer state gives.
 */
export const writeTxnMarkersHandler = defineHandler<WriteTxnMarkersRequest, WriteTxnMarkersResponse>({
  apiKey: ApiKey.WriteTxnMarkers,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    const txn = ctx.services.txn;
    if (!clusterAllowed(ctx, AclOperation.CLUSTER_ACTION)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    // every partition at once (in a cluster each waits for its ISR)
    const markers = await Promise.all(
      req.markers.map(async (m) => ({
        producerId: m.producerId,
        topics: await Promise.all(
          m.topics.map(async (t) => ({
            name: t.name,
            partitions: await Promise.all(
              t.partitionIndexes.map(async (partitionIndex) => ({
                partitionIndex,
                errorCode: await txn.markers.append(
                  t.name,
                  partitionIndex,
                  m.producerId,
                  m.producerEpoch,
                  m.transactionResult,
                  m.coordinatorEpoch,
                ),
              })),
            ),
          })),
        ),
      })),
    );
    return { markers };
  },
  errorResponse(req, errorCode) {
    return {
      markers: req.markers.map((m) => ({
        producerId: m.producerId,
        topics: m.topics.map((t) => ({
          name: t.name,
          partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode })),
        })),
      })),
    };
  },
});
