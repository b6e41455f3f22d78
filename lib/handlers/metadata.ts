import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { MetadataRequest, MetadataResponse, MetadataResponseMetadataResponseTopic } from '../../protocol/generated/metadata.js';
import type { TopicRecord } from '../metadata/local-store.js';
import { invalidTopicName } from '../metadata/local-store.js';
import type { BrokerServices } from '../services.js';
import { defineHandler } from './types.js';

/** Sentinel Kafka uses when authorized operations were not requested. */
const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;
const ZERO_UUID = '0'.repeat(32);

/** One topic's metadata: every partition led by this node (leader epoch 0 until clusters exist). */
export function topicMetadata(services: BrokerServices, t: TopicRecord): MetadataResponseMetadataResponseTopic {
  const node = services.nodeId;
  return {
    errorCode: ErrorCode.NONE,
    name: t.name,
    topicId: t.topicId,
    isInternal: t.internal,
    partitions: Array.from({ length: t.partitions }, (_, i) => ({
      errorCode: ErrorCode.NONE,
      partitionIndex: i,
      leaderId: node,
      leaderEpoch: 0,
      replicaNodes: [node],
      isrNodes: [node],
      offlineReplicas: [],
    })),
    topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
  };
}

function topicError(name: string | null, errorCode: number, topicId = ZERO_UUID): MetadataResponseMetadataResponseTopic {
  return { errorCode, name, topicId, isInternal: false, partitions: [], topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED };
}

export const metadataHandler = defineHandler<MetadataRequest, MetadataResponse>({
  apiKey: ApiKey.Metadata,
  minVersion: 0,
  maxVersion: 12,
  async handle(req, ctx) {
    const s = ctx.services;
    const listener = s.advertisedListener(ctx.conn.listenerName);
    const brokers =
      listener === undefined ? [] : [{ nodeId: s.nodeId, host: listener.host, port: listener.port, rack: s.config.string('broker.rack') }];
    // v0: an empty list means every topic; v1+: null means every topic and [] none.
    const all = req.topics === null || (ctx.apiVersion === 0 && req.topics.length === 0);
    const topics: MetadataResponseMetadataResponseTopic[] = [];
    if (all) {
      for (const t of s.metadata.topics().sort((a, b) => a.name.localeCompare(b.name))) topics.push(topicMetadata(s, t));
    } else {
      const autoCreate = s.config.bool('auto.create.topics.enable') && (ctx.apiVersion < 4 || req.allowAutoTopicCreation !== false);
      for (const rt of req.topics ?? []) {
        if (rt.name === null) {
          const byId = rt.topicId === undefined ? undefined : s.metadata.topicById(rt.topicId);
          topics.push(byId === undefined ? topicError(null, ErrorCode.UNKNOWN_TOPIC_ID, rt.topicId) : topicMetadata(s, byId));
          continue;
        }
        const existing = s.metadata.topic(rt.name);
        if (existing !== undefined) {
          await s.topics.ready(rt.name);
          topics.push(topicMetadata(s, existing));
        } else if (invalidTopicName(rt.name) !== undefined) {
          topics.push(topicError(rt.name, ErrorCode.INVALID_TOPIC_EXCEPTION));
        } else if (autoCreate) {
          const created = await s.topics.autoCreate(rt.name);
          topics.push('errorCode' in created ? topicError(rt.name, created.errorCode) : topicMetadata(s, created));
        } else {
          topics.push(topicError(rt.name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION));
        }
      }
    }
    return {
      throttleTimeMs: 0,
      brokers,
      clusterId: s.clusterId,
      controllerId: s.nodeId,
      topics,
      clusterAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
    };
  },
  errorResponse(req, errorCode, ctx) {
    return {
      throttleTimeMs: 0,
      brokers: [],
      clusterId: ctx.services.clusterId,
      controllerId: -1,
      topics: (req.topics ?? []).map((t) => topicError(t.name, errorCode)),
      clusterAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
    };
  },
});
