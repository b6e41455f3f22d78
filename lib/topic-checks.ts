/**
 * The checks a topic creation, a partition increase or a config change passes before anything is
 * written, with Kafka's error codes and messages (TopicError).
 */
import { ErrorCode } from '../protocol/generated/error-codes.js';
import { type BrokerConfig, ConfigError, parseTopicConfig, TOPIC_CONFIG } from './config.js';
import { invalidTopicName } from './metadata/local-store.js';
import type { MetadataStore, NewTopic, TopicRecord } from './metadata/store.js';

export class TopicError extends Error {
  readonly errorCode: number;
  constructor(errorCode: number, message: string) {
    super(message);
    this.errorCode = errorCode;
  }
}

export interface CreateTopicSpec {
  name: string;
  numPartitions: number; // -1: broker default
  replicationFactor: number; // -1: broker default
  configs: Record<string, string | null>;
  assignments?: number[][];
}

/** Internal topics the broker owns; clients cannot create or delete them. */
export const INTERNAL_TOPICS = new Set(['__consumer_offsets', '__transaction_state']);

/** Checks topic configs by Kafka's rules (unknown names, bad values: INVALID_CONFIG); returns those set (null deletes). */
export function validateTopicConfigs(configs: Record<string, string | null>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(configs)) {
    if (TOPIC_CONFIG[k] === undefined) throw new TopicError(ErrorCode.INVALID_CONFIG, `Unknown topic config name: ${k}`);
    try {
      parseTopicConfig(k, v);
    } catch (e) {
      throw new TopicError(ErrorCode.INVALID_CONFIG, e instanceof ConfigError ? e.message.replace(/^GREGOR_ERR_CONFIG: /, '') : String(e));
    }
    if (v !== null) out[k] = v;
  }
  return out;
}

/** Validates a creation against the metadata, the broker's defaults and the live brokers; returns the record that would be created. Throws TopicError. */
export function checkCreate(
  spec: CreateTopicSpec,
  ctx: { metadata: MetadataStore; config: BrokerConfig; liveBrokers: readonly number[]; internal: boolean },
): NewTopic {
  const bad = invalidTopicName(spec.name);
  if (bad !== undefined) throw new TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, bad);
  if (ctx.metadata.topic(spec.name) !== undefined)
    throw new TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${spec.name}' already exists.`);
  if (INTERNAL_TOPICS.has(spec.name) && !ctx.internal) {
    throw new TopicError(ErrorCode.INVALID_REQUEST, `Creation of internal topic ${spec.name} is prohibited.`);
  }
  const assignments = spec.assignments ?? [];
  if (assignments.length > 0 && (spec.numPartitions !== -1 || spec.replicationFactor !== -1)) {
    throw new TopicError(ErrorCode.INVALID_REQUEST, 'Both numPartitions or replicationFactor and replicasAssignments were set.');
  }
  const partitions =
    assignments.length > 0 ? assignments.length : spec.numPartitions === -1 ? ctx.config.int('num.partitions') : spec.numPartitions;
  if (partitions <= 0) throw new TopicError(ErrorCode.INVALID_PARTITIONS, 'Number of partitions must be larger than 0.');
  const rf =
    assignments.length > 0
      ? (assignments[0]?.length ?? 0)
      : spec.replicationFactor === -1
        ? ctx.config.int('default.replication.factor')
        : spec.replicationFactor;
  if (rf <= 0) throw new TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0.');
  const live = ctx.liveBrokers;
  if (rf > live.length) {
    throw new TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, `Replication factor: ${rf} larger than available brokers: ${live.length}.`);
  }
  for (const a of assignments) {
    if (a.length !== rf || a.some((b) => !live.includes(b)) || new Set(a).size !== a.length) {
      throw new TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, `Replica assignment ${JSON.stringify(a)} names unknown brokers.`);
    }
  }
  const configs = validateTopicConfigs(spec.configs);
  const rec: NewTopic = { name: spec.name, partitions, replicationFactor: rf, configs, internal: INTERNAL_TOPICS.has(spec.name) };
  if (assignments.length > 0) rec.assignments = assignments;
  return rec;
}

/** Validates growing the topic to `count` partitions; returns its record. Throws TopicError. */
export function checkAddPartitions(metadata: MetadataStore, name: string, count: number): TopicRecord {
  const t = metadata.topic(name);
  if (t === undefined) throw new TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.');
  if (count < t.partitions) {
    throw new TopicError(
      ErrorCode.INVALID_PARTITIONS,
      `Topic currently has ${t.partitions} partitions, which is higher than the requested ${count}.`,
    );
  }
  if (count === t.partitions) throw new TopicError(ErrorCode.INVALID_PARTITIONS, `Topic already has ${t.partitions} partitions.`);
  return t;
}
