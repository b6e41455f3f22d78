/** ACL filters as DescribeAcls and DeleteAcls carry them, and bindings grouped as DescribeAcls answers them. */
import type { DescribeAclsResponse } from '../../../protocol/generated/describe-acls.js';
import { type AclBinding, type AclBindingFilter, PatternType } from './types.js';

/** The filter fields of a DescribeAcls request or a DeleteAcls filter (v0: LITERAL patterns only). */
export interface RequestFilter {
  resourceTypeFilter: number;
  resourceNameFilter: string | null;
  patternTypeFilter?: number;
  principalFilter: string | null;
  hostFilter: string | null;
  operation: number;
  permissionType: number;
}

export function filterFromRequest(r: RequestFilter): AclBindingFilter {
  return {
    resourceType: r.resourceTypeFilter,
    resourceName: r.resourceNameFilter,
    patternType: r.patternTypeFilter ?? PatternType.LITERAL,
    principal: r.principalFilter,
    host: r.hostFilter,
    operation: r.operation,
    permissionType: r.permissionType,
  };
}

/** Bindings grouped by resource pattern, in first-seen order (DescribeAcls' resources). */
export function groupByResource(bindings: readonly AclBinding[]): DescribeAclsResponse['resources'] {
  const out = new Map<string, DescribeAclsResponse['resources'][number]>();
  for (const b of bindings) {
    const key = JSON.stringify([b.resourceType, b.resourceName, b.patternType]);
    let r = out.get(key);
    if (r === undefined)
      out.set(key, (r = { resourceType: b.resourceType, resourceName: b.resourceName, patternType: b.patternType, acls: [] }));
    r.acls.push({ principal: b.principal, host: b.host, operation: b.operation, permissionType: b.permissionType });
  }
  return [...out.values()];
}
