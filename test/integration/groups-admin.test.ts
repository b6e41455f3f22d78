/**
 * The admin views of groups as Kafka 4 answers them, over raw connections at every served version and
 * through kafkajs 2.2.4 and librdkafka 2.15: DescribeGroups (both group types, member metadata and
 * assignment, authorized operations), ConsumerGroupDescribe, ListGroups (state and type filters),
 * DeleteGroups and OffsetDelete (subscribed topics, unknown partitions, offsets pending in a
 * transaction, which stay gone after a COMMIT and after a restart).
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { rmSync } from 'node:fs';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { defaultJoinGroupRequest } from '../../protocol/generated/join-group.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { RawClient, rawCreateTopics } from '../helpers/raw-client.js';
import { addOffsets, endTxn, initProducerId, offsetCommit, offsetFetch, txnOffsetCommit } from '../helpers/txn-raw.js';
import { Cleanup } from '../helpers/cleanup.js';

type Any = any;
const require = createRequire(import.meta.url);
const kafkajs = require('kafkajs') as typeof import('kafkajs');

const API = {
  OffsetCommit: 8,
  JoinGroup: 11,
  SyncGroup: 14,
  DescribeGroups: 15,
  ListGroups: 16,
  DeleteTopics: 20,
  DeleteGroups: 42,
  OffsetDelete: 47,
  ConsumerGroupHeartbeat: 68,
  ConsumerGroupDescribe: 69,
} as const;
/** Kafka's bitfield with no authorizer: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS. */
const GROUP_OPS = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11);
const OMITTED = -2147483648;
/** ACL operation codes librdkafka reports for GROUP_OPS. */
const GROUP_OPS_LIST = [3, 6, 8, 10, 11];

/** ConsumerProtocolSubscription v0: the topics, no user data. */
function subscription(topics: string[]): Buffer {
  const parts = [Buffer.from([0, 0]), int32(topics.length), ...topics.map(str), int32(-1)];
  return Buffer.concat(parts);
}
/** ConsumerProtocolAssignment v0 of one topic. */
function assignment(topic: string, partitions: number[]): Buffer {
  return Buffer.concat([Buffer.from([0, 0]), int32(1), str(topic), int32(partitions.length), ...partitions.map(int32), int32(-1)]);
}
function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}
function str(s: string): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(Buffer.byteLength(s));
  return Buffer.concat([b, Buffer.from(s)]);
}

interface Member {
  groupId: string;
  memberId: string;
  generationId: number;
}

/** A classic member joined with JoinGroup v5 (MEMBER_ID_REQUIRED answered) and, unless `sync` is false, synced. */
async function joinClassic(
  raw: RawClient,
  groupId: string,
  o: { protocolType?: string; topics?: string[]; instanceId?: string | null; sync?: boolean } = {},
): Promise<Member> {
  const metadata = subscription(o.topics ?? ['adm-t']);
  const req = {
    ...defaultJoinGroupRequest(),
    groupId,
    groupInstanceId: o.instanceId ?? null,
    sessionTimeoutMs: 300_000,
    rebalanceTimeoutMs: 300_000,
    protocolType: o.protocolType ?? 'consumer',
    protocols: [{ name: 'range', metadata }],
  };
  let r = await raw.request<Any>(API.JoinGroup, 5, req);
  if (r.errorCode === ErrorCode.MEMBER_ID_REQUIRED) r = await raw.request<Any>(API.JoinGroup, 5, { ...req, memberId: r.memberId });
  expect(r.errorCode, `join ${groupId}`).to.equal(ErrorCode.NONE);
  const m = { groupId, memberId: r.memberId as string, generationId: r.generationId as number };
  if (o.sync !== false) {
    const s = await raw.request<Any>(API.SyncGroup, 3, {
      groupId,
      generationId: m.generationId,
      memberId: m.memberId,
      groupInstanceId: o.instanceId ?? null,
      assignments: [{ memberId: m.memberId, assignment: assignment('adm-t', [0, 1]) }],
    });
    expect(s.errorCode, `sync ${groupId}`).to.equal(ErrorCode.NONE);
  }
  return m;
}

