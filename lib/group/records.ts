/**
 * The records the group coordinator writes to `__consumer_offsets`, in Kafka's layouts: a key and a
 * value, each an int16 schema version followed by the struct (OffsetCommitKey v1 / OffsetCommitValue
 * v3, GroupMetadataKey v2 / GroupMetadataValue v3, the KIP-848 ConsumerGroup* records at keys 3–8, the
 * KIP-932 ShareGroup* records at keys 9–15 in share-group-records.ts).
 * A null value is a tombstone. Kafka's own tools can read what gregor writes.
 */
import { Reader } from '../../protocol/codec/reader.js';
import { Writer } from '../../protocol/codec/writer.js';
import * as CGCurrentKey from '../../protocol/generated/data/consumer-group-current-member-assignment-key.js';
import * as CGCurrentValue from '../../protocol/generated/data/consumer-group-current-member-assignment-value.js';
import * as CGMemberKey from '../../protocol/generated/data/consumer-group-member-metadata-key.js';
import * as CGMemberValue from '../../protocol/generated/data/consumer-group-member-metadata-value.js';
import * as CGMetaKey from '../../protocol/generated/data/consumer-group-metadata-key.js';
import * as CGMetaValue from '../../protocol/generated/data/consumer-group-metadata-value.js';
import * as CGPartitionMetaKey from '../../protocol/generated/data/consumer-group-partition-metadata-key.js';
import * as CGTargetMemberKey from '../../protocol/generated/data/consumer-group-target-assignment-member-key.js';
import * as CGTargetMemberValue from '../../protocol/generated/data/consumer-group-target-assignment-member-value.js';
import * as CGTargetMetaKey from '../../protocol/generated/data/consumer-group-target-assignment-metadata-key.js';
import * as CGTargetMetaValue from '../../protocol/generated/data/consumer-group-target-assignment-metadata-value.js';
import { GroupMetadataKeySchema } from '../../protocol/generated/data/group-metadata-key.js';
import { type GroupMetadataValue, GroupMetadataValueSchema } from '../../protocol/generated/data/group-metadata-value.js';
import { OffsetCommitKeySchema } from '../../protocol/generated/data/offset-commit-key.js';
import { type OffsetCommitValue, OffsetCommitValueSchema } from '../../protocol/generated/data/offset-commit-value.js';
import { decodeShareGroupRecord, type ShareGroupRecord } from './share-group-records.js';

export const OFFSETS_TOPIC = '__consumer_offsets';

