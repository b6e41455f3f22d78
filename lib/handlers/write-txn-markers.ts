import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { WriteTxnMarkersRequest, WriteTxnMarkersResponse } from '../../protocol/generated/write-txn-markers.js';
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
    const markers = [];
    for (const m of req.markers) {
      const topics = [];
      for (const t of m.topics) {
        const partitions = [];
        for (const partitionIndex of t.partitionIndexes) {
          partitions.push({
            partitionIndex,
            errorCode: await txn.markers.append(
              t.name,
              partitionIndex,
              m.producerId,
              m.producerEpoch,
              m.transactionResult,
              m.coordinatorEpoch,
            ),
          });
        }
        topics.push({ name: t.name, partitions });
      }
      markers.push({ producerId: m.producerId, topics });
    }
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