/** A KIP-848 member joined with ConsumerGroupHeartbeat v0. */
async function joinConsumer(
  raw: RawClient,
  groupId: string,
  topics: string[],
  o: { instanceId?: string; rackId?: string } = {},
): Promise<{ memberId: string; memberEpoch: number }> {
  const r = await raw.request<Any>(API.ConsumerGroupHeartbeat, 0, {
    groupId,
    memberId: '',
    memberEpoch: 0,
    instanceId: o.instanceId ?? null,
    rackId: o.rackId ?? null,
    rebalanceTimeoutMs: 300_000,
    subscribedTopicNames: topics,
    subscribedTopicRegex: null,
    serverAssignor: 'range',
    topicPartitions: [],
  });
  expect(r.errorCode, `heartbeat ${groupId}: ${r.errorMessage}`).to.equal(ErrorCode.NONE);
  return { memberId: r.memberId, memberEpoch: r.memberEpoch };
}

/** OffsetCommit v2 as a member of a classic group. */
async function commitAs(raw: RawClient, m: Member, topic: string, partition: number, offset: bigint): Promise<void> {
  const r = await raw.request<Any>(API.OffsetCommit, 2, {
    groupId: m.groupId,
    generationIdOrMemberEpoch: m.generationId,
    memberId: m.memberId,
    retentionTimeMs: -1n,
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, committedOffset: offset, committedMetadata: '' }] }],
  });
  expect(r.topics[0].partitions[0].errorCode).to.equal(ErrorCode.NONE);
}

async function committed(raw: RawClient, groupId: string, topic: string, partition: number): Promise<bigint> {
  const f = await offsetFetch(raw, groupId, topic, partition, false);
  expect(f.errorCode).to.equal(ErrorCode.NONE);
  return f.committedOffset;
}

async function offsetDelete(
  raw: RawClient,
  groupId: string,
  topics: [string, number[]][],
): Promise<[number, [string, [number, number][]][]]> {
  const r = await raw.request<Any>(API.OffsetDelete, 0, {
    groupId,
    topics: topics.map(([name, ps]) => ({ name, partitions: ps.map((partitionIndex) => ({ partitionIndex })) })),
  });
  return [r.errorCode, r.topics.map((t: Any) => [t.name, t.partitions.map((p: Any) => [p.partitionIndex, p.errorCode])])];
}

