/**
 * What the share-group coordinator writes to `__consumer_offsets` for a share group, and the group it
 * builds back from them (Kafka 4.2's GroupMetadataManager does the same with the same records): the
 * group epoch, each member's metadata, the target assignment (its epoch and each member's partitions)
 * and each member's current assignment with its member epoch. A member that leaves or is fenced gets
 * tombstones, a deleted group tombstones for everything. Replay gives back the members with their ids,
 * epochs and assignments; their session timeouts start again then, as in Kafka.
 */
import { restoreMemberMetadata } from '../group/loader.js';
import type { CoordinatorRecord } from '../group/records.js';
import {
  SHARE_MEMBER_STABLE,
  shareGroupCurrentMemberRecord,
  shareGroupMemberRecord,
  shareGroupMetadataRecord,
  shareGroupPartitionMetadataTombstone,
  type ShareGroupMemberMetadataValue,
  type ShareGroupRecords,
  shareGroupStatePartitionMetadataRecord,
  shareGroupTargetMemberRecord,
  shareGroupTargetMetadataRecord,
  type ShareTopicPartitions,
} from '../group/share-group-records.js';
import { type ShareAssignment, ShareGroup, ShareGroupMember } from './share-group.js';

export function toTopicPartitions(a: ShareAssignment): ShareTopicPartitions[] {
  return [...a].map(([topicId, partitions]) => ({ topicId, partitions: [...partitions] }));
}

function toAssignment(tps: readonly ShareTopicPartitions[]): ShareAssignment {
  return new Map(tps.map((t) => [t.topicId, [...t.partitions]]));
}

export function memberMetadataValue(m: ShareGroupMember): ShareGroupMemberMetadataValue {
  return { rackId: m.rackId, clientId: m.clientId, clientHost: m.clientHost, subscribedTopicNames: [...m.subscribedTopicNames] };
}

export function memberRecord(groupId: string, m: ShareGroupMember): CoordinatorRecord {
  return shareGroupMemberRecord(groupId, m.memberId, memberMetadataValue(m));
}

export const groupEpochRecord = (g: ShareGroup): CoordinatorRecord => shareGroupMetadataRecord(g.groupId, g.groupEpoch);

export const targetMemberRecord = (groupId: string, m: ShareGroupMember): CoordinatorRecord =>
  shareGroupTargetMemberRecord(groupId, m.memberId, toTopicPartitions(m.assignment));

export const targetEpochRecord = (g: ShareGroup): CoordinatorRecord => shareGroupTargetMetadataRecord(g.groupId, g.assignmentEpoch);

/** The member's current assignment at its (new) member epoch. */
export function currentAssignmentRecord(groupId: string, m: ShareGroupMember, previousMemberEpoch: number): CoordinatorRecord {
  return shareGroupCurrentMemberRecord(groupId, m.memberId, {
    memberEpoch: m.memberEpoch,
    previousMemberEpoch,
    state: SHARE_MEMBER_STABLE,
    assignedPartitions: toTopicPartitions(m.assignment),
  });
}

/** A member gone: its current assignment, target assignment and metadata (Kafka's order). */
export function memberTombstones(groupId: string, memberId: string): CoordinatorRecord[] {
  return [
    shareGroupCurrentMemberRecord(groupId, memberId, null),
    shareGroupTargetMemberRecord(groupId, memberId, null),
    shareGroupMemberRecord(groupId, memberId, null),
  ];
}

/** A group deleted: its members' records, then the group's own (the metadata last, as Kafka deletes it). */
export function groupTombstones(g: ShareGroup): CoordinatorRecord[] {
  return [
    ...[...g.members.keys()].flatMap((id) => memberTombstones(g.groupId, id)),
    shareGroupTargetMetadataRecord(g.groupId, null),
    shareGroupPartitionMetadataTombstone(g.groupId),
    shareGroupStatePartitionMetadataRecord(g.groupId, null),
    shareGroupMetadataRecord(g.groupId, null),
  ];
}

/**
 * A share group from its replayed records. A member without metadata is dropped; its assignment is its
 * target (the coordinator gives members their target at once), else its current one; its epoch is its
 * current assignment's.
 */
export function buildShareGroup(groupId: string, r: ShareGroupRecords): ShareGroup {
  const g = new ShareGroup(groupId);
  g.groupEpoch = r.epoch ?? 0;
  g.assignmentEpoch = r.assignmentEpoch;
  for (const [memberId, v] of r.members) {
    const m = new ShareGroupMember(memberId);
    restoreMemberMetadata(m, v);
    const current = r.current.get(memberId);
    const target = r.targets.get(memberId);
    if (current !== undefined) m.memberEpoch = current.memberEpoch;
    m.assignment = toAssignment(target ?? current?.assignedPartitions ?? []);
    g.members.set(memberId, m);
  }
  return g;
}
