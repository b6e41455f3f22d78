import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { JoinGroupParams } from '../../../lib/group/classic-coordinator.js';
import { ClassicGroupState } from '../../../lib/group/classic-group.js';
import type { ClassicGroup } from '../../../lib/group/classic-group.js';
import { testCoordinator, type TestCoordinator } from './memory-log.js';

const meta = Buffer.from('subscription');

function join(t: TestCoordinator, o: Partial<JoinGroupParams> = {}) {
  return t.coordinator.classic.joinGroup({
    groupId: 'g',
    memberId: '',
    groupInstanceId: null,
    requireKnownMemberId: false,
    supportSkippingAssignment: false,
    clientId: 'c',
    clientHost: '/127.0.0.1',
    rebalanceTimeoutMs: 10_000,
    sessionTimeoutMs: 10_000,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: meta }],
    reason: null,
    ...o,
  });
}

function sync(t: TestCoordinator, memberId: string, generationId: number, assignments: { memberId: string; assignment: Buffer }[] = []) {
  return t.coordinator.classic.syncGroup({
    groupId: 'g',
    generationId,
    memberId,
    groupInstanceId: null,
    protocolType: null,
    protocolName: null,
    assignments,
  });
}

const group = (t: TestCoordinator) => t.coordinator.groups.get('g') as ClassicGroup;

