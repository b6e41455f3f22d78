import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { OffsetDeleteRequest, OffsetDeleteResponse } from '../../protocol/generated/offset-delete.js';
import { deleteOffsets } from '../group/group-admin.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, byTopicAllowed, deniedTopics, groupAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const offsetDeleteHandler = defineHandler<OffsetDeleteRequest, OffsetDeleteResponse>({
  apiKey: ApiKey.OffsetDelete,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const s = ctx.services;
    if (!groupAllowed(ctx, AclOperation.DELETE, req.groupId)) return this.errorResponse(req, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx);
    const readable = byTopicAllowed(ctx, AclOperation.READ, req.topics, (t) => t.name);
    const r = await deleteOffsets(
      s.groups,
      req.groupId,
      readable.allowed.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => p.partitionIndex) })),
      (topic, partition) => s.topics.exists(topic, partition),
    );
    return { throttleTimeMs: 0, errorCode: r.errorCode, topics: [...r.topics, ...deniedTopics(readable.denied)] };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, topics: [] };
  },
});
