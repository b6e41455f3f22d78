/**
 * The ACL authorizer without a broker (Kafka's AclAuthorizer semantics): super users, literal, wildcard
 * and prefixed patterns, implied operations, DENY over ALLOW, hosts, User:*, allow.everyone.if.no.acl.found,
 * authorizeByResourceType; filters (MATCH, ANY) and creation checks; ACLs kept by the local store across a reopen.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { BrokerConfig } from '../../../lib/config.js';
import { LocalMetadataStore } from '../../../lib/metadata/local-store.js';
import type { MetadataListener, MetadataStore } from '../../../lib/metadata/store.js';
import { silentLogger } from '../../../lib/observability/logger.js';
import { AclAuthorizer, aclHost } from '../../../lib/security/acl/authorizer.js';
import {
  type AclBinding,
  AclOperation as Op,
  AclPermissionType as Perm,
  filterMatches,
  invalidBinding,
  PatternType as Pat,
  ResourceType as Res,
} from '../../../lib/security/acl/types.js';
import { makeTempDir } from '../../helpers/temp-dirs.js';

function acl(over: Partial<AclBinding>): AclBinding {
  return {
    resourceType: Res.TOPIC,
    resourceName: 'orders',
    patternType: Pat.LITERAL,
    principal: 'User:alice',
    host: '*',
    operation: Op.READ,
    permissionType: Perm.ALLOW,
    ...over,
  };
}

/** An authorizer over an in-memory list of ACLs (changed with set()). */
function authorizer(acls: AclBinding[], config: Record<string, string> = {}) {
  let list = acls;
  const listeners: MetadataListener[] = [];
  const store = {
    acls: () => list,
    onChange: (l: MetadataListener) => listeners.push(l),
  } as unknown as MetadataStore;
  const a = new AclAuthorizer(
    store,
    new BrokerConfig({ overrides: { 'authorizer.class.name': 'kafka.security.authorizer.AclAuthorizer', ...config } }),
    silentLogger(),
  );
  return {
    a,
    set: (next: AclBinding[]) => {
      list = next;
      for (const l of listeners) l({ kind: 'acls' });
    },
    can: (principal: string, op: number, type: number, name: string, host = '10.0.0.1') => a.authorize(principal, host, op, type, name),
  };
}

