/**
 * ACL details beside the matrix (acl-matrix.test.ts): the authorized-operations bitfields (Metadata,
 * DescribeCluster, DescribeGroups, ConsumerGroupDescribe, ShareGroupDescribe) as Kafka's AclAuthorizer
 * fills them, READ on the topic for ShareFetch/ShareAcknowledge, DESCRIBE on transactional ids for
 * DescribeTransactions/ListTransactions, and CreateTopics/CreatePartitions authorizing before the
 * 10,000-record limit. Raw frames, kafkajs, and librdkafka's admin (DescribeTopics, DescribeConsumerGroups
 * with include_authorized_operations) through @confluentinc/kafka-javascript.
 *
 * ACLs: alice READ + ALTER_CONFIGS on topic orders, DESCRIBE on the cluster, READ on groups g-alice and
 * g-share, WRITE on orders and transactional id tx-alice, CREATE on topics prefixed a-; bob DESCRIBE on
 * orders, READ on group g-share. admin is a super user.
 */
import { expect } from 'chai';
import kafkajs, { type Admin } from 'kafkajs';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { plainKafka, shareFetchBody, shareGroupJoin, startAclBroker } from '../helpers/acl.js';
import { Cleanup } from '../helpers/cleanup.js';
import type { RawClient } from '../helpers/raw-client.js';
import { rawSaslPlain } from '../helpers/sasl.js';
import type { LoggedBroker } from '../helpers/tls.js';

const { AclOperationTypes: Op, AclPermissionTypes: Perm, AclResourceTypes: Res, ResourcePatternTypes: Pat } = kafkajs;

const USERS = { alice: 'alice-secret', bob: 'bob-secret', admin: 'admin-secret' } as const;
type User = keyof typeof USERS;
const OMITTED = -2147483648;
const bits = (...ops: number[]) => ops.reduce((b, op) => b | (1 << op), 0);
/** Every operation a resource type supports (a super user's bitfield; also Kafka's answer with no authorizer). */
const ALL_TOPIC = bits(3, 4, 5, 6, 7, 8, 10, 11);
const ALL_CLUSTER = bits(5, 7, 8, 9, 10, 11, 12);
const ALL_GROUP = bits(3, 6, 8, 10, 11);

