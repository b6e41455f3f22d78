/** ACLs as the metadata stores keep them: validation of stored values, and one write's additions and removals. */
import { type AclBinding, bindingKey } from './types.js';

/** Whether a stored value is an ACL binding (the local file's `acls`, an etcd `acls/…` value). */
export function isAclBinding(v: unknown): v is AclBinding {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return (
    ['resourceType', 'patternType', 'operation', 'permissionType'].every((k) => Number.isInteger(o[k])) &&
    ['resourceName', 'principal', 'host'].every((k) => typeof o[k] === 'string')
  );
}

/** Only the binding's own fields (a request's object may carry others). */
export function plainBinding(b: AclBinding): AclBinding {
  const { resourceType, resourceName, patternType, principal, host, operation, permissionType } = b;
  return { resourceType, resourceName, patternType, principal, host, operation, permissionType };
}

/** `list` with `remove` taken out and `add` put in (each binding once). */
export function alteredAcls(list: readonly AclBinding[], add: readonly AclBinding[], remove: readonly AclBinding[]): AclBinding[] {
  const gone = new Set(remove.map(bindingKey));
  const out = new Map<string, AclBinding>();
  for (const b of list) if (!gone.has(bindingKey(b))) out.set(bindingKey(b), b);
  for (const b of add) out.set(bindingKey(b), plainBinding(b));
  return [...out.values()];
}
