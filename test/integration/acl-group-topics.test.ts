/**
 * Topic authorization inside share sessions and group descriptions, as Kafka 4 does it (issue 18):
 *   - ShareFetch: a topic the principal may not READ joins the share session all the same; every fetch
 *     (full or incremental) answers its partitions TOPIC_AUTHORIZATION_FAILED (piggy-backed
 *     acknowledgements too), and once an ACL grants READ the session serves it without re-adding it
 *     (KafkaApis.handleShareFetchRequest authorizes the session's partitions on each request).
 *   - ConsumerGroupDescribe and ShareGroupDescribe: a group whose members' assignments (and, for
 *     consumer groups, target assignments) name a topic the principal may not DESCRIBE is answered
 *     TOPIC_AUTHORIZATION_FAILED with Kafka's message and no members; librdkafka's DescribeConsumerGroups
 *     (C API: ConsumerGroupDescribe first) reports that error for the group.
 * Raw frames over SASL_PLAINTEXT (PLAIN), librdkafka's admin and share consumer.
 *
 * ACLs: alice READ on groups sg-alice, sg-rdk, g-mixed, g-visible, sg-mixed; READ on topic visible;
 * DESCRIBE on topics noread and noread-rdk; nothing on hidden. admin is a super user (the groups'
 * other members).
 */
import { expect } from 'chai';
import kafkajs, { type Admin } from 'kafkajs';
import { GROUP_TOPICS_NOT_AUTHORIZED } from '../../lib/security/acl/checks.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { consumerGroupJoin, plainKafka, shareFetchBody, shareGroupJoin, startAclBroker } from '../helpers/acl.js';
import { Cleanup } from '../helpers/cleanup.js';
import { until } from '../helpers/eos.js';
import type { RawClient } from '../helpers/raw-client.js';
import { rdkDescribeGroups } from '../helpers/rdkafka-acls.js';
import { rawSaslPlain } from '../helpers/sasl.js';
import { librdkafkaMissing, ShareConsumer } from '../helpers/share-consumer.js';
import type { LoggedBroker } from '../helpers/tls.js';

const { AclOperationTypes: Op, AclPermissionTypes: Perm, AclResourceTypes: Res, ResourcePatternTypes: Pat } = kafkajs;
const USERS = { admin: 'admin-secret', alice: 'alice-secret' } as const;
const DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED;

interface FetchedPartition {
  partitionIndex: number;
  errorCode: number;
  acknowledgeErrorCode: number;
  acquiredRecords: { firstOffset: bigint; lastOffset: bigint }[];
}
interface Fetched {
  errorCode: number;
  responses: { topicId: string; partitions: FetchedPartition[] }[];
}
interface Described {
  groups: { groupId: string; errorCode: number; errorMessage: string | null; members: { memberId: string }[] }[];
}

