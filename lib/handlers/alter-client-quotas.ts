/**
 * AlterClientQuotas (key 49) v0-1: sets and removes (remove=true) quota keys of entities, as Kafka's
 * ClientQuotaControlManager: each entry is checked on its own (INVALID_REQUEST, or UNSUPPORTED_VERSION
 * for an unknown entity type, with Kafka's messages) and its changes applied together; validate_only
 * checks without applying. An entity left without keys is removed.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { AlterClientQuotasRequest, AlterClientQuotasResponse } from '../../protocol/generated/alter-client-quotas.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { entityKey, QuotaValidationError, validateEntity, validateQuotaValue } from '../quota/entity.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const alterClientQuotasHandler = defineHandler<AlterClientQuotasRequest, AlterClientQuotasResponse>({
  apiKey: ApiKey.AlterClientQuotas,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.ALTER_CONFIGS)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const store = ctx.services.metadata;
    const current = store.clientQuotas();
    const changes = new Map<string, Record<string, number>>();
    const entries: AlterClientQuotasResponse['entries'] = [];
    for (const entry of req.entries) {
      const echo = entry.entity.map((e) => ({ entityType: e.entityType, entityName: e.entityName }));
      try {
        const entity = validateEntity(entry.entity);
        const key = entityKey(entity);
        const next = new Map(Object.entries(changes.get(key) ?? current.get(key) ?? {}));
        for (const op of entry.ops) {
          if (op.remove) next.delete(op.key);
          else {
            validateQuotaValue(entity, op.key, op.value);
            next.set(op.key, op.value);
          }
        }
        changes.set(key, Object.fromEntries(next));
        entries.push({ errorCode: ErrorCode.NONE, errorMessage: null, entity: echo });
      } catch (e) {
        if (!(e instanceof QuotaValidationError)) throw e;
        entries.push({ errorCode: e.errorCode, errorMessage: e.message, entity: echo });
      }
    }
    if (!req.validateOnly && changes.size > 0) {
      await store.setClientQuotas(changes);
      ctx.logger.info({ entities: [...changes.keys()] }, 'client quotas altered');
    }
    return { throttleTimeMs: 0, entries };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      entries: req.entries.map((e) => ({
        errorCode,
        errorMessage: null,
        entity: e.entity.map((x) => ({ entityType: x.entityType, entityName: x.entityName })),
      })),
    };
  },
});
