import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type {
  ListOffsetsRequest,
  ListOffsetsResponse,
  ListOffsetsResponseListOffsetsPartitionResponse,
} from '../../protocol/generated/list-offsets.js';
import { AclOperation, byTopicAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** Special timestamps of ListOffsets. */
export const OffsetSpec = { LATEST: -1n, EARLIEST: -2n, MAX_TIMESTAMP: -3n, EARLIEST_LOCAL: -4n, LATEST_TIERED: -5n } as const;

function failed(partitionIndex: number, errorCode: number): ListOffsetsResponseListOffsetsPartitionResponse {
  return { partitionIndex, errorCode, oldStyleOffsets: [], timestamp: -1n, offset: -1n };
}

export const listOffsetsHandler = defineHandler<ListOffsetsRequest, ListOffsetsResponse>({
  apiKey: ApiKey.ListOffsets,
  minVersion: 0,
  maxVersion: 9,
  async handle(req, ctx) {
    const s = ctx.services;
    for (const t of req.topics) {
      // a log not recovered yet (after an unclean shutdown) is recovered before its offsets are read
      await s.topics.recoverPartitions(
        t.name,
        t.partitions.map((p) => p.partitionIndex),
      );
      await s.topics.openPartitions(
        t.name,
        t.partitions.filter((p) => p.timestamp >= 0n || p.timestamp === OffsetSpec.MAX_TIMESTAMP).map((p) => p.partitionIndex),
      );
    }
    const described = byTopicAllowed(ctx, AclOperation.DESCRIBE, req.topics, (t) => t.name);
    // v2+ carry an isolation level; read_committed (1) sees up to the last stable offset
    const readCommitted = ctx.apiVersion >= 2 && req.isolationLevel === 1;
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => {
          if (described.denied.includes(t)) return failed(p.partitionIndex, ErrorCode.TOPIC_AUTHORIZATION_FAILED);
          const log = s.topics.partition(t.name, p.partitionIndex);
          if (log === undefined) return failed(p.partitionIndex, s.topics.notHereError(t.name, p.partitionIndex));
          // its recovery (or open) failed: the log is offline
          if (!log.servable) return failed(p.partitionIndex, ErrorCode.KAFKA_STORAGE_ERROR);
          const lastFetchable = readCommitted ? log.lastStableOffset : log.highWatermark;
          // a client's lookup at a new leader whose high watermark may still be behind the previous leader's
          // answers (KIP-207): retriable, and the offsets it would give could go back
          const notYet =
            req.replicaId === -1 && ctx.apiVersion >= 1 && s.replication?.highWatermarkBehindEpochStart(t.name, p.partitionIndex) === true;
          let found: { offset: bigint; timestamp: bigint; leaderEpoch: number } | null;
          switch (p.timestamp) {
            case OffsetSpec.LATEST:
            case OffsetSpec.LATEST_TIERED:
              if (notYet) return failed(p.partitionIndex, ErrorCode.OFFSET_NOT_AVAILABLE);
              found = { offset: lastFetchable, timestamp: -1n, leaderEpoch: 0 };
              break;
            case OffsetSpec.EARLIEST:
            case OffsetSpec.EARLIEST_LOCAL:
              found = { offset: log.logStartOffset, timestamp: -1n, leaderEpoch: 0 };
              break;
            default:
              if (p.timestamp < OffsetSpec.LATEST_TIERED) return failed(p.partitionIndex, ErrorCode.UNSUPPORTED_VERSION);
              found = log.offsetForTimestamp(p.timestamp);
              // only offsets a consumer of this isolation level could fetch (Kafka's lastFetchableOffset)
              if (found !== null && found.offset >= lastFetchable) found = null;
              if (found === null && notYet) return failed(p.partitionIndex, ErrorCode.OFFSET_NOT_AVAILABLE);
          }
          if (ctx.apiVersion === 0) {
            // v0 answers a list of offsets; Kafka gives the one asked for (bounded by max_num_offsets).
            const offsets = found === null || (p.maxNumOffsets ?? 1) < 1 ? [] : [found.offset];
            return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE, oldStyleOffsets: offsets };
          }
          const epoch = ctx.apiVersion >= 4 && found !== null ? { leaderEpoch: found.leaderEpoch } : {};
          if (found === null) return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE, timestamp: -1n, offset: -1n };
          return {
            partitionIndex: p.partitionIndex,
            errorCode: ErrorCode.NONE,
            timestamp: found.timestamp,
            offset: found.offset,
            ...epoch,
          };
        }),
      })),
    };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => failed(p.partitionIndex, errorCode)) })),
    };
  },
});
