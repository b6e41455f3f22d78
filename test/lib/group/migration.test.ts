/**
 * Online migration between the group protocols (Kafka 4.0's GroupMetadataManager): a classic group is
 * converted when a consumer-protocol member joins, its classic members keep being served through the
 * consumer group, and it is converted back when the last consumer-protocol member leaves; each value of
 * group.consumer.migration.policy; the records written and replayed.
 */
import { expect } from 'chai';
import { Writer } from '../../../protocol/codec/writer.js';
import {
  type ConsumerProtocolSubscription,
  ConsumerProtocolSubscriptionSchema,
} from '../../../protocol/generated/data/consumer-protocol-subscription.js';
import type { ConsumerGroupHeartbeatRequest } from '../../../protocol/generated/consumer-group-heartbeat.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { RecordBatch } from '../../../protocol/records/index.js';
import { BrokerConfig, ConfigError } from '../../../lib/config.js';
import type { JoinGroupParams } from '../../../lib/group/classic-coordinator.js';
import { ClassicGroup, ClassicGroupState } from '../../../lib/group/classic-group.js';
import { ConsumerGroup, MemberState } from '../../../lib/group/consumer-group.js';
import {
  classicGroupFromConsumer,
  consumerGroupFromClassic,
  consumerGroupRecords,
  decodeAssignment,
  encodeAssignment,
  MigrationError,
} from '../../../lib/group/migration.js';
import { commitOffsets } from '../../../lib/group/offset-manager.js';
import { decodeCoordinatorRecord, type DecodedRecord } from '../../../lib/group/records.js';
import { testCoordinator, type TestCoordinator } from './memory-log.js';

const T = 'a'.repeat(32);
const G = 'mg';

/** A consumer's JoinGroup metadata: ConsumerProtocolSubscription with its version header. */
export function subscription(topics: string[], owned: number[] = [], version = 1, rackId: string | null = null): Buffer {
  const m: ConsumerProtocolSubscription = {
    topics,
    userData: null,
    ownedPartitions: owned.length === 0 ? [] : [{ topic: 't', partitions: owned }],
    generationId: -1,
    rackId,
  };
  const w = Writer.alloc(2 + ConsumerProtocolSubscriptionSchema.size(m, version));
  w.int16(version);
  ConsumerProtocolSubscriptionSchema.write(w, m, version);
  return w.done();
}
const assignment = (parts: number[]) => encodeAssignment(parts.length === 0 ? [] : [{ topic: 't', partitions: parts }], 1);
const assigned = (buf: Buffer) =>
  decodeAssignment(buf)
    .assignedPartitions.flatMap((tp) => tp.partitions)
    .sort((a, b) => a - b);

function join(t: TestCoordinator, o: Partial<JoinGroupParams> = {}) {
  return t.coordinator.classic.joinGroup({
    groupId: G,
    memberId: '',
    groupInstanceId: null,
    requireKnownMemberId: false,
    supportSkippingAssignment: false,
    clientId: 'classic',
    clientHost: '/127.0.0.1',
    rebalanceTimeoutMs: 10_000,
    sessionTimeoutMs: 10_000,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: subscription(['t']) }],
    reason: null,
    ...o,
  });
}
const sync = (t: TestCoordinator, memberId: string, generationId: number, assignments: { memberId: string; assignment: Buffer }[] = []) =>
  t.coordinator.classic.syncGroup({
    groupId: G,
    generationId,
    memberId,
    groupInstanceId: null,
    protocolType: 'consumer',
    protocolName: 'range',
    assignments,
  });
const hb = (t: TestCoordinator, o: Partial<ConsumerGroupHeartbeatRequest>) =>
  t.coordinator.consumer.heartbeat(
    {
      groupId: G,
      memberId: '',
      memberEpoch: 0,
      instanceId: null,
      rackId: null,
      rebalanceTimeoutMs: 30_000,
      subscribedTopicNames: ['t'],
      subscribedTopicRegex: null,
      serverAssignor: null,
      topicPartitions: [],
      ...o,
    },
    1,
    'kip848',
    '/127.0.0.1',
  );
