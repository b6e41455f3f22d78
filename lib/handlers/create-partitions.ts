/**
 * CreatePartitions (key 37) v0–3: grows topics to a new partition count. Shrinking or keeping the count
 * is INVALID_PARTITIONS; manual assignments must name this node only, one per new partition.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  CreatePartitionsRequest,
  CreatePartitionsRequestCreatePartitionsTopic,
  CreatePartitionsResponse,
  CreatePartitionsResponseCreatePartitionsTopicResult,
} from '../../protocol/generated/create-partitions.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { BrokerServices } from '../services.js';
import { TopicError } from '../topics.js';
import { AclOperation, topicAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';
import { MAX_RECORDS_PER_USER_OP, oncePerTopic, overLimitResults } from './user-op-limit.js';

function check(s: BrokerServices, t: CreatePartitionsRequestCreatePartitionsTopic): void {
  const rec = s.metadata.topic(t.name);
  if (rec === undefined) throw new TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `The topic '${t.name}' does not exist.`);
  if (t.count < rec.partitions) {
    throw new TopicError(
      ErrorCode.INVALID_PARTITIONS,
      `The topic ${t.name} currently has ${rec.partitions} partition(s); ${t.count} would not be an increase.`,
    );
  }
  if (t.count === rec.partitions) throw new TopicError(ErrorCode.INVALID_PARTITIONS, `Topic already has ${rec.partitions} partition(s).`);
  if (t.assignments === null) return;
  const added = t.count - rec.partitions;
  if (t.assignments.length !== added) {
    throw new TopicError(
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      `Attempted to add ${added} additional partition(s), but only ${t.assignments.length} assignment(s) were specified.`,
    );
  }
  for (const a of t.assignments) {
    if (a.brokerIds.length !== rec.replicationFactor) {
      throw new TopicError(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        `The manual partition assignment includes a partition with ${a.brokerIds.length} replica(s), but this is not consistent with previous partitions, which have ${rec.replicationFactor} replica(s).`,
      );
    }
    const unknown = a.brokerIds.find((b) => b !== s.nodeId);
    if (unknown !== undefined) {
      throw new TopicError(
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        `The manual partition assignment includes broker ${unknown}, but no such broker is registered.`,
      );
    }
  }
}

export const createPartitionsHandler = defineHandler<CreatePartitionsRequest, CreatePartitionsResponse>({
  apiKey: ApiKey.CreatePartitions,
  minVersion: 0,
  maxVersion: 3,
  async handle(req, ctx) {
    const s = ctx.services;
    const counts = new Map<string, number>();
    for (const t of req.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
    const results: CreatePartitionsResponseCreatePartitionsTopicResult[] = [];
    // ALTER on each topic first; then Kafka's controller writes one record per new partition, at most
    // MAX_RECORDS_PER_USER_OP per request
    const mayAlter = oncePerTopic((name) => topicAllowed(ctx, AclOperation.ALTER, name));
    let records = 0;
    for (const t of req.topics) {
      const rec = (counts.get(t.name) ?? 0) > 1 || !mayAlter(t.name) ? undefined : s.metadata.topic(t.name);
      if (rec !== undefined && t.count > rec.partitions) records += t.count - rec.partitions;
    }
    if (records > MAX_RECORDS_PER_USER_OP) return { throttleTimeMs: 0, results: overLimitResults(counts, mayAlter) };
    for (const t of req.topics) {
      if ((counts.get(t.name) ?? 0) > 1) continue;
      if (!mayAlter(t.name)) {
        results.push({ name: t.name, errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, errorMessage: 'Authorization failed.' });
        continue;
      }
      try {
        check(s, t);
        if (!req.validateOnly) await s.topics.addPartitions(t.name, t.count);
        results.push({ name: t.name, errorCode: ErrorCode.NONE, errorMessage: null });
      } catch (e) {
        if (!(e instanceof TopicError)) throw e;
        results.push({ name: t.name, errorCode: e.errorCode, errorMessage: e.message });
      }
    }
    for (const [name, n] of counts)
      if (n > 1) results.push({ name, errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Duplicate topic name.' });
    return { throttleTimeMs: 0, results };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      results: [...new Set(req.topics.map((t) => t.name))].map((name) => ({ name, errorCode, errorMessage: null })),
    };
  },
});