describe('ACL details: authorized operations, share and transaction APIs, CreateTopics order', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let b: LoggedBroker;
  const raws = new Map<User, RawClient>();
  const raw = (user: User): RawClient => raws.get(user) as RawClient;
  const kafka = (user: User) => plainKafka(b.address('SASL_PLAINTEXT'), user, USERS[user]);
  let adminClient: Admin;
  let ordersId = '';

  before(async () => {
    b = cleanup.add(await startAclBroker(USERS, { 'authorizer.class.name': 'kafka.security.authorizer.AclAuthorizer' }), (x) => x.stop());
    for (const u of Object.keys(USERS) as User[])
      raws.set(
        u,
        cleanup.add(await rawSaslPlain(b.address('SASL_PLAINTEXT'), u, USERS[u]), (c) => c.destroy()),
      );
    adminClient = kafka('admin').admin();
    await adminClient.connect();
    cleanup.add(adminClient, (a) => a.disconnect());
    await adminClient.createTopics({ topics: [{ topic: 'orders' }] });
    const allow = { host: '*', permissionType: Perm.ALLOW, resourcePatternType: Pat.LITERAL };
    const alice = { ...allow, principal: 'User:alice' };
    const bob = { ...allow, principal: 'User:bob' };
    await adminClient.createAcls({
      acl: [
        { ...alice, resourceType: Res.TOPIC, resourceName: 'orders', operation: Op.READ },
        { ...alice, resourceType: Res.TOPIC, resourceName: 'orders', operation: Op.WRITE },
        { ...alice, resourceType: Res.TOPIC, resourceName: 'orders', operation: Op.ALTER_CONFIGS },
        { ...alice, resourceType: Res.TOPIC, resourceName: 'a-', resourcePatternType: Pat.PREFIXED, operation: Op.CREATE },
        { ...alice, resourceType: Res.CLUSTER, resourceName: 'kafka-cluster', operation: Op.DESCRIBE },
        { ...alice, resourceType: Res.GROUP, resourceName: 'g-alice', operation: Op.READ },
        { ...alice, resourceType: Res.GROUP, resourceName: 'g-share', operation: Op.READ },
        { ...alice, resourceType: Res.TRANSACTIONAL_ID, resourceName: 'tx-alice', operation: Op.WRITE },
        { ...bob, resourceType: Res.TOPIC, resourceName: 'orders', operation: Op.DESCRIBE },
        { ...bob, resourceType: Res.GROUP, resourceName: 'g-share', operation: Op.READ },
      ],
    });
    const m = await raw('admin').request<{ topics: { name: string; topicId: string }[] }>(ApiKey.Metadata, 12, {
      topics: [{ topicId: '0'.repeat(32), name: 'orders' }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    ordersId = m.topics[0]?.topicId ?? '';
  });
  after(() => cleanup.run());

  type MetaRes = { clusterAuthorizedOperations?: number; topics: { name: string; errorCode: number; topicAuthorizedOperations: number }[] };
  const metadata = (user: User, v: number, include: boolean) =>
    raw(user).request<MetaRes>(ApiKey.Metadata, v, {
      topics: [{ topicId: '0'.repeat(32), name: 'orders' }],
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: include && v <= 10,
      includeTopicAuthorizedOperations: include,
    });

  it('Metadata v8-12: topic bits per principal (implied DESCRIBE, DESCRIBE_CONFIGS), cluster bits up to v10 (0 without DESCRIBE), INT32_MIN unless asked', async () => {
    const alice = await metadata('alice', 10, true);
    expect(alice.topics[0]?.topicAuthorizedOperations).to.equal(bits(3, 4, 8, 10, 11)); // READ WRITE DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
    expect(alice.clusterAuthorizedOperations).to.equal(bits(8));
    const bob = await metadata('bob', 9, true);
    expect(bob.topics[0]?.topicAuthorizedOperations).to.equal(bits(8));
    expect(bob.clusterAuthorizedOperations).to.equal(0);
    const admin = await metadata('admin', 8, true);
    expect([admin.topics[0]?.topicAuthorizedOperations, admin.clusterAuthorizedOperations]).to.deep.equal([ALL_TOPIC, ALL_CLUSTER]);
    const v12 = await metadata('alice', 12, true);
    expect(v12.topics[0]?.topicAuthorizedOperations).to.equal(bits(3, 4, 8, 10, 11));
    const notAsked = await metadata('alice', 10, false);
    expect([notAsked.topics[0]?.topicAuthorizedOperations, notAsked.clusterAuthorizedOperations]).to.deep.equal([OMITTED, OMITTED]);
  });

  it('DescribeCluster, DescribeGroups, ConsumerGroupDescribe, ShareGroupDescribe: the principal’s bits when asked', async () => {
    const dc = (user: User, include: boolean) =>
      raw(user).request<{ clusterAuthorizedOperations: number }>(ApiKey.DescribeCluster, 0, {
        includeClusterAuthorizedOperations: include,
      });
    expect((await dc('alice', true)).clusterAuthorizedOperations).to.equal(bits(8));
    expect((await dc('bob', true)).clusterAuthorizedOperations).to.equal(0);
    expect((await dc('admin', true)).clusterAuthorizedOperations).to.equal(ALL_CLUSTER);
    expect((await dc('alice', false)).clusterAuthorizedOperations).to.equal(OMITTED);
    const dg = await raw('alice').request<{ groups: { authorizedOperations: number }[] }>(ApiKey.DescribeGroups, 5, {
      groups: ['g-alice'],
      includeAuthorizedOperations: true,
    });
    expect(dg.groups[0]?.authorizedOperations).to.equal(bits(3, 8)); // READ implies DESCRIBE
    const dgAdmin = await raw('admin').request<{ groups: { authorizedOperations: number }[] }>(ApiKey.DescribeGroups, 3, {
      groups: ['g-alice'],
      includeAuthorizedOperations: true,
    });
    expect(dgAdmin.groups[0]?.authorizedOperations).to.equal(ALL_GROUP);
    // a KIP-848 group of alice's, then ConsumerGroupDescribe
    const hb = await raw('alice').request<{ errorCode: number }>(ApiKey.ConsumerGroupHeartbeat, 0, {
      groupId: 'g-alice',
      memberId: 'm-1',
      memberEpoch: 0,
      instanceId: null,
      rackId: null,
      rebalanceTimeoutMs: 30000,
      subscribedTopicNames: ['orders'],
      serverAssignor: null,
      topicPartitions: [],
    });
    expect(hb.errorCode).to.equal(ErrorCode.NONE);
    const cgd = (include: boolean) =>
      raw('alice').request<{ groups: { errorCode: number; authorizedOperations: number }[] }>(ApiKey.ConsumerGroupDescribe, 0, {
        groupIds: ['g-alice'],
        includeAuthorizedOperations: include,
      });
    expect((await cgd(true)).groups[0]).to.include({ errorCode: ErrorCode.NONE, authorizedOperations: bits(3, 8) });
    expect((await cgd(false)).groups[0]?.authorizedOperations).to.equal(OMITTED);
    const sh = await raw('bob').request<{ errorCode: number }>(ApiKey.ShareGroupHeartbeat, 1, {
      groupId: 'g-share',
      memberId: 'sm-1',
      memberEpoch: 0,
      rackId: null,
      subscribedTopicNames: ['orders'],
    });
    expect(sh.errorCode).to.equal(ErrorCode.NONE);
    const sgd = await raw('bob').request<{ groups: { errorCode: number; authorizedOperations: number }[] }>(ApiKey.ShareGroupDescribe, 1, {
      groupIds: ['g-share'],
      includeAuthorizedOperations: true,
    });
    expect(sgd.groups[0]).to.include({ errorCode: ErrorCode.NONE, authorizedOperations: bits(3, 8) });
  });

  it('librdkafka admin (DescribeTopics, DescribeConsumerGroups with include_authorized_operations) reads the bits', async () => {
    const ck = loadConfluent();
    const rd = new ck.KafkaJS.Kafka({
      kafkaJS: { brokers: [b.address('SASL_PLAINTEXT')], logLevel: ck.KafkaJS.logLevel.NOTHING },
      'security.protocol': 'sasl_plaintext',
      'sasl.mechanisms': 'PLAIN',
      'sasl.username': 'alice',
      'sasl.password': USERS.alice,
    }).admin();
    await rd.connect();
    try {
      const topics = (await rd.fetchTopicMetadata({ topics: ['orders'], includeAuthorizedOperations: true })) as {
        authorizedOperations?: number[];
      }[];
      expect([...(topics[0]?.authorizedOperations ?? [])].sort((x, y) => x - y)).to.deep.equal([3, 4, 8, 10, 11]);
      const groups = (await rd.describeGroups(['g-alice'], { includeAuthorizedOperations: true })) as {
        groups: { authorizedOperations?: number[] }[];
      };
      expect([...(groups.groups[0]?.authorizedOperations ?? [])].sort((x, y) => x - y)).to.deep.equal([3, 8]);
    } finally {
      await rd.disconnect();
    }
  });

  it('ShareFetch/ShareAcknowledge need READ on the topic, ShareGroupHeartbeat DESCRIBE on subscribed topics', async () => {
    type Fetched = {
      errorCode: number;
      responses: { topicId: string; partitions: { errorCode: number; acknowledgeErrorCode: number }[] }[];
    };
    const fetch = (user: User, memberId: string, epoch: number) =>
      raw(user).request<Fetched>(
        ApiKey.ShareFetch,
        1,
        shareFetchBody('g-share', memberId, epoch, [
          { topicId: ordersId, partitions: [{ partitionIndex: 0, acknowledgementBatches: [] }] },
        ]),
      );
    const shareJoin = (user: User, memberId: string, topics: string[]) => shareGroupJoin(raw(user), 'g-share', memberId, topics);
    // bob may describe orders (heartbeat passes) but not read it
    const bobFetch = await fetch('bob', 'sm-1', 0);
    expect(bobFetch.errorCode).to.equal(ErrorCode.NONE);
    expect(bobFetch.responses).to.have.length(1);
    expect(bobFetch.responses[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    const ack = await raw('bob').request<{ errorCode: number; responses: { partitions: { errorCode: number }[] }[] }>(
      ApiKey.ShareAcknowledge,
      1,
      {
        groupId: 'g-share',
        memberId: 'sm-1',
        shareSessionEpoch: 1,
        topics: [
          {
            topicId: ordersId,
            partitions: [{ partitionIndex: 0, acknowledgementBatches: [{ firstOffset: 0n, lastOffset: 0n, acknowledgeTypes: [1] }] }],
          },
        ],
      },
    );
    expect(ack.errorCode).to.equal(ErrorCode.NONE);
    expect(ack.responses[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    // alice may read orders and the group
    expect(await shareJoin('alice', 'sm-2', ['orders'])).to.equal(ErrorCode.NONE);
    const aliceFetch = await fetch('alice', 'sm-2', 0);
    expect(aliceFetch.errorCode).to.equal(ErrorCode.NONE);
    expect(aliceFetch.responses[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.NONE);
    // a subscribed topic bob may not describe
    expect(await shareJoin('bob', 'sm-3', ['orders', 'a-hidden'])).to.equal(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
  });

  it('DescribeTransactions answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED without DESCRIBE; ListTransactions lists only describable ids', async () => {
    const p = kafka('alice').producer({ transactionalId: 'tx-alice', idempotent: true, maxInFlightRequests: 1, retry: { retries: 1 } });
    await p.connect();
    try {
      const t = await p.transaction();
      await t.send({ topic: 'orders', messages: [{ value: 'txn' }] });
      await t.commit();
    } finally {
      await p.disconnect();
    }
    const describe = (user: User) =>
      raw(user).request<{ transactionStates: { transactionalId: string; errorCode: number }[] }>(ApiKey.DescribeTransactions, 0, {
        transactionalIds: ['tx-alice'],
      });
    expect((await describe('alice')).transactionStates[0]?.errorCode).to.equal(ErrorCode.NONE); // WRITE implies DESCRIBE
    expect((await describe('bob')).transactionStates[0]?.errorCode).to.equal(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    const list = async (user: User) =>
      (
        await raw(user).request<{ errorCode: number; transactionStates: { transactionalId: string }[] }>(ApiKey.ListTransactions, 1, {
          stateFilters: [],
          producerIdFilters: [],
          durationFilter: -1n,
        })
      ).transactionStates.map((s) => s.transactionalId);
    expect(await list('alice')).to.deep.equal(['tx-alice']);
    expect(await list('bob')).to.deep.equal([]);
    expect(await list('admin')).to.deep.equal(['tx-alice']);
  });

  it('CreateTopics/CreatePartitions authorize before the 10,000-record limit: TOPIC_AUTHORIZATION_FAILED, not POLICY_VIOLATION', async () => {
    type Created = { topics: { name: string; errorCode: number }[] };
    const create = (user: User, names: string[]) =>
      raw(user).request<Created>(ApiKey.CreateTopics, 5, {
        topics: names.map((name) => ({ name, numPartitions: 20_000, replicationFactor: 1, assignments: [], configs: [] })),
        timeoutMs: 10_000,
        validateOnly: false,
      });
    const codes = (r: Created) => Object.fromEntries(r.topics.map((t) => [t.name, t.errorCode]));
    expect(codes(await create('bob', ['x-big']))).to.deep.equal({ 'x-big': ErrorCode.TOPIC_AUTHORIZATION_FAILED });
    // alice may create a-*: that one is over the limit, the other one not hers
    expect(codes(await create('alice', ['a-big', 'x-big']))).to.deep.equal({
      'a-big': ErrorCode.POLICY_VIOLATION,
      'x-big': ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    });
    expect(codes(await create('admin', ['x-big']))).to.deep.equal({ 'x-big': ErrorCode.POLICY_VIOLATION });
    const grow = (user: User) =>
      raw(user).request<{ results: { name: string; errorCode: number }[] }>(ApiKey.CreatePartitions, 1, {
        topics: [{ name: 'orders', count: 20_000, assignments: null }],
        timeoutMs: 10_000,
        validateOnly: false,
      });
    expect((await grow('bob')).results[0]?.errorCode).to.equal(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    expect((await grow('admin')).results[0]?.errorCode).to.equal(ErrorCode.POLICY_VIOLATION);
  });
});
