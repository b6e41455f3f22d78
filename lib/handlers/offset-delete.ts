import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { OffsetDeleteRequest, OffsetDeleteResponse } from '../../protocol/generated/offset-delete.js';
import { deleteOffsets } from '../group/group-admin.js';
import { defineHandler } from './types.js';

export const offsetDeleteHandler = defineHandler<OffsetDeleteRequest, OffsetDeleteResponse>({
  apiKey: ApiKey.OffsetDelete,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    const s = ctx.services;
    const r = await deleteOffsets(
      s.groups,
      req.groupId,
      req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => p.partitionIndex) })),
      (topic, partition) => s.topics.exists(topic, partition),
    );
    return { throttleTimeMs: 0, errorCode: r.errorCode, topics: r.topics };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, topics: [] };
  },
});