describe('group admin views as Kafka 4 answers them', function () {
  this.timeout(120_000);
  let b: TestBroker;
  let raw: RawClient;
  let stable: Member;
  let kip848: { memberId: string; memberEpoch: number };
  const SUB = subscription(['adm-t']);
  const ASG = assignment('adm-t', [0, 1]);

  const cleanup = new Cleanup();

  before(async () => {
    b = cleanup.add(await startTestBroker({ 'group.consumer.session.timeout.ms': 600_000 }), (t) => t.stop());
    raw = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    await rawCreateTopics(raw, [
      { name: 'adm-t', partitions: 2 },
      { name: 'adm-u', partitions: 2 },
      { name: 'adm-gone', partitions: 1 },
    ]);
    stable = await joinClassic(raw, 'adm-stable', { instanceId: 'inst-1' });
    await joinClassic(raw, 'adm-completing', { sync: false });
    expect(await offsetCommit(raw, 'adm-simple', 'adm-t', 0, 3n)).to.equal(ErrorCode.NONE);
    kip848 = await joinConsumer(raw, 'adm-848', ['adm-t']);
  });
  after(() => cleanup.run());

  it('DescribeGroups v0-5: Stable with metadata and assignment, rebalancing without, KIP-848 and missing groups Dead; authorized operations when asked (v3+)', async () => {
    for (let v = 0; v <= 5; v++) {
      for (const include of v >= 3 ? [false, true] : [false]) {
        const d = await raw.request<Any>(API.DescribeGroups, v, {
          groups: ['adm-stable', 'adm-completing', 'adm-848', 'adm-none'],
          includeAuthorizedOperations: include,
        });
        const at = `v${v} include=${include}`;
        expect(
          d.groups.map((g: Any) => [g.groupId, g.errorCode, g.groupState, g.protocolType, g.protocolData, g.members.length]),
          at,
        ).to.deep.equal([
          ['adm-stable', 0, 'Stable', 'consumer', 'range', 1],
          ['adm-completing', 0, 'CompletingRebalance', 'consumer', '', 1],
          ['adm-848', 0, 'Dead', '', '', 0],
          ['adm-none', 0, 'Dead', '', '', 0],
        ]);
        const [s, c] = [d.groups[0].members[0], d.groups[1].members[0]];
        expect([s.memberId, s.groupInstanceId, s.clientId], at).to.deep.equal([stable.memberId, v >= 4 ? 'inst-1' : null, 'raw-client']);
        expect(s.clientHost, at).to.match(/^\/.+/);
        expect([Buffer.from(s.memberMetadata).equals(SUB), Buffer.from(s.memberAssignment).equals(ASG)], at).to.deep.equal([true, true]);
        expect([c.memberMetadata.length, c.memberAssignment.length], at).to.deep.equal([0, 0]);
        // Kafka sets the operations on every answer without error, the Dead ones too.
        expect(
          d.groups.map((g: Any) => g.authorizedOperations),
          at,
        ).to.deep.equal(Array(4).fill(include ? GROUP_OPS : OMITTED));
      }
    }
  });

  it('ConsumerGroupDescribe v0: a KIP-848 group field by field; classic, missing and "" ids as Kafka answers them; deleted topics left out', async () => {
    const m = await joinConsumer(raw, 'adm-848b', ['adm-t', 'adm-gone'], { instanceId: 'i848', rackId: 'r1' });
    const describe = async (include: boolean) =>
      (
        await raw.request<Any>(API.ConsumerGroupDescribe, 0, {
          groupIds: ['adm-848b', 'adm-stable', 'adm-none', ''],
          includeAuthorizedOperations: include,
        })
      ).groups;
    const parts = (a: Any) => a.topicPartitions.map((tp: Any) => [tp.topicName, tp.partitions]).sort();
    let d = await describe(true);
    expect(d[0]).to.include({
      errorCode: 0,
      errorMessage: null,
      groupId: 'adm-848b',
      groupState: 'Stable',
      groupEpoch: 1,
      assignmentEpoch: 1,
      assignorName: 'range',
      authorizedOperations: GROUP_OPS,
    });
    const member = d[0].members[0];
    expect(member).to.include({
      memberId: m.memberId,
      instanceId: 'i848',
      rackId: 'r1',
      memberEpoch: 1,
      clientId: 'raw-client',
      subscribedTopicRegex: null,
    });
    expect([...member.subscribedTopicNames].sort()).to.deep.equal(['adm-gone', 'adm-t']);
    expect(parts(member.assignment)).to.deep.equal([
      ['adm-gone', [0]],
      ['adm-t', [0, 1]],
    ]);
    expect(parts(member.targetAssignment)).to.deep.equal([
      ['adm-gone', [0]],
      ['adm-t', [0, 1]],
    ]);
    const rows = (g: Any[]) =>
      g
        .slice(1)
        .map((x) => [
          x.groupId,
          x.errorCode,
          x.errorMessage,
          x.groupState,
          x.groupEpoch,
          x.assignmentEpoch,
          x.assignorName,
          x.members.length,
          x.authorizedOperations,
        ]);
    expect(rows(d)).to.deep.equal([
      ['adm-stable', ErrorCode.GROUP_ID_NOT_FOUND, 'Group adm-stable is not a consumer group.', '', 0, 0, '', 0, OMITTED],
      ['adm-none', ErrorCode.GROUP_ID_NOT_FOUND, 'Group adm-none not found.', '', 0, 0, '', 0, OMITTED],
      ['', ErrorCode.INVALID_GROUP_ID, null, '', 0, 0, '', 0, OMITTED],
    ]);
    expect((await describe(false))[0].authorizedOperations).to.equal(OMITTED);
    // A topic deleted under the member: Kafka leaves it out of both assignments (its name is unknown).
    const del = await raw.request<Any>(API.DeleteTopics, 4, { topicNames: ['adm-gone'], timeoutMs: 10_000 });
    expect(del.responses[0].errorCode).to.equal(0);
    d = await describe(false);
    expect(parts(d[0].members[0].assignment)).to.deep.equal([['adm-t', [0, 1]]]);
    expect(parts(d[0].members[0].targetAssignment)).to.deep.equal([['adm-t', [0, 1]]]);
  });

  it('ListGroups v0-5: every live group with its protocol type; v4 states trimmed and in any case; v5 types in any case, unknown ones matching nothing', async () => {
    const known = new Set(['adm-stable', 'adm-completing', 'adm-simple', 'adm-848']);
    const list = async (v: number, statesFilter: string[] = [], typesFilter: string[] = []) => {
      const r = await raw.request<Any>(API.ListGroups, v, { statesFilter, typesFilter });
      expect(r.errorCode).to.equal(0);
      return r.groups
        .filter((g: Any) => known.has(g.groupId))
        .map((g: Any) => [g.groupId, g.protocolType, g.groupState, g.groupType])
        .sort();
    };
    for (let v = 0; v <= 5; v++) {
      const state = (s: string) => (v >= 4 ? s : '');
      const type = (t: string) => (v >= 5 ? t : '');
      expect(await list(v), `v${v}`).to.deep.equal([
        ['adm-848', 'consumer', state('Stable'), type('consumer')],
        ['adm-completing', 'consumer', state('CompletingRebalance'), type('classic')],
        ['adm-simple', '', state('Empty'), type('classic')],
        ['adm-stable', 'consumer', state('Stable'), type('classic')],
      ]);
    }
    const ids = (rows: string[][]) => rows.map((r) => r[0]);
    expect(ids(await list(4, [' STABLE ', 'completingrebalance']))).to.deep.equal(['adm-848', 'adm-completing', 'adm-stable']);
    expect(ids(await list(4, ['Empty']))).to.deep.equal(['adm-simple']);
    expect(ids(await list(4, ['Dead']))).to.deep.equal([]);
    expect(ids(await list(5, [], ['CONSUMER']))).to.deep.equal(['adm-848']);
    expect(ids(await list(5, [], ['Classic']))).to.deep.equal(['adm-completing', 'adm-simple', 'adm-stable']);
    expect(ids(await list(5, [], ['bogus']))).to.deep.equal([]);
    expect(ids(await list(5, [], ['bogus', 'consumer']))).to.deep.equal(['adm-848']);
    expect(ids(await list(5, ['stable'], ['classic']))).to.deep.equal(['adm-stable']);
  });

  it('DeleteGroups v0-2: NON_EMPTY_GROUP while a group has members (either type), GROUP_ID_NOT_FOUND for missing and "" ids; an empty group goes with its offsets', async () => {
    for (let v = 0; v <= 2; v++) {
      const gone = `adm-del-${v}`;
      expect(await offsetCommit(raw, gone, 'adm-t', 1, 9n)).to.equal(ErrorCode.NONE);
      const r = await raw.request<Any>(API.DeleteGroups, v, { groupsNames: ['adm-stable', 'adm-848', 'adm-none', '', gone] });
      expect(
        r.results.map((x: Any) => [x.groupId, x.errorCode]),
        `v${v}`,
      ).to.deep.equal([
        ['adm-stable', ErrorCode.NON_EMPTY_GROUP],
        ['adm-848', ErrorCode.NON_EMPTY_GROUP],
        ['adm-none', ErrorCode.GROUP_ID_NOT_FOUND],
        ['', ErrorCode.GROUP_ID_NOT_FOUND],
        [gone, ErrorCode.NONE],
      ]);
      expect(await committed(raw, gone, 'adm-t', 1)).to.equal(-1n);
      const again = await raw.request<Any>(API.DeleteGroups, v, { groupsNames: [gone] });
      expect(again.results[0].errorCode).to.equal(ErrorCode.GROUP_ID_NOT_FOUND);
    }
  });

  it('OffsetDelete v0: group errors with no topics; unknown partitions first in their topic; subscribed topics refused, every other partition NONE', async () => {
    expect(await offsetDelete(raw, '', [['adm-t', [0]]])).to.deep.equal([ErrorCode.INVALID_GROUP_ID, []]);
    expect(await offsetDelete(raw, 'adm-none', [['adm-t', [0]]])).to.deep.equal([ErrorCode.GROUP_ID_NOT_FOUND, []]);
    // A live group of another protocol type may not lose offsets; once empty it may.
    const connect = await joinClassic(raw, 'adm-connect', { protocolType: 'connect' });
    await commitAs(raw, connect, 'adm-u', 0, 4n);
    expect(await offsetDelete(raw, 'adm-connect', [['adm-u', [0]]])).to.deep.equal([ErrorCode.NON_EMPTY_GROUP, []]);
    expect(
      (await raw.request<Any>(13, 3, { groupId: 'adm-connect', members: [{ memberId: connect.memberId, groupInstanceId: null }] }))
        .errorCode,
    ).to.equal(0);
    expect(await offsetDelete(raw, 'adm-connect', [['adm-u', [0]]])).to.deep.equal([0, [['adm-u', [[0, 0]]]]]);
    expect(await committed(raw, 'adm-connect', 'adm-u', 0)).to.equal(-1n);

    // A Stable consumer-protocol group subscribed (by its members' metadata) to adm-t only.
    const m = await joinClassic(raw, 'adm-od', { topics: ['adm-t'] });
    await commitAs(raw, m, 'adm-t', 0, 10n);
    await commitAs(raw, m, 'adm-u', 0, 20n);
    expect(
      await offsetDelete(raw, 'adm-od', [
        ['adm-t', [0, 9]],
        ['adm-u', [0, 1, 7]],
        ['ghost', [0]],
      ]),
    ).to.deep.equal([
      0,
      [
        [
          'adm-t',
          [
            [9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
            [0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC],
          ],
        ],
        [
          'adm-u',
          [
            [7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
            [0, 0],
            [1, 0],
          ],
        ],
        ['ghost', [[0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]]],
      ],
    ]);
    expect([await committed(raw, 'adm-od', 'adm-t', 0), await committed(raw, 'adm-od', 'adm-u', 0)]).to.deep.equal([10n, -1n]);
    // No unknown partition: the coordinator's answer as is, in request order.
    expect(
      await offsetDelete(raw, 'adm-od', [
        ['adm-u', [1, 0]],
        ['adm-t', [1]],
      ]),
    ).to.deep.equal([
      0,
      [
        [
          'adm-u',
          [
            [1, 0],
            [0, 0],
          ],
        ],
        ['adm-t', [[1, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC]]],
      ],
    ]);

    // A KIP-848 group: its members' subscribed topic names.
    expect(await offsetCommit(raw, 'adm-od848', 'adm-t', 1, 7n)).to.equal(ErrorCode.NONE);
    expect(await offsetCommit(raw, 'adm-od848', 'adm-u', 1, 8n)).to.equal(ErrorCode.NONE);
    await joinConsumer(raw, 'adm-od848', ['adm-t']);
    expect(
      await offsetDelete(raw, 'adm-od848', [
        ['adm-t', [1]],
        ['adm-u', [1]],
      ]),
    ).to.deep.equal([
      0,
      [
        ['adm-t', [[1, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC]]],
        ['adm-u', [[1, 0]]],
      ],
    ]);
    expect([await committed(raw, 'adm-od848', 'adm-t', 1), await committed(raw, 'adm-od848', 'adm-u', 1)]).to.deep.equal([7n, -1n]);
  });

  it('kafkajs 2.2.4: describeGroups, listGroups, deleteGroups errors, fetchOffsets after OffsetDelete', async () => {
    const kafka = new kafkajs.Kafka({ brokers: [b.bootstrap], clientId: 'adm-kjs', logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const d = (await admin.describeGroups(['adm-stable', 'adm-848', 'adm-none'])).groups;
      expect(d.map((g) => [g.groupId, g.state, g.protocolType, g.protocol, g.members.length])).to.deep.equal([
        ['adm-stable', 'Stable', 'consumer', 'range', 1],
        ['adm-848', 'Dead', '', '', 0],
        ['adm-none', 'Dead', '', '', 0],
      ]);
      const meta = kafkajs.AssignerProtocol.MemberMetadata.decode(d[0]!.members[0]!.memberMetadata);
      expect(meta?.topics).to.deep.equal(['adm-t']);
      const asg = kafkajs.AssignerProtocol.MemberAssignment.decode(d[0]!.members[0]!.memberAssignment);
      expect(asg?.assignment).to.deep.equal({ 'adm-t': [0, 1] });
      const listed = (await admin.listGroups()).groups.map((g) => `${g.groupId}:${g.protocolType}`);
      expect(listed).to.include.members(['adm-848:consumer', 'adm-simple:', 'adm-stable:consumer']);
      const refused = await admin.deleteGroups(['adm-stable', 'adm-848', 'adm-none']).then(
        () => null,
        (e: unknown) => e as Any,
      );
      expect(refused?.name).to.equal('KafkaJSDeleteGroupsError');
      expect(refused.groups.map((g: Any) => [g.groupId, g.errorCode])).to.deep.equal([
        ['adm-stable', ErrorCode.NON_EMPTY_GROUP],
        ['adm-848', ErrorCode.NON_EMPTY_GROUP],
        ['adm-none', ErrorCode.GROUP_ID_NOT_FOUND],
      ]);
      expect(await offsetCommit(raw, 'adm-kjs-od', 'adm-u', 0, 11n)).to.equal(ErrorCode.NONE);
      expect(await offsetCommit(raw, 'adm-kjs-od', 'adm-u', 1, 12n)).to.equal(ErrorCode.NONE);
      expect(await offsetDelete(raw, 'adm-kjs-od', [['adm-u', [0]]])).to.deep.equal([0, [['adm-u', [[0, 0]]]]]);
      const offsets = await admin.fetchOffsets({ groupId: 'adm-kjs-od', topics: ['adm-u'] });
      expect(offsets[0]?.partitions.map((p) => [p.partition, p.offset]).sort()).to.deep.equal([
        [0, '-1'],
        [1, '12'],
      ]);
    } finally {
      await admin.disconnect();
    }
  });

  it('librdkafka 2.15: describeGroups with includeAuthorizedOperations (both types), listGroups by state and type, deleteGroups reports', async () => {
    const { KafkaJS } = loadConfluent();
    const kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: [b.bootstrap], clientId: 'adm-rdk', logLevel: KafkaJS.logLevel.NOTHING } });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const { ConsumerGroupStates: St, ConsumerGroupTypes: Ty } = KafkaJS;
      let d = (await admin.describeGroups(['adm-stable', 'adm-848'], { includeAuthorizedOperations: true })).groups;
      expect(d.map((g: Any) => [g.groupId, g.error ?? null, g.state, g.type, g.partitionAssignor])).to.deep.equal([
        ['adm-stable', null, St.STABLE, Ty.CLASSIC, 'range'],
        ['adm-848', null, St.STABLE, Ty.CONSUMER, 'range'],
      ]);
      expect(d.map((g: Any) => [...g.authorizedOperations].sort((x: number, y: number) => x - y))).to.deep.equal([
        GROUP_OPS_LIST,
        GROUP_OPS_LIST,
      ]);
      expect(d[1].members[0].memberId).to.equal(kip848.memberId);
      expect(d[1].members[0].assignment.topicPartitions.map((tp: Any) => [tp.topic, tp.partition]).sort()).to.deep.equal([
        ['adm-t', 0],
        ['adm-t', 1],
      ]);
      d = (await admin.describeGroups(['adm-stable', 'adm-848'])).groups;
      expect(d.map((g: Any) => g.authorizedOperations ?? null)).to.deep.equal([null, null]);

      const known = new Set(['adm-stable', 'adm-completing', 'adm-simple', 'adm-848']);
      const list = async (options: Any) =>
        (await admin.listGroups(options)).groups
          .filter((g: Any) => known.has(g.groupId))
          .map((g: Any) => [g.groupId, g.state, g.type])
          .sort();
      expect(await list({ matchConsumerGroupTypes: [Ty.CONSUMER] })).to.deep.equal([['adm-848', St.STABLE, Ty.CONSUMER]]);
      expect(await list({ matchConsumerGroupStates: [St.STABLE], matchConsumerGroupTypes: [Ty.CLASSIC] })).to.deep.equal([
        ['adm-stable', St.STABLE, Ty.CLASSIC],
      ]);
      expect(await list({ matchConsumerGroupStates: [St.EMPTY, St.COMPLETING_REBALANCE] })).to.deep.equal([
        ['adm-completing', St.COMPLETING_REBALANCE, Ty.CLASSIC],
        ['adm-simple', St.EMPTY, Ty.CLASSIC],
      ]);

      expect(await offsetCommit(raw, 'adm-rdk-del', 'adm-t', 0, 1n)).to.equal(ErrorCode.NONE);
      const refused = await admin.deleteGroups(['adm-848', 'adm-none', 'adm-rdk-del']).then(
        () => null,
        (e: unknown) => e as Any,
      );
      expect(refused?.name).to.equal('KafkaJSDeleteGroupsError');
      expect(refused.groups.map((g: Any) => [g.groupId, g.errorCode ?? 0])).to.deep.equal([
        ['adm-848', ErrorCode.NON_EMPTY_GROUP],
        ['adm-none', ErrorCode.GROUP_ID_NOT_FOUND],
        ['adm-rdk-del', 0],
      ]);
      expect(await committed(raw, 'adm-rdk-del', 'adm-t', 0)).to.equal(-1n);
    } finally {
      await admin.disconnect();
    }
  });
});

