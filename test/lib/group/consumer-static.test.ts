import { expect } from 'chai';
import type { ConsumerGroupHeartbeatRequest } from '../../../protocol/generated/consumer-group-heartbeat.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { ConsumerGroup } from '../../../lib/group/consumer-group.js';
import { testCoordinator, type TestCoordinator } from './memory-log.js';

const T = 'a'.repeat(32);
const SESSION_MS = 400;
type Hb = Awaited<ReturnType<TestCoordinator['coordinator']['consumer']['heartbeat']>>;

function hb(t: TestCoordinator, o: Partial<ConsumerGroupHeartbeatRequest>): Promise<Hb> {
  return t.coordinator.consumer.heartbeat(
    {
      groupId: 'sg',
      memberId: '',
      memberEpoch: 0,
      instanceId: null,
      rackId: null,
      rebalanceTimeoutMs: 30000,
      subscribedTopicNames: ['t'],
      subscribedTopicRegex: null,
      serverAssignor: null,
      topicPartitions: [],
      ...o,
    },
    1,
    'client',
    '/127.0.0.1',
  );
}
const group = (t: TestCoordinator) => t.coordinator.groups.get('sg') as ConsumerGroup;
const held = (t: TestCoordinator, memberId: string) => [...(group(t).members.get(memberId)?.assignedPartitions.get(T) ?? [])].sort();
const owned = (t: TestCoordinator, memberId: string) => [{ topicId: T, partitions: held(t, memberId) }];
/** A regular heartbeat of a member reporting what it holds (instance id only in full requests, as librdkafka). */
const beat = (t: TestCoordinator, memberId: string) =>
  hb(t, {
    memberId,
    memberEpoch: group(t).members.get(memberId)?.memberEpoch ?? 0,
    rebalanceTimeoutMs: -1,
    subscribedTopicNames: null,
    topicPartitions: owned(t, memberId),
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A (dynamic) and B (static, instance "ib") share the topic's 6 partitions, Stable. */
async function twoMembers(t: TestCoordinator): Promise<void> {
  await hb(t, { memberId: 'A' });
  await hb(t, { memberId: 'B', instanceId: 'ib' });
  for (let i = 0; i < 4; i++) {
    await beat(t, 'A');
    await beat(t, 'B');
  }
  expect(group(t).state).to.equal('Stable');
  expect([held(t, 'A').length, held(t, 'B').length]).to.deep.equal([3, 3]);
}

describe('KIP-848 static membership', () => {
  let t: TestCoordinator;
  beforeEach(async () => {
    t = testCoordinator({ 'group.consumer.session.timeout.ms': SESSION_MS });
    await t.coordinator.startup();
    await t.coordinator.whenLoaded();
  });
  afterEach(() => t.coordinator.shutdown());

  it('a static member leaving with epoch -2 and rejoining in time keeps its partitions; the group epoch does not move', async () => {
    await twoMembers(t);
    const epoch = group(t).groupEpoch;
    const bParts = held(t, 'B');
    const aParts = held(t, 'A');
    const left = await hb(t, {
      memberId: 'B',
      instanceId: 'ib',
      memberEpoch: -2,
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: null,
      topicPartitions: null,
    });
    expect(left).to.include({ errorCode: ErrorCode.NONE, memberEpoch: -2, memberId: 'B' });
    expect(group(t).currentPartitionEpoch(T, bParts[0] as number)).to.equal(-2); // still held
    const a = await beat(t, 'A');
    expect([a.memberEpoch, a.assignment]).to.deep.equal([epoch, null]); // A notices nothing
    const back = await hb(t, { memberId: 'B2', instanceId: 'ib' });
    expect(back).to.include({ errorCode: ErrorCode.NONE, memberId: 'B2', memberEpoch: epoch });
    expect(back.assignment?.topicPartitions).to.deep.equal([{ topicId: T, partitions: bParts }]);
    expect(group(t).groupEpoch).to.equal(epoch);
    expect(group(t).members.has('B')).to.equal(false);
    const a2 = await beat(t, 'A');
    expect([a2.memberEpoch, a2.assignment, held(t, 'A')]).to.deep.equal([epoch, null, aParts]);
    expect(group(t).state).to.equal('Stable');
    // The replaced member is fenced by its instance id; the replacement is durable.
    const old = await hb(t, {
      memberId: 'B',
      instanceId: 'ib',
      memberEpoch: epoch,
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: null,
      topicPartitions: null,
    });
    expect(old.errorCode).to.equal(ErrorCode.FENCED_INSTANCE_ID);
    t.coordinator.shutdown();
    const t2 = testCoordinator({ 'group.consumer.session.timeout.ms': SESSION_MS }, { logs: t.logs });
    await t2.coordinator.startup();
    await t2.coordinator.whenLoaded();
    const g2 = t2.coordinator.groups.get('sg') as ConsumerGroup;
    expect([...g2.members.keys()].sort()).to.deep.equal(['A', 'B2']);
    expect([...(g2.targetAssignment.get('B2')?.get(T) ?? [])].sort()).to.deep.equal(bParts);
    t2.coordinator.shutdown();
  });

  it('a static member that left and does not come back is removed after the session timeout; the others get its partitions', async () => {
    await twoMembers(t);
    const epoch = group(t).groupEpoch;
    await hb(t, {
      memberId: 'B',
      instanceId: 'ib',
      memberEpoch: -2,
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: null,
      topicPartitions: null,
    });
    for (let waited = 0; group(t).members.has('B') && waited < SESSION_MS * 3; waited += 100) {
      await sleep(100);
      await beat(t, 'A');
    }
    expect(group(t).members.has('B')).to.equal(false);
    expect(group(t).groupEpoch).to.equal(epoch + 1);
    await beat(t, 'A');
    expect(held(t, 'A')).to.deep.equal([0, 1, 2, 3, 4, 5]);
    // Coming back now, it is a new member: a rebalance.
    const back = await hb(t, { memberId: 'B3', instanceId: 'ib' });
    expect(back.errorCode).to.equal(ErrorCode.NONE);
    expect(group(t).groupEpoch).to.equal(epoch + 2);
  });

  it('a static member that stops heartbeating without leaving is removed after the session timeout; its instance id is held until then', async () => {
    await twoMembers(t);
    const epoch = group(t).groupEpoch;
    const early = await hb(t, { memberId: 'B4', instanceId: 'ib' });
    expect(early.errorCode).to.equal(ErrorCode.UNRELEASED_INSTANCE_ID);
    for (let waited = 0; group(t).members.has('B') && waited < SESSION_MS * 3; waited += 100) {
      await sleep(100);
      await beat(t, 'A');
    }
    expect(group(t).members.has('B')).to.equal(false);
    expect(group(t).groupEpoch).to.equal(epoch + 1);
    await beat(t, 'A');
    expect(held(t, 'A')).to.deep.equal([0, 1, 2, 3, 4, 5]);
  });

  it('a static member rejoining with another subscription takes over but triggers a rebalance', async () => {
    await twoMembers(t);
    const epoch = group(t).groupEpoch;
    await hb(t, {
      memberId: 'B',
      instanceId: 'ib',
      memberEpoch: -2,
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: null,
      topicPartitions: null,
    });
    const back = await hb(t, { memberId: 'B5', instanceId: 'ib', subscribedTopicNames: ['t', 'missing'] });
    expect(back.errorCode).to.equal(ErrorCode.NONE);
    expect(group(t).groupEpoch).to.equal(epoch + 1);
  });

  it('a static member leaving while revoking releases the partitions it was revoking', async () => {
    await hb(t, { memberId: 'B', instanceId: 'ib' });
    expect(held(t, 'B')).to.have.length(6);
    await hb(t, { memberId: 'A' });
    await beat(t, 'B'); // asked to revoke three
    expect(group(t).members.get('B')?.partitionsPendingRevocation.get(T)?.size).to.equal(3);
    await hb(t, {
      memberId: 'B',
      instanceId: 'ib',
      memberEpoch: -2,
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: null,
      topicPartitions: null,
    });
    await beat(t, 'A');
    expect(held(t, 'A')).to.have.length(3); // the released ones, at once
    expect(held(t, 'B')).to.have.length(3); // the kept ones, still B's
  });

  it('leave with an unknown or stale instance id is refused as Kafka does', async () => {
    await twoMembers(t);
    const unknown = await hb(t, {
      memberId: 'B',
      instanceId: 'nope',
      memberEpoch: -2,
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: null,
      topicPartitions: null,
    });
    expect(unknown.errorCode).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
    const fenced = await hb(t, {
      memberId: 'Z',
      instanceId: 'ib',
      memberEpoch: -2,
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: null,
      topicPartitions: null,
    });
    expect(fenced.errorCode).to.equal(ErrorCode.FENCED_INSTANCE_ID);
    expect(group(t).members.get('B')?.memberEpoch).to.equal(group(t).groupEpoch);
  });
});
