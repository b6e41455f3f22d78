/**
 * The KIP-932 share-group records of `__consumer_offsets` (Kafka 4.2's layouts, keys 9–15): the group
 * epoch (ShareGroupMetadata), each member's metadata, the target assignment (its epoch and each
 * member's partitions), each member's current assignment with its epoch, and what Kafka keeps of the
 * share partitions initialised (ShareGroupStatePartitionMetadata). A null value is a tombstone. The
 * share coordinator writes them (lib/share/share-group-store.ts) and replays them here, the last record
 * per key winning, as the consumer-group records are.
 */
import type { Reader } from '../../protocol/codec/reader.js';
import * as CurrentKey from '../../protocol/generated/data/share-group-current-member-assignment-key.js';
import * as CurrentValue from '../../protocol/generated/data/share-group-current-member-assignment-value.js';
import * as MemberKey from '../../protocol/generated/data/share-group-member-metadata-key.js';
import * as MemberValue from '../../protocol/generated/data/share-group-member-metadata-value.js';
import * as MetaKey from '../../protocol/generated/data/share-group-metadata-key.js';
import * as MetaValue from '../../protocol/generated/data/share-group-metadata-value.js';
import * as PartitionMetaKey from '../../protocol/generated/data/share-group-partition-metadata-key.js';
import * as StateMetaKey from '../../protocol/generated/data/share-group-state-partition-metadata-key.js';
import * as StateMetaValue from '../../protocol/generated/data/share-group-state-partition-metadata-value.js';
import * as TargetMemberKey from '../../protocol/generated/data/share-group-target-assignment-member-key.js';
import * as TargetMemberValue from '../../protocol/generated/data/share-group-target-assignment-member-value.js';
import * as TargetMetaKey from '../../protocol/generated/data/share-group-target-assignment-metadata-key.js';
import * as TargetMetaValue from '../../protocol/generated/data/share-group-target-assignment-metadata-value.js';
import { type CoordinatorRecord, encode, readValue } from './records.js';

export type ShareGroupMemberMetadataValue = MemberValue.ShareGroupMemberMetadataValue;
export type ShareGroupCurrentMemberAssignmentValue = CurrentValue.ShareGroupCurrentMemberAssignmentValue;
export type ShareGroupStatePartitionMetadataValue = StateMetaValue.ShareGroupStatePartitionMetadataValue;
/** A topic's partitions, as the assignment records hold them. */
export interface ShareTopicPartitions {
  topicId: string;
  partitions: number[];
}

/** Key versions (Kafka's CoordinatorRecordType) of the share-group records. */
export const ShareRecordType = {
  PARTITION_METADATA: 9,
  MEMBER_METADATA: 10,
  METADATA: 11,
  TARGET_ASSIGNMENT_METADATA: 12,
  TARGET_ASSIGNMENT_MEMBER: 13,
  CURRENT_MEMBER_ASSIGNMENT: 14,
  STATE_PARTITION_METADATA: 15,
} as const;

/** Kafka's MemberState of a share-group member's current assignment: share members are always stable. */
export const SHARE_MEMBER_STABLE = 0;

export function shareGroupMetadataRecord(groupId: string, epoch: number | null): CoordinatorRecord {
  return {
    key: encode(MetaKey.ShareGroupMetadataKeySchema, ShareRecordType.METADATA, { groupId }),
    value: epoch === null ? null : encode(MetaValue.ShareGroupMetadataValueSchema, 0, { epoch }),
  };
}

/** ShareGroupPartitionMetadata (the subscription metadata): recomputed from the topics, so only its tombstone is written. */
export function shareGroupPartitionMetadataTombstone(groupId: string): CoordinatorRecord {
  return {
    key: encode(PartitionMetaKey.ShareGroupPartitionMetadataKeySchema, ShareRecordType.PARTITION_METADATA, { groupId }),
    value: null,
  };
}

