/**
 * ACLs as both stores keep them: the file's `acls` list, and one etcd key per binding under `acls/`
 * (the key: its canonical text, URI-encoded; the value: the binding's own fields).
 */
import { alteredAcls, isAclBinding, plainBinding } from '../../security/acl/store-values.js';
import { type AclBinding, bindingKey } from '../../security/acl/types.js';
import type { MetadataChange } from '../store.js';

export const aclRecords = {
  field: 'acls',
  dir: 'acls/',
  /** The last segment of the binding's etcd key. */
  name: (b: AclBinding): string => encodeURIComponent(bindingKey(b)),
  /** The binding's etcd value. */
  value: (b: AclBinding): string => JSON.stringify(plainBinding(b)),
  isFileValue: (v: unknown): boolean => Array.isArray(v) && v.every(isAclBinding),
  isBinding: isAclBinding,
  change: (): MetadataChange => ({ kind: 'acls' }),
  /** `list` with `remove` taken out and `add` put in (each binding once). */
  altered: alteredAcls,
  /** A text that differs when two copies' sets of keys differ (a reload's comparison). */
  keysText: (keys: Iterable<string>): string => [...keys].sort().join(),
} as const;
