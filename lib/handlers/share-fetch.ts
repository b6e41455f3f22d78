import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { RecordsValue } from '../../protocol/codec/writer.js';
import type { ShareFetchRequest, ShareFetchResponse } from '../../protocol/generated/share-fetch.js';
import { shareFetch, type ShareRequestContext } from '../share/share-fetch.js';
import type { RequestContext } from './types.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, authorizing, byTopicAllowed, groupAllowed, topicAllowed } from '../security/acl/checks.js';
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

/**
 * Whether the principal may READ a topic of the share session, by id (each topic checked once per
 * request); undefined without an authorizer. An unknown id passes (answered UNKNOWN_TOPIC_OR_PARTITION).
 */
function shareReadCheck(ctx: RequestContext): ((topicId: string) => boolean) | undefined {
  if (!authorizing(ctx)) return undefined;
  const seen = new Map<string, boolean>();
  return (topicId) => {
    let ok = seen.get(topicId);
    if (ok === undefined) {
      const name = ctx.services.metadata.topicById(topicId)?.name;
      seen.set(topicId, (ok = name === undefined || topicAllowed(ctx, AclOperation.READ, name)));
    }
    return ok;
  };
}

/**
 * KIP-932 v1: records acquired for the member (with their acquired ranges and delivery counts),
 * acknowledgements piggy-backed. Needs READ on the group, and READ on each topic: as Kafka, a topic the
 * principal may not read joins the share session all the same, and each fetch answers its partitions
 * (and their acknowledgements) TOPIC_AUTHORIZATION_FAILED, until an ACL lets the principal read it.
 */
export const shareFetchHandler = defineHandler<ShareFetchRequest, ShareFetchResponse<RecordsValue>>({
  apiKey: ApiKey.ShareFetch,
  minVersion: 1,
  maxVersion: 1,
  async handle(req, ctx) {
    if (!groupAllowed(ctx, AclOperation.READ, req.groupId ?? '')) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const mayRead = shareReadCheck(ctx);
    // clusters: a new leader's share partitions read their persisted state first (topics the principal may read)
    await ctx.services.share.readStates(
      req.groupId,
      req.memberId,
      mayRead === undefined ? req.topics : req.topics.filter((t) => mayRead(t.topicId)),
    );
    const out = await shareFetch(ctx.services.share, req, { ...shareRequestContext(ctx), ...(mayRead === undefined ? {} : { mayRead }) });
    return { throttleTimeMs: 0, ...out };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, acquisitionLockTimeoutMs: 0, responses: [], nodeEndpoints: [] };
  },
});
