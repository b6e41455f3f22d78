/**
 * The ACL matrix (issue 18 item 3): a broker with PLAINTEXT and SASL_PLAINTEXT (PLAIN users alice, bob
 * and admin, admin in super.users) and the AclAuthorizer on; admin creates topics and ACLs with kafkajs,
 * then each API × resource is called as alice, bob or ANONYMOUS with kafkajs (raw frames for the APIs
 * no client here exposes) and must give exactly Kafka's answer: allowed, or the AUTHORIZATION_FAILED code
 * Kafka gives. Metadata hides the topics a principal may not describe. Denials are logged once a minute
 * per principal, operation and resource type.
 *
 * ACLs: alice READ+WRITE on topic orders, WRITE on topics prefixed pay-, READ on group g-alice, WRITE on
 * transactional id tx-alice; DENY ALL on topic secret (which User:* may DESCRIBE). bob DESCRIBE on orders
 * and READ on group g-bob.
 */
import { expect } from 'chai';
import kafkajs, { type Admin, Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { consumerGroupJoin, outcome, plainKafka } from '../helpers/acl.js';
import { Cleanup } from '../helpers/cleanup.js';
import { fetchBody, type RawClient } from '../helpers/raw-client.js';
import { plainJaas, rawSaslPlain } from '../helpers/sasl.js';
import { startLoggedBroker, type LoggedBroker } from '../helpers/tls.js';

// kafkajs's enums are not named exports an ES module can see
const { AclOperationTypes: Op, AclPermissionTypes: Perm, AclResourceTypes: Res, ConfigResourceTypes, ResourcePatternTypes: Pat } = kafkajs;

const USERS = { alice: 'alice-secret', bob: 'bob-secret', admin: 'admin-secret' } as const;
type User = keyof typeof USERS;

const ACL_BROKER_CONFIG = {
  'sasl.enabled.mechanisms': 'PLAIN',
  'listener.name.sasl_plaintext.plain.sasl.jaas.config': plainJaas(USERS),
  'authorizer.class.name': 'kafka.security.authorizer.AclAuthorizer',
  'super.users': 'User:admin',
  'num.partitions': 1,
};

describe('ACL matrix: each API × resource answers as Kafka does (SASL PLAIN alice/bob, admin super user)', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let b: LoggedBroker;
  const kafka = (user: User) => plainKafka(b.address('SASL_PLAINTEXT'), user, USERS[user]);
  const admins = new Map<User, Admin>();
  const admin = (user: User): Admin => admins.get(user) as Admin;
  const raws = new Map<User, RawClient>();
  const raw = (user: User): RawClient => raws.get(user) as RawClient;

  before(async () => {
    b = cleanup.add(await startLoggedBroker(['PLAINTEXT', 'SASL_PLAINTEXT'], ACL_BROKER_CONFIG), (x) => x.stop());
    for (const u of Object.keys(USERS) as User[]) {
      const a = kafka(u).admin();
      await a.connect();
      admins.set(
        u,
        cleanup.add(a, (x) => x.disconnect()),
      );
      raws.set(
        u,
        cleanup.add(await rawSaslPlain(b.address('SASL_PLAINTEXT'), u, USERS[u]), (c) => c.destroy()),
      );
    }
    await admin('admin').createTopics({ topics: ['orders', 'secret', 'pay-eu'].map((topic) => ({ topic })) });
    const allow = { host: '*', permissionType: Perm.ALLOW, resourcePatternType: Pat.LITERAL };
    await admin('admin').createAcls({
      acl: [
        { ...allow, resourceType: Res.TOPIC, resourceName: 'orders', principal: 'User:alice', operation: Op.READ },
        { ...allow, resourceType: Res.TOPIC, resourceName: 'orders', principal: 'User:alice', operation: Op.WRITE },
        {
          ...allow,
          resourceType: Res.TOPIC,
          resourceName: 'pay-',
          resourcePatternType: Pat.PREFIXED,
          principal: 'User:alice',
          operation: Op.WRITE,
        },
        { ...allow, resourceType: Res.GROUP, resourceName: 'g-alice', principal: 'User:alice', operation: Op.READ },
        { ...allow, resourceType: Res.TRANSACTIONAL_ID, resourceName: 'tx-alice', principal: 'User:alice', operation: Op.WRITE },
        { ...allow, resourceType: Res.TOPIC, resourceName: 'secret', principal: 'User:*', operation: Op.DESCRIBE },
        {
          ...allow,
          resourceType: Res.TOPIC,
          resourceName: 'secret',
          principal: 'User:alice',
          operation: Op.ALL,
          permissionType: Perm.DENY,
        },
        { ...allow, resourceType: Res.TOPIC, resourceName: 'orders', principal: 'User:bob', operation: Op.DESCRIBE },
        { ...allow, resourceType: Res.GROUP, resourceName: 'g-bob', principal: 'User:bob', operation: Op.READ },
      ],
    });
  });
  after(() => cleanup.run());

  it('Metadata: listings hide topics the principal may not describe; a named one answers TOPIC_AUTHORIZATION_FAILED', async () => {
    expect((await admin('admin').listTopics()).filter((t) => !t.startsWith('__')).sort()).to.deep.equal(['orders', 'pay-eu', 'secret']);
    expect((await admin('alice').listTopics()).sort()).to.deep.equal(['orders', 'pay-eu']);
    expect((await admin('bob').listTopics()).sort()).to.deep.equal(['orders', 'secret']);
    const meta = await admin('bob').fetchTopicMetadata({ topics: ['orders'] });
    expect(meta.topics.map((t) => t.name)).to.deep.equal(['orders']);
    expect(await outcome(admin('alice').fetchTopicMetadata({ topics: ['secret'] }))).to.equal('TOPIC_AUTHORIZATION_FAILED');
    // auto-creation needs CREATE (alice may write pay-*, not create)
    const m = await raw('alice').request<{ topics: { name: string; errorCode: number }[] }>(ApiKey.Metadata, 4, {
      topics: [{ name: 'pay-new' }],
      allowAutoTopicCreation: true,
    });
    expect(m.topics).to.deep.include({ ...m.topics[0], name: 'pay-new', errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED });
    // PLAINTEXT: User:ANONYMOUS has no ACL of its own, so sees only what User:* may describe
    const anon = new Kafka({ brokers: [b.address('PLAINTEXT')], retry: { retries: 0 }, logLevel: logLevel.NOTHING }).admin();
    await anon.connect();
    try {
      expect(await anon.listTopics()).to.deep.equal(['secret']);
    } finally {
      await anon.disconnect();
    }
  });

  it('Produce: WRITE on the topic (literal or prefixed); else TOPIC_AUTHORIZATION_FAILED', async () => {
    const send = async (user: User, topic: string) => {
      const p = kafka(user).producer({ retry: { retries: 0 } });
      await p.connect();
      try {
        return await outcome(p.send({ topic, messages: [{ value: `${user}->${topic}` }] }));
      } finally {
        await p.disconnect();
      }
    };
    expect(await send('alice', 'orders')).to.equal('OK');
    expect(await send('alice', 'pay-eu')).to.equal('OK');
    expect(await send('bob', 'orders')).to.equal('TOPIC_AUTHORIZATION_FAILED');
    expect(await send('alice', 'secret')).to.equal('TOPIC_AUTHORIZATION_FAILED');
  });

  it('Consumer groups: alice reads orders in g-alice (FindCoordinator, Join, Sync, Heartbeat, Fetch, OffsetCommit/Fetch)', async () => {
    const c = kafka('alice').consumer({ groupId: 'g-alice', retry: { retries: 0 } });
    await c.connect();
    try {
      await c.subscribe({ topic: 'orders', fromBeginning: true });
      const got: string[] = [];
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`consumed ${got.length}`)), 60_000);
        void c
          .run({
            eachMessage: ({ message }) => {
              got.push(message.value?.toString() ?? '');
              clearTimeout(timer);
              resolve();
              return Promise.resolve();
            },
          })
          .catch(reject);
      });
      expect(got[0]).to.equal('alice->orders');
    } finally {
      await c.disconnect();
    }
    const offsets = await admin('alice').fetchOffsets({ groupId: 'g-alice', topics: ['orders'] });
    expect(offsets[0]?.partitions[0]?.offset).to.equal('1');
    // a group alice has no ACL for: FindCoordinator already answers GROUP_AUTHORIZATION_FAILED (kafkajs reports
    // it as "coordinator not found", as it does against Kafka)
    const fc = await raw('alice').request<{ coordinators: { errorCode: number }[] }>(ApiKey.FindCoordinator, 4, {
      keyType: 0,
      coordinatorKeys: ['g-other'],
    });
    expect(fc.coordinators[0]?.errorCode).to.equal(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    expect(await outcome(admin('alice').fetchOffsets({ groupId: 'g-other', topics: ['orders'] }))).to.equal(
      'KafkaJSGroupCoordinatorNotFound',
    );
    expect(await outcome(admin('bob').describeGroups(['g-alice']))).to.equal('KafkaJSGroupCoordinatorNotFound');
    expect((await admin('alice').describeGroups(['g-alice'])).groups[0]?.groupId).to.equal('g-alice');
    // ListGroups lists only the groups the principal may describe
    expect((await admin('alice').listGroups()).groups.map((g) => g.groupId)).to.deep.equal(['g-alice']);
    expect((await admin('bob').listGroups()).groups.map((g) => g.groupId)).to.deep.equal([]);
    expect(await outcome(admin('alice').deleteGroups(['g-alice']))).to.equal('GROUP_AUTHORIZATION_FAILED');
  });

  it('Topic admin: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords, Describe/AlterConfigs, ListOffsets', async () => {
    const a = admin('alice');
    expect(await outcome(a.createTopics({ topics: [{ topic: 'pay-x' }] }))).to.equal('TOPIC_AUTHORIZATION_FAILED');
    expect(await outcome(a.deleteTopics({ topics: ['orders'] }))).to.equal('TOPIC_AUTHORIZATION_FAILED');
    expect(await outcome(a.createPartitions({ topicPartitions: [{ topic: 'orders', count: 2 }] }))).to.equal('TOPIC_AUTHORIZATION_FAILED');
    expect(await outcome(a.deleteTopicRecords({ topic: 'orders', partitions: [{ partition: 0, offset: '0' }] }))).to.equal(
      'TOPIC_AUTHORIZATION_FAILED',
    );
    const topicCfg = await outcome(
      a.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: 'orders' }], includeSynonyms: false }),
    );
    expect(topicCfg).to.equal('TOPIC_AUTHORIZATION_FAILED');
    const brokerCfg = await outcome(
      a.describeConfigs({
        resources: [{ type: ConfigResourceTypes.BROKER, name: String((await admin('admin').describeCluster()).brokers[0]?.nodeId) }],
        includeSynonyms: false,
      }),
    );
    expect(brokerCfg).to.equal('CLUSTER_AUTHORIZATION_FAILED');
    expect(
      await outcome(
        a.alterConfigs({
          validateOnly: false,
          resources: [{ type: ConfigResourceTypes.TOPIC, name: 'orders', configEntries: [{ name: 'retention.ms', value: '1000' }] }],
        }),
      ),
    ).to.equal('TOPIC_AUTHORIZATION_FAILED');
    // ListOffsets needs DESCRIBE: bob has it on orders, alice none on secret (denied ALL)
    expect(await outcome(admin('bob').fetchTopicOffsets('orders'))).to.equal('OK');
    expect(await outcome(a.fetchTopicOffsets('secret'))).to.equal('TOPIC_AUTHORIZATION_FAILED');
    // the super user may do all of it
    expect(await outcome(admin('admin').createPartitions({ topicPartitions: [{ topic: 'pay-eu', count: 2 }] }))).to.equal('OK');
  });

  it('Transactions: alice uses tx-alice (InitProducerId, AddPartitionsToTxn, EndTxn); bob gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED (FindCoordinator, InitProducerId)', async () => {
    const tx = async (user: User) => {
      const p = kafka(user).producer({ transactionalId: 'tx-alice', idempotent: true, maxInFlightRequests: 1, retry: { retries: 1 } });
      try {
        return await outcome(
          (async () => {
            // kafkajs's connect() first asks an idempotent producer id (no transactional id)
            await p.connect();
            const t = await p.transaction();
            await t.send({ topic: 'orders', messages: [{ value: `txn-${user}` }] });
            await t.commit();
          })(),
        );
      } finally {
        await p.disconnect();
      }
    };
    expect(await tx('alice')).to.equal('OK');
    // bob: kafkajs's idempotent InitProducerId (no transactional id) needs IDEMPOTENT_WRITE on the cluster or WRITE on
    // some topic; FindCoordinator and InitProducerId for tx-alice answer TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    expect(await tx('bob')).to.equal('CLUSTER_AUTHORIZATION_FAILED');
    const fc = await raw('bob').request<{ coordinators: { errorCode: number }[] }>(ApiKey.FindCoordinator, 4, {
      keyType: 1,
      coordinatorKeys: ['tx-alice'],
    });
    expect(fc.coordinators[0]?.errorCode).to.equal(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    const init = await raw('bob').request<{ errorCode: number }>(ApiKey.InitProducerId, 4, {
      transactionalId: 'tx-alice',
      transactionTimeoutMs: 60000,
      producerId: -1n,
      producerEpoch: -1,
    });
    expect(init.errorCode).to.equal(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  });

  it('raw frames: the APIs no client here exposes answer Kafka’s codes', async () => {
    const CLUSTER = ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
    const a = raw('alice');
    const r = <T>(c: RawClient, key: number, v: number, body: unknown) => c.request<T>(key, v, body);
    expect((await r<{ errorCode: number }>(a, ApiKey.DescribeLogDirs, 4, { topics: null })).errorCode).to.equal(CLUSTER);
    expect(
      (await r<{ errorCode: number }>(a, ApiKey.ElectLeaders, 2, { electionType: 0, topicPartitions: null, timeoutMs: 1000 })).errorCode,
    ).to.equal(CLUSTER);
    expect((await r<{ errorCode: number }>(a, ApiKey.ListPartitionReassignments, 0, { timeoutMs: 1000, topics: null })).errorCode).to.equal(
      CLUSTER,
    );
    expect((await r<{ errorCode: number }>(a, ApiKey.AlterPartitionReassignments, 0, { timeoutMs: 1000, topics: [] })).errorCode).to.equal(
      CLUSTER,
    );
    expect((await r<{ errorCode: number }>(a, ApiKey.DescribeUserScramCredentials, 0, { users: null })).errorCode).to.equal(CLUSTER);
    const markers = await r<{ markers: unknown[] }>(a, ApiKey.WriteTxnMarkers, 1, {
      markers: [
        {
          producerId: 1n,
          producerEpoch: 0,
          transactionResult: true,
          topics: [{ name: 'orders', partitionIndexes: [0] }],
          coordinatorEpoch: 0,
        },
      ],
    });
    expect(JSON.stringify(markers.markers, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).to.include(
      `"errorCode":${CLUSTER}`,
    );
    expect((await r<{ errorCode: number }>(a, ApiKey.DescribeAcls, 1, aclFilterAll())).errorCode).to.equal(CLUSTER);
    // DescribeProducers needs READ: alice has it on orders, bob only DESCRIBE
    const dp = (c: RawClient) =>
      r<{ topics: { partitions: { errorCode: number }[] }[] }>(c, ApiKey.DescribeProducers, 0, {
        topics: [{ name: 'orders', partitionIndexes: [0] }],
      });
    expect((await dp(a)).topics[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.NONE);
    expect((await dp(raw('bob'))).topics[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    const dt = await r<{ transactionStates: { errorCode: number }[] }>(raw('bob'), ApiKey.DescribeTransactions, 0, {
      transactionalIds: ['tx-alice'],
    });
    expect(dt.transactionStates[0]?.errorCode).to.equal(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    // an idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (alice has, bob not)
    const initPid = (c: RawClient) =>
      r<{ errorCode: number }>(c, ApiKey.InitProducerId, 4, {
        transactionalId: null,
        transactionTimeoutMs: 60000,
        producerId: -1n,
        producerEpoch: -1,
      });
    expect((await initPid(a)).errorCode).to.equal(ErrorCode.NONE);
    expect((await initPid(raw('bob'))).errorCode).to.equal(CLUSTER);
    // OffsetDelete needs DELETE on the group
    const od = await r<{ errorCode: number }>(a, ApiKey.OffsetDelete, 0, {
      groupId: 'g-alice',
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 0 }] }],
    });
    expect(od.errorCode).to.equal(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    // OffsetCommit: bob may read g-bob but not the topic; an unknown group: GROUP_AUTHORIZATION_FAILED
    const commit = (c: RawClient, groupId: string) =>
      r<{ topics: { partitions: { errorCode: number }[] }[] }>(c, ApiKey.OffsetCommit, 2, {
        groupId,
        generationIdOrMemberEpoch: -1,
        memberId: '',
        retentionTimeMs: -1n,
        topics: [{ name: 'orders', partitions: [{ partitionIndex: 0, committedOffset: 0n, committedMetadata: null }] }],
      });
    expect((await commit(raw('bob'), 'g-bob')).topics[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    expect((await commit(raw('bob'), 'g-alice')).topics[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    // Fetch needs READ on the topic
    const fetch = await r<{ responses: { partitions: { errorCode: number }[] }[] }>(
      raw('bob'),
      ApiKey.Fetch,
      11,
      fetchBody('orders', [{ partition: 0, fetchOffset: 0n }]),
    );
    expect(fetch.responses[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    // ConsumerGroupHeartbeat (KIP-848): GROUP READ, then DESCRIBE on every subscribed topic
    expect(await consumerGroupJoin(raw('bob'), 'g-alice', '', ['orders'])).to.equal(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    expect(await consumerGroupJoin(raw('bob'), 'g-bob', '', ['pay-eu'])).to.equal(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
  });

  it("client quotas, GROUP configs and share-group offsets: Kafka's cluster and group checks", async () => {
    const r = <T>(c: RawClient, key: number, v: number, body: unknown) => c.request<T>(key, v, body);
    const CLUSTER = ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
    const GROUP = ErrorCode.GROUP_AUTHORIZATION_FAILED;
    // DescribeClientQuotas: DESCRIBE_CONFIGS on the cluster; AlterClientQuotas: ALTER_CONFIGS on it
    const dq = (c: RawClient) => r<{ errorCode: number }>(c, ApiKey.DescribeClientQuotas, 1, { components: [], strict: false });
    expect((await dq(raw('alice'))).errorCode).to.equal(CLUSTER);
    expect((await dq(raw('admin'))).errorCode).to.equal(ErrorCode.NONE);
    const aq = (c: RawClient) =>
      r<{ entries: { errorCode: number }[] }>(c, ApiKey.AlterClientQuotas, 1, {
        entries: [
          { entity: [{ entityType: 'client-id', entityName: 'acl-q' }], ops: [{ key: 'producer_byte_rate', value: 1e6, remove: false }] },
        ],
        validateOnly: true,
      });
    expect((await aq(raw('bob'))).entries[0]?.errorCode).to.equal(CLUSTER);
    expect((await aq(raw('admin'))).entries[0]?.errorCode).to.equal(ErrorCode.NONE);
    // a GROUP config resource (type 32): DESCRIBE_CONFIGS on the group (alice has only READ on g-alice)
    const dc = (c: RawClient) =>
      r<{ results: { errorCode: number }[] }>(c, ApiKey.DescribeConfigs, 4, {
        resources: [{ resourceType: 32, resourceName: 'g-alice', configurationKeys: null }],
        includeSynonyms: false,
        includeDocumentation: false,
      });
    expect((await dc(raw('alice'))).results[0]?.errorCode).to.equal(GROUP);
    expect((await dc(raw('admin'))).results[0]?.errorCode).to.equal(ErrorCode.NONE);
    // share-group offsets: Describe needs DESCRIBE on the group (READ implies it), Alter READ, Delete DELETE
    const dso = (c: RawClient) =>
      r<{ groups: { errorCode: number }[] }>(c, ApiKey.DescribeShareGroupOffsets, 0, { groups: [{ groupId: 'g-alice', topics: null }] });
    expect((await dso(raw('bob'))).groups[0]?.errorCode).to.equal(GROUP);
    expect((await dso(raw('alice'))).groups[0]?.errorCode).to.not.equal(GROUP);
    const aso = (c: RawClient) => r<{ errorCode: number }>(c, ApiKey.AlterShareGroupOffsets, 0, { groupId: 'g-alice', topics: [] });
    expect((await aso(raw('bob'))).errorCode).to.equal(GROUP);
    expect((await aso(raw('alice'))).errorCode).to.not.equal(GROUP);
    const del = (c: RawClient) => r<{ errorCode: number }>(c, ApiKey.DeleteShareGroupOffsets, 0, { groupId: 'g-alice', topics: [] });
    expect((await del(raw('alice'))).errorCode).to.equal(GROUP);
    expect((await del(raw('admin'))).errorCode).to.not.equal(GROUP);
  });

  it('ACL admin APIs: only ALTER/DESCRIBE on the cluster may use them; invalid bindings and filters get INVALID_REQUEST', async () => {
    const entry = {
      resourceType: Res.TOPIC,
      resourceName: 'x',
      resourcePatternType: Pat.LITERAL,
      principal: 'User:bob',
      host: '*',
      operation: Op.READ,
      permissionType: Perm.ALLOW,
    };
    expect(await outcome(admin('alice').createAcls({ acl: [entry] }))).to.equal('CLUSTER_AUTHORIZATION_FAILED');
    const anyName = {
      resourceType: entry.resourceType,
      resourcePatternType: Pat.ANY,
      operation: Op.ANY,
      permissionType: Perm.ANY,
    };
    expect(await outcome(admin('bob').describeAcls(anyName))).to.equal('CLUSTER_AUTHORIZATION_FAILED');
    expect(await outcome(admin('alice').deleteAcls({ filters: [entry] }))).to.equal('CLUSTER_AUTHORIZATION_FAILED');
    const bad = await raw('admin').request<{ results: { errorCode: number; errorMessage: string }[] }>(ApiKey.CreateAcls, 1, {
      creations: [
        {
          resourceType: Res.GROUP,
          resourceName: 'g',
          resourcePatternType: Pat.LITERAL,
          principal: 'User:bob',
          host: '*',
          operation: Op.WRITE,
          permissionType: Perm.ALLOW,
        },
      ],
    });
    expect(bad.results[0]?.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    const badFilter = await raw('admin').request<{ errorCode: number }>(ApiKey.DescribeAcls, 1, { ...aclFilterAll(), operation: 0 });
    expect(badFilter.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
  });

  it('denials are logged: one line per principal, operation and resource type a minute', async () => {
    for (let i = 0; i < 5; i++) await raw('bob').request(ApiKey.Fetch, 11, fetchBody('orders', [{ partition: 0, fetchOffset: 0n }]));
    const lines = b.lines().filter((l) => l.msg.startsWith('Principal = User:bob is Denied operation = READ') && l.msg.includes('TOPIC:'));
    expect(lines).to.have.length(1);
  });
});

/** A DescribeAcls v1 filter that matches every ACL. */
function aclFilterAll() {
  return {
    resourceTypeFilter: 1,
    resourceNameFilter: null,
    patternTypeFilter: 1,
    principalFilter: null,
    hostFilter: null,
    operation: 1,
    permissionType: 1,
  };
}
