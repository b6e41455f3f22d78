/**
 * ElectLeaders (key 43) v0–2: preferred (v0: always) or unclean leader elections for the partitions
 * named, or every partition (null; those whose election is not needed are left out of the answer).
 * Any broker takes it (lib/cluster/partition-admin.ts says why); one node answers as a one-broker Kafka.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ElectLeadersRequest, ElectLeadersResponse } from '../../protocol/generated/elect-leaders.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { ElectionType, type PartitionResult, type TopicPartitionRef } from '../metadata/store.js';
import { byTopic, failedWith } from './partition-results.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

function named(req: ElectLeadersRequest): TopicPartitionRef[] | null {
  if (req.topicPartitions === null) return null;
  return req.topicPartitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition })));
}

function response(version: number, results: readonly PartitionResult[], errorCode: number = ErrorCode.NONE): ElectLeadersResponse {
  const grouped = byTopic(results, (r) => ({ partitionId: r.partition, errorCode: r.errorCode, errorMessage: r.errorMessage }));
  const res: ElectLeadersResponse = {
    throttleTimeMs: 0,
    replicaElectionResults: [...grouped].map(([topic, partitionResult]) => ({ topic, partitionResult })),
  };
  if (version >= 1) res.errorCode = errorCode;
  return res;
}

export const electLeadersHandler = defineHandler<ElectLeadersRequest, ElectLeadersResponse>({
  apiKey: ApiKey.ElectLeaders,
  minVersion: 0,
  maxVersion: 2,
  async handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.ALTER)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const type = req.electionType ?? ElectionType.PREFERRED;
    const refs = named(req);
    if (type !== ElectionType.PREFERRED && type !== ElectionType.UNCLEAN) {
      const msg = `Unknown election type ${type}.`;
      return response(
        ctx.apiVersion,
        (refs ?? []).map((r) => ({ ...r, errorCode: ErrorCode.INVALID_REQUEST, errorMessage: msg })),
        ErrorCode.INVALID_REQUEST,
      );
    }
    let results: PartitionResult[];
    try {
      results = await ctx.services.metadata.electLeaders(type, refs);
    } catch (e) {
      results = failedWith(e, refs ?? []);
    }
    return response(ctx.apiVersion, results);
  },
  errorResponse(req, errorCode, ctx) {
    return response(
      ctx.apiVersion,
      (named(req) ?? []).map((r) => ({ ...r, errorCode, errorMessage: null })),
      errorCode,
    );
  },
});