const group = (t: TestCoordinator) => t.coordinator.groups.get(G) as ClassicGroup | ConsumerGroup;
const consumerGroup = (t: TestCoordinator) => group(t) as ConsumerGroup;
/** The decoded records of the group's offsets partition, from `from` on. */
function written(t: TestCoordinator, from = 0): DecodedRecord[] {
  const log = t.logs[t.coordinator.partitionFor(G)];
  return (log?.batches ?? [])
    .flatMap((b) =>
      RecordBatch.at(b)
        .records({ maxOutput: 1 << 20 })
        .map((r) => decodeCoordinatorRecord(r.key as Buffer, r.value)),
    )
    .slice(from);
}
const recordCount = (t: TestCoordinator) => written(t).length;

/** A Stable classic group of two members, "a" holding 0-2 and "b" 3-5. */
async function classicGroupOfTwo(t: TestCoordinator): Promise<{ a: string; b: string; generation: number }> {
  const [ra, rb] = await Promise.all([join(t, { clientId: 'a' }), join(t, { clientId: 'b' })]);
  const leader = ra.leaderId === ra.memberId ? ra : rb;
  const follower = leader === ra ? rb : ra;
  const parts = new Map([
    [ra.memberId, [0, 1, 2]],
    [rb.memberId, [3, 4, 5]],
  ]);
  const fs = sync(t, follower.memberId, 1);
  await sync(
    t,
    leader.memberId,
    1,
    [...parts].map(([memberId, p]) => ({ memberId, assignment: assignment(p) })),
  );
  await fs;
  expect((group(t) as ClassicGroup).state).to.equal(ClassicGroupState.STABLE);
  return { a: ra.memberId, b: rb.memberId, generation: 1 };
}

/** A classic member's rejoin and sync inside the consumer group; what it holds afterwards. */
async function rejoin(t: TestCoordinator, memberId: string, owned: number[]) {
  const j = await join(t, { memberId, protocols: [{ name: 'range', metadata: subscription(['t'], owned) }] });
  expect(j, `rejoin of ${memberId}`).to.include({
    errorCode: ErrorCode.NONE,
    memberId,
    protocolType: 'consumer',
    protocolName: 'range',
    leaderId: '',
    skipAssignment: false,
  });
  expect(j.members).to.deep.equal([]);
  const s = await sync(t, memberId, j.generationId);
  expect(s.errorCode, `sync of ${memberId}`).to.equal(ErrorCode.NONE);
  return { generation: j.generationId, parts: assigned(s.assignment) };
}