describe('ACL: denied topics stay in share sessions; group describes hide groups with undescribable topics', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let b: LoggedBroker;
  let admin: Admin;
  let adminRaw: RawClient;
  let aliceRaw: RawClient;
  const ids = new Map<string, string>();
  const address = () => b.address('SASL_PLAINTEXT');
  const idOf = (topic: string) => ids.get(topic) ?? '';
  const allowAlice = (operation: kafkajs.AclOperationTypes, resourceType: kafkajs.AclResourceTypes, resourceName: string) => ({
    principal: 'User:alice',
    host: '*',
    permissionType: Perm.ALLOW,
    operation,
    resourceType,
    resourceName,
    resourcePatternType: Pat.LITERAL,
  });

  before(async () => {
    b = cleanup.add(await startAclBroker(USERS), (x) => x.stop());
    admin = plainKafka(address(), 'admin', USERS.admin).admin();
    await admin.connect();
    cleanup.add(admin, (a) => a.disconnect());
    const topics = ['visible', 'noread', 'hidden', 'noread-rdk'];
    await admin.createTopics({ topics: topics.map((topic) => ({ topic })) });
    await admin.createAcls({
      acl: [
        ...['sg-alice', 'sg-rdk', 'g-mixed', 'g-visible', 'sg-mixed'].map((g) => allowAlice(Op.READ, Res.GROUP, g)),
        allowAlice(Op.READ, Res.TOPIC, 'visible'),
        allowAlice(Op.DESCRIBE, Res.TOPIC, 'noread'),
        allowAlice(Op.DESCRIBE, Res.TOPIC, 'noread-rdk'),
      ],
    });
    adminRaw = cleanup.add(await rawSaslPlain(address(), 'admin', USERS.admin), (c) => c.destroy());
    aliceRaw = cleanup.add(await rawSaslPlain(address(), 'alice', USERS.alice), (c) => c.destroy());
    // the share groups read from the start (the records below come before their share partitions exist)
    const reset = await adminRaw.request<{ responses: { errorCode: number }[] }>(ApiKey.IncrementalAlterConfigs, 1, {
      resources: ['sg-alice', 'sg-rdk'].map((resourceName) => ({
        resourceType: 32,
        resourceName,
        configs: [{ name: 'share.auto.offset.reset', configOperation: 0, value: 'earliest' }],
      })),
      validateOnly: false,
    });
    expect(reset.responses.map((r) => r.errorCode)).to.deep.equal([ErrorCode.NONE, ErrorCode.NONE]);
    const producer = plainKafka(address(), 'admin', USERS.admin).producer();
    await producer.connect();
    for (const topic of topics) await producer.send({ topic, messages: [{ value: `${topic}-0` }, { value: `${topic}-1` }] });
    await producer.disconnect();
    const m = await adminRaw.request<{ topics: { name: string; topicId: string }[] }>(ApiKey.Metadata, 12, {
      topics: topics.map((name) => ({ topicId: '0'.repeat(32), name })),
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    for (const t of m.topics) ids.set(t.name, t.topicId);
  });
  after(() => cleanup.run());

  /** One ShareFetch v1 of alice's in group sg-alice; `topics` maps a topic to the offsets it acknowledges (accept). */
  const aliceFetch = (epoch: number, topics: Record<string, bigint[]>) =>
    aliceRaw.request<Fetched>(
      ApiKey.ShareFetch,
      1,
      shareFetchBody(
        'sg-alice',
        'alice-member',
        epoch,
        Object.entries(topics).map(([topic, acks]) => ({
          topicId: idOf(topic),
          partitions: [
            { partitionIndex: 0, acknowledgementBatches: acks.map((o) => ({ firstOffset: o, lastOffset: o, acknowledgeTypes: [1] })) },
          ],
        })),
      ),
    );
  /** The partition 0 answer for `topic` in a ShareFetch response (undefined: not in the response). */
  const part = (r: Fetched, topic: string) => r.responses.find((t) => t.topicId === idOf(topic))?.partitions[0];

  it('ShareFetch: a topic alice may not READ stays in her share session, TOPIC_AUTHORIZATION_FAILED on every fetch, served once READ is granted', async () => {
    expect(await shareGroupJoin(aliceRaw, 'sg-alice', 'alice-member', ['visible', 'noread'])).to.equal(ErrorCode.NONE);
    // epoch 0 opens the session with both topics: visible serves records, noread is denied
    const first = await aliceFetch(0, { visible: [], noread: [] });
    expect(first.errorCode).to.equal(ErrorCode.NONE);
    expect(part(first, 'visible')).to.include({ errorCode: ErrorCode.NONE });
    expect(part(first, 'visible')?.acquiredRecords).to.have.length.above(0);
    expect(part(first, 'noread')).to.include({ errorCode: DENIED });
    expect(part(first, 'noread')?.acquiredRecords).to.deep.equal([]);
    // an incremental fetch naming no topic: noread is still in the session, and still denied
    const second = await aliceFetch(1, {});
    expect(part(second, 'noread')).to.include({ errorCode: DENIED });
    // an acknowledgement on it is refused the same way (and changes nothing)
    const third = await aliceFetch(2, { noread: [0n] });
    expect(part(third, 'noread')).to.include({ errorCode: DENIED, acknowledgeErrorCode: DENIED });
    // READ granted: the next incremental fetch serves noread's records from the session
    await admin.createAcls({ acl: [allowAlice(Op.READ, Res.TOPIC, 'noread')] });
    const fourth = await aliceFetch(3, {});
    expect(part(fourth, 'noread')).to.include({ errorCode: ErrorCode.NONE });
    expect(part(fourth, 'noread')?.acquiredRecords).to.deep.equal([{ firstOffset: 0n, lastOffset: 1n, deliveryCount: 1 }]);
    expect((await aliceFetch(-1, {})).errorCode).to.equal(ErrorCode.NONE);
  });

  it('librdkafka share consumer: errors while it may not read the topic, then the records once READ is granted', async function () {
    if (librdkafkaMissing() !== null) this.skip(); // the native librdkafka build is not there (npm test builds it)
    const c = cleanup.add(
      new ShareConsumer(address(), 'sg-rdk', 'noread-rdk', {
        'security.protocol': 'sasl_plaintext',
        'sasl.mechanisms': 'PLAIN',
        'sasl.username': 'alice',
        'sasl.password': USERS.alice,
      }),
      (x) => x.kill(),
    );
    // each ShareFetch answers partition 0 TOPIC_AUTHORIZATION_FAILED (29): the driver prints "E 29 ShareFetch failed for noread-rdk [0]"
    await until(
      () => c.errors.some((e) => e.startsWith(`E ${DENIED} `)),
      30_000,
      () => `E ${DENIED} at the share consumer (${c.errors.length} errors)`,
    );
    expect(c.deliveries).to.deep.equal([]);
    await admin.createAcls({ acl: [allowAlice(Op.READ, Res.TOPIC, 'noread-rdk')] });
    await until(() => c.deliveries.length >= 2, 30_000, 'the records of noread-rdk at the share consumer');
    expect(c.deliveries.map((d) => d.offset)).to.include.members([0, 1]);
  });

  it('ConsumerGroupDescribe: a group assigned a topic alice may not describe is TOPIC_AUTHORIZATION_FAILED for her (no members), whole for admin', async () => {
    expect(await consumerGroupJoin(adminRaw, 'g-mixed', 'admin-m1', ['visible', 'hidden'])).to.equal(ErrorCode.NONE);
    expect(await consumerGroupJoin(adminRaw, 'g-visible', 'admin-m2', ['visible'])).to.equal(ErrorCode.NONE);
    const describe = (c: RawClient) =>
      c.request<Described>(ApiKey.ConsumerGroupDescribe, 0, { groupIds: ['g-mixed', 'g-visible'], includeAuthorizedOperations: true });
    const alice = await describe(aliceRaw);
    expect(alice.groups.map((g) => [g.groupId, g.errorCode, g.errorMessage, g.members.length])).to.deep.equal([
      ['g-mixed', DENIED, GROUP_TOPICS_NOT_AUTHORIZED, 0],
      ['g-visible', ErrorCode.NONE, null, 1],
    ]);
    const asAdmin = await describe(adminRaw);
    expect(asAdmin.groups.map((g) => [g.groupId, g.errorCode, g.members.length])).to.deep.equal([
      ['g-mixed', ErrorCode.NONE, 1],
      ['g-visible', ErrorCode.NONE, 1],
    ]);
  });

  it('librdkafka DescribeConsumerGroups (ConsumerGroupDescribe first) reports TOPIC_AUTHORIZATION_FAILED with the message for that group', async function () {
    if (librdkafkaMissing() !== null) this.skip(); // the native librdkafka build is not there (npm test builds it)
    // the C API: the Node bindings' describeGroups crashes on any group answered with an error (NULL assignor name)
    const groups = await rdkDescribeGroups(address(), 'alice', USERS.alice, ['g-mixed', 'g-visible']);
    expect(groups.map((g) => [g.groupId, g.errorCode, g.members])).to.deep.equal([
      ['g-mixed', DENIED, 0],
      ['g-visible', ErrorCode.NONE, 1],
    ]);
    expect(groups[0]?.message).to.include(GROUP_TOPICS_NOT_AUTHORIZED);
  });

  it('ShareGroupDescribe: a share group assigned a topic alice may not describe is TOPIC_AUTHORIZATION_FAILED for her', async () => {
    expect(await shareGroupJoin(adminRaw, 'sg-mixed', 'admin-s1', ['visible', 'hidden'])).to.equal(ErrorCode.NONE);
    const describe = (c: RawClient) =>
      c.request<Described>(ApiKey.ShareGroupDescribe, 1, { groupIds: ['sg-mixed'], includeAuthorizedOperations: false });
    const alice = await describe(aliceRaw);
    expect(alice.groups.map((g) => [g.errorCode, g.errorMessage, g.members.length])).to.deep.equal([
      [DENIED, GROUP_TOPICS_NOT_AUTHORIZED, 0],
    ]);
    expect((await describe(adminRaw)).groups.map((g) => [g.errorCode, g.members.length])).to.deep.equal([[ErrorCode.NONE, 1]]);
  });
});
