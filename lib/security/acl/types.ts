/**
 * Kafka's ACL vocabulary with its wire codes (org.apache.kafka.common.resource / .acl): resource types,
 * pattern types, operations and permission types; an ACL binding (a resource pattern and an access
 * control entry), and the operations each resource type supports.
 */

export const ResourceType = {
  UNKNOWN: 0,
  ANY: 1,
  TOPIC: 2,
  GROUP: 3,
  CLUSTER: 4,
  TRANSACTIONAL_ID: 5,
  DELEGATION_TOKEN: 6,
  USER: 7,
} as const;
export type ResourceType = (typeof ResourceType)[keyof typeof ResourceType];

export const PatternType = { UNKNOWN: 0, ANY: 1, MATCH: 2, LITERAL: 3, PREFIXED: 4 } as const;
export type PatternType = (typeof PatternType)[keyof typeof PatternType];

export const AclOperation = {
  UNKNOWN: 0,
  ANY: 1,
  ALL: 2,
  READ: 3,
  WRITE: 4,
  CREATE: 5,
  DELETE: 6,
  ALTER: 7,
  DESCRIBE: 8,
  CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10,
  ALTER_CONFIGS: 11,
  IDEMPOTENT_WRITE: 12,
  CREATE_TOKENS: 13,
  DESCRIBE_TOKENS: 14,
} as const;
export type AclOperation = (typeof AclOperation)[keyof typeof AclOperation];

export const AclPermissionType = { UNKNOWN: 0, ANY: 1, DENY: 2, ALLOW: 3 } as const;
export type AclPermissionType = (typeof AclPermissionType)[keyof typeof AclPermissionType];

/** The one cluster resource's name, and the wildcard resource name and principal. */
export const CLUSTER_NAME = 'kafka-cluster';
export const WILDCARD_RESOURCE = '*';
export const WILDCARD_PRINCIPAL = 'User:*';
export const WILDCARD_HOST = '*';

/** One ACL as stored: Kafka's AclBinding (ResourcePattern + AccessControlEntry), with wire codes. */
export interface AclBinding {
  resourceType: number;
  resourceName: string;
  patternType: number;
  principal: string;
  host: string;
  operation: number;
  permissionType: number;
}

/** A filter over bindings (DescribeAcls, DeleteAcls): null strings and ANY codes match everything. */
export interface AclBindingFilter {
  resourceType: number;
  resourceName: string | null;
  patternType: number;
  principal: string | null;
  host: string | null;
  operation: number;
  permissionType: number;
}

/** Operations each resource type supports besides ALL (Kafka's AclEntry.supportedOperations). */
export const SUPPORTED_OPERATIONS: ReadonlyMap<number, readonly number[]> = new Map<number, readonly number[]>([
  [
    ResourceType.TOPIC,
    [
      AclOperation.READ,
      AclOperation.WRITE,
      AclOperation.CREATE,
      AclOperation.DESCRIBE,
      AclOperation.DELETE,
      AclOperation.ALTER,
      AclOperation.DESCRIBE_CONFIGS,
      AclOperation.ALTER_CONFIGS,
    ],
  ],
  [
    ResourceType.GROUP,
    [AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS],
  ],
  [
    ResourceType.CLUSTER,
    [
      AclOperation.CREATE,
      AclOperation.CLUSTER_ACTION,
      AclOperation.DESCRIBE_CONFIGS,
      AclOperation.ALTER_CONFIGS,
      AclOperation.IDEMPOTENT_WRITE,
      AclOperation.ALTER,
      AclOperation.DESCRIBE,
    ],
  ],
  [ResourceType.TRANSACTIONAL_ID, [AclOperation.DESCRIBE, AclOperation.WRITE]],
  [ResourceType.DELEGATION_TOKEN, [AclOperation.DESCRIBE]],
  [ResourceType.USER, [AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS]],
]);

/** Kafka's name of a code in one of the tables above (e.g. for logs and the CLI); 'UNKNOWN' otherwise. */
export function codeName(table: Readonly<Record<string, number>>, code: number): string {
  for (const [name, c] of Object.entries(table)) if (c === code) return name;
  return 'UNKNOWN';
}

