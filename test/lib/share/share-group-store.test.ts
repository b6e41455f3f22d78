import { expect } from 'chai';
import { storeErrorFor } from '../../../lib/group/store-errors.js';
import { decodeCoordinatorRecord, type DecodedRecord } from '../../../lib/group/records.js';
import { ShareRecordType } from '../../../lib/group/share-group-records.js';
import { silentLogger } from '../../../lib/observability/logger.js';
import { RecordBatch } from '../../../protocol/records/index.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { ShareGroupHeartbeatRequest } from '../../../protocol/generated/share-group-heartbeat.js';
import { ShareCoordinator } from '../../../lib/share/share-coordinator.js';
import { snapshotValue, StateRecordType, StateReplay, stateKey, updateValue } from '../../../lib/share/state-records.js';
import { ShareStateCoordinator } from '../../../lib/share/state-coordinator.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { type MemoryLog, type TestCoordinator, testCoordinator } from '../group/memory-log.js';
import { openLog, rmDir, tmpDir } from '../log/helpers.js';

const TOPIC_ID = 'a'.repeat(32);

/** A share coordinator writing through (and replayed by) the test group coordinator, as lib/share/index.ts wires it. */
function shareOn(t: TestCoordinator, sessionTimeoutMs = 60_000): ShareCoordinator {
  const share = new ShareCoordinator({
    settings: { sessionTimeoutMs: () => sessionTimeoutMs, heartbeatIntervalMs: () => 1000, maxSize: 10 },
    topicByName: (name) => t.topics.get(name),
    topicName: (id) => (id === TOPIC_ID ? 't' : undefined),
    otherGroupExists: (id) => t.coordinator.groups.has(id),
    onAssigned: () => {},
    onMemberFenced: () => {},
    write: (groupId, records) => t.coordinator.write(groupId, records).then((e) => storeErrorFor(e, false)),
    logger: silentLogger(),
  });
  t.coordinator.shareGroups = share;
  return share;
}

async function started(logs?: MemoryLog[], sessionTimeoutMs?: number): Promise<{ t: TestCoordinator; share: ShareCoordinator }> {
  const t = testCoordinator({}, logs === undefined ? {} : { logs });
  const share = shareOn(t, sessionTimeoutMs);
  await t.coordinator.startup();
  await t.coordinator.whenLoaded();
  return { t, share };
}

const hb = (groupId: string, memberId: string, memberEpoch: number, topics: string[] | null = null): ShareGroupHeartbeatRequest => ({
  groupId,
  memberId,
  memberEpoch,
  rackId: null,
  subscribedTopicNames: topics,
});

/** Every share-group record written so far, decoded. */
function written(t: TestCoordinator): Extract<DecodedRecord, { type: 'share' }>['record'][] {
  const out: Extract<DecodedRecord, { type: 'share' }>['record'][] = [];
  for (const log of t.logs)
    for (const b of log.batches)
      for (const r of RecordBatch.at(b).records({ maxOutput: 1 << 20 })) {
        const d = decodeCoordinatorRecord(r.key as Buffer, r.value);
        if (d.type === 'share') out.push(d.record);
      }
  return out;
}

