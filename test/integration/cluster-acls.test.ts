/**
 * ACLs in a cluster (metadata.store=etcd): an ACL created through one broker is enforced by the other
 * (from its etcd watch) and still there after that broker restarts. The brokers run the authorizer with
 * allow.everyone.if.no.acl.found=true, so that User:ANONYMOUS (PLAINTEXT, also between the brokers) may
 * do what no ACL names; once an ACL on a topic names only bob, ANONYMOUS loses it.
 */
import { expect } from 'chai';
import kafkajs, { Kafka, logLevel } from 'kafkajs';
import { outcome } from '../helpers/acl.js';
import { until, useCluster } from '../helpers/cluster.js';

const { AclOperationTypes: Op, AclPermissionTypes: Perm, AclResourceTypes: Res, ResourcePatternTypes: Pat } = kafkajs;

const kafka = (bootstrap: string) =>
  new Kafka({ brokers: [bootstrap], clientId: 'cluster-acls', retry: { retries: 0 }, logLevel: logLevel.NOTHING });

async function withAdmin<T>(bootstrap: string, f: (a: kafkajs.Admin) => Promise<T>): Promise<T> {
  const a = kafka(bootstrap).admin();
  await a.connect();
  try {
    return await f(a);
  } finally {
    await a.disconnect();
  }
}

describe('cluster: ACLs through etcd', function () {
  this.timeout(120_000);
  const cluster = useCluster(
    { 'authorizer.class.name': 'kafka.security.authorizer.AclAuthorizer', 'allow.everyone.if.no.acl.found': 'true' },
    { brokers: 2 },
  );

  it('an ACL created through broker 1 is enforced by broker 2; a restarted broker still has it', async () => {
    const [b1, b2] = cluster().brokers;
    if (b1 === undefined || b2 === undefined) throw new Error('two brokers expected');
    await withAdmin(b1.bootstrap, (a) => a.createTopics({ topics: [{ topic: 'guarded', replicationFactor: 2 }], waitForLeaders: true }));
    await until(
      async () => ((await withAdmin(b2.bootstrap, (a) => a.listTopics())).includes('guarded') ? true : undefined),
      15_000,
      'broker 2 lists the topic while no ACL names it',
    );
    await withAdmin(b1.bootstrap, (a) =>
      a.createAcls({
        acl: [
          {
            resourceType: Res.TOPIC,
            resourceName: 'guarded',
            resourcePatternType: Pat.LITERAL,
            principal: 'User:bob',
            host: '*',
            operation: Op.READ,
            permissionType: Perm.ALLOW,
          },
        ],
      }),
    );
    await until(
      async () => ((await withAdmin(b2.bootstrap, (a) => a.listTopics())).includes('guarded') ? undefined : true),
      15_000,
      'broker 2 hides the topic from User:ANONYMOUS',
    );
    const p = kafka(b2.bootstrap).producer({ retry: { retries: 0 } });
    await p.connect();
    try {
      expect(await outcome(p.send({ topic: 'guarded', messages: [{ value: 'x' }] }))).to.equal('TOPIC_AUTHORIZATION_FAILED');
    } finally {
      await p.disconnect();
    }
    await b2.kill('SIGTERM');
    await b2.start();
    const described = await withAdmin(b2.bootstrap, (a) =>
      a.describeAcls({ resourceType: Res.TOPIC, resourcePatternType: Pat.ANY, operation: Op.ANY, permissionType: Perm.ANY }),
    );
    expect(described.resources.map((r) => [r.resourceName, r.acls.map((x) => x.principal)])).to.deep.equal([['guarded', ['User:bob']]]);
  });
});
