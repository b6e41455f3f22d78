/**
 * DescribeClientQuotas (key 48) v0-1: the quotas of the entities a filter matches, from the metadata
 * store (lib/quota/entity.ts has the filter's rules and Kafka's messages for a bad one).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DescribeClientQuotasRequest, DescribeClientQuotasResponse } from '../../protocol/generated/describe-client-quotas.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { entityPairs, matchesFilter, parseEntityKey, parseQuotaFilter, QuotaValidationError } from '../quota/entity.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const describeClientQuotasHandler = defineHandler<DescribeClientQuotasRequest, DescribeClientQuotasResponse>({
  apiKey: ApiKey.DescribeClientQuotas,
  minVersion: 0,
  maxVersion: 1,
  handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.DESCRIBE_CONFIGS)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    let filter;
    try {
      filter = parseQuotaFilter(req.components, req.strict);
    } catch (e) {
      if (!(e instanceof QuotaValidationError)) throw e;
      return { throttleTimeMs: 0, errorCode: e.errorCode, errorMessage: e.message, entries: null };
    }
    const entries: DescribeClientQuotasResponse['entries'] = [];
    for (const [key, values] of ctx.services.metadata.clientQuotas()) {
      const entity = parseEntityKey(key);
      if (entity === undefined || !matchesFilter(entity, filter)) continue;
      entries.push({ entity: entityPairs(entity), values: Object.entries(values).map(([k, value]) => ({ key: k, value })) });
    }
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, entries };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, entries: null };
  },
});