export function shareGroupMemberRecord(groupId: string, memberId: string, value: ShareGroupMemberMetadataValue | null): CoordinatorRecord {
  return {
    key: encode(MemberKey.ShareGroupMemberMetadataKeySchema, ShareRecordType.MEMBER_METADATA, { groupId, memberId }),
    value: value === null ? null : encode(MemberValue.ShareGroupMemberMetadataValueSchema, 0, value),
  };
}

export function shareGroupTargetMetadataRecord(groupId: string, assignmentEpoch: number | null): CoordinatorRecord {
  return {
    key: encode(TargetMetaKey.ShareGroupTargetAssignmentMetadataKeySchema, ShareRecordType.TARGET_ASSIGNMENT_METADATA, { groupId }),
    value: assignmentEpoch === null ? null : encode(TargetMetaValue.ShareGroupTargetAssignmentMetadataValueSchema, 0, { assignmentEpoch }),
  };
}

export function shareGroupTargetMemberRecord(
  groupId: string,
  memberId: string,
  topicPartitions: ShareTopicPartitions[] | null,
): CoordinatorRecord {
  return {
    key: encode(TargetMemberKey.ShareGroupTargetAssignmentMemberKeySchema, ShareRecordType.TARGET_ASSIGNMENT_MEMBER, { groupId, memberId }),
    value: topicPartitions === null ? null : encode(TargetMemberValue.ShareGroupTargetAssignmentMemberValueSchema, 0, { topicPartitions }),
  };
}

export function shareGroupCurrentMemberRecord(
  groupId: string,
  memberId: string,
  value: ShareGroupCurrentMemberAssignmentValue | null,
): CoordinatorRecord {
  return {
    key: encode(CurrentKey.ShareGroupCurrentMemberAssignmentKeySchema, ShareRecordType.CURRENT_MEMBER_ASSIGNMENT, { groupId, memberId }),
    value: value === null ? null : encode(CurrentValue.ShareGroupCurrentMemberAssignmentValueSchema, 0, value),
  };
}

export function shareGroupStatePartitionMetadataRecord(
  groupId: string,
  value: ShareGroupStatePartitionMetadataValue | null,
): CoordinatorRecord {
  return {
    key: encode(StateMetaKey.ShareGroupStatePartitionMetadataKeySchema, ShareRecordType.STATE_PARTITION_METADATA, { groupId }),
    value: value === null ? null : encode(StateMetaValue.ShareGroupStatePartitionMetadataValueSchema, 0, value),
  };
}

/** One decoded share-group record (value null: tombstone). */
export type ShareGroupRecord =
  | { kind: 'metadata'; groupId: string; epoch: number | null }
  | { kind: 'partition-metadata'; groupId: string }
  | { kind: 'member'; groupId: string; memberId: string; value: ShareGroupMemberMetadataValue | null }
  | { kind: 'target-metadata'; groupId: string; assignmentEpoch: number | null }
  | { kind: 'target-member'; groupId: string; memberId: string; value: ShareTopicPartitions[] | null }
  | { kind: 'current-member'; groupId: string; memberId: string; value: ShareGroupCurrentMemberAssignmentValue | null }
  | { kind: 'state-partition-metadata'; groupId: string; value: ShareGroupStatePartitionMetadataValue | null };