describe('ACL authorizer', () => {
  it('super.users may do anything; with no ACL for a resource, allow.everyone.if.no.acl.found decides (default false)', () => {
    const { can } = authorizer([], { 'super.users': 'User:admin; User:ops' });
    expect(can('User:admin', Op.ALTER, Res.CLUSTER, 'kafka-cluster')).to.equal(true);
    expect(can('User:ops', Op.WRITE, Res.TOPIC, 'x')).to.equal(true);
    expect(can('User:alice', Op.READ, Res.TOPIC, 'x')).to.equal(false);
    const open = authorizer([acl({})], { 'allow.everyone.if.no.acl.found': 'true' });
    expect(open.can('User:bob', Op.WRITE, Res.TOPIC, 'other')).to.equal(true);
    // an ACL exists for orders: bob is not in it
    expect(open.can('User:bob', Op.READ, Res.TOPIC, 'orders')).to.equal(false);
  });

  it('literal, wildcard and prefixed patterns; a prefix applies to names that start with it', () => {
    const { can } = authorizer([
      acl({ resourceName: 'orders' }),
      acl({ resourceName: '*', principal: 'User:bob', operation: Op.DESCRIBE }),
      acl({ resourceName: 'pay-', patternType: Pat.PREFIXED, principal: 'User:carol', operation: Op.WRITE }),
    ]);
    expect(can('User:alice', Op.READ, Res.TOPIC, 'orders')).to.equal(true);
    expect(can('User:alice', Op.READ, Res.TOPIC, 'orders2')).to.equal(false);
    expect(can('User:bob', Op.DESCRIBE, Res.TOPIC, 'anything')).to.equal(true);
    expect(can('User:bob', Op.READ, Res.TOPIC, 'anything')).to.equal(false);
    expect(can('User:carol', Op.WRITE, Res.TOPIC, 'pay-eu')).to.equal(true);
    expect(can('User:carol', Op.WRITE, Res.TOPIC, 'pa')).to.equal(false);
    // resource types do not mix
    expect(can('User:alice', Op.READ, Res.GROUP, 'orders')).to.equal(false);
  });

  it('implied operations: READ/WRITE/DELETE/ALTER give DESCRIBE, ALTER_CONFIGS gives DESCRIBE_CONFIGS, ALL gives everything', () => {
    for (const op of [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER]) {
      const { can } = authorizer([acl({ operation: op })]);
      expect(can('User:alice', Op.DESCRIBE, Res.TOPIC, 'orders'), `op ${op}`).to.equal(true);
      expect(can('User:alice', Op.DESCRIBE_CONFIGS, Res.TOPIC, 'orders'), `op ${op}`).to.equal(false);
    }
    const cfg = authorizer([acl({ operation: Op.ALTER_CONFIGS })]);
    expect(cfg.can('User:alice', Op.DESCRIBE_CONFIGS, Res.TOPIC, 'orders')).to.equal(true);
    expect(cfg.can('User:alice', Op.DESCRIBE, Res.TOPIC, 'orders')).to.equal(false);
    const d = authorizer([acl({ operation: Op.DESCRIBE })]);
    expect(d.can('User:alice', Op.READ, Res.TOPIC, 'orders')).to.equal(false);
    const all = authorizer([acl({ operation: Op.ALL })]);
    for (const op of [Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.ALTER_CONFIGS])
      expect(all.can('User:alice', op, Res.TOPIC, 'orders')).to.equal(true);
  });

  it('DENY wins over ALLOW (on the operation or ALL, from any matching pattern); a DENY of READ leaves DESCRIBE', () => {
    const { can, set } = authorizer([
      acl({ resourceName: '*', principal: 'User:*', operation: Op.ALL }),
      acl({ resourceName: 'secret-', patternType: Pat.PREFIXED, permissionType: Perm.DENY, operation: Op.READ }),
    ]);
    expect(can('User:alice', Op.READ, Res.TOPIC, 'orders')).to.equal(true);
    expect(can('User:alice', Op.READ, Res.TOPIC, 'secret-1')).to.equal(false);
    expect(can('User:alice', Op.DESCRIBE, Res.TOPIC, 'secret-1')).to.equal(true);
    expect(can('User:bob', Op.READ, Res.TOPIC, 'secret-1')).to.equal(true);
    set([acl({ operation: Op.ALL }), acl({ operation: Op.ALL, permissionType: Perm.DENY, principal: 'User:*' })]);
    expect(can('User:alice', Op.WRITE, Res.TOPIC, 'orders')).to.equal(false);
  });

  it('hosts: * or the exact address (IPv4-mapped IPv6 addresses compare as IPv4)', () => {
    const { can } = authorizer([acl({ host: '10.0.0.1' })]);
    expect(can('User:alice', Op.READ, Res.TOPIC, 'orders', '10.0.0.1')).to.equal(true);
    expect(can('User:alice', Op.READ, Res.TOPIC, 'orders', '10.0.0.2')).to.equal(false);
    expect(aclHost('::ffff:10.0.0.1')).to.equal('10.0.0.1');
    expect(aclHost('::1')).to.equal('::1');
  });

  it('authorizeByResourceType: an ALLOW on some topic no DENY covers', () => {
    const { a } = authorizer([
      acl({ operation: Op.WRITE }),
      acl({ principal: 'User:bob', operation: Op.WRITE, resourceName: 'b-', patternType: Pat.PREFIXED }),
      acl({ principal: 'User:bob', operation: Op.WRITE, resourceName: 'b', patternType: Pat.PREFIXED, permissionType: Perm.DENY }),
    ]);
    expect(a.authorizeByResourceType('User:alice', 'h', Op.WRITE, Res.TOPIC)).to.equal(true);
    expect(a.authorizeByResourceType('User:bob', 'h', Op.WRITE, Res.TOPIC)).to.equal(false);
    expect(a.authorizeByResourceType('User:carol', 'h', Op.WRITE, Res.TOPIC)).to.equal(false);
    // as Kafka's default: allow.everyone.if.no.acl.found grants the type when no ACL applies to a resource named "hardcode"
    const open = authorizer([acl({ operation: Op.WRITE })], { 'allow.everyone.if.no.acl.found': 'true' });
    expect(open.a.authorizeByResourceType('User:carol', 'h', Op.WRITE, Res.TOPIC)).to.equal(true);
    const closed = authorizer([acl({ operation: Op.WRITE, resourceName: '*', principal: 'User:bob' })], {
      'allow.everyone.if.no.acl.found': 'true',
    });
    expect(closed.a.authorizeByResourceType('User:carol', 'h', Op.WRITE, Res.TOPIC)).to.equal(false);
  });

  it('filters: MATCH finds every pattern that applies to a name, ANY the exact name in every pattern type', () => {
    const lit = acl({});
    const wild = acl({ resourceName: '*' });
    const pre = acl({ resourceName: 'ord', patternType: Pat.PREFIXED });
    const f = { resourceType: Res.ANY, principal: null, host: null, operation: Op.ANY, permissionType: Perm.ANY };
    const match = [lit, wild, pre].filter((b) => filterMatches({ ...f, resourceName: 'orders', patternType: Pat.MATCH }, b));
    expect(match).to.deep.equal([lit, wild, pre]);
    const any = [lit, wild, pre].filter((b) => filterMatches({ ...f, resourceName: 'ord', patternType: Pat.ANY }, b));
    expect(any).to.deep.equal([pre]);
    expect([lit, wild, pre].filter((b) => filterMatches({ ...f, resourceName: null, patternType: Pat.LITERAL }, b))).to.deep.equal([
      lit,
      wild,
    ]);
  });

  it('creation checks (INVALID_REQUEST): pattern, operation for the resource type, cluster name, principal', () => {
    expect(invalidBinding(acl({}))).to.equal(undefined);
    expect(invalidBinding(acl({ patternType: Pat.MATCH }))).to.match(/pattern type/);
    expect(invalidBinding(acl({ resourceType: Res.GROUP, operation: Op.WRITE }))).to.match(/GROUP only supports operations/);
    expect(invalidBinding(acl({ resourceType: Res.CLUSTER, resourceName: 'x', operation: Op.ALTER }))).to.match(/kafka-cluster/);
    expect(invalidBinding(acl({ principal: 'alice' }))).to.match(/principal/);
    expect(invalidBinding(acl({ operation: Op.ANY }))).to.match(/only supports/);
    expect(invalidBinding(acl({ permissionType: Perm.ANY }))).to.match(/permission type/);
  });

  it('config: authorizer.class.name takes Kafka authorizer class names only', () => {
    expect(() => new BrokerConfig({ overrides: { 'authorizer.class.name': 'com.example.Mine' } })).to.throw(/authorizer.class.name/);
    expect(AclAuthorizer.enabledBy(new BrokerConfig())).to.equal(false);
    const c = new BrokerConfig({ overrides: { 'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer' } });
    expect(AclAuthorizer.enabledBy(c)).to.equal(true);
  });

  it('the local metadata store keeps ACLs across a reopen, and alterAcls adds once and removes', async () => {
    const dir = makeTempDir('gregor-acl-store-');
    try {
      const s = await LocalMetadataStore.open(dir, { nodeId: 1 });
      await s.alterAcls([acl({}), acl({}), acl({ operation: Op.WRITE })], []);
      await s.alterAcls([], [acl({ operation: Op.WRITE })]);
      await s.close();
      const again = await LocalMetadataStore.open(dir, { nodeId: 1 });
      expect(again.acls()).to.deep.equal([acl({})]);
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
