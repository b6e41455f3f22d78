/**
 * DeleteRecords (key 21) v0–2: moves each partition's log start offset forward. Offset -1 stands for the
 * high watermark; the answer carries the new low watermark. Single node: the log start offset, at once.
 * Cluster: the smallest log start offset over the leader and its followers on live brokers, once it
 * reached the requested offset (followers move theirs to the leader's from their Fetch responses and
 * report it in their next Fetch); a partition whose followers do not get there within the request's
 * timeout_ms answers REQUEST_TIMED_OUT, as Kafka's DelayedDeleteRecords.
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
import { AclOperation, byTopicAllowed } from '../security/acl/checks.js';
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

/** The result of the local delete, and the offset the low watermark must reach (the target) when it succeeded. */
function deleteOne(
  s: BrokerServices,
  topic: string,
  partitionIndex: number,
  offset: bigint,
): DeleteRecordsResponseDeleteRecordsPartitionResult & { target?: bigint } {
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
  return { partitionIndex, lowWatermark: log.logStartOffset, errorCode: ErrorCode.NONE, target };
}

/** Deletes locally, then (in a cluster) waits for the replicas' low watermark to reach the target. */
async function deleteAndAwait(
  s: BrokerServices,
  topic: string,
  partitionIndex: number,
  offset: bigint,
  timeoutMs: number,
): Promise<DeleteRecordsResponseDeleteRecordsPartitionResult> {
  const { target, ...r } = deleteOne(s, topic, partitionIndex, offset);
  if (target === undefined || s.replication === undefined) return r;
  const waited = await s.replication.awaitLowWatermark(topic, partitionIndex, target, timeoutMs);
  return { partitionIndex, ...waited };
}

export const deleteRecordsHandler = defineHandler<DeleteRecordsRequest, DeleteRecordsResponse>({
  apiKey: ApiKey.DeleteRecords,
  minVersion: 0,
  maxVersion: 2,
  async handle(req, ctx) {
    const s = ctx.services;
    const deletable = byTopicAllowed(ctx, AclOperation.DELETE, req.topics, (t) => t.name);
    // Logs of a just-created topic may still be opening.
    for (const t of deletable.allowed)
      if (s.metadata.topic(t.name) !== undefined)
        await s.topics.openPartitions(
          t.name,
          t.partitions.map((p) => p.partitionIndex),
        );
    return {
      throttleTimeMs: 0,
      topics: await Promise.all(
        req.topics.map(async (t) => ({
          name: t.name,
          partitions: deletable.denied.includes(t)
            ? t.partitions.map((p) => failed(p.partitionIndex, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            : await Promise.all(t.partitions.map((p) => deleteAndAwait(s, t.name, p.partitionIndex, p.offset, req.timeoutMs))),
        })),
      ),
    };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => failed(p.partitionIndex, errorCode)) })),
    };
  },
});
