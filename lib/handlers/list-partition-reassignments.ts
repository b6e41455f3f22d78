/**
 * ListPartitionReassignments (key 46) v0: the reassignments in progress, of every partition (null) or
 * of the partitions named (unknown ones and those not being reassigned are left out, as Kafka does).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  ListPartitionReassignmentsRequest,
  ListPartitionReassignmentsResponse,
  ListPartitionReassignmentsResponseOngoingTopicReassignment,
} from '../../protocol/generated/list-partition-reassignments.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { isReassigning } from '../cluster/partition-changes.js';
import type { MetadataStore } from '../metadata/store.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

function ongoing(
  store: MetadataStore,
  topic: string,
  partitions: Iterable<number>,
): ListPartitionReassignmentsResponseOngoingTopicReassignment {
  const out: ListPartitionReassignmentsResponseOngoingTopicReassignment = { name: topic, partitions: [] };
  for (const p of new Set(partitions)) {
    const st = store.partitionState(topic, p);
    if (st === undefined || !isReassigning(st)) continue;
    out.partitions.push({
      partitionIndex: p,
      replicas: [...st.replicas],
      addingReplicas: [...(st.addingReplicas ?? [])],
      removingReplicas: [...(st.removingReplicas ?? [])],
    });
  }
  return out;
}

export const listPartitionReassignmentsHandler = defineHandler<ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse>({
  apiKey: ApiKey.ListPartitionReassignments,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.DESCRIBE)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const store = ctx.services.metadata;
    const asked =
      req.topics === null
        ? store.topics().map((t) => ({ name: t.name, partitions: Array.from({ length: t.partitions }, (_, i) => i) }))
        : req.topics.map((t) => ({ name: t.name, partitions: t.partitionIndexes }));
    const topics = asked.map((t) => ongoing(store, t.name, t.partitions)).filter((t) => t.partitions.length > 0);
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, topics };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, topics: [] };
  },
});