describe('share-group records in __consumer_offsets (write and replay)', () => {
  it('members join: Kafka’s ShareGroup* records at keys 10–14, the group epoch and member epochs replayed', async () => {
    const { t, share } = await started();
    const a = await share.heartbeat(hb('g', 'member-a', 0, ['t']), 'client-a', '/127.0.0.1');
    const b = await share.heartbeat(hb('g', 'member-b', 0, ['t']), 'client-b', '/127.0.0.2');
    expect(a.errorCode).to.equal(ErrorCode.NONE);
    expect(b.errorCode).to.equal(ErrorCode.NONE);
    // a catches up with the assignment epoch b's join moved
    const a2 = await share.heartbeat(hb('g', 'member-a', a.memberEpoch), 'client-a', '/127.0.0.1');
    expect(a2.memberEpoch).to.equal(2);
    const before = share.groups.get('g');
    expect(before?.groupEpoch).to.equal(2);

    const kinds = new Set(written(t).map((r) => r.kind));
    expect([...kinds].sort()).to.deep.equal(['current-member', 'member', 'metadata', 'target-member', 'target-metadata']);
    const keyVersions = t.logs.flatMap((l) =>
      l.batches.flatMap((x) =>
        RecordBatch.at(x)
          .records({ maxOutput: 1 << 20 })
          .map((r) => (r.key as Buffer).readInt16BE(0)),
      ),
    );
    expect(new Set(keyVersions)).to.include.members([
      ShareRecordType.MEMBER_METADATA,
      ShareRecordType.METADATA,
      ShareRecordType.TARGET_ASSIGNMENT_METADATA,
      ShareRecordType.TARGET_ASSIGNMENT_MEMBER,
      ShareRecordType.CURRENT_MEMBER_ASSIGNMENT,
    ]);

    // a new coordinator on the same partitions (a restart, or a failover to another broker)
    share.shutdown();
    const { share: again } = await started(t.logs);
    const g = again.groups.get('g');
    expect(g?.groupEpoch).to.equal(2);
    expect(g?.assignmentEpoch).to.equal(2);
    expect([...(g?.members.keys() ?? [])].sort()).to.deep.equal(['member-a', 'member-b']);
    for (const [id, m] of before?.members ?? []) {
      const r = g?.members.get(id);
      expect(r?.memberEpoch, id).to.equal(m.memberEpoch);
      expect([...(r?.assignment ?? [])], id).to.deep.equal([...m.assignment]);
      expect(r?.clientId).to.equal(m.clientId);
      expect(r?.clientHost).to.equal(m.clientHost);
      expect(r?.subscribedTopicNames).to.deep.equal(['t']);
    }
    // their next heartbeats are accepted as they were: same epochs, no UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH
    const ra = await again.heartbeat(hb('g', 'member-a', 2), 'client-a', '/127.0.0.1');
    expect(ra).to.include({ errorCode: ErrorCode.NONE, memberId: 'member-a', memberEpoch: 2 });
    const rb = await again.heartbeat(hb('g', 'member-b', b.memberEpoch), 'client-b', '/127.0.0.2');
    expect(rb).to.include({ errorCode: ErrorCode.NONE, memberId: 'member-b', memberEpoch: 2 });
    expect(rb.assignment).to.equal(null); // nothing changed: no new assignment
    // a member joining after the replay continues the group epoch
    const c = await again.heartbeat(hb('g', 'member-c', 0, ['t']), 'client-c', '/127.0.0.3');
    expect(c.memberEpoch).to.equal(3);
    again.shutdown();
  });

  it('a member leaving gets tombstones; a deleted group is gone after replay', async () => {
    const { t, share } = await started();
    await share.heartbeat(hb('g2', 'm1', 0, ['t']), 'c', '/h');
    await share.heartbeat(hb('g2', 'm2', 0, ['t']), 'c', '/h');
    const left = await share.heartbeat(hb('g2', 'm1', -1), 'c', '/h');
    expect(left.errorCode).to.equal(ErrorCode.NONE);
    const tombs = written(t).filter((r) => 'memberId' in r && r.memberId === 'm1' && r.value === null);
    expect(tombs.map((r) => r.kind).sort()).to.deep.equal(['current-member', 'member', 'target-member']);
    share.shutdown();
    const second = await started(t.logs);
    expect([...(second.share.groups.get('g2')?.members.keys() ?? [])]).to.deep.equal(['m2']);
    expect(second.share.groups.get('g2')?.groupEpoch).to.equal(3);
    await second.share.heartbeat(hb('g2', 'm2', -1), 'c', '/h');
    expect(await second.share.delete('g2')).to.equal(ErrorCode.NONE);
    second.share.shutdown();
    const third = await started(t.logs);
    expect(third.share.groups.has('g2')).to.equal(false);
    third.share.shutdown();
  });

  it('session timeouts start again on replay: members not heard from expire and are tombstoned', async () => {
    const { t, share } = await started(undefined, 60_000);
    await share.heartbeat(hb('g3', 'm1', 0, ['t']), 'c', '/h');
    share.shutdown();
    const { share: again } = await started(t.logs, 200);
    expect(again.groups.get('g3')?.members.size).to.equal(1);
    const deadline = Date.now() + 10_000;
    while ((again.groups.get('g3')?.members.size ?? 0) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(again.groups.get('g3')?.members.size).to.equal(0);
    await new Promise((r) => setTimeout(r, 50)); // the tombstones' write
    const { share: last } = await started(t.logs);
    expect(last.groups.get('g3')?.state).to.equal('Empty');
    expect(last.groups.get('g3')?.groupEpoch).to.equal(2);
    again.shutdown();
    last.shutdown();
  });

  it('a resigned partition takes its share groups away', async () => {
    const { t, share } = await started();
    await share.heartbeat(hb('g4', 'm1', 0, ['t']), 'c', '/h');
    share.unload((id) => t.coordinator.partitionFor(id) === t.coordinator.partitionFor('g4'));
    expect(share.groups.has('g4')).to.equal(false);
  });

  it('share-partition state records carry the leader epoch; replay keeps the highest', () => {
    const replay = new StateReplay();
    const key = (type: (typeof StateRecordType)[keyof typeof StateRecordType]) => stateKey(type, 'g', TOPIC_ID, 0);
    replay.apply(key(StateRecordType.SHARE_SNAPSHOT), snapshotValue({ stateEpoch: 1, leaderEpoch: 3, startOffset: 10n, batches: [] }));
    expect(replay.result()[0]?.leaderEpoch).to.equal(3);
    replay.apply(key(StateRecordType.SHARE_UPDATE), updateValue(1, -1n, [], 5));
    expect(replay.result()[0]).to.include({ leaderEpoch: 5, startOffset: 10n });
    replay.apply(key(StateRecordType.SHARE_UPDATE), updateValue(1, 12n, [], 4));
    expect(replay.result()[0]).to.include({ leaderEpoch: 5, startOffset: 12n });
  });

  it('the share coordinator keeps the fencing leader epoch across its own failover (a new one replays it)', async () => {
    const dir = tmpDir('share-state');
    const log = await openLog(dir);
    const coordinatorOn = (l: PartitionLog) =>
      new ShareStateCoordinator({
        logger: silentLogger(),
        numPartitions: 1,
        updatesPerSnapshot: 2,
        createTopic: async () => {},
        topicExists: () => true,
        log: () => l,
        leaderEpoch: () => 0,
        notifyAppend: () => {},
      });
    try {
      const first = coordinatorOn(log);
      await first.load();
      expect(await first.write('g', TOPIC_ID, 0, { stateEpoch: 1, leaderEpoch: 3, startOffset: 7n, batches: [] })).to.equal(ErrorCode.NONE);
      // a new partition leader (epoch 5) reads the state: a ShareUpdate carrying the epoch is written
      const end = log.logEndOffset;
      expect(first.read('g', TOPIC_ID, 0, 5).errorCode).to.equal(ErrorCode.NONE);
      const deadline = Date.now() + 5000;
      while (log.highWatermark === end && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(Number(log.highWatermark)).to.equal(Number(end) + 1);

      const second = coordinatorOn(log);
      await second.load();
      // the old leader (epoch 3, or 4) is fenced by the replayed epoch; the new one reads on
      expect(second.read('g', TOPIC_ID, 0, 4).errorCode).to.equal(ErrorCode.FENCED_LEADER_EPOCH);
      expect(await second.write('g', TOPIC_ID, 0, { stateEpoch: 1, leaderEpoch: 3, startOffset: 9n, batches: [] })).to.equal(
        ErrorCode.FENCED_LEADER_EPOCH,
      );
      const r = second.read('g', TOPIC_ID, 0, 5);
      expect(r.errorCode).to.equal(ErrorCode.NONE);
      expect(r.state).to.include({ leaderEpoch: 5, startOffset: 7n, stateEpoch: 1 });
    } finally {
      await log.close();
      rmDir(dir);
    }
  });
});
