import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { listGroups } from '../../../lib/group/group-admin.js';
import { commitOffsets } from '../../../lib/group/offset-manager.js';
import { testCoordinator } from './memory-log.js';

describe('group admin views: ListGroups while loading', () => {
  it('answers COORDINATOR_LOAD_IN_PROGRESS without groups while any offsets partition is replayed, as Kafka does', async () => {
    const first = testCoordinator();
    await first.coordinator.startup();
    await first.coordinator.whenLoaded();
    const commit = (groupId: string) => ({
      groupId,
      memberId: '',
      groupInstanceId: null,
      generationIdOrMemberEpoch: -1,
      retentionTimeMs: -1,
      apiVersion: 8,
      topics: [
        {
          name: 't',
          partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1, committedMetadata: '' }],
        },
      ],
    });
    // Groups on two different partitions.
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (const id of ids) await commitOffsets(first.coordinator, commit(id), () => true);
    expect(new Set(ids.map((id) => first.coordinator.partitionFor(id))).size).to.be.greaterThan(1);
    first.coordinator.shutdown();
    const t = testCoordinator({}, { logs: first.logs });
    await t.coordinator.startup();
    expect(listGroups(t.coordinator, [], [])).to.deep.equal({ errorCode: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, groups: [] });
    await t.coordinator.whenLoaded();
    const after = listGroups(t.coordinator, [], []);
    expect([after.errorCode, after.groups.map((g) => g.groupId).sort()]).to.deep.equal([ErrorCode.NONE, ids]);
    t.coordinator.shutdown();
    expect(listGroups(t.coordinator, [], []).errorCode).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });
});
