/**
 * DeleteAcls (key 31) v0-3: removes the ACL bindings each filter matches and answers them per filter.
 * Kafka's answers: ALTER on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED for every filter),
 * SECURITY_DISABLED without an authorizer, INVALID_REQUEST for a filter with an UNKNOWN element.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DeleteAclsRequest, DeleteAclsResponse } from '../../protocol/generated/delete-acls.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { filterFromRequest } from '../security/acl/filters.js';
import { type AclBinding, bindingKey, filterIsUnknown, filterMatches } from '../security/acl/types.js';
import { NO_AUTHORIZER } from './create-acls.js';
import { defineHandler } from './types.js';

type FilterResult = DeleteAclsResponse['filterResults'][number];

export const deleteAclsHandler = defineHandler<DeleteAclsRequest, DeleteAclsResponse>({
  apiKey: ApiKey.DeleteAcls,
  minVersion: 0,
  maxVersion: 3,
  async handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.ALTER)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const authorizer = ctx.services.authorizer;
    if (authorizer === undefined) return answer(req.filters.map(() => failed(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)));
    const all = authorizer.bindings();
    const removed = new Map<string, AclBinding>();
    const filterResults = req.filters.map((raw): FilterResult => {
      const filter = filterFromRequest(raw);
      if (filterIsUnknown(filter)) return failed(ErrorCode.INVALID_REQUEST, 'The request contained an invalid filter (an UNKNOWN element)');
      const matching = all.filter((b) => filterMatches(filter, b));
      for (const b of matching) removed.set(bindingKey(b), b);
      return {
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        matchingAcls: matching.map((b) => ({ errorCode: ErrorCode.NONE, errorMessage: null, ...b })),
      };
    });
    if (removed.size > 0) await ctx.services.metadata.alterAcls([], [...removed.values()]);
    return answer(filterResults);
  },
  errorResponse(req, errorCode) {
    return answer(req.filters.map(() => failed(errorCode, null)));
  },
});

function failed(errorCode: number, errorMessage: string | null): FilterResult {
  return { errorCode, errorMessage, matchingAcls: [] };
}

function answer(filterResults: FilterResult[]): DeleteAclsResponse {
  return { throttleTimeMs: 0, filterResults };
}
