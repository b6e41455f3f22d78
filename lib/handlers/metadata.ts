import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type {
  MetadataRequest,
  MetadataResponse,
  MetadataResponseMetadataResponsePartition,
  MetadataResponseMetadataResponseTopic,
} from '../../protocol/generated/metadata.js';
import type { TopicRecord } from '../metadata/local-store.js';
import { invalidTopicName } from '../metadata/local-store.js';
import type { BrokerServices } from '../services.js';
import { controllerId, liveBrokers } from './cluster-view.js';
import {
  AclOperation,
  AUTHORIZED_OPERATIONS_OMITTED,
  authorizedOperations,
  clusterAllowed,
  ResourceType,
  topicAllowed,
} from '../security/acl/checks.js';
import { CLUSTER_NAME } from '../security/acl/types.js';
import { defineHandler, type RequestContext } from './types.js';

/** CREATE on the cluster, else on the topic (Kafka's order; only the topic's denial is logged). */
export function mayCreateTopic(ctx: RequestContext, topic: string): boolean {
  return clusterAllowed(ctx, AclOperation.CREATE, false) || topicAllowed(ctx, AclOperation.CREATE, topic);
}

const ZERO_UUID = '0'.repeat(32);

/** One partition's metadata from the store's state (clusters): leader, epoch, replicas, ISR, replicas on dead brokers. */
function partitionMetadata(
  s: BrokerServices,
  topic: string,
  i: number,
  live: ReadonlySet<number>,
): MetadataResponseMetadataResponsePartition {
  const st = s.metadata.partitionState(topic, i);
  if (st === undefined)
    return {
      errorCode: ErrorCode.LEADER_NOT_AVAILABLE,
      partitionIndex: i,
      leaderId: -1,
      leaderEpoch: -1,
      replicaNodes: [],
      isrNodes: [],
      offlineReplicas: [],
    };
  const leaderLive = st.leader >= 0 && live.has(st.leader);
  return {
    errorCode: leaderLive ? ErrorCode.NONE : ErrorCode.LEADER_NOT_AVAILABLE,
    partitionIndex: i,
    leaderId: leaderLive ? st.leader : -1,
    leaderEpoch: st.leaderEpoch,
    replicaNodes: [...st.replicas],
    isrNodes: [...st.isr],
    offlineReplicas: st.replicas.filter((r) => !live.has(r)),
  };
}

/** One topic's metadata: one node leads every partition at leader epoch 0; a cluster answers from the partition states. */
export function topicMetadata(services: BrokerServices, t: TopicRecord): MetadataResponseMetadataResponseTopic {
  const node = services.nodeId;
  if (services.metadata.kind !== 'local') {
    const live = new Set(services.metadata.brokers().map((b) => b.nodeId));
    return {
      errorCode: ErrorCode.NONE,
      name: t.name,
      topicId: t.topicId,
      isInternal: t.internal,
      partitions: Array.from({ length: t.partitions }, (_, i) => partitionMetadata(services, t.name, i, live)),
      topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
    };
  }
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
    const brokers = liveBrokers(s, ctx.conn.listenerName);
    // v0: an empty list means every topic; v1+: null means every topic and [] none.
    const all = req.topics === null || (ctx.apiVersion === 0 && req.topics.length === 0);
    const topics: MetadataResponseMetadataResponseTopic[] = [];
    if (all) {
      // topics the principal may not describe are left out of a listing, as Kafka does
      for (const t of s.metadata.topics().sort((a, b) => a.name.localeCompare(b.name)))
        if (topicAllowed(ctx, AclOperation.DESCRIBE, t.name, false)) topics.push(topicMetadata(s, t));
    } else {
      const autoCreate = s.config.bool('auto.create.topics.enable') && (ctx.apiVersion < 4 || req.allowAutoTopicCreation !== false);
      for (const rt of req.topics ?? []) {
        if (rt.name === null) {
          const byId = rt.topicId === undefined ? undefined : s.metadata.topicById(rt.topicId);
          if (byId !== undefined && !topicAllowed(ctx, AclOperation.DESCRIBE, byId.name))
            topics.push(topicError(null, ErrorCode.TOPIC_AUTHORIZATION_FAILED, rt.topicId));
          else topics.push(byId === undefined ? topicError(null, ErrorCode.UNKNOWN_TOPIC_ID, rt.topicId) : topicMetadata(s, byId));
          continue;
        }
        const existing = s.metadata.topic(rt.name);
        if (!topicAllowed(ctx, AclOperation.DESCRIBE, rt.name)) {
          topics.push(topicError(rt.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED));
        } else if (existing !== undefined) {
          await s.topics.ready(rt.name);
          topics.push(topicMetadata(s, existing));
        } else if (invalidTopicName(rt.name) !== undefined) {
          topics.push(topicError(rt.name, ErrorCode.INVALID_TOPIC_EXCEPTION));
        } else if (autoCreate && !mayCreateTopic(ctx, rt.name)) {
          // auto-creation needs CREATE on the cluster or on the topic
          topics.push(topicError(rt.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED));
        } else if (autoCreate) {
          const created = await s.topics.autoCreate(rt.name);
          topics.push('errorCode' in created ? topicError(rt.name, created.errorCode) : topicMetadata(s, created));
        } else {
          topics.push(topicError(rt.name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION));
        }
      }
    }
    // v8+: the principal's operations on each topic it may describe; v8-10: on the cluster (none without DESCRIBE)
    if (ctx.apiVersion >= 8 && req.includeTopicAuthorizedOperations === true)
      for (const t of topics)
        if (t.name !== null && t.errorCode !== ErrorCode.TOPIC_AUTHORIZATION_FAILED)
          t.topicAuthorizedOperations = authorizedOperations(ctx, ResourceType.TOPIC, t.name);
    let clusterAuthorizedOperations = AUTHORIZED_OPERATIONS_OMITTED;
    if (ctx.apiVersion >= 8 && ctx.apiVersion <= 10 && req.includeClusterAuthorizedOperations === true)
      clusterAuthorizedOperations = clusterAllowed(ctx, AclOperation.DESCRIBE, false)
        ? authorizedOperations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
        : 0;
    return { throttleTimeMs: 0, brokers, clusterId: s.clusterId, controllerId: controllerId(s), topics, clusterAuthorizedOperations };
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
