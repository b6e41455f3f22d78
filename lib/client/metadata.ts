/** Cluster metadata as the client keeps it, read from Metadata responses of any version. */
import type { MetadataRequest, MetadataResponse } from '../../protocol/generated/metadata.js';

export interface BrokerInfo {
  nodeId: number;
  host: string;
  port: number;
  rack: string | null;
}

export interface PartitionInfo {
  partition: number;
  errorCode: number;
  leader: number;
  leaderEpoch: number;
  replicas: number[];
  isr: number[];
  offline: number[];
}

export interface TopicInfo {
  name: string;
  /** 32 hex digits; all zeros when the broker does not send topic ids */
  topicId: string;
  isInternal: boolean;
  errorCode: number;
  /** sorted by partition */
  partitions: PartitionInfo[];
}

export interface ClusterMetadata {
  clusterId: string | null;
  /** -1 when unknown */
  controllerId: number;
  brokers: BrokerInfo[];
  topics: TopicInfo[];
}

export const ZERO_UUID = '00000000000000000000000000000000';

/** A topic id the way Kafka prints it (Uuid.toString: URL-safe base64 without padding). */
export function formatTopicId(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64url');
}

/** A Metadata request body for `topics` (null: all topics) at version `v`. */
export function metadataRequest(v: number, topics: readonly string[] | null, allowAutoTopicCreation = false): MetadataRequest {
  const body: MetadataRequest = { topics: topics === null ? (v === 0 ? [] : null) : topics.map((name) => ({ name })) };
  if (v >= 4) body.allowAutoTopicCreation = allowAutoTopicCreation;
  return body;
}

export function parseMetadata(res: MetadataResponse): ClusterMetadata {
  return {
    clusterId: res.clusterId ?? null,
    controllerId: res.controllerId ?? -1,
    brokers: res.brokers
      .map((b) => ({ nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack ?? null }))
      .sort((a, b) => a.nodeId - b.nodeId),
    topics: res.topics.map((t) => ({
      name: t.name ?? '',
      topicId: t.topicId ?? ZERO_UUID,
      isInternal: t.isInternal ?? false,
      errorCode: t.errorCode,
      partitions: t.partitions
        .map((p) => ({
          partition: p.partitionIndex,
          errorCode: p.errorCode,
          leader: p.leaderId,
          leaderEpoch: p.leaderEpoch ?? -1,
          replicas: p.replicaNodes,
          isr: p.isrNodes,
          offline: p.offlineReplicas ?? [],
        }))
        .sort((a, b) => a.partition - b.partition),
    })),
  };
}
