/**
 * CreateTopics (key 19) v0–7. Per-topic errors as Kafka gives them; validateOnly checks without creating;
 * v5+ report the partition count, replication factor and every config with its source; v7 the topic id.
 * A single node has nothing to wait for, so the timeout never expires.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  CreateTopicsRequest,
  CreateTopicsRequestCreatableTopic,
  CreateTopicsResponse,
  CreateTopicsResponseCreatableTopicResult,
} from '../../protocol/generated/create-topics.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { invalidTopicName } from '../metadata/local-store.js';
import type { BrokerServices } from '../services.js';
import { type CreateTopicSpec, TopicError } from '../topics.js';
import { topicConfigEntries } from './config-resources.js';
import { AclOperation, clusterAllowed, topicAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';
import { MAX_RECORDS_PER_USER_OP, oncePerTopic, overLimitResults } from './user-op-limit.js';

const ZERO_UUID = '0'.repeat(32);

function failure(name: string, errorCode: number, message: string | null, version: number): CreateTopicsResponseCreatableTopicResult {
  const r: CreateTopicsResponseCreatableTopicResult = { name, errorCode };
  if (version >= 1) r.errorMessage = message;
  return r;
}

/** Kafka's checks that come before the topic manager's: null configs, then replication factor, then partitions. */
function preCheck(s: BrokerServices, t: CreateTopicsRequestCreatableTopic): void {
  const bad = invalidTopicName(t.name);
  if (bad !== undefined) throw new TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, bad);
  if (s.metadata.topic(t.name) !== undefined) throw new TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${t.name}' already exists.`);
  const nulls = t.configs.filter((c) => c.value === null).map((c) => c.name);
  if (nulls.length > 0) throw new TopicError(ErrorCode.INVALID_CONFIG, `Null value not supported for topic configs: ${nulls.join(',')}`);
  if (t.assignments.length > 0) {
    if (t.numPartitions !== -1 || t.replicationFactor !== -1) return; // the topic manager names this one
    const indexes = t.assignments.map((a) => a.partitionIndex).sort((a, b) => a - b);
    if (indexes.some((p, i) => p !== i)) {
      throw new TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'Partitions should be a consecutive 0-based integer sequence');
    }
    if (t.assignments.some((a) => a.brokerIds.length === 0)) {
      throw new TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'Each partition must have at least one replica.');
    }
    return;
  }
  if (t.replicationFactor < -1 || t.replicationFactor === 0) {
    throw new TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0, or -1 to use the default value.');
  }
  if (t.numPartitions < -1 || t.numPartitions === 0) {
    throw new TopicError(ErrorCode.INVALID_PARTITIONS, 'Number of partitions was set to an invalid non-positive value.');
  }
  const rf = t.replicationFactor === -1 ? s.config.int('default.replication.factor') : t.replicationFactor;
  const registered = s.metadata.kind === 'local' ? 1 : s.metadata.brokers().length;
  if (rf > registered) {
    throw new TopicError(
      ErrorCode.INVALID_REPLICATION_FACTOR,
      `Unable to replicate the partition ${rf} time(s): The target replication factor of ${rf} cannot be reached because only ${registered} broker(s) are registered.`,
    );
  }
}

function toSpec(t: CreateTopicsRequestCreatableTopic): CreateTopicSpec {
  const configs: Record<string, string | null> = {};
  for (const c of t.configs) configs[c.name] = c.value;
  const spec: CreateTopicSpec = { name: t.name, numPartitions: t.numPartitions, replicationFactor: t.replicationFactor, configs };
  if (t.assignments.length > 0) {
    spec.assignments = [...t.assignments].sort((a, b) => a.partitionIndex - b.partitionIndex).map((a) => a.brokerIds);
  }
  return spec;
}

/** The metadata records Kafka's controller would write for the request's creatable topics (see user-op-limit.ts). */
function metadataRecords(
  s: BrokerServices,
  topics: readonly CreateTopicsRequestCreatableTopic[],
  counts: ReadonlyMap<string, number>,
): number {
  let records = 0;
  for (const t of topics) {
    if ((counts.get(t.name) ?? 0) > 1) continue;
    try {
      preCheck(s, t);
    } catch (e) {
      if (e instanceof TopicError) continue;
      throw e;
    }
    const partitions =
      t.assignments.length > 0 ? t.assignments.length : t.numPartitions === -1 ? s.config.int('num.partitions') : t.numPartitions;
    records += 1 + partitions + t.configs.length;
  }
  return records;
}

export const createTopicsHandler = defineHandler<CreateTopicsRequest, CreateTopicsResponse>({
  apiKey: ApiKey.CreateTopics,
  minVersion: 0,
  maxVersion: 7,
  async handle(req, ctx) {
    const s = ctx.services;
    const v = ctx.apiVersion;
    const validateOnly = req.validateOnly === true;
    const counts = new Map<string, number>();
    for (const t of req.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
    const topics: CreateTopicsResponseCreatableTopicResult[] = [];
    // CREATE on the cluster covers every topic; else CREATE on each (authorized before the record limit, as Kafka)
    const onCluster = clusterAllowed(ctx, AclOperation.CREATE, false);
    const mayCreate = oncePerTopic((name) => onCluster || topicAllowed(ctx, AclOperation.CREATE, name));
    const creatable = req.topics.filter((t) => (counts.get(t.name) ?? 0) === 1 && mayCreate(t.name));
    if (metadataRecords(s, creatable, counts) > MAX_RECORDS_PER_USER_OP) {
      const res: CreateTopicsResponse = {
        topics: overLimitResults(counts, mayCreate).map((r) => failure(r.name, r.errorCode, r.errorMessage, v)),
      };
      if (v >= 2) res.throttleTimeMs = 0;
      return res;
    }
    for (const t of req.topics) {
      if ((counts.get(t.name) ?? 0) > 1) continue; // answered once below
      if (!mayCreate(t.name)) {
        topics.push(failure(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, 'Authorization failed.', v));
        continue;
      }
      try {
        preCheck(s, t);
        const spec = toSpec(t);
        const rec = validateOnly ? { ...s.topics.checkCreate(spec), topicId: ZERO_UUID } : await s.topics.create(spec);
        const ok: CreateTopicsResponseCreatableTopicResult = { name: t.name, errorCode: ErrorCode.NONE };
        if (v >= 1) ok.errorMessage = null;
        if (v >= 5) {
          ok.numPartitions = rec.partitions;
          ok.replicationFactor = rec.replicationFactor;
          ok.configs = topicConfigEntries(s.config, rec, null).map((e) => ({
            name: e.name,
            value: e.value,
            readOnly: e.readOnly,
            configSource: e.source,
            isSensitive: e.isSensitive,
          }));
        }
        if (v >= 7) ok.topicId = rec.topicId;
        topics.push(ok);
      } catch (e) {
        if (!(e instanceof TopicError)) throw e;
        topics.push(failure(t.name, e.errorCode, e.message, v));
      }
    }
    for (const [name, n] of counts) if (n > 1) topics.push(failure(name, ErrorCode.INVALID_REQUEST, 'Duplicate topic name.', v));
    const res: CreateTopicsResponse = { topics };
    if (v >= 2) res.throttleTimeMs = 0;
    return res;
  },
  errorResponse(req, errorCode, ctx) {
    const names = [...new Set(req.topics.map((t) => t.name))];
    const res: CreateTopicsResponse = { topics: names.map((n) => failure(n, errorCode, null, ctx.apiVersion)) };
    if (ctx.apiVersion >= 2) res.throttleTimeMs = 0;
    return res;
  },
});
