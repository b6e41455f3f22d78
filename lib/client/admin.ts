/** Topic and cluster administration: CreateTopics, DeleteTopics, CreatePartitions, DescribeCluster. */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { CreatePartitionsResponse } from '../../protocol/generated/create-partitions.js';
import type { CreateTopicsRequest, CreateTopicsResponse } from '../../protocol/generated/create-topics.js';
import type { DeleteTopicsRequest, DeleteTopicsResponse } from '../../protocol/generated/delete-topics.js';
import type { DescribeClusterResponse } from '../../protocol/generated/describe-cluster.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { KafkaClient } from './client.js';
import type { BrokerConnection } from './connection.js';
import { ZERO_UUID, type BrokerInfo } from './metadata.js';

/** What one topic (or group) of an admin request came to; the CLI decides which codes are fatal. */
export interface AdminResult {
  name: string;
  errorCode: number;
  errorMessage: string | null;
  /** the broker that answered, for error messages */
  broker: string;
}

export interface CreatedTopic extends AdminResult {
  topicId: string;
  partitions: number;
  replicationFactor: number;
}

export interface NewTopic {
  name: string;
  /** -1: the broker's num.partitions (CreateTopics v4+) */
  partitions: number;
  /** -1: the broker's default.replication.factor (CreateTopics v4+) */
  replicationFactor: number;
  configs: Record<string, string>;
}

/** Sends to the controller; on NOT_CONTROLLER refreshes metadata and asks again (a few times). */
export async function onController<T>(
  client: KafkaClient,
  fn: (c: BrokerConnection) => Promise<{ result: T; notController: boolean }>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const c = await client.controller();
    const { result, notController } = await fn(c);
    if (!notController || attempt >= 3) return result;
    await client.metadata([]);
    await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
  }
}

export async function createTopics(
  client: KafkaClient,
  topics: readonly NewTopic[],
  opts: { validateOnly?: boolean; timeoutMs?: number } = {},
): Promise<CreatedTopic[]> {
  const usesDefaults = topics.some((t) => t.partitions < 0 || t.replicationFactor < 0);
  return onController(client, async (c) => {
    const res = await c.request<CreateTopicsResponse>(
      ApiKey.CreateTopics,
      (v): CreateTopicsRequest => {
        const body: CreateTopicsRequest = {
          topics: topics.map((t) => ({
            name: t.name,
            numPartitions: t.partitions,
            replicationFactor: t.replicationFactor,
            assignments: [],
            configs: Object.entries(t.configs).map(([name, value]) => ({ name, value })),
          })),
          timeoutMs: opts.timeoutMs ?? 30000,
        };
        if (v >= 1) body.validateOnly = opts.validateOnly ?? false;
        return body;
      },
      { minVersion: usesDefaults ? 4 : opts.validateOnly === true ? 1 : 0 },
    );
    const result = res.body.topics.map((t) => {
      const want = topics.find((x) => x.name === t.name);
      return {
        name: t.name,
        errorCode: t.errorCode,
        errorMessage: t.errorMessage ?? null,
        broker: c.label,
        topicId: t.topicId ?? ZERO_UUID,
        partitions: t.numPartitions !== undefined && t.numPartitions >= 0 ? t.numPartitions : (want?.partitions ?? -1),
        replicationFactor:
          t.replicationFactor !== undefined && t.replicationFactor >= 0 ? t.replicationFactor : (want?.replicationFactor ?? -1),
      };
    });
    return { result, notController: result.some((r) => r.errorCode === ErrorCode.NOT_CONTROLLER) };
  });
}

export async function deleteTopics(
  client: KafkaClient,
  names: readonly string[],
  opts: { timeoutMs?: number } = {},
): Promise<AdminResult[]> {
  return onController(client, async (c) => {
    const res = await c.request<DeleteTopicsResponse>(ApiKey.DeleteTopics, (v): DeleteTopicsRequest =>
      v >= 6
        ? { topics: names.map((name) => ({ name })), timeoutMs: opts.timeoutMs ?? 30000 }
        : { topicNames: [...names], timeoutMs: opts.timeoutMs ?? 30000 },
    );
    const result = res.body.responses.map((r) => ({
      name: r.name ?? '',
      errorCode: r.errorCode,
      errorMessage: r.errorMessage ?? null,
      broker: c.label,
    }));
    return { result, notController: result.some((r) => r.errorCode === ErrorCode.NOT_CONTROLLER) };
  });
}

/** Grows topics to `count` partitions each. */
export async function createPartitions(
  client: KafkaClient,
  topics: readonly { name: string; count: number }[],
  opts: { validateOnly?: boolean; timeoutMs?: number } = {},
): Promise<AdminResult[]> {
  return onController(client, async (c) => {
    const res = await c.request<CreatePartitionsResponse>(ApiKey.CreatePartitions, () => ({
      topics: topics.map((t) => ({ name: t.name, count: t.count, assignments: null })),
      timeoutMs: opts.timeoutMs ?? 30000,
      validateOnly: opts.validateOnly ?? false,
    }));
    const result = res.body.results.map((r) => ({ name: r.name, errorCode: r.errorCode, errorMessage: r.errorMessage, broker: c.label }));
    return { result, notController: result.some((r) => r.errorCode === ErrorCode.NOT_CONTROLLER) };
  });
}

export interface ClusterDescription {
  clusterId: string | null;
  controllerId: number;
  brokers: BrokerInfo[];
  /** which API answered: DescribeCluster, or Metadata for brokers without it */
  source: 'DescribeCluster' | 'Metadata';
}

/** DescribeCluster where the broker has it, else Metadata (the librdkafka mock, Kafka before 2.8). */
export async function describeCluster(client: KafkaClient): Promise<ClusterDescription> {
  const c = await client.any();
  if (c.supports(ApiKey.DescribeCluster)) {
    const res = await c.request<DescribeClusterResponse>(ApiKey.DescribeCluster, (v) =>
      v >= 1 ? { includeClusterAuthorizedOperations: false, endpointType: 1 } : { includeClusterAuthorizedOperations: false },
    );
    c.check(res.body.errorCode, ApiKey.DescribeCluster, undefined, res.body.errorMessage);
    await client.metadata([]); // keep the broker map for labels
    return {
      clusterId: res.body.clusterId,
      controllerId: res.body.controllerId,
      brokers: res.body.brokers
        .map((b) => ({ nodeId: b.brokerId, host: b.host, port: b.port, rack: b.rack }))
        .sort((a, b) => a.nodeId - b.nodeId),
      source: 'DescribeCluster',
    };
  }
  const md = await client.metadata([]);
  return { clusterId: md.clusterId, controllerId: md.controllerId, brokers: md.brokers, source: 'Metadata' };
}
