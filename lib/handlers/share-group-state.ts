/**
 * The share coordinator's persister APIs (KIP-932; inter-broker, CLUSTER_ACTION): a partition leader
 * reads, writes and deletes the state of its share partitions at the broker leading their
 * `__share_group_state` partition (NOT_COORDINATOR elsewhere); the group coordinator reads their
 * summaries (ReadShareGroupStateSummary) and sets new start offsets (InitializeShareGroupState) for the
 * share-group offset admin APIs. See lib/share/state-coordinator.ts.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { DeleteShareGroupStateRequest, DeleteShareGroupStateResponse } from '../../protocol/generated/delete-share-group-state.js';
import type {
  InitializeShareGroupStateRequest,
  InitializeShareGroupStateResponse,
} from '../../protocol/generated/initialize-share-group-state.js';
import type {
  ReadShareGroupStateSummaryRequest,
  ReadShareGroupStateSummaryResponse,
} from '../../protocol/generated/read-share-group-state-summary.js';
import type { ReadShareGroupStateRequest, ReadShareGroupStateResponse } from '../../protocol/generated/read-share-group-state.js';
import type { WriteShareGroupStateRequest, WriteShareGroupStateResponse } from '../../protocol/generated/write-share-group-state.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { fromWireBatches, toWireBatches } from '../share/persister.js';
import { defineHandler } from './types.js';

const fail = (errorCode: number) => ({ errorCode, errorMessage: null });

/** Each partition of each topic of a share-state request answered `errorCode`. */
function allFailed<X>(
  topics: readonly { topicId: string; partitions: readonly { partition: number }[] }[],
  each: (partition: number) => X,
): { topicId: string; partitions: X[] }[] {
  return topics.map((t) => ({ topicId: t.topicId, partitions: t.partitions.map((p) => each(p.partition)) }));
}

/** Each partition of each topic answered by `each` (its error code), in request order. */
async function perPartition<P extends { partition: number }>(
  topics: readonly { topicId: string; partitions: readonly P[] }[],
  each: (topicId: string, p: P) => Promise<number>,
): Promise<{ topicId: string; partitions: { partition: number; errorCode: number; errorMessage: string | null }[] }[]> {
  return Promise.all(
    topics.map(async (t) => ({
      topicId: t.topicId,
      partitions: await Promise.all(t.partitions.map(async (p) => ({ partition: p.partition, ...fail(await each(t.topicId, p)) }))),
    })),
  );
}

const readFailed = (errorCode: number) => (partition: number) => ({
  partition,
  ...fail(errorCode),
  stateEpoch: 0,
  startOffset: -1n,
  stateBatches: [],
});
const partitionFailed = (errorCode: number) => (partition: number) => ({ partition, ...fail(errorCode) });
const summaryFailed = (errorCode: number) => (partition: number) => ({ partition, ...fail(errorCode), stateEpoch: 0, startOffset: -1n });

export const readShareGroupStateHandler = defineHandler<ReadShareGroupStateRequest, ReadShareGroupStateResponse>({
  apiKey: ApiKey.ReadShareGroupState,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.CLUSTER_ACTION)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const c = ctx.services.share.stateCoordinator;
    return {
      results: req.topics.map((t) => ({
        topicId: t.topicId,
        partitions: t.partitions.map((p) => {
          const r = c.read(req.groupId, t.topicId, p.partition, p.leaderEpoch);
          return {
            partition: p.partition,
            ...fail(r.errorCode),
            stateEpoch: r.state.stateEpoch,
            startOffset: r.state.startOffset,
            stateBatches: toWireBatches(r.state.batches),
          };
        }),
      })),
    };
  },
  errorResponse(req, errorCode) {
    return { results: allFailed(req.topics, readFailed(errorCode)) };
  },
});

export const writeShareGroupStateHandler = defineHandler<WriteShareGroupStateRequest, WriteShareGroupStateResponse>({
  apiKey: ApiKey.WriteShareGroupState,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.CLUSTER_ACTION)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const c = ctx.services.share.stateCoordinator;
    const results = await perPartition(req.topics, (topicId, p) =>
      c.write(req.groupId, topicId, p.partition, {
        stateEpoch: p.stateEpoch,
        leaderEpoch: p.leaderEpoch,
        startOffset: p.startOffset,
        batches: fromWireBatches(p.stateBatches),
      }),
    );
    return { results };
  },
  errorResponse(req, errorCode) {
    return { results: allFailed(req.topics, partitionFailed(errorCode)) };
  },
});

export const deleteShareGroupStateHandler = defineHandler<DeleteShareGroupStateRequest, DeleteShareGroupStateResponse>({
  apiKey: ApiKey.DeleteShareGroupState,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.CLUSTER_ACTION)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const c = ctx.services.share.stateCoordinator;
    return { results: await perPartition(req.topics, (topicId, p) => c.delete(req.groupId, topicId, p.partition)) };
  },
  errorResponse(req, errorCode) {
    return { results: allFailed(req.topics, partitionFailed(errorCode)) };
  },
});

export const readShareGroupStateSummaryHandler = defineHandler<ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse>({
  apiKey: ApiKey.ReadShareGroupStateSummary,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.CLUSTER_ACTION)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const c = ctx.services.share.stateCoordinator;
    return {
      results: req.topics.map((t) => ({
        topicId: t.topicId,
        partitions: t.partitions.map((p) => {
          const r = c.readSummary(req.groupId, t.topicId, p.partition, p.leaderEpoch);
          return { partition: p.partition, ...fail(r.errorCode), stateEpoch: r.summary.stateEpoch, startOffset: r.summary.startOffset };
        }),
      })),
    };
  },
  errorResponse(req, errorCode) {
    return { results: allFailed(req.topics, summaryFailed(errorCode)) };
  },
});

export const initializeShareGroupStateHandler = defineHandler<InitializeShareGroupStateRequest, InitializeShareGroupStateResponse>({
  apiKey: ApiKey.InitializeShareGroupState,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.CLUSTER_ACTION)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const c = ctx.services.share.stateCoordinator;
    const results = await perPartition(req.topics, (topicId, p) =>
      c.initialize(req.groupId, topicId, p.partition, p.stateEpoch, p.startOffset),
    );
    return { results };
  },
  errorResponse(req, errorCode) {
    return { results: allFailed(req.topics, partitionFailed(errorCode)) };
  },
});