describe('online migration between the classic and the consumer group protocols', () => {
  let t: TestCoordinator;
  const start = async (config: Record<string, string | number> = {}) => {
    t = testCoordinator({ 'group.min.session.timeout.ms': 10, ...config });
    await t.coordinator.startup();
    await t.coordinator.whenLoaded();
  };
  afterEach(() => {
    t.coordinator.shutdown();
    t.purgatory.expireAll();
  });

  it('conversions: classic → consumer keeps subscriptions, assignments, classic metadata at epoch = generation; consumer → classic encodes targets at the subscription version', async () => {
    await start();
    const { a, b } = await classicGroupOfTwo(t);
    const classic = group(t) as ClassicGroup;
    const cg = consumerGroupFromClassic(classic, (name) => t.topics.get(name)?.topicId);
    expect([cg.groupEpoch, cg.assignmentEpoch, cg.state]).to.deep.equal([1, 1, 'Stable']);
    const ma = cg.members.get(a);
    expect(ma).to.include({ memberEpoch: 1, previousMemberEpoch: 1, state: MemberState.STABLE, clientId: 'a', rebalanceTimeoutMs: 10_000 });
    expect(ma?.subscribedTopicNames).to.deep.equal(['t']);
    expect([...(ma?.assignedPartitions.get(T) ?? [])]).to.deep.equal([0, 1, 2]);
    expect([...(cg.targetAssignment.get(b)?.get(T) ?? [])]).to.deep.equal([3, 4, 5]);
    expect(ma?.classicMemberMetadata?.sessionTimeoutMs).to.equal(10_000);
    expect(ma?.classicMemberMetadata?.supportedProtocols.map((p) => p.name)).to.deep.equal(['range']);
    expect(cg.currentPartitionEpoch(T, 4)).to.equal(1);
    // Kafka's createConsumerGroupRecords order: members, epoch, targets, target epoch, current assignments.
    const kinds = consumerGroupRecords(cg).map((r) => decodeCoordinatorRecord(r.key, r.value).type);
    expect(kinds).to.deep.equal([
      'consumer-member',
      'consumer-member',
      'consumer-group',
      'consumer-target-member',
      'consumer-target-member',
      'consumer-target-metadata',
      'consumer-current-member',
      'consumer-current-member',
    ]);
    const m = decodeCoordinatorRecord(consumerGroupRecords(cg)[0]!.key, consumerGroupRecords(cg)[0]!.value);
    expect(m).to.have.nested.property('value.classicMemberMetadata.sessionTimeoutMs', 10_000);

    // And back, without member b (as if it were the consumer-protocol member leaving).
    cg.targetAssignment.set(a, new Map([[T, new Set([0, 1, 2, 5])]]));
    const back = classicGroupFromConsumer(cg, b, Date.now, (id) => (id === T ? 't' : undefined));
    expect([back.generationId, back.state, back.protocolType, back.protocolName, back.size, back.leaderId]).to.deep.equal([
      1,
      'Stable',
      'consumer',
      'range',
      1,
      a,
    ]);
    const enc = back.members.get(a)?.assignment as Buffer;
    expect(enc.readInt16BE(0)).to.equal(1); // the version of a's subscription
    expect(assigned(enc)).to.deep.equal([0, 1, 2, 5]);
  });

  it('upgrade: a consumer-protocol member joining a live classic group converts it; records tombstone the classic group and create the consumer group; a reload finds the same', async () => {
    await start();
    const { a, b } = await classicGroupOfTwo(t);
    const before = recordCount(t);
    const c = await hb(t, { memberId: 'C' });
    expect(c).to.include({ errorCode: ErrorCode.NONE, memberId: 'C', memberEpoch: 2 });
    expect(c.assignment?.topicPartitions).to.deep.equal([]); // everything is still held by a and b
    expect(group(t).type).to.equal('consumer');
    expect([consumerGroup(t).groupEpoch, consumerGroup(t).assignmentEpoch]).to.deep.equal([2, 2]);
    const recs = written(t, before);
    expect(recs[0]).to.deep.equal({ type: 'group', group: G, value: null });
    expect(recs.slice(1, 9).map((r) => r.type)).to.deep.equal([
      'consumer-member',
      'consumer-member',
      'consumer-group',
      'consumer-target-member',
      'consumer-target-member',
      'consumer-target-metadata',
      'consumer-current-member',
      'consumer-current-member',
    ]);
    expect(recs.slice(1, 9).filter((r) => r.type === 'consumer-group')).to.deep.equal([{ type: 'consumer-group', group: G, epoch: 1 }]);
    expect(recs.slice(9).map((r) => r.type)).to.include.members(['consumer-member', 'consumer-group', 'consumer-target-metadata']);
    // The classic members must rejoin: the group epoch moved past theirs.
    expect(t.coordinator.classic.heartbeat(G, a, null, 1)).to.equal(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(t.coordinator.classic.heartbeat(G, b, null, 2)).to.equal(ErrorCode.ILLEGAL_GENERATION);

    t.coordinator.shutdown();
    const again = testCoordinator({}, { logs: t.logs });
    await again.coordinator.startup();
    await again.coordinator.whenLoaded();
    const g = again.coordinator.groups.get(G) as ConsumerGroup;
    expect(g.type).to.equal('consumer');
    expect([...g.members.keys()].sort()).to.deep.equal([a, b, 'C'].sort());
    expect(g.members.get(a)?.classicMemberMetadata?.supportedProtocols[0]?.name).to.equal('range');
    expect(g.members.get('C')?.classicMemberMetadata).to.equal(null);
    expect([...(g.members.get(b)?.assignedPartitions.get(T) ?? [])]).to.deep.equal([3, 4, 5]);
    again.coordinator.shutdown();
  });

  it('classic members inside the consumer group: JoinGroup reconciles them (revoke first), SyncGroup answers their partitions, Heartbeat asks them back, commits check their generation', async () => {
    await start();
    const { a, b } = await classicGroupOfTwo(t);
    await hb(t, { memberId: 'C' });
    // a rejoins still owning 0-2 (cooperative): it keeps two, must revoke one, stays at its epoch.
    const a1 = await rejoin(t, a, [0, 1, 2]);
    expect(a1.generation).to.equal(1);
    expect(a1.parts).to.have.length(2);
    expect(consumerGroup(t).members.get(a)?.state).to.equal(MemberState.UNREVOKED_PARTITIONS);
    expect(t.coordinator.classic.heartbeat(G, a, null, 1)).to.equal(ErrorCode.REBALANCE_IN_PROGRESS);
    // It commits with its generation (OffsetCommit v8, as librdkafka's classic consumer does).
    const commit = (gen: number) =>
      commitOffsets(
        t.coordinator,
        {
          groupId: G,
          memberId: a,
          groupInstanceId: null,
          generationIdOrMemberEpoch: gen,
          retentionTimeMs: -1,
          apiVersion: 8,
          topics: [
            {
              name: 't',
              partitions: [
                { partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, commitTimestamp: -1, committedMetadata: '' },
              ],
            },
          ],
        },
        () => true,
      );
    expect((await commit(1))[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.NONE);
    expect((await commit(2))[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.ILLEGAL_GENERATION);
    // Once it no longer owns the revoked partition it moves to the group epoch.
    const a2 = await rejoin(t, a, a1.parts);
    expect(a2).to.deep.equal({ generation: 2, parts: a1.parts });
    expect(t.coordinator.classic.heartbeat(G, a, null, 2)).to.equal(ErrorCode.NONE);
    // b is eager: it gives up everything before each rejoin; told what it keeps, then moved to the epoch.
    const b1 = await rejoin(t, b, []);
    expect(b1.generation).to.equal(1);
    expect(b1.parts).to.have.length(2);
    expect(consumerGroup(t).currentPartitionEpoch(T, [3, 4, 5].find((p) => !b1.parts.includes(p)) as number)).to.equal(1); // not released yet
    const b2 = await rejoin(t, b, []);
    expect(b2).to.deep.equal({ generation: 2, parts: b1.parts });
    // C gets what a and b released, and nothing twice.
    const c = await hb(t, { memberId: 'C', memberEpoch: 2, rebalanceTimeoutMs: -1, subscribedTopicNames: null, topicPartitions: [] });
    const cParts = c.assignment?.topicPartitions.flatMap((tp) => tp.partitions) ?? [];
    expect(cParts).to.have.length(2);
    expect([...a2.parts, ...b2.parts, ...cParts].sort()).to.deep.equal([0, 1, 2, 3, 4, 5]);
    expect(consumerGroup(t).state).to.equal('Stable');
    // Errors as Kafka's: unknown member, stale generation, other protocol name, a consumer-protocol member.
    expect((await sync(t, 'nobody', 2)).errorCode).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await sync(t, a, 1)).errorCode).to.equal(ErrorCode.ILLEGAL_GENERATION);
    expect(
      (
        await t.coordinator.classic.syncGroup({
          groupId: G,
          generationId: 2,
          memberId: a,
          groupInstanceId: null,
          protocolType: 'consumer',
          protocolName: 'roundrobin',
          assignments: [],
        })
      ).errorCode,
    ).to.equal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect((await sync(t, 'C', 2)).errorCode).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await join(t, { protocols: [{ name: 'roundrobin', metadata: subscription(['t']) }] })).errorCode).to.equal(
      ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    );
    // A new classic member (JoinGroup v4+) is given its id first.
    const fresh = await join(t, { requireKnownMemberId: true });
    expect(fresh.errorCode).to.equal(ErrorCode.MEMBER_ID_REQUIRED);
    expect(fresh.memberId).to.have.length(22);
    expect(consumerGroup(t).members.has(fresh.memberId)).to.equal(false);
  });

  it('LeaveGroup of a classic member frees its partitions and moves the group epoch; the others are unknown to it', async () => {
    await start();
    const { a, b } = await classicGroupOfTwo(t);
    await hb(t, { memberId: 'C' });
    const epoch = consumerGroup(t).groupEpoch;
    const g = consumerGroup(t);
    expect(
      await t.coordinator.inConsumerGroup.leave(g, [
        { memberId: a, groupInstanceId: null, reason: null },
        { memberId: 'C', groupInstanceId: null, reason: null },
        { memberId: 'x', groupInstanceId: null, reason: null },
      ]),
    ).to.deep.equal([
      ErrorCode.NONE,
      ErrorCode.UNKNOWN_MEMBER_ID, // C uses the consumer protocol
      ErrorCode.UNKNOWN_MEMBER_ID,
    ]);
    expect([...g.members.keys()].sort()).to.deep.equal([b, 'C'].sort());
    expect(g.groupEpoch).to.equal(epoch + 1);
    expect(g.currentPartitionEpoch(T, 0)).to.equal(-1);
    expect(group(t).type).to.equal('consumer'); // a classic member leaving never downgrades
  });

  it('downgrade: the last consumer-protocol member leaving turns the group back into a classic group at generation = group epoch, rebalancing; records and reload agree', async () => {
    await start();
    const { a, b } = await classicGroupOfTwo(t);
    await hb(t, { memberId: 'C' });
    const a1 = await rejoin(t, a, [0, 1, 2]);
    await rejoin(t, a, a1.parts);
    await rejoin(t, b, []);
    const b1 = await rejoin(t, b, []);
    await hb(t, { memberId: 'C', memberEpoch: 2, rebalanceTimeoutMs: -1, subscribedTopicNames: null, topicPartitions: [] });
    expect(consumerGroup(t).state).to.equal('Stable');
    const epoch = consumerGroup(t).groupEpoch;
    const before = recordCount(t);
    const left = await hb(t, { memberId: 'C', memberEpoch: -1, rebalanceTimeoutMs: -1, subscribedTopicNames: null, topicPartitions: null });
    expect(left).to.include({ errorCode: ErrorCode.NONE, memberEpoch: -1 });
    const classic = group(t) as ClassicGroup;
    expect(classic.type).to.equal('classic');
    expect([classic.generationId, classic.state, classic.protocolType, classic.protocolName, classic.size]).to.deep.equal([
      epoch,
      ClassicGroupState.PREPARING_REBALANCE,
      'consumer',
      'range',
      2,
    ]);
    expect(assigned(classic.members.get(b)?.assignment as Buffer)).to.deep.equal(b1.parts);
    const recs = written(t, before);
    expect(recs.map((r) => r.type)).to.deep.equal([
      'consumer-current-member',
      'consumer-current-member',
      'consumer-current-member',
      'consumer-target-member',
      'consumer-target-member',
      'consumer-target-member',
      'consumer-target-metadata',
      'consumer-member',
      'consumer-member',
      'consumer-member',
      'consumer-partition-metadata',
      'consumer-group',
      'group',
    ]);
    expect(recs.slice(0, -1).every((r) => !('value' in r) || r.value === null)).to.equal(true);
    expect(recs.find((r) => r.type === 'consumer-group')).to.deep.equal({ type: 'consumer-group', group: G, epoch: null });
    // The classic members learn of the rebalance, rejoin, and the group completes a classic generation.
    expect(t.coordinator.classic.heartbeat(G, a, null, epoch)).to.equal(ErrorCode.REBALANCE_IN_PROGRESS);
    const [ja, jb] = await Promise.all([join(t, { memberId: a }), join(t, { memberId: b })]);
    expect([ja.generationId, jb.generationId]).to.deep.equal([epoch + 1, epoch + 1]);
    expect([ja, jb].filter((j) => j.leaderId === j.memberId)).to.have.length(1);

    t.coordinator.shutdown();
    const again = testCoordinator({}, { logs: t.logs });
    await again.coordinator.startup();
    await again.coordinator.whenLoaded();
    const g = again.coordinator.groups.get(G) as ClassicGroup;
    expect([g.type, g.size]).to.deep.equal(['classic', 2]);
    again.coordinator.shutdown();
  });

  it('sessions of classic members in a consumer group run on their own timeout; a member told to rejoin that does not is fenced after its rebalance timeout', async () => {
    await start({ 'group.consumer.session.timeout.ms': 60_000 });
    const [ra, rb] = await Promise.all([
      join(t, { sessionTimeoutMs: 150, rebalanceTimeoutMs: 10_000 }),
      join(t, { sessionTimeoutMs: 60_000, rebalanceTimeoutMs: 150 }),
    ]);
    await Promise.all([
      sync(t, ra.memberId, 1, [
        { memberId: ra.memberId, assignment: assignment([0, 1, 2]) },
        { memberId: rb.memberId, assignment: assignment([3, 4, 5]) },
      ]),
      sync(t, rb.memberId, 1, [
        { memberId: ra.memberId, assignment: assignment([0, 1, 2]) },
        { memberId: rb.memberId, assignment: assignment([3, 4, 5]) },
      ]),
    ]);
    await hb(t, { memberId: 'C' });
    const g = consumerGroup(t);
    // a rejoins and syncs (its session restarts on its own 150 ms), then goes silent.
    const a1 = await join(t, {
      memberId: ra.memberId,
      sessionTimeoutMs: 150,
      rebalanceTimeoutMs: 10_000,
      protocols: [{ name: 'range', metadata: subscription(['t'], [0, 1, 2]) }],
    });
    expect((await sync(t, ra.memberId, a1.generationId)).errorCode).to.equal(ErrorCode.NONE);
    // b is told to rejoin and never does: fenced after its 150 ms rebalance timeout, its session notwithstanding.
    expect(t.coordinator.classic.heartbeat(G, rb.memberId, null, 1)).to.equal(ErrorCode.REBALANCE_IN_PROGRESS);
    await new Promise((r) => setTimeout(r, 400));
    expect(g.members.has(ra.memberId), 'a, silent past its 150 ms session').to.equal(false);
    expect(g.members.has(rb.memberId), 'b, silent past its rebalance timeout').to.equal(false);
    expect(g.members.has('C')).to.equal(true);
  });

  it('a static classic member is replaced at once by the same instance restarting with the consumer protocol (no UNRELEASED_INSTANCE_ID)', async () => {
    await start();
    const [ra, rb] = await Promise.all([join(t, { groupInstanceId: 'i-a' }), join(t, { groupInstanceId: 'i-b' })]);
    const parts = [
      { memberId: ra.memberId, assignment: assignment([0, 1, 2]) },
      { memberId: rb.memberId, assignment: assignment([3, 4, 5]) },
    ];
    await Promise.all([sync(t, ra.memberId, 1, parts), sync(t, rb.memberId, 1, parts)]);
    const c = await hb(t, { memberId: 'A2', instanceId: 'i-a' });
    expect(c).to.include({ errorCode: ErrorCode.NONE, memberId: 'A2' });
    const g = consumerGroup(t);
    expect(g.members.has(ra.memberId)).to.equal(false);
    expect(g.staticMember('i-a')?.memberId).to.equal('A2');
    expect(g.staticMember('i-a')?.classicMemberMetadata).to.equal(null);
    expect(c.assignment?.topicPartitions.flatMap((tp) => tp.partitions)).to.deep.equal([0, 1, 2]); // it takes over its partitions
    expect(t.coordinator.classic.heartbeat(G, ra.memberId, 'i-a', 1)).to.equal(ErrorCode.FENCED_INSTANCE_ID);
  });

  for (const policy of ['bidirectional', 'upgrade'] as const) {
    it(`a classic static member replacing the last consumer-protocol member downgrades the group at once, without a rebalance, when the policy allows it (${policy})`, async () => {
      await start({ 'group.consumer.migration.policy': policy });
      const d = await hb(t, { memberId: 'D', instanceId: 'i-d' });
      const j = await join(t, { clientId: 'j' });
      expect(j.errorCode).to.equal(ErrorCode.NONE);
      await hb(t, {
        memberId: 'D',
        instanceId: 'i-d',
        memberEpoch: d.memberEpoch,
        rebalanceTimeoutMs: -1,
        subscribedTopicNames: null,
        topicPartitions: d.assignment?.topicPartitions ?? [],
      });
      const target = [...(consumerGroup(t).targetAssignment.get('D')?.get(T) ?? [])].sort((a, b) => a - b);
      expect(target).to.have.length(3);
      const epoch = consumerGroup(t).groupEpoch;
      // The same instance restarts with the classic protocol.
      const r = await join(t, { groupInstanceId: 'i-d', clientId: 'd-classic' });
      expect(r).to.include({ errorCode: ErrorCode.NONE, generationId: epoch, protocolName: 'range', leaderId: '' });
      expect(r.memberId).to.not.equal('D');
      if (policy === 'bidirectional') {
        const g = group(t) as ClassicGroup;
        expect([g.type, g.state, g.generationId, g.size]).to.deep.equal(['classic', ClassicGroupState.STABLE, epoch, 2]);
        expect(g.staticMembers.get('i-d')).to.equal(r.memberId);
        expect(assigned(g.members.get(r.memberId)?.assignment as Buffer)).to.deep.equal(target);
        const s = await sync(t, r.memberId, epoch);
        expect(assigned(s.assignment)).to.deep.equal(target);
        expect(written(t).at(-1)?.type).to.equal('group');
      } else {
        const g = consumerGroup(t);
        expect([g.type, g.members.size, g.numClassicProtocolMembers()]).to.deep.equal(['consumer', 2, 2]);
        expect([...(g.targetAssignment.get(r.memberId)?.get(T) ?? [])].sort((a, b) => a - b)).to.deep.equal(target);
      }
    });
  }

  it('refuses upgrades Kafka refuses: another protocol type, more members than group.consumer.max.size, an assignment carrying user data (KAFKA-18134) or malformed', async () => {
    await start({ 'group.consumer.max.size': 1 });
    await classicGroupOfTwo(t);
    expect(await hb(t, { memberId: 'C' })).to.include({
      errorCode: ErrorCode.GROUP_ID_NOT_FOUND,
      errorMessage: `Group ${G} is not a consumer group`,
    });
    expect(group(t).type).to.equal('classic');
    t.coordinator.shutdown();
    await start();
    const r = await join(t, { protocolType: 'connect', protocols: [{ name: 'v1', metadata: Buffer.from('x') }] });
    await sync(t, r.memberId, 1, []);
    expect((await hb(t, { memberId: 'C' })).errorCode).to.equal(ErrorCode.GROUP_ID_NOT_FOUND);
    t.coordinator.shutdown();
    await start();
    const s = await join(t);
    await sync(t, s.memberId, 1, [
      { memberId: s.memberId, assignment: Buffer.from([0, 0, 0, 0, 0, 1, 0, 1, 't'.charCodeAt(0), 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 9]) },
    ]);
    expect(await hb(t, { memberId: 'C' })).to.include({
      errorCode: ErrorCode.GROUP_ID_NOT_FOUND,
      errorMessage: `Cannot upgrade classic group ${G} to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.`,
    });
    const count = recordCount(t);
    await sync(t, s.memberId, 1, []);
    (group(t) as ClassicGroup).members.get(s.memberId)!.assignment = Buffer.from([0, 1, 0]);
    expect(await hb(t, { memberId: 'C' })).to.include({
      errorCode: ErrorCode.GROUP_ID_NOT_FOUND,
      errorMessage: `Cannot upgrade classic group ${G} to consumer group because the embedded consumer protocol is malformed.`,
    });
    expect([group(t).type, recordCount(t)]).to.deep.equal(['classic', count]); // nothing written, nothing converted
  });

  for (const policy of ['disabled', 'upgrade', 'downgrade', 'bidirectional'] as const) {
    it(`group.consumer.migration.policy=${policy}`, async () => {
      await start({ 'group.consumer.migration.policy': policy.toUpperCase() });
      const upgrades = policy === 'upgrade' || policy === 'bidirectional';
      const downgrades = policy === 'downgrade' || policy === 'bidirectional';
      // Upgrade: a classic group meets a consumer-protocol member.
      await classicGroupOfTwo(t);
      const c = await hb(t, { memberId: 'C' });
      if (upgrades) expect([c.errorCode, group(t).type]).to.deep.equal([ErrorCode.NONE, 'consumer']);
      else
        expect([c.errorCode, c.errorMessage, group(t).type]).to.deep.equal([
          ErrorCode.GROUP_ID_NOT_FOUND,
          `Group ${G} is not a consumer group`,
          'classic',
        ]);
      // Downgrade: a consumer group (fresh id) with classic members loses its only consumer-protocol member.
      const H = 'mh';
      await t.coordinator.consumer.heartbeat(
        {
          groupId: H,
          memberId: 'D',
          memberEpoch: 0,
          instanceId: null,
          rackId: null,
          rebalanceTimeoutMs: 30_000,
          subscribedTopicNames: ['t'],
          subscribedTopicRegex: null,
          serverAssignor: null,
          topicPartitions: [],
        },
        1,
        'kip848',
        '/h',
      );
      const j = await join(t, { groupId: H });
      expect(j.errorCode, 'a classic member may join a consumer group under any policy').to.equal(ErrorCode.NONE);
      await t.coordinator.consumer.heartbeat(
        {
          groupId: H,
          memberId: 'D',
          memberEpoch: -1,
          instanceId: null,
          rackId: null,
          rebalanceTimeoutMs: -1,
          subscribedTopicNames: null,
          subscribedTopicRegex: null,
          serverAssignor: null,
          topicPartitions: null,
        },
        1,
        'kip848',
        '/h',
      );
      const h = t.coordinator.groups.get(H);
      expect(h?.type).to.equal(downgrades ? 'classic' : 'consumer');
      if (!downgrades) {
        // The classic member stays served by the consumer group, now alone with everything.
        const hg = h as ConsumerGroup;
        expect([...hg.members.keys()]).to.deep.equal([j.memberId]);
        expect(t.coordinator.classic.heartbeat(H, j.memberId, null, j.generationId)).to.equal(ErrorCode.REBALANCE_IN_PROGRESS);
      }
    });
  }

  it('the policy is validated as Kafka does (case-insensitive, one of four values)', () => {
    expect(new BrokerConfig({ overrides: {} }).string('group.consumer.migration.policy')).to.equal('bidirectional');
    expect(() => new BrokerConfig({ overrides: { 'group.consumer.migration.policy': 'sideways' } })).to.throw(
      ConfigError,
      /group.consumer.migration.policy/,
    );
    expect(new MigrationError(ErrorCode.GROUP_ID_NOT_FOUND, 'm').errorCode).to.equal(ErrorCode.GROUP_ID_NOT_FOUND);
  });
});
