import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { LogError } from '../../../lib/log/errors.js';
import type { ClassicGroup } from '../../../lib/group/classic-group.js';
import {
  commitOffsets,
  deleteGroups,
  describeGroup,
  fetchOffsets,
  listGroups,
  type CommitParams,
} from '../../../lib/group/offset-manager.js';
import { testCoordinator } from './memory-log.js';

const exists = () => true;
function commit(groupId: string, offsets: [number, bigint][], o: Partial<CommitParams> = {}): CommitParams {
  return {
    groupId,
    memberId: '',
    groupInstanceId: null,
    generationIdOrMemberEpoch: -1,
    retentionTimeMs: -1,
    apiVersion: 8,
    topics: [
      {
        name: 't',
        partitions: offsets.map(([p, off]) => ({
          partitionIndex: p,
          committedOffset: off,
          committedLeaderEpoch: 0,
          commitTimestamp: -1,
          committedMetadata: `m${p}`,
        })),
      },
    ],
    ...o,
  };
}
const codes = (r: Awaited<ReturnType<typeof commitOffsets>>) => r.flatMap((t) => t.partitions.map((p) => p.errorCode));

describe('group coordinator: offsets, persistence and replay', () => {
  it('simple commits are written to the group partition, fetched back, and survive a reload', async () => {
    const t = testCoordinator();
    await t.coordinator.startup();
    await t.coordinator.whenLoaded();
    expect(
      codes(
        await commitOffsets(
          t.coordinator,
          commit('simple', [
            [0, 10n],
            [1, 20n],
          ]),
          exists,
        ),
      ),
    ).to.deep.equal([0, 0]);
    const p = t.coordinator.partitionFor('simple');
    expect(t.logs[p]?.logEndOffset).to.equal(2n);
    const f = fetchOffsets(t.coordinator, 'simple', [{ name: 't', partitionIndexes: [0, 1, 2] }]);
    expect(f.topics[0]?.partitions.map((x) => [x.committedOffset, x.metadata])).to.deep.equal([
      [10n, 'm0'],
      [20n, 'm1'],
      [-1n, ''],
    ]);
    // A second coordinator on the same logs replays them.
    t.coordinator.shutdown();
    const again = testCoordinator({}, { logs: t.logs });
    await again.coordinator.startup();
    expect(fetchOffsets(again.coordinator, 'simple', null).errorCode).to.be.oneOf([ErrorCode.NONE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]);
    await again.coordinator.whenLoaded();
    expect(fetchOffsets(again.coordinator, 'simple', null).topics[0]?.partitions.map((x) => x.committedOffset)).to.deep.equal([10n, 20n]);
    expect(listGroups(again.coordinator, [], []).groups).to.deep.equal([
      { groupId: 'simple', protocolType: '', groupState: 'Empty', groupType: 'classic' },
    ]);
    again.coordinator.shutdown();
  });

  it('answers COORDINATOR_LOAD_IN_PROGRESS while its partition is being replayed', async () => {
    const first = testCoordinator();
    await first.coordinator.startup();
    await first.coordinator.whenLoaded();
    await commitOffsets(first.coordinator, commit('g', [[0, 1n]]), exists);
    first.coordinator.shutdown();
    const t = testCoordinator({}, { logs: first.logs });
    await t.coordinator.startup();
    // Replaying is asynchronous: right after startup the group's partition is still loading.
    expect(t.coordinator.validateGroupStatus('g', 'join')).to.equal(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    expect(fetchOffsets(t.coordinator, 'g', null).errorCode).to.equal(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    await t.coordinator.whenLoaded();
    expect(t.coordinator.validateGroupStatus('g', 'join')).to.equal(ErrorCode.NONE);
    expect(t.coordinator.validateGroupStatus('', 'join')).to.equal(ErrorCode.INVALID_GROUP_ID);
    expect(t.coordinator.validateGroupStatus('', 'commit')).to.equal(ErrorCode.NONE);
    t.coordinator.shutdown();
  });

  it("Kafka's commit errors: unknown group with a generation, oversized metadata, unknown topic; others unaffected", async () => {
    const t = testCoordinator({ 'offset.metadata.max.bytes': 4 });
    await t.coordinator.startup();
    await t.coordinator.whenLoaded();
    expect(
      codes(await commitOffsets(t.coordinator, commit('nope', [[0, 1n]], { generationIdOrMemberEpoch: 3, memberId: 'm' }), exists)),
    ).to.deep.equal([ErrorCode.ILLEGAL_GENERATION]);
    expect(
      codes(
        await commitOffsets(
          t.coordinator,
          commit('nope', [[0, 1n]], { generationIdOrMemberEpoch: 3, memberId: 'm', apiVersion: 9 }),
          exists,
        ),
      ),
    ).to.deep.equal([ErrorCode.GROUP_ID_NOT_FOUND]);
    const big = commit('ok', [[0, 1n]]);
    (big.topics[0]?.partitions[0] as { committedMetadata: string }).committedMetadata = 'too long';
    expect(codes(await commitOffsets(t.coordinator, big, exists))).to.deep.equal([ErrorCode.OFFSET_METADATA_TOO_LARGE]);
    expect(codes(await commitOffsets(t.coordinator, commit('ok', [[0, 5n]]), (_t, p) => p !== 0))).to.deep.equal([
      ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]);
    expect(codes(await commitOffsets(t.coordinator, commit('ok', [[1, 5n]]), exists))).to.deep.equal([ErrorCode.NONE]);
    t.logs[t.coordinator.partitionFor('ok')]!.failWith = new LogError(ErrorCode.MESSAGE_TOO_LARGE, 'too big');
    expect(codes(await commitOffsets(t.coordinator, commit('ok', [[1, 6n]]), exists))).to.deep.equal([
      ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ]);
    expect(fetchOffsets(t.coordinator, 'ok', [{ name: 't', partitionIndexes: [1] }]).topics[0]?.partitions[0]?.committedOffset).to.equal(
      5n,
    );
    t.coordinator.shutdown();
  });

  it('group metadata is replayed: a Stable group comes back with its members, generation and assignment', async () => {
    const t = testCoordinator();
    await t.coordinator.startup();
    await t.coordinator.whenLoaded();
    const j = await t.coordinator.classic.joinGroup({
      groupId: 'g',
      memberId: '',
      groupInstanceId: null,
      requireKnownMemberId: false,
      supportSkippingAssignment: false,
      clientId: 'c',
      clientHost: '/h',
      rebalanceTimeoutMs: 10000,
      sessionTimeoutMs: 10000,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.from('S') }],
      reason: null,
    });
    await t.coordinator.classic.syncGroup({
      groupId: 'g',
      generationId: 1,
      memberId: j.memberId,
      groupInstanceId: null,
      protocolType: null,
      protocolName: null,
      assignments: [{ memberId: j.memberId, assignment: Buffer.from('A') }],
    });
    expect(
      codes(await commitOffsets(t.coordinator, commit('g', [[0, 7n]], { memberId: j.memberId, generationIdOrMemberEpoch: 1 }), exists)),
    ).to.deep.equal([0]);
    expect(
      codes(await commitOffsets(t.coordinator, commit('g', [[0, 8n]], { memberId: j.memberId, generationIdOrMemberEpoch: 0 }), exists)),
    ).to.deep.equal([ErrorCode.ILLEGAL_GENERATION]);
    expect(codes(await commitOffsets(t.coordinator, commit('g', [[0, 8n]]), exists))).to.deep.equal([ErrorCode.UNKNOWN_MEMBER_ID]);
    t.coordinator.shutdown();
    const again = testCoordinator({}, { logs: t.logs });
    await again.coordinator.startup();
    await again.coordinator.whenLoaded();
    const d = describeGroup(again.coordinator, 'g');
    expect(d).to.include({ groupState: 'Stable', protocolType: 'consumer', protocolData: 'range' });
    expect(d.members.map((m) => [m.memberId, m.memberAssignment.toString(), m.memberMetadata.toString()])).to.deep.equal([
      [j.memberId, 'A', 'S'],
    ]);
    expect((again.coordinator.groups.get('g') as ClassicGroup).generationId).to.equal(1);
    expect(again.coordinator.classic.heartbeat('g', j.memberId, null, 1)).to.equal(ErrorCode.NONE);
    expect(await deleteGroups(again.coordinator, ['g', 'missing'])).to.deep.equal([
      { groupId: 'g', errorCode: ErrorCode.NON_EMPTY_GROUP },
      { groupId: 'missing', errorCode: ErrorCode.GROUP_ID_NOT_FOUND },
    ]);
    again.coordinator.shutdown();
  });

  it('offsets.retention.minutes: an empty group loses expired offsets, then the group itself', async () => {
    let now = 1_000_000;
    const t = testCoordinator({ 'offsets.retention.minutes': 1 });
    (t.coordinator as unknown as { now: () => number }).now = () => now;
    await t.coordinator.startup();
    await t.coordinator.whenLoaded();
    await commitOffsets(t.coordinator, commit('old', [[0, 1n]]), exists);
    now += 30_000;
    expect(await t.coordinator.cleanupGroupMetadata()).to.equal(0);
    now += 31_000;
    expect(await t.coordinator.cleanupGroupMetadata()).to.equal(1);
    expect(t.coordinator.groups.has('old')).to.equal(false);
    t.coordinator.shutdown();
    const again = testCoordinator({}, { logs: t.logs });
    await again.coordinator.startup();
    await again.coordinator.whenLoaded();
    expect(again.coordinator.groups.has('old')).to.equal(false);
    again.coordinator.shutdown();
  });
});