describe('offsets pending in a transaction, under OffsetDelete and DeleteGroups (Kafka 4)', function () {
  this.timeout(120_000);

  it('are tombstoned and dropped: the COMMIT that follows brings none back, nor does a restart', async () => {
    const dataDir = tempDir();
    let b: TestBroker | undefined = await startTestBroker({}, { dataDir });
    let raw = await RawClient.connect(b.bootstrap);
    try {
      await rawCreateTopics(raw, [{ name: 'pend', partitions: 2 }]);
      // Both groups exist through a plain commit on partition 1.
      for (const g of ['pend-od', 'pend-dg']) expect(await offsetCommit(raw, g, 'pend', 1, 5n)).to.equal(ErrorCode.NONE);
      const txn = 'pend-txn';
      const pid = await initProducerId(raw, txn);
      expect(pid.errorCode).to.equal(0);
      for (const g of ['pend-od', 'pend-dg']) {
        expect(await addOffsets(raw, txn, pid, g)).to.equal(0);
        expect(await txnOffsetCommit(raw, txn, pid, g, 'pend', 0, 42n)).to.equal(0);
      }
      expect(await offsetDelete(raw, 'pend-od', [['pend', [0]]])).to.deep.equal([0, [['pend', [[0, 0]]]]]);
      const del = await raw.request<Any>(API.DeleteGroups, 2, { groupsNames: ['pend-dg'] });
      expect(del.results[0].errorCode).to.equal(0);
      expect(await endTxn(raw, txn, pid, true)).to.equal(0);
      const read = async () => [
        await committed(raw, 'pend-od', 'pend', 0),
        await committed(raw, 'pend-od', 'pend', 1),
        await committed(raw, 'pend-dg', 'pend', 0),
      ];
      expect(await read()).to.deep.equal([-1n, 5n, -1n]);
      raw.destroy();
      await b.stop();
      b = undefined; // stopped: if the restart below fails, the finally must not stop it again
      b = await startTestBroker({}, { dataDir });
      raw = await RawClient.connect(b.bootstrap);
      // (offsetFetch retries while the coordinator is still loading.)
      expect(await read()).to.deep.equal([-1n, 5n, -1n]);
    } finally {
      raw.destroy();
      await b?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