/** Decodes a share-group record whose key version was read from `r` (undefined: not a share-group key). */
export function decodeShareGroupRecord(keyVersion: number, r: Reader, value: Buffer | null): ShareGroupRecord | undefined {
  const key = <T>(schema: { read(r: Reader, v: number): T }): T => {
    const k = schema.read(r, keyVersion);
    r.check();
    return k;
  };
  switch (keyVersion) {
    case ShareRecordType.METADATA:
      return {
        kind: 'metadata',
        groupId: key(MetaKey.ShareGroupMetadataKeySchema).groupId,
        epoch: readValue(MetaValue.ShareGroupMetadataValueSchema, value)?.epoch ?? null,
      };
    case ShareRecordType.PARTITION_METADATA:
      return { kind: 'partition-metadata', groupId: key(PartitionMetaKey.ShareGroupPartitionMetadataKeySchema).groupId };
    case ShareRecordType.MEMBER_METADATA: {
      const k = key(MemberKey.ShareGroupMemberMetadataKeySchema);
      return { kind: 'member', ...k, value: readValue(MemberValue.ShareGroupMemberMetadataValueSchema, value) };
    }
    case ShareRecordType.TARGET_ASSIGNMENT_METADATA:
      return {
        kind: 'target-metadata',
        groupId: key(TargetMetaKey.ShareGroupTargetAssignmentMetadataKeySchema).groupId,
        assignmentEpoch: readValue(TargetMetaValue.ShareGroupTargetAssignmentMetadataValueSchema, value)?.assignmentEpoch ?? null,
      };
    case ShareRecordType.TARGET_ASSIGNMENT_MEMBER: {
      const k = key(TargetMemberKey.ShareGroupTargetAssignmentMemberKeySchema);
      const v = readValue(TargetMemberValue.ShareGroupTargetAssignmentMemberValueSchema, value);
      return { kind: 'target-member', ...k, value: v === null ? null : topicPartitions(v.topicPartitions) };
    }
    case ShareRecordType.CURRENT_MEMBER_ASSIGNMENT: {
      const k = key(CurrentKey.ShareGroupCurrentMemberAssignmentKeySchema);
      return { kind: 'current-member', ...k, value: readValue(CurrentValue.ShareGroupCurrentMemberAssignmentValueSchema, value) };
    }
    case ShareRecordType.STATE_PARTITION_METADATA:
      return {
        kind: 'state-partition-metadata',
        groupId: key(StateMetaKey.ShareGroupStatePartitionMetadataKeySchema).groupId,
        value: readValue(StateMetaValue.ShareGroupStatePartitionMetadataValueSchema, value),
      };
    default:
      return undefined;
  }
}

const topicPartitions = (tps: readonly ShareTopicPartitions[]): ShareTopicPartitions[] =>
  tps.map((t) => ({ topicId: t.topicId, partitions: [...t.partitions] }));

/** What replay keeps of one share group: the last value of each of its records. */
export interface ShareGroupRecords {
  epoch: number | null;
  assignmentEpoch: number;
  members: Map<string, ShareGroupMemberMetadataValue>;
  targets: Map<string, ShareTopicPartitions[]>;
  current: Map<string, ShareGroupCurrentMemberAssignmentValue>;
  statePartitions: ShareGroupStatePartitionMetadataValue | null;
}

/** Applies one share-group record to what replay holds (a ShareGroupMetadata tombstone deletes the group). */
export function applyShareGroupRecord(groups: Map<string, ShareGroupRecords>, rec: ShareGroupRecord): void {
  let g = groups.get(rec.groupId);
  if (rec.kind === 'metadata' && rec.epoch === null) {
    groups.delete(rec.groupId);
    return;
  }
  if (g === undefined) {
    if (rec.kind === 'partition-metadata') return;
    g = { epoch: null, assignmentEpoch: 0, members: new Map(), targets: new Map(), current: new Map(), statePartitions: null };
    groups.set(rec.groupId, g);
  }
  switch (rec.kind) {
    case 'metadata':
      g.epoch = rec.epoch;
      break;
    case 'member':
      if (rec.value === null) g.members.delete(rec.memberId);
      else g.members.set(rec.memberId, rec.value);
      break;
    case 'target-metadata':
      g.assignmentEpoch = rec.assignmentEpoch ?? 0;
      break;
    case 'target-member':
      if (rec.value === null) g.targets.delete(rec.memberId);
      else g.targets.set(rec.memberId, rec.value);
      break;
    case 'current-member':
      if (rec.value === null) g.current.delete(rec.memberId);
      else g.current.set(rec.memberId, rec.value);
      break;
    case 'state-partition-metadata':
      g.statePartitions = rec.value;
      break;
    default:
  }
}
