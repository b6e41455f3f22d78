/**
 * DeleteRecords (key 21) v0–2: moves each partition's log start offset forward. Offset -1 stands for the
 * high watermark; the answer carries the new low watermark (single node: the log start offset).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  DeleteRecordsRequest,
  DeleteRecordsResponse,
  DeleteRecordsResponseDeleteRecordsPartitionResult,
} from '../../protocol/generated/delete-records.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { BrokerServices } from '../services.js';
import { INTERNAL_TOPICS } from '../topics.js';
import { defineHandler } from './types.js';

/** Offset meaning "up to the high watermark". */
export const HIGH_WATERMARK = -1n;

function failed(partitionIndex: number, errorCode: number): DeleteRecordsResponseDeleteRecordsPartitionResult {
  return { partitionIndex, lowWatermark: -1n, errorCode };
}

/** Whether the topic's cleanup.policy includes delete (compact-only topics keep their records). */
function allowsDeletion(s: BrokerServices, topic: string): boolean {
  const raw = s.metadata.topic(topic)?.configs['cleanup.policy'];
  const policy = raw !== undefined ? raw.split(',').map((x) => x.trim()) : s.config.topicDefault('cleanup.policy');
  return Array.isArray(policy) && policy.includes('delete');
}

function deleteOne(
  s: BrokerServices,
  topic: string,
  partitionIndex: number,
  offset: bigint,
): DeleteRecordsResponseDeleteRecordsPartitionResult {
  const log = s.topics.partition(topic, partitionIndex);
  if (log === undefined) return failed(partitionIndex, s.topics.notHereError(topic, partitionIndex));
  if (INTERNAL_TOPICS.has(topic)) return failed(partitionIndex, ErrorCode.INVALID_TOPIC_EXCEPTION);
  if (!allowsDeletion(s, topic)) return failed(partitionIndex, ErrorCode.POLICY_VIOLATION);
  const target = offset === HIGH_WATERMARK ? log.highWatermark : offset;
  if (target < 0n) return failed(partitionIndex, ErrorCode.OFFSET_OUT_OF_RANGE);
  try {
    log.deleteRecordsBefore(target);
  } catch (e) {
    if (e !== null && typeof e === 'object' && 'errorCode' in e && typeof e.errorCode === 'number')
      return failed(partitionIndex, e.errorCode);
    throw e;
  }
  return { partitionIndex, lowWatermark: log.logStartOffset, errorCode: ErrorCode.NONE };
}

export const deleteRecordsHandler = defineHandler<DeleteRecordsRequest, DeleteRecordsResponse>({
  apiKey: ApiKey.DeleteRecords,
  minVersion: 0,
  maxVersion: 2,
  async handle(req, ctx) {
    const s = ctx.services;
    // Logs of a just-created topic may still be opening.
    for (const t of req.topics)
      if (s.metadata.topic(t.name) !== undefined)
        await s.topics.openPartitions(
          t.name,
          t.partitions.map((p) => p.partitionIndex),
        );
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => deleteOne(s, t.name, p.partitionIndex, p.offset)),
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
