/**
 * The ACL authorizer (Kafka's AclAuthorizer / StandardAuthorizer semantics), enabled by
 * `authorizer.class.name`. It owns an index of the ACLs the metadata store holds (rebuilt when the store
 * reports an `acls` change, from this broker or, with etcd, any other) and answers one question: may
 * this principal, from this host, do this operation on this resource?
 *   - `super.users` (User:a;User:b) may do anything;
 *   - the ACLs that apply to a resource are its literal ones, the literal wildcard `*` and every
 *     prefixed ACL whose prefix starts its name; when none applies, `allow.everyone.if.no.acl.found`;
 *   - a DENY (on the operation or ALL) from a matching principal (or User:*) and host (or *) wins;
 *   - else an ALLOW on the operation, ALL, or an operation that implies it (READ, WRITE, DELETE and
 *     ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS).
 * Denials are logged once a minute per principal, operation and resource type, with a count of the rest.
 */
import type { Logger } from 'pino';
import type { BrokerConfig } from '../../config.js';
import type { MetadataStore } from '../../metadata/store.js';
import {
  type AclBinding,
  AclOperation,
  AclPermissionType,
  codeName,
  PatternType,
  ResourceType,
  WILDCARD_HOST,
  WILDCARD_PRINCIPAL,
  WILDCARD_RESOURCE,
} from './types.js';

const DENIAL_LOG_INTERVAL_MS = 60_000;

interface TypeIndex {
  literal: Map<string, AclBinding[]>;
  prefixed: AclBinding[];
}

/** The operations whose ALLOW grants `op` (besides ALL). */
function impliedBy(op: number): readonly number[] {
  if (op === AclOperation.DESCRIBE)
    return [AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER];
  if (op === AclOperation.DESCRIBE_CONFIGS) return [AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS];
  return [op];
}

/** A client's address as Kafka compares it with ACL hosts (IPv4-mapped IPv6 addresses as plain IPv4). */
export function aclHost(remoteAddress: string): string {
  return remoteAddress.startsWith('::ffff:') && remoteAddress.includes('.') ? remoteAddress.slice(7) : remoteAddress;
}

