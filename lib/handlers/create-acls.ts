/**
 * CreateAcls (key 30) v0-3: adds ACL bindings to the authorizer's store. Kafka's answers: ALTER on the
 * cluster is needed (CLUSTER_AUTHORIZATION_FAILED for every creation), SECURITY_DISABLED when no
 * authorizer is configured, INVALID_REQUEST for a binding with an unknown, ANY or unsupported element.
 * The valid ones are written together; a binding already present is answered as created.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { CreateAclsRequest, CreateAclsResponse } from '../../protocol/generated/create-acls.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { type AclBinding, invalidBinding, PatternType } from '../security/acl/types.js';
import { defineHandler } from './types.js';

export const NO_AUTHORIZER = 'No Authorizer is configured.';

export const createAclsHandler = defineHandler<CreateAclsRequest, CreateAclsResponse>({
  apiKey: ApiKey.CreateAcls,
  minVersion: 0,
  maxVersion: 3,
  async handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.ALTER)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const authorizer = ctx.services.authorizer;
    if (authorizer === undefined)
      return answer(req.creations.map(() => ({ errorCode: ErrorCode.SECURITY_DISABLED, errorMessage: NO_AUTHORIZER })));
    const results: CreateAclsResponse['results'] = [];
    const valid: AclBinding[] = [];
    for (const c of req.creations) {
      const b: AclBinding = {
        resourceType: c.resourceType,
        resourceName: c.resourceName,
        patternType: c.resourcePatternType ?? PatternType.LITERAL,
        principal: c.principal,
        host: c.host,
        operation: c.operation,
        permissionType: c.permissionType,
      };
      const bad = invalidBinding(b);
      results.push(
        bad === undefined ? { errorCode: ErrorCode.NONE, errorMessage: null } : { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: bad },
      );
      if (bad === undefined) valid.push(b);
    }
    if (valid.length > 0) await ctx.services.metadata.alterAcls(valid, []);
    return answer(results);
  },
  errorResponse(req, errorCode) {
    return answer(req.creations.map(() => ({ errorCode, errorMessage: null })));
  },
});

function answer(results: CreateAclsResponse['results']): CreateAclsResponse {
  return { throttleTimeMs: 0, results };
}