/** The code of a name in one of the tables above (case-insensitive; '-' may stand for '_'), or undefined. */
export function codeOf(table: Readonly<Record<string, number>>, name: string): number | undefined {
  return table[name.toUpperCase().replace(/-/g, '_')];
}

/** A canonical text of a binding: equal bindings have equal keys (set membership, etcd key names). */
export function bindingKey(b: AclBinding): string {
  return JSON.stringify([b.resourceType, b.resourceName, b.patternType, b.principal, b.host, b.operation, b.permissionType]);
}

/** Why a binding cannot be created (Kafka answers INVALID_REQUEST), or undefined when it can. */
export function invalidBinding(b: AclBinding): string | undefined {
  const supported = SUPPORTED_OPERATIONS.get(b.resourceType);
  if (supported === undefined) return `Invalid ACL creation: resource type ${codeName(ResourceType, b.resourceType)} is not allowed`;
  if (b.patternType !== PatternType.LITERAL && b.patternType !== PatternType.PREFIXED)
    return `Invalid ACL creation: pattern type ${codeName(PatternType, b.patternType)} is not allowed (LITERAL or PREFIXED)`;
  if (b.operation !== AclOperation.ALL && !supported.includes(b.operation))
    return `ResourceType ${codeName(ResourceType, b.resourceType)} only supports operations ${['ALL', ...supported.map((o) => codeName(AclOperation, o))].join(',')}`;
  if (b.permissionType !== AclPermissionType.ALLOW && b.permissionType !== AclPermissionType.DENY)
    return `Invalid ACL creation: permission type ${codeName(AclPermissionType, b.permissionType)} is not allowed`;
  if (b.resourceName === '') return 'Invalid ACL creation: the resource name is empty';
  if (b.resourceType === ResourceType.CLUSTER && b.resourceName !== CLUSTER_NAME)
    return `The only valid name for the CLUSTER resource is ${CLUSTER_NAME}`;
  if (!/^[^:]+:.*$/.test(b.principal)) return `Invalid ACL creation: could not parse principal ${JSON.stringify(b.principal)}`;
  if (b.host === '') return 'Invalid ACL creation: the host is empty';
  return undefined;
}

/** Whether a filter has an UNKNOWN element (Kafka answers such a DescribeAcls or DeleteAcls with INVALID_REQUEST). */
export function filterIsUnknown(f: AclBindingFilter): boolean {
  return (
    codeName(ResourceType, f.resourceType) === 'UNKNOWN' ||
    codeName(PatternType, f.patternType) === 'UNKNOWN' ||
    codeName(AclOperation, f.operation) === 'UNKNOWN' ||
    codeName(AclPermissionType, f.permissionType) === 'UNKNOWN'
  );
}

/** Whether a stored binding matches a filter (Kafka's AclBindingFilter.matches). */
export function filterMatches(f: AclBindingFilter, b: AclBinding): boolean {
  if (f.resourceType !== ResourceType.ANY && f.resourceType !== b.resourceType) return false;
  if (!patternFilterMatches(f, b)) return false;
  if (f.principal !== null && f.principal !== b.principal) return false;
  if (f.host !== null && f.host !== b.host) return false;
  if (f.operation !== AclOperation.ANY && f.operation !== b.operation) return false;
  return f.permissionType === AclPermissionType.ANY || f.permissionType === b.permissionType;
}

/**
 * The resource part of a filter: ANY takes every pattern type with the name given; MATCH takes the
 * patterns that would apply to that name (the literal name, the literal wildcard, prefixes of it).
 */
function patternFilterMatches(f: AclBindingFilter, b: AclBinding): boolean {
  if (f.patternType === PatternType.MATCH) {
    if (f.resourceName === null) return true;
    if (b.patternType === PatternType.LITERAL) return b.resourceName === f.resourceName || b.resourceName === WILDCARD_RESOURCE;
    return b.patternType === PatternType.PREFIXED && f.resourceName.startsWith(b.resourceName);
  }
  if (f.patternType !== PatternType.ANY && f.patternType !== b.patternType) return false;
  return f.resourceName === null || f.resourceName === b.resourceName;
}
