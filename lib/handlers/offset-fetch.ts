import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type {
  OffsetFetchRequest,
  OffsetFetchResponse,
  OffsetFetchResponseOffsetFetchResponseTopic,
} from '../../protocol/generated/offset-fetch.js';
import { type FetchedPartition, fetchOffsets } from '../group/offset-manager.js';
import { AclOperation, authorizing, groupAllowed, topicAllowed } from '../security/acl/checks.js';
import { defineHandler, type RequestContext } from './types.js';

type Topics = { name: string; partitionIndexes: number[] }[] | null;

function partitionOut(p: FetchedPartition, v: number) {
  const out: FetchedPartition = { ...p };
  if (v < 5) delete (out as Partial<FetchedPartition>).committedLeaderEpoch;
  return out;
}

/**
 * The topics of an answer the principal may describe: a listing (all topics) leaves the others out, a
 * request that named them gets TOPIC_AUTHORIZATION_FAILED on their partitions (Kafka's OffsetFetch).
 */
function describable<T extends { name: string; partitions: FetchedPartition[] }>(ctx: RequestContext, topics: T[], listing: boolean): T[] {
  if (!authorizing(ctx)) return topics;
  const denied = (p: FetchedPartition): FetchedPartition => ({
    ...p,
    committedOffset: -1n,
    committedLeaderEpoch: -1,
    metadata: '',
    errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
  });
  return topics.flatMap((t) =>
    topicAllowed(ctx, AclOperation.DESCRIBE, t.name, !listing) ? [t] : listing ? [] : [{ ...t, partitions: t.partitions.map(denied) }],
  );
}

/** v0–7: one group; v8+: several groups per request, each with its own error. */
export const offsetFetchHandler = defineHandler<OffsetFetchRequest, OffsetFetchResponse>({
  apiKey: ApiKey.OffsetFetch,
  minVersion: 0,
  maxVersion: 9,
  handle(req, ctx) {
    const v = ctx.apiVersion;
    const groups = ctx.services.groups;
    const asTopics = (ts: { name?: string; partitionIndexes?: number[] }[] | null | undefined): Topics =>
      ts === null || ts === undefined ? null : ts.map((t) => ({ name: t.name ?? '', partitionIndexes: t.partitionIndexes ?? [] }));
    if (v >= 8) {
      return {
        throttleTimeMs: 0,
        groups: (req.groups ?? []).map((g) => {
          if (!groupAllowed(ctx, AclOperation.DESCRIBE, g.groupId ?? ''))
            return { groupId: g.groupId ?? '', errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED, topics: [] };
          const r = fetchOffsets(
            groups,
            g.groupId ?? '',
            asTopics(g.topics),
            { memberId: g.memberId ?? null, memberEpoch: g.memberEpoch ?? -1 },
            req.requireStable === true,
          );
          return {
            groupId: g.groupId ?? '',
            errorCode: r.errorCode,
            topics: describable(ctx, r.topics, g.topics == null).map((t) => ({
              name: t.name,
              partitions: t.partitions.map((p) => partitionOut(p, v)),
            })),
          };
        }),
      };
    }
    const wanted = v === 0 || v === 1 ? asTopics(req.topics ?? []) : asTopics(req.topics);
    if (!groupAllowed(ctx, AclOperation.DESCRIBE, req.groupId ?? ''))
      return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const r = fetchOffsets(groups, req.groupId ?? '', wanted, undefined, v >= 7 && req.requireStable === true);
    let topics: OffsetFetchResponseOffsetFetchResponseTopic[] = describable(ctx, r.topics, wanted === null).map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => partitionOut(p, v)),
    }));
    if (r.errorCode !== ErrorCode.NONE && v < 2) {
      // No top-level error before v2: each asked-for partition carries it.
      topics = (wanted ?? []).map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((pi) =>
          partitionOut({ partitionIndex: pi, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: r.errorCode }, v),
        ),
      }));
    }
    const res: OffsetFetchResponse = { throttleTimeMs: 0, topics };
    if (v >= 2) res.errorCode = r.errorCode;
    return res;
  },
  errorResponse(req, errorCode, ctx) {
    if (ctx.apiVersion >= 8)
      return { throttleTimeMs: 0, groups: (req.groups ?? []).map((g) => ({ groupId: g.groupId ?? '', errorCode, topics: [] })) };
    return ctx.apiVersion >= 2 ? { throttleTimeMs: 0, errorCode, topics: [] } : { throttleTimeMs: 0, topics: [] };
  },
});
