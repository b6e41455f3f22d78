import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ShareFetchRequest, ShareFetchResponse } from '../../protocol/generated/share-fetch.js';
import { shareFetch, type ShareRequestContext } from '../share/share-fetch.js';
import type { RequestContext } from './types.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, authorizing, byTopicAllowed, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** What the share fetch and acknowledge paths need of a request's context. */
export function shareRequestContext(ctx: RequestContext): ShareRequestContext {
  const s = ctx.services;
  return {
    purgatory: s.purgatory,
    nodeId: s.nodeId,
    leaderEpoch: (topicId, p) => {
      const name = s.metadata.topicById(topicId)?.name;
      return name === undefined ? -1 : s.topics.leaderEpoch(name, p);
    },
    connectionClosed: ctx.conn.closed,
  };
}

interface ShareTopic {
  topicId: string;
  partitions: { partitionIndex: number; acknowledgementBatches: unknown[] }[];
}

/**
 * Splits a share request's topics (by id) by READ on the topic, as KafkaApis does for ShareFetch and
 * ShareAcknowledge; an unknown id stays with the allowed ones (answered UNKNOWN_TOPIC_ID there).
 */
export function readableShareTopics<T extends ShareTopic>(ctx: RequestContext, topics: readonly T[]): { allowed: T[]; denied: T[] } {
  if (!authorizing(ctx)) return { allowed: topics as T[], denied: [] };
  const nameOf = (t: T) => ctx.services.metadata.topicById(t.topicId)?.name;
  const known = byTopicAllowed(
    ctx,
    AclOperation.READ,
    topics.filter((t) => nameOf(t) !== undefined),
    (t) => nameOf(t) ?? '',
  );
  return { allowed: [...topics.filter((t) => nameOf(t) === undefined), ...known.allowed], denied: known.denied };
}

/** The partitions of topics the principal may not read, each TOPIC_AUTHORIZATION_FAILED (its acknowledgements too). */
function deniedShareFetch(topics: readonly ShareTopic[]): ShareFetchResponse['responses'] {
  const denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED;
  return topics.map((t) => ({
    topicId: t.topicId,
    partitions: t.partitions.map((p) => ({
      partitionIndex: p.partitionIndex,
      errorCode: denied,
      errorMessage: null,
      acknowledgeErrorCode: p.acknowledgementBatches.length > 0 ? denied : ErrorCode.NONE,
      acknowledgeErrorMessage: null,
      currentLeader: { leaderId: -1, leaderEpoch: -1 },
      records: Buffer.alloc(0),
      acquiredRecords: [],
    })),
  }));
}

/**
 * KIP-932 v1: records acquired for the member (with their acquired ranges and delivery counts),
 * acknowledgements piggy-backed. Needs READ on the group, and READ on each topic (else that topic's
 * partitions answer TOPIC_AUTHORIZATION_FAILED and stay out of the share session).
 */
export const shareFetchHandler = defineHandler<ShareFetchRequest, ShareFetchResponse>({
  apiKey: ApiKey.ShareFetch,
  minVersion: 1,
  maxVersion: 1,
  async handle(req, ctx) {
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId ?? '')) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const topics = readableShareTopics(ctx, req.topics);
    const out = await shareFetch(ctx.services.share, { ...req, topics: topics.allowed }, shareRequestContext(ctx));
    if (out.errorCode === ErrorCode.NONE && topics.denied.length > 0) out.responses.push(...deniedShareFetch(topics.denied));
    return { throttleTimeMs: 0, ...out };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, acquisitionLockTimeoutMs: 0, responses: [], nodeEndpoints: [] };
  },
});
