/**
 * DescribeAcls (key 29) v0-3: the ACL bindings matching a filter, grouped by resource pattern. Kafka's
 * answers: DESCRIBE on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED), SECURITY_DISABLED without
 * an authorizer, INVALID_REQUEST for a filter with an UNKNOWN element.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DescribeAclsRequest, DescribeAclsResponse } from '../../protocol/generated/describe-acls.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { filterFromRequest, groupByResource } from '../security/acl/filters.js';
import { filterIsUnknown, filterMatches } from '../security/acl/types.js';
import { NO_AUTHORIZER } from './create-acls.js';
import { defineHandler } from './types.js';

export const describeAclsHandler = defineHandler<DescribeAclsRequest, DescribeAclsResponse>({
  apiKey: ApiKey.DescribeAcls,
  minVersion: 0,
  maxVersion: 3,
  handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.DESCRIBE)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const authorizer = ctx.services.authorizer;
    if (authorizer === undefined) return failed(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER);
    const filter = filterFromRequest(req);
    if (filterIsUnknown(filter)) return failed(ErrorCode.INVALID_REQUEST, 'The request contained an invalid filter (an UNKNOWN element)');
    const resources = groupByResource(authorizer.bindings().filter((b) => filterMatches(filter, b)));
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, resources };
  },
  errorResponse(_req, errorCode) {
    return failed(errorCode, null);
  },
});

function failed(errorCode: number, errorMessage: string | null): DescribeAclsResponse {
  return { throttleTimeMs: 0, errorCode, errorMessage, resources: [] };
}
