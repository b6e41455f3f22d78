/**
 * DeleteTopics (key 20) v0–6: by name (v0–5 `topicNames`), by name or topic id (v6 `topics`).
 * Duplicates in one request fail with INVALID_REQUEST; unknown ids with UNKNOWN_TOPIC_ID.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  DeleteTopicsRequest,
  DeleteTopicsResponse,
  DeleteTopicsResponseDeletableTopicResult,
} from '../../protocol/generated/delete-topics.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { TopicError } from '../topics.js';
import { AclOperation, topicAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

const ZERO_UUID = '0'.repeat(32);

interface Target {
  name: string | null;
  topicId: string;
}

function targets(req: DeleteTopicsRequest, version: number): Target[] {
  if (version >= 6) return (req.topics ?? []).map((t) => ({ name: t.name ?? null, topicId: t.topicId ?? ZERO_UUID }));
  return (req.topicNames ?? []).map((name) => ({ name, topicId: ZERO_UUID }));
}

function result(
  name: string | null,
  topicId: string,
  errorCode: number,
  message: string | null,
  version: number,
): DeleteTopicsResponseDeletableTopicResult {
  const r: DeleteTopicsResponseDeletableTopicResult = { name: version < 6 ? (name ?? '') : name, errorCode };
  if (version >= 6) r.topicId = topicId;
  if (version >= 5) r.errorMessage = message;
  return r;
}

export const deleteTopicsHandler = defineHandler<DeleteTopicsRequest, DeleteTopicsResponse>({
  apiKey: ApiKey.DeleteTopics,
  minVersion: 0,
  maxVersion: 6,
  async handle(req, ctx) {
    const s = ctx.services;
    const v = ctx.apiVersion;
    const list = targets(req, v);
    const nameCount = new Map<string, number>();
    const idCount = new Map<string, number>();
    for (const t of list) {
      if (t.name !== null) nameCount.set(t.name, (nameCount.get(t.name) ?? 0) + 1);
      if (t.topicId !== ZERO_UUID) idCount.set(t.topicId, (idCount.get(t.topicId) ?? 0) + 1);
    }
    const responses: DeleteTopicsResponseDeletableTopicResult[] = [];
    const answered = new Set<string>();
    for (const t of list) {
      if (t.name !== null && t.topicId !== ZERO_UUID) {
        responses.push(result(t.name, t.topicId, ErrorCode.INVALID_REQUEST, 'You may not specify both topic name and topic id.', v));
        continue;
      }
      if (t.name === null && t.topicId === ZERO_UUID) {
        responses.push(result(null, ZERO_UUID, ErrorCode.INVALID_REQUEST, 'Neither topic name nor topic id was specified.', v));
        continue;
      }
      const dupKey = t.name !== null ? `n:${t.name}` : `i:${t.topicId}`;
      const dup = t.name !== null ? (nameCount.get(t.name) ?? 0) > 1 : (idCount.get(t.topicId) ?? 0) > 1;
      if (dup) {
        if (!answered.has(dupKey)) {
          answered.add(dupKey);
          responses.push(
            result(t.name, t.topicId, ErrorCode.INVALID_REQUEST, t.name !== null ? 'Duplicate topic name.' : 'Duplicate topic id.', v),
          );
        }
        continue;
      }
      const rec = t.name !== null ? s.metadata.topic(t.name) : s.metadata.topicById(t.topicId);
      if (rec !== undefined && !topicAllowed(ctx, AclOperation.DELETE, rec.name)) {
        responses.push(result(t.name, t.topicId, ErrorCode.TOPIC_AUTHORIZATION_FAILED, 'Authorization failed.', v));
        continue;
      }
      if (rec === undefined) {
        responses.push(
          t.name !== null
            ? result(t.name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.', v)
            : result(null, t.topicId, ErrorCode.UNKNOWN_TOPIC_ID, 'This server does not host this topic ID.', v),
        );
        continue;
      }
      try {
        await s.topics.delete(rec.name);
        responses.push(result(rec.name, rec.topicId, ErrorCode.NONE, null, v));
      } catch (e) {
        if (!(e instanceof TopicError)) throw e;
        responses.push(result(rec.name, rec.topicId, e.errorCode, e.message, v));
      }
    }
    const res: DeleteTopicsResponse = { responses };
    if (v >= 1) res.throttleTimeMs = 0;
    return res;
  },
  errorResponse(req, errorCode, ctx) {
    const v = ctx.apiVersion;
    const res: DeleteTopicsResponse = { responses: targets(req, v).map((t) => result(t.name, t.topicId, errorCode, null, v)) };
    if (v >= 1) res.throttleTimeMs = 0;
    return res;
  },
});