export class AclAuthorizer {
  private readonly superUsers: ReadonlySet<string>;
  private readonly allowEveryoneIfNoAcl: boolean;
  private index = new Map<number, TypeIndex>();
  private readonly denials = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly store: MetadataStore,
    config: BrokerConfig,
    private readonly logger: Logger,
  ) {
    const su = config.get('super.users');
    this.superUsers = new Set(
      (typeof su === 'string' ? su : '')
        .split(';')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    );
    this.allowEveryoneIfNoAcl = config.get('allow.everyone.if.no.acl.found') === true;
    this.rebuild();
    store.onChange((c) => {
      if (c.kind === 'acls') this.rebuild();
    });
  }

  /** Whether `authorizer.class.name` names an authorizer (one of Kafka's, which gregor's stands for). */
  static enabledBy(config: BrokerConfig): boolean {
    const v = config.get('authorizer.class.name');
    return typeof v === 'string' && v.trim() !== '';
  }

  isSuperUser(principal: string): boolean {
    return this.superUsers.has(principal);
  }

  /** Every ACL, as stored. */
  bindings(): readonly AclBinding[] {
    return this.store.acls();
  }

  private rebuild(): void {
    const index = new Map<number, TypeIndex>();
    for (const b of this.store.acls()) {
      let t = index.get(b.resourceType);
      if (t === undefined) index.set(b.resourceType, (t = { literal: new Map(), prefixed: [] }));
      if (b.patternType === PatternType.PREFIXED) t.prefixed.push(b);
      else {
        const list = t.literal.get(b.resourceName);
        if (list === undefined) t.literal.set(b.resourceName, [b]);
        else list.push(b);
      }
    }
    this.index = index;
  }

  /** The ACLs that apply to one resource: its literal ones, the literal wildcard's and the matching prefixes'. */
  private applying(resourceType: number, name: string): AclBinding[] {
    const t = this.index.get(resourceType);
    if (t === undefined) return [];
    const out = [...(t.literal.get(name) ?? []), ...(name === WILDCARD_RESOURCE ? [] : (t.literal.get(WILDCARD_RESOURCE) ?? []))];
    for (const b of t.prefixed) if (name.startsWith(b.resourceName)) out.push(b);
    return out;
  }

  /** Whether the principal, from `host`, may do `op` on the resource; a denial is logged unless `logIfDenied` is false. */
  authorize(principal: string, host: string, op: number, resourceType: number, name: string, logIfDenied = true): boolean {
    const ok = this.decide(principal, host, op, resourceType, name);
    if (!ok && logIfDenied) this.logDenial(principal, host, op, resourceType, name);
    return ok;
  }

  private decide(principal: string, host: string, op: number, resourceType: number, name: string): boolean {
    if (this.superUsers.has(principal)) return true;
    const acls = this.applying(resourceType, name);
    if (acls.length === 0) return this.allowEveryoneIfNoAcl;
    const mine = acls.filter((a) => principalMatches(a, principal) && hostMatches(a, host));
    if (mine.some((a) => a.permissionType === AclPermissionType.DENY && (a.operation === op || a.operation === AclOperation.ALL)))
      return false;
    const grants = impliedBy(op);
    return mine.some(
      (a) => a.permissionType === AclPermissionType.ALLOW && (a.operation === AclOperation.ALL || grants.includes(a.operation)),
    );
  }

  /**
   * Whether the principal may do `op` on some resource of the type (Kafka's authorizeByResourceType,
   * e.g. WRITE on any topic for an idempotent producer): an ALLOW that no DENY covers. As Kafka's
   * default implementation, it first asks about a resource named "hardcode": what super users,
   * allow.everyone.if.no.acl.found (no ACL applies to that name) or a matching pattern grant there is
   * granted for the type.
   */
  authorizeByResourceType(principal: string, host: string, op: number, resourceType: number): boolean {
    if (this.decide(principal, host, op, resourceType, 'hardcode')) return true;
    const t = this.index.get(resourceType);
    if (t === undefined) return false;
    const all = [...[...t.literal.values()].flat(), ...t.prefixed].filter(
      (a) => principalMatches(a, principal) && hostMatches(a, host) && (a.operation === op || a.operation === AclOperation.ALL),
    );
    const denied = all.filter((a) => a.permissionType === AclPermissionType.DENY);
    if (denied.some((d) => d.patternType === PatternType.LITERAL && d.resourceName === WILDCARD_RESOURCE)) return false;
    const deniedPrefixes = denied.filter((d) => d.patternType === PatternType.PREFIXED).map((d) => d.resourceName);
    const deniedLiterals = new Set(denied.filter((d) => d.patternType === PatternType.LITERAL).map((d) => d.resourceName));
    return all.some(
      (a) =>
        a.permissionType === AclPermissionType.ALLOW &&
        !deniedPrefixes.some((p) => a.resourceName.startsWith(p)) &&
        (a.patternType === PatternType.PREFIXED || !deniedLiterals.has(a.resourceName)),
    );
  }

  private logDenial(principal: string, host: string, op: number, resourceType: number, name: string): void {
    const key = `${principal}\0${op}\0${resourceType}`;
    const now = Date.now();
    const seen = this.denials.get(key);
    if (seen !== undefined && now - seen.at < DENIAL_LOG_INTERVAL_MS) {
      seen.suppressed++;
      return;
    }
    if (this.denials.size > 10_000) this.denials.clear();
    this.denials.set(key, { at: now, suppressed: 0 });
    const operation = codeName(AclOperation, op);
    const type = codeName(ResourceType, resourceType);
    this.logger.info(
      { principal, host, operation, resourceType: type, resourceName: name, suppressedSinceLast: seen?.suppressed ?? 0 },
      `Principal = ${principal} is Denied operation = ${operation} from host = ${host} on resource = ${type}:${name} (one line a minute per principal, operation and resource type)`,
    );
  }
}

function principalMatches(a: AclBinding, principal: string): boolean {
  return a.principal === principal || (a.principal === WILDCARD_PRINCIPAL && principal.startsWith('User:'));
}

function hostMatches(a: AclBinding, host: string): boolean {
  return a.host === WILDCARD_HOST || a.host === host;
}