describe('classic group coordinator', () => {
  let t: TestCoordinator;
  beforeEach(async () => {
    t = testCoordinator({ 'group.min.session.timeout.ms': 10 });
    await t.coordinator.startup();
    await t.coordinator.whenLoaded();
  });
  afterEach(() => {
    t.coordinator.shutdown();
    t.purgatory.expireAll();
  });

  it('JoinGroup v4+: MEMBER_ID_REQUIRED with a generated id, then joins with it', async () => {
    const first = await join(t, { requireKnownMemberId: true, clientId: 'cli' });
    expect(first.errorCode).to.equal(ErrorCode.MEMBER_ID_REQUIRED);
    expect(first.memberId).to.match(/^cli-[0-9a-f-]{36}$/);
    const second = await join(t, { memberId: first.memberId, requireKnownMemberId: true });
    expect(second).to.include({
      errorCode: ErrorCode.NONE,
      memberId: first.memberId,
      generationId: 1,
      leaderId: first.memberId,
      protocolName: 'range',
    });
    expect(second.members.map((m) => m.memberId)).to.deep.equal([first.memberId]);
  });

  it('two members: leader gets the members, SyncGroup hands out the leader assignment, group goes Stable', async () => {
    const a = await join(t);
    expect(group(t).state).to.equal(ClassicGroupState.COMPLETING_REBALANCE);
    await sync(t, a.memberId, 1, [{ memberId: a.memberId, assignment: Buffer.from('A') }]);
    expect(group(t).state).to.equal(ClassicGroupState.STABLE);
    // A second member triggers a rebalance; the first learns it through its heartbeat and rejoins.
    const bJoin = join(t, { clientId: 'b' });
    expect(t.coordinator.classic.heartbeat('g', a.memberId, null, 1)).to.equal(ErrorCode.REBALANCE_IN_PROGRESS);
    const [a2, b] = await Promise.all([join(t, { memberId: a.memberId }), bJoin]);
    expect(a2.generationId).to.equal(2);
    expect(b.generationId).to.equal(2);
    const leader = a2.leaderId === a2.memberId ? a2 : b;
    const follower = leader === a2 ? b : a2;
    expect(leader.members).to.have.length(2);
    expect(follower.members).to.have.length(0);
    const followerSync = sync(t, follower.memberId, 2);
    const leaderSync = await sync(t, leader.memberId, 2, [
      { memberId: leader.memberId, assignment: Buffer.from('L') },
      { memberId: follower.memberId, assignment: Buffer.from('F') },
    ]);
    expect(leaderSync.assignment.toString()).to.equal('L');
    expect((await followerSync).assignment.toString()).to.equal('F');
    expect(group(t).state).to.equal(ClassicGroupState.STABLE);
    expect(t.coordinator.classic.heartbeat('g', follower.memberId, null, 2)).to.equal(ErrorCode.NONE);
    expect(t.coordinator.classic.heartbeat('g', follower.memberId, null, 1)).to.equal(ErrorCode.ILLEGAL_GENERATION);
    expect(t.coordinator.classic.heartbeat('g', 'nobody', null, 2)).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await sync(t, follower.memberId, 1)).errorCode).to.equal(ErrorCode.ILLEGAL_GENERATION);
  });

  it('selects the protocol most members prefer among those all support', async () => {
    const p1 = join(t, {
      protocols: [
        { name: 'roundrobin', metadata: meta },
        { name: 'range', metadata: meta },
      ],
    });
    const p2 = join(t, {
      protocols: [
        { name: 'range', metadata: meta },
        { name: 'roundrobin', metadata: meta },
      ],
    });
    const p3 = join(t, { protocols: [{ name: 'range', metadata: meta }] });
    const rs = await Promise.all([p1, p2, p3]);
    for (const r of rs) expect(r.protocolName).to.equal('range');
    expect((await join(t, { protocols: [{ name: 'sticky', metadata: meta }] })).errorCode).to.equal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect((await join(t, { protocolType: 'connect' })).errorCode).to.equal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  });

  it('rejects session timeouts outside the broker bounds and members beyond group.max.size', async () => {
    const small = testCoordinator({ 'group.max.size': 1 });
    await small.coordinator.startup();
    await small.coordinator.whenLoaded();
    expect((await join(small, { sessionTimeoutMs: 10 })).errorCode).to.equal(ErrorCode.INVALID_SESSION_TIMEOUT);
    expect((await join(small, { sessionTimeoutMs: 6000 })).errorCode).to.equal(ErrorCode.NONE);
    expect((await join(small, { sessionTimeoutMs: 6000 })).errorCode).to.equal(ErrorCode.GROUP_MAX_SIZE_REACHED);
    small.coordinator.shutdown();
    small.purgatory.expireAll();
  });

  it('a static member rejoining while Stable keeps its assignment without a rebalance; the old id is fenced', async () => {
    const a = await join(t, { groupInstanceId: 'i-a' });
    await sync(t, a.memberId, 1, [{ memberId: a.memberId, assignment: Buffer.from('A') }]);
    const again = await join(t, { groupInstanceId: 'i-a' });
    expect(again.errorCode).to.equal(ErrorCode.NONE);
    expect(again.memberId).to.not.equal(a.memberId);
    expect(again.generationId).to.equal(1);
    expect(group(t).state).to.equal(ClassicGroupState.STABLE);
    expect((await sync(t, again.memberId, 1)).assignment.toString()).to.equal('A');
    expect(t.coordinator.classic.heartbeat('g', a.memberId, 'i-a', 1)).to.equal(ErrorCode.FENCED_INSTANCE_ID);
    expect(t.coordinator.classic.heartbeat('g', again.memberId, 'i-a', 1)).to.equal(ErrorCode.NONE);
  });

  it('a member whose session expires is removed and the group rebalances to Empty', async () => {
    const a = await join(t, { sessionTimeoutMs: 30 });
    await sync(t, a.memberId, 1, [{ memberId: a.memberId, assignment: Buffer.from('A') }]);
    await new Promise((r) => setTimeout(r, 80));
    expect(group(t).state).to.equal(ClassicGroupState.EMPTY);
    expect(group(t).generationId).to.equal(2);
    expect(t.coordinator.classic.heartbeat('g', a.memberId, null, 1)).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  it('a member that never syncs is removed after the rebalance timeout', async () => {
    const a = join(t, { rebalanceTimeoutMs: 40 });
    const b = join(t, { rebalanceTimeoutMs: 40 });
    const [ra, rb] = await Promise.all([a, b]);
    const leader = ra.leaderId === ra.memberId ? ra : rb;
    const other = leader === ra ? rb : ra;
    const leaderSync = sync(t, leader.memberId, 1, []);
    expect((await leaderSync).errorCode).to.equal(ErrorCode.NONE);
    await new Promise((r) => setTimeout(r, 100));
    expect(group(t).has(other.memberId)).to.equal(false);
  });

  it('a static member rejoining during CompletingRebalance forces a rebalance; heartbeats there answer NONE; its old id is fenced', async () => {
    const [a, s] = await Promise.all([join(t, { clientId: 'a' }), join(t, { clientId: 's', groupInstanceId: 'i-s' })]);
    expect(group(t).state).to.equal(ClassicGroupState.COMPLETING_REBALANCE);
    // Kafka 3.x/4.x: a member that got its join response may heartbeat before syncing.
    expect(t.coordinator.classic.heartbeat('g', a.memberId, null, 1)).to.equal(ErrorCode.NONE);
    const s2 = join(t, { clientId: 's', groupInstanceId: 'i-s' });
    expect(group(t).state).to.equal(ClassicGroupState.PREPARING_REBALANCE);
    expect(t.coordinator.classic.heartbeat('g', a.memberId, null, 1)).to.equal(ErrorCode.REBALANCE_IN_PROGRESS);
    const old = await t.coordinator.classic.syncGroup({
      groupId: 'g',
      generationId: 1,
      memberId: s.memberId,
      groupInstanceId: 'i-s',
      protocolType: null,
      protocolName: null,
      assignments: [],
    });
    expect(old.errorCode).to.equal(ErrorCode.FENCED_INSTANCE_ID);
    const [a2, s3] = await Promise.all([join(t, { memberId: a.memberId, clientId: 'a' }), s2]);
    expect([a2.generationId, s3.generationId]).to.deep.equal([2, 2]);
    expect(s3.memberId).to.not.equal(s.memberId);
    expect(group(t).size).to.equal(2);
  });

  it('an instance id the group does not know is UNKNOWN_MEMBER_ID, even with a known member id (Kafka validateMember)', async () => {
    const a = await join(t);
    await sync(t, a.memberId, 1, []);
    expect(t.coordinator.classic.heartbeat('g', a.memberId, 'i-nobody', 1)).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(t.coordinator.classic.leaveGroup(group(t), [{ memberId: a.memberId, groupInstanceId: 'i-nobody', reason: null }])).to.deep.equal(
      [ErrorCode.UNKNOWN_MEMBER_ID],
    );
    expect(t.coordinator.classic.heartbeat('g', a.memberId, null, 1)).to.equal(ErrorCode.NONE);
  });

  it("the leader's SyncGroup does not extend the session of a member that never sent SyncGroup", async () => {
    const [ra, rb] = await Promise.all([join(t, { sessionTimeoutMs: 300 }), join(t, { sessionTimeoutMs: 300 })]);
    const leader = ra.leaderId === ra.memberId ? ra : rb;
    const silent = leader === ra ? rb : ra;
    // Both sessions run from the join response; the silent member never syncs nor heartbeats.
    await new Promise((r) => setTimeout(r, 200));
    await sync(t, leader.memberId, 1, []);
    await new Promise((r) => setTimeout(r, 220));
    // Expired 300 ms after the join (Kafka), not 300 ms after the leader's sync.
    expect(group(t).has(silent.memberId)).to.equal(false);
    expect(group(t).has(leader.memberId)).to.equal(true);
  });

  it('a new member extends the initial delay of a group rejoining from Empty at any generation (Kafka 4)', async () => {
    const d = testCoordinator({ 'group.min.session.timeout.ms': 10, 'group.initial.rebalance.delay.ms': 300 });
    await d.coordinator.startup();
    await d.coordinator.whenLoaded();
    try {
      const x = await join(d);
      await sync(d, x.memberId, 1, []);
      d.coordinator.classic.leaveGroup(group(d), [{ memberId: x.memberId, groupInstanceId: null, reason: null }]);
      expect(group(d).state).to.equal(ClassicGroupState.EMPTY);
      expect(group(d).generationId).to.equal(2);
      const a = join(d);
      await new Promise((r) => setTimeout(r, 150));
      const b = join(d);
      // The first delay ended at 300 ms; the second member pushed it to 600 ms.
      await new Promise((r) => setTimeout(r, 300));
      expect(group(d).state).to.equal(ClassicGroupState.PREPARING_REBALANCE);
      const rs = await Promise.all([a, b]);
      expect(rs.map((r) => r.generationId)).to.deep.equal([3, 3]);
      expect(group(d).size).to.equal(2);
    } finally {
      d.coordinator.shutdown();
      d.purgatory.expireAll();
    }
  });

  it('LeaveGroup by member id and by group instance id', async () => {
    const a = await join(t, { groupInstanceId: 'i-a' });
    await sync(t, a.memberId, 1, []);
    const g = group(t);
    expect(t.coordinator.classic.leaveGroup(g, [{ memberId: 'x', groupInstanceId: null, reason: null }])).to.deep.equal([
      ErrorCode.UNKNOWN_MEMBER_ID,
    ]);
    expect(t.coordinator.classic.leaveGroup(g, [{ memberId: 'x', groupInstanceId: 'i-a', reason: null }])).to.deep.equal([
      ErrorCode.FENCED_INSTANCE_ID,
    ]);
    expect(t.coordinator.classic.leaveGroup(g, [{ memberId: '', groupInstanceId: 'i-a', reason: 'bye' }])).to.deep.equal([ErrorCode.NONE]);
    await new Promise((r) => setImmediate(r));
    expect(g.state).to.equal(ClassicGroupState.EMPTY);
  });
});