/** Kafka's partitionFor: Utils.abs(groupId.hashCode) % partitions, with Java's String.hashCode. */
export function javaStringHashCode(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

export function partitionFor(groupId: string, numPartitions: number): number {
  const h = javaStringHashCode(groupId);
  const abs = h === -2147483648 ? 0 : Math.abs(h);
  return abs % numPartitions;
}

/** Key schema versions: which record a key is. */
export const RecordKeyVersion = {
  OFFSET_COMMIT_V0: 0,
  OFFSET_COMMIT: 1,
  GROUP_METADATA: 2,
  CONSUMER_GROUP_METADATA: 3,
  CONSUMER_GROUP_PARTITION_METADATA: 4,
  CONSUMER_GROUP_MEMBER_METADATA: 5,
  CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: 6,
  CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: 7,
  CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: 8,
} as const;

export interface Schema<T> {
  write(w: Writer, m: T, v: number): void;
  size(m: T, v: number): number;
  read(r: Reader, v: number): T;
}

export function encode<T>(schema: Schema<T>, version: number, m: T): Buffer {
  const w = Writer.alloc(2 + schema.size(m, version));
  w.int16(version);
  schema.write(w, m, version);
  return w.done();
}

export interface CoordinatorRecord {
  key: Buffer;
  value: Buffer | null;
}

export interface OffsetCommitRecordValue {
  offset: bigint;
  leaderEpoch: number;
  metadata: string;
  commitTimestamp: bigint;
  /** Set only by OffsetCommit v2–v4 with an explicit retention time (written as value v1). */
  expireTimestamp: bigint | null;
}

export function offsetCommitRecord(group: string, topic: string, partition: number, v: OffsetCommitRecordValue | null): CoordinatorRecord {
  const key = encode(OffsetCommitKeySchema, RecordKeyVersion.OFFSET_COMMIT, { group, topic, partition });
  if (v === null) return { key, value: null };
  const version = v.expireTimestamp !== null ? 1 : 3;
  const m: OffsetCommitValue = { offset: v.offset, leaderEpoch: v.leaderEpoch, metadata: v.metadata, commitTimestamp: v.commitTimestamp };
  if (v.expireTimestamp !== null) m.expireTimestamp = v.expireTimestamp;
  return { key, value: encode(OffsetCommitValueSchema, version, m) };
}

export function groupMetadataRecord(group: string, value: GroupMetadataValue | null): CoordinatorRecord {
  const key = encode(GroupMetadataKeySchema, RecordKeyVersion.GROUP_METADATA, { group });
  return { key, value: value === null ? null : encode(GroupMetadataValueSchema, 3, value) };
}

export function consumerGroupMetadataRecord(groupId: string, epoch: number | null): CoordinatorRecord {
  const key = encode(CGMetaKey.ConsumerGroupMetadataKeySchema, RecordKeyVersion.CONSUMER_GROUP_METADATA, { groupId });
  return { key, value: epoch === null ? null : encode(CGMetaValue.ConsumerGroupMetadataValueSchema, 0, { epoch }) };
}

/**
 * ConsumerGroupPartitionMetadata (the subscription metadata): gregor recomputes it instead of persisting
 * it, so only its tombstone is written, where Kafka deletes a group's records.
 */
export function consumerGroupPartitionMetadataTombstone(groupId: string): CoordinatorRecord {
  return {
    key: encode(CGPartitionMetaKey.ConsumerGroupPartitionMetadataKeySchema, RecordKeyVersion.CONSUMER_GROUP_PARTITION_METADATA, {
      groupId,
    }),
    value: null,
  };
}

export function consumerGroupMemberRecord(
  groupId: string,
  memberId: string,
  value: CGMemberValue.ConsumerGroupMemberMetadataValue | null,
): CoordinatorRecord {
  const key = encode(CGMemberKey.ConsumerGroupMemberMetadataKeySchema, RecordKeyVersion.CONSUMER_GROUP_MEMBER_METADATA, {
    groupId,
    memberId,
  });
  return { key, value: value === null ? null : encode(CGMemberValue.ConsumerGroupMemberMetadataValueSchema, 0, value) };
}

export function consumerGroupTargetMetadataRecord(groupId: string, assignmentEpoch: number | null): CoordinatorRecord {
  const key = encode(
    CGTargetMetaKey.ConsumerGroupTargetAssignmentMetadataKeySchema,
    RecordKeyVersion.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    { groupId },
  );
  return {
    key,
    value:
      assignmentEpoch === null ? null : encode(CGTargetMetaValue.ConsumerGroupTargetAssignmentMetadataValueSchema, 0, { assignmentEpoch }),
  };
}

export function consumerGroupTargetMemberRecord(
  groupId: string,
  memberId: string,
  value: CGTargetMemberValue.ConsumerGroupTargetAssignmentMemberValue | null,
): CoordinatorRecord {
  const key = encode(
    CGTargetMemberKey.ConsumerGroupTargetAssignmentMemberKeySchema,
    RecordKeyVersion.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    { groupId, memberId },
  );
  return { key, value: value === null ? null : encode(CGTargetMemberValue.ConsumerGroupTargetAssignmentMemberValueSchema, 0, value) };
}

export function consumerGroupCurrentMemberRecord(
  groupId: string,
  memberId: string,
  value: CGCurrentValue.ConsumerGroupCurrentMemberAssignmentValue | null,
): CoordinatorRecord {
  const key = encode(
    CGCurrentKey.ConsumerGroupCurrentMemberAssignmentKeySchema,
    RecordKeyVersion.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    { groupId, memberId },
  );
  return { key, value: value === null ? null : encode(CGCurrentValue.ConsumerGroupCurrentMemberAssignmentValueSchema, 0, value) };
}

/** One decoded `__consumer_offsets` record (value null: tombstone). Unknown keys decode as `unknown`. */
export type DecodedRecord =
  | { type: 'offset'; group: string; topic: string; partition: number; value: OffsetCommitRecordValue | null }
  | { type: 'group'; group: string; value: GroupMetadataValue | null }
  | { type: 'consumer-group'; group: string; epoch: number | null }
  | { type: 'consumer-member'; group: string; memberId: string; value: CGMemberValue.ConsumerGroupMemberMetadataValue | null }
  | { type: 'consumer-target-metadata'; group: string; assignmentEpoch: number | null }
  | {
      type: 'consumer-target-member';
      group: string;
      memberId: string;
      value: CGTargetMemberValue.ConsumerGroupTargetAssignmentMemberValue | null;
    }
  | {
      type: 'consumer-current-member';
      group: string;
      memberId: string;
      value: CGCurrentValue.ConsumerGroupCurrentMemberAssignmentValue | null;
    }
  | { type: 'consumer-partition-metadata'; group: string }
  | { type: 'share'; record: ShareGroupRecord }
  | { type: 'unknown'; keyVersion: number };

export function readValue<T>(schema: Schema<T>, value: Buffer | null): T | null {
  if (value === null) return null;
  const r = new Reader(value);
  const v = r.int16();
  const m = schema.read(r, v);
  r.check();
  return m;
}

/** Decodes a key/value pair; throws ProtocolError on malformed bytes. */
export function decodeCoordinatorRecord(key: Buffer, value: Buffer | null): DecodedRecord {
  const r = new Reader(key);
  const kv = r.int16();
  switch (kv) {
    case RecordKeyVersion.OFFSET_COMMIT_V0:
    case RecordKeyVersion.OFFSET_COMMIT: {
      const k = OffsetCommitKeySchema.read(r, kv);
      r.check();
      const v = readValue(OffsetCommitValueSchema, value);
      return {
        type: 'offset',
        group: k.group,
        topic: k.topic,
        partition: k.partition,
        value:
          v === null
            ? null
            : {
                offset: v.offset,
                leaderEpoch: v.leaderEpoch ?? -1,
                metadata: v.metadata,
                commitTimestamp: v.commitTimestamp,
                expireTimestamp: v.expireTimestamp === undefined || v.expireTimestamp < 0n ? null : v.expireTimestamp,
              },
      };
    }
    case RecordKeyVersion.GROUP_METADATA: {
      const k = GroupMetadataKeySchema.read(r, kv);
      r.check();
      return { type: 'group', group: k.group, value: readValue(GroupMetadataValueSchema, value) };
    }
    case RecordKeyVersion.CONSUMER_GROUP_METADATA: {
      const k = CGMetaKey.ConsumerGroupMetadataKeySchema.read(r, kv);
      r.check();
      return {
        type: 'consumer-group',
        group: k.groupId,
        epoch: readValue(CGMetaValue.ConsumerGroupMetadataValueSchema, value)?.epoch ?? null,
      };
    }
    case RecordKeyVersion.CONSUMER_GROUP_PARTITION_METADATA: {
      const k = CGPartitionMetaKey.ConsumerGroupPartitionMetadataKeySchema.read(r, kv);
      r.check();
      return { type: 'consumer-partition-metadata', group: k.groupId };
    }
    case RecordKeyVersion.CONSUMER_GROUP_MEMBER_METADATA: {
      const k = CGMemberKey.ConsumerGroupMemberMetadataKeySchema.read(r, kv);
      r.check();
      return {
        type: 'consumer-member',
        group: k.groupId,
        memberId: k.memberId,
        value: readValue(CGMemberValue.ConsumerGroupMemberMetadataValueSchema, value),
      };
    }
    case RecordKeyVersion.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: {
      const k = CGTargetMetaKey.ConsumerGroupTargetAssignmentMetadataKeySchema.read(r, kv);
      r.check();
      return {
        type: 'consumer-target-metadata',
        group: k.groupId,
        assignmentEpoch: readValue(CGTargetMetaValue.ConsumerGroupTargetAssignmentMetadataValueSchema, value)?.assignmentEpoch ?? null,
      };
    }
    case RecordKeyVersion.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: {
      const k = CGTargetMemberKey.ConsumerGroupTargetAssignmentMemberKeySchema.read(r, kv);
      r.check();
      return {
        type: 'consumer-target-member',
        group: k.groupId,
        memberId: k.memberId,
        value: readValue(CGTargetMemberValue.ConsumerGroupTargetAssignmentMemberValueSchema, value),
      };
    }
    case RecordKeyVersion.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: {
      const k = CGCurrentKey.ConsumerGroupCurrentMemberAssignmentKeySchema.read(r, kv);
      r.check();
      return {
        type: 'consumer-current-member',
        group: k.groupId,
        memberId: k.memberId,
        value: readValue(CGCurrentValue.ConsumerGroupCurrentMemberAssignmentValueSchema, value),
      };
    }
    default: {
      const share = decodeShareGroupRecord(kv, r, value);
      return share === undefined ? { type: 'unknown', keyVersion: kv } : { type: 'share', record: share };
    }
  }
}
