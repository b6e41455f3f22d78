/**
 * Every version gregor serves of every group API, over raw connections: a member joins (with
 * MEMBER_ID_REQUIRED from JoinGroup v4), syncs, heartbeats, commits, fetches and leaves with each
 * version; FindCoordinator single and batched; Describe/List/DeleteGroups, OffsetDelete,
 * ConsumerGroupHeartbeat/Describe. Catches any response that cannot be encoded in some version.
 */
import { expect } from 'chai';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { defaultJoinGroupRequest } from '../../protocol/generated/join-group.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawClient, rawCreateTopics } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';

type Any = any;
const API = {
  OffsetCommit: 8,
  OffsetFetch: 9,
  FindCoordinator: 10,
  JoinGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  SyncGroup: 14,
  DescribeGroups: 15,
  ListGroups: 16,
  DeleteGroups: 42,
  OffsetDelete: 47,
  ConsumerGroupHeartbeat: 68,
  ConsumerGroupDescribe: 69,
} as const;

describe('group APIs: every served version', function () {
  this.timeout(60_000);
  let b: TestBroker;
  let raw: RawClient;
  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker(), (t) => t.stop());
    raw = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    await rawCreateTopics(raw, [{ name: 'sweep', partitions: 2 }]);
  });
  after(() => cleanup.run());

  it('FindCoordinator v0-6 answers this node for group keys', async () => {
    const port = Number(b.bootstrap.split(':').pop());
    for (let v = 0; v <= 6; v++) {
      if (v < 4) {
        const r = await raw.request<Any>(API.FindCoordinator, v, { key: 'g', keyType: 0 });
        expect([r.errorCode, r.nodeId, r.port], `v${v}`).to.deep.equal([0, 0, port]);
      } else {
        const r = await raw.request<Any>(API.FindCoordinator, v, { keyType: 0, coordinatorKeys: ['a', 'b'] });
        expect(
          r.coordinators.map((c: Any) => [c.key, c.errorCode, c.port]),
          `v${v}`,
        ).to.deep.equal([
          ['a', 0, port],
          ['b', 0, port],
        ]);
      }
    }
  });

  /**
   * One member's whole life in a classic group at JoinGroup version v (other APIs at matching
   * versions): join, sync, heartbeat, commit offset 10+v with metadata `m${v}` on sweep-1, fetch it,
   * leave. Leaves `groupId` Empty (protocol type consumer) with that offset, and for v0 also a simple
   * group `${groupId}-simple` holding it (OffsetCommit v0 carries no generation).
   */
  async function memberLifecycle(v: number, groupId: string): Promise<void> {
    const syncV = Math.min(v, 5);
    const hbV = Math.min(v, 4);
    const leaveV = Math.min(v, 5);
    const req = {
      ...defaultJoinGroupRequest(),
      groupId,
      sessionTimeoutMs: 10000,
      rebalanceTimeoutMs: 10000,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.from([0, 0]) }],
      reason: v >= 8 ? 'sweep' : null,
    };
    let r = await raw.request<Any>(API.JoinGroup, v, req);
    if (v >= 4) {
      expect(r.errorCode).to.equal(ErrorCode.MEMBER_ID_REQUIRED);
      r = await raw.request<Any>(API.JoinGroup, v, { ...req, memberId: r.memberId });
    }
    expect(r.errorCode, `join v${v}`).to.equal(ErrorCode.NONE);
    expect(r.generationId).to.equal(1);
    expect(r.leader).to.equal(r.memberId);
    expect(r.protocolName).to.equal('range');
    const memberId: string = r.memberId;
    const s = await raw.request<Any>(API.SyncGroup, syncV, {
      groupId,
      generationId: 1,
      memberId,
      groupInstanceId: null,
      protocolType: syncV >= 5 ? 'consumer' : null,
      protocolName: syncV >= 5 ? 'range' : null,
      assignments: [{ memberId, assignment: Buffer.from('A') }],
    });
    expect(s.errorCode, `sync v${syncV}`).to.equal(ErrorCode.NONE);
    expect(Buffer.from(s.assignment).toString()).to.equal('A');
    expect((await raw.request<Any>(API.Heartbeat, hbV, { groupId, generationId: 1, memberId, groupInstanceId: null })).errorCode).to.equal(
      ErrorCode.NONE,
    );
    // OffsetCommit v0 carries no generation: only a simple group may use it.
    const commitGroup = v === 0 ? `${groupId}-simple` : groupId;
    const c = await raw.request<Any>(API.OffsetCommit, v, {
      groupId: commitGroup,
      generationIdOrMemberEpoch: v === 0 ? -1 : 1,
      memberId: v === 0 ? '' : memberId,
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [
        {
          name: 'sweep',
          partitions: [
            {
              partitionIndex: 1,
              committedOffset: BigInt(10 + v),
              committedLeaderEpoch: -1,
              commitTimestamp: -1n,
              committedMetadata: `m${v}`,
            },
          ],
        },
      ],
    });
    expect(c.topics[0].partitions[0].errorCode, `commit v${v}`).to.equal(ErrorCode.NONE);
    if (v >= 8) {
      const f = await raw.request<Any>(API.OffsetFetch, v, {
        groups: [
          { groupId: commitGroup, memberId: null, memberEpoch: -1, topics: [{ name: 'sweep', partitionIndexes: [0, 1] }] },
          { groupId: 'nobody', memberId: null, memberEpoch: -1, topics: null },
        ],
        requireStable: false,
      });
      expect(f.groups.map((g: Any) => g.errorCode)).to.deep.equal([0, 0]);
      expect(f.groups[0].topics[0].partitions.map((p: Any) => [p.committedOffset, p.metadata])).to.deep.equal([
        [-1n, ''],
        [BigInt(10 + v), `m${v}`],
      ]);
    } else {
      const f = await raw.request<Any>(API.OffsetFetch, v, {
        groupId: commitGroup,
        topics: [{ name: 'sweep', partitionIndexes: [0, 1] }],
        requireStable: false,
      });
      expect(f.topics[0].partitions.map((p: Any) => [p.committedOffset, p.metadata, p.errorCode])).to.deep.equal([
        [-1n, '', 0],
        [BigInt(10 + v), `m${v}`, 0],
      ]);
      if (v >= 2) expect(f.errorCode).to.equal(0);
    }
    if (v >= 2 && v < 8) {
      const all = await raw.request<Any>(API.OffsetFetch, v, { groupId: commitGroup, topics: null, requireStable: false });
      expect(all.topics.map((t: Any) => t.name)).to.deep.equal(['sweep']);
    }
    const l =
      leaveV >= 3
        ? await raw.request<Any>(API.LeaveGroup, leaveV, {
            groupId,
            members: [
              { memberId, groupInstanceId: null, reason: null },
              { memberId: 'ghost', groupInstanceId: null, reason: null },
            ],
          })
        : await raw.request<Any>(API.LeaveGroup, leaveV, { groupId, memberId });
    expect(l.errorCode).to.equal(ErrorCode.NONE);
    if (leaveV >= 3) expect(l.members.map((m: Any) => m.errorCode)).to.deep.equal([ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]);
  }

  for (let v = 0; v <= 9; v++) {
    it(`JoinGroup v${v} with SyncGroup, Heartbeat, OffsetCommit, OffsetFetch, LeaveGroup at matching versions`, async () => {
      await memberLifecycle(v, `sweep-${v}`);
    });
  }

  it('DescribeGroups v0-5, ListGroups v0-5 (state and type filters), DeleteGroups v0-2, OffsetDelete v0', async () => {
    // its own groups: Empty classic groups with an offset on sweep-1, and a simple group
    await memberLifecycle(1, 'admin-empty');
    await memberLifecycle(0, 'admin-v0');
    await memberLifecycle(2, 'admin-od');
    for (let v = 0; v <= 2; v++) await memberLifecycle(3, `admin-del-${v}`);
    for (let v = 0; v <= 5; v++) {
      const d = await raw.request<Any>(API.DescribeGroups, v, { groups: ['admin-empty', 'nobody'], includeAuthorizedOperations: false });
      expect(
        d.groups.map((g: Any) => [g.groupId, g.errorCode, g.groupState, g.protocolType]),
        `describe v${v}`,
      ).to.deep.equal([
        ['admin-empty', 0, 'Empty', 'consumer'],
        ['nobody', 0, 'Dead', ''],
      ]);
      const l = await raw.request<Any>(API.ListGroups, v, {
        statesFilter: v >= 4 ? ['empty'] : [],
        typesFilter: v >= 5 ? ['classic'] : [],
      });
      expect(l.errorCode).to.equal(0);
      expect(
        l.groups.map((g: Any) => g.groupId),
        `list v${v}`,
      ).to.include.members(['admin-empty', 'admin-v0-simple']);
      if (v >= 4) expect(l.groups.every((g: Any) => g.groupState === 'Empty')).to.equal(true);
      if (v >= 5) expect(l.groups.every((g: Any) => g.groupType === 'classic')).to.equal(true);
    }
    const od = await raw.request<Any>(API.OffsetDelete, 0, {
      groupId: 'admin-od',
      topics: [{ name: 'sweep', partitions: [{ partitionIndex: 1 }, { partitionIndex: 7 }] }],
    });
    // Kafka's KafkaApis answers the partition that does not exist first, then merges the coordinator's answer.
    expect([od.errorCode, ...od.topics[0].partitions.map((p: Any) => [p.partitionIndex, p.errorCode])]).to.deep.equal([
      0,
      [7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      [1, 0],
    ]);
    for (let v = 0; v <= 2; v++) {
      const del = await raw.request<Any>(API.DeleteGroups, v, { groupsNames: [`admin-del-${v}`, 'nobody'] });
      expect(
        del.results.map((r: Any) => r.errorCode),
        `delete v${v}`,
      ).to.deep.equal([0, ErrorCode.GROUP_ID_NOT_FOUND]);
    }
    // deleted groups are gone; the others stay
    const after = await raw.request<Any>(API.ListGroups, 4, { statesFilter: [] });
    const names = after.groups.map((g: Any) => g.groupId);
    expect(names).to.include.members(['admin-empty', 'admin-od']);
    expect(names.filter((n: string) => n.startsWith('admin-del-'))).to.deep.equal([]);
  });

  it('ConsumerGroupHeartbeat v0-1 and ConsumerGroupDescribe v0', async () => {
    // a classic group, which ConsumerGroupDescribe does not describe (GROUP_ID_NOT_FOUND, as Kafka)
    await memberLifecycle(1, 'cgd-classic');
    for (let v = 0; v <= 1; v++) {
      const groupId = `cg-sweep-${v}`;
      const r = await raw.request<Any>(API.ConsumerGroupHeartbeat, v, {
        groupId,
        memberId: v === 1 ? `member-${v}` : '',
        memberEpoch: 0,
        instanceId: null,
        rackId: null,
        rebalanceTimeoutMs: 30000,
        subscribedTopicNames: ['sweep'],
        subscribedTopicRegex: null,
        serverAssignor: 'range',
        topicPartitions: [],
      });
      expect(r.errorCode, `cgh v${v}`).to.equal(0);
      expect(r.memberEpoch).to.equal(1);
      expect(r.assignment.topicPartitions[0].partitions).to.deep.equal([0, 1]);
      const d = await raw.request<Any>(API.ConsumerGroupDescribe, 0, {
        groupIds: [groupId, 'cgd-classic', 'nobody'],
        includeAuthorizedOperations: false,
      });
      expect(d.groups.map((g: Any) => g.errorCode)).to.deep.equal([0, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_ID_NOT_FOUND]);
      expect(d.groups[0]).to.include({ groupState: 'Stable', groupEpoch: 1, assignmentEpoch: 1, assignorName: 'range' });
      expect(d.groups[0].members[0].assignment.topicPartitions[0]).to.include({ topicName: 'sweep' });
      const left = await raw.request<Any>(API.ConsumerGroupHeartbeat, v, {
        groupId,
        memberId: r.memberId,
        memberEpoch: -1,
        instanceId: null,
        rackId: null,
        rebalanceTimeoutMs: -1,
        subscribedTopicNames: null,
        subscribedTopicRegex: null,
        serverAssignor: null,
        topicPartitions: null,
      });
      expect([left.errorCode, left.memberEpoch]).to.deep.equal([0, -1]);
    }
  });
});
