/**
 * AlterPartitionReassignments (key 45) v0: moves partitions to new replica sets (null: cancels the
 * reassignment in progress). Any broker takes it (lib/cluster/partition-admin.ts says why); the
 * controller completes each reassignment once its new replicas are in the ISR.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  AlterPartitionReassignmentsRequest,
  AlterPartitionReassignmentsResponse,
} from '../../protocol/generated/alter-partition-reassignments.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { PartitionResult, ReassignmentRequest } from '../metadata/store.js';
import { byTopic, failedWith } from './partition-results.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

function requests(req: AlterPartitionReassignmentsRequest): ReassignmentRequest[] {
  return req.topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.name, partition: p.partitionIndex, replicas: p.replicas })));
}

function response(results: readonly PartitionResult[], errorCode: number = ErrorCode.NONE): AlterPartitionReassignmentsResponse {
  const grouped = byTopic(results, (r) => ({ partitionIndex: r.partition, errorCode: r.errorCode, errorMessage: r.errorMessage }));
  return {
    throttleTimeMs: 0,
    errorCode,
    errorMessage: null,
    responses: [...grouped].map(([name, partitions]) => ({ name, partitions })),
  };
}

export const alterPartitionReassignmentsHandler = defineHandler<AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse>({
  apiKey: ApiKey.AlterPartitionReassignments,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.ALTER)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const reqs = requests(req);
    let results: PartitionResult[];
    try {
      results = await ctx.services.metadata.alterPartitionReassignments(reqs);
    } catch (e) {
      results = failedWith(e, reqs);
    }
    return response(results);
  },
  errorResponse(req, errorCode) {
    return response(
      requests(req).map((r) => ({ topic: r.topic, partition: r.partition, errorCode, errorMessage: null })),
      errorCode,
    );
  },
});
