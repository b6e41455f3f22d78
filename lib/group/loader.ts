/**
 * Replays one `__consumer_offsets` partition into groups and offsets (Kafka's loadGroupsAndOffsets):
 * the last record per key wins, tombstones delete. Reads with the log's own `read`, batch by batch.
 */
import { logEntries } from '../../protocol/records/index.js';
import type { GroupMetadataValue } from '../../protocol/generated/data/group-metadata-value.js';
import type { ConsumerGroupMemberMetadataValue } from '../../protocol/generated/data/consumer-group-member-metadata-value.js';
import type { ConsumerGroupCurrentMemberAssignmentValue } from '../../protocol/generated/data/consumer-group-current-member-assignment-value.js';
import { toAssignment } from './consumer-coordinator.js';
import { ConsumerGroup, ConsumerGroupMember, type MemberState } from './consumer-group.js';
import type { OffsetAndMetadata } from './offsets.js';
import { decodeCoordinatorRecord } from './records.js';

/** The part of a partition log the coordinator uses (PartitionLog satisfies it). */
export interface OffsetsLog {
  append(records: Buffer, opts: { leaderEpoch: number }): { written: Promise<void> };
  read(fetchOffset: bigint, maxBytes: number, opts: { minOneMessage: boolean }): Promise<{ records: Buffer[] }>;
  readonly logStartOffset: bigint;
  readonly logEndOffset: bigint;
}

interface ConsumerGroupRecords {
  epoch: number | null;
  assignmentEpoch: number;
  members: Map<string, ConsumerGroupMemberMetadataValue>;
  targets: Map<string, { topicId: string; partitions: number[] }[]>;
  current: Map<string, ConsumerGroupCurrentMemberAssignmentValue>;
}

export interface LoadedPartition {
  offsets: Map<string, { group: string; topic: string; partition: number; value: OffsetAndMetadata | null }>;
  classic: Map<string, GroupMetadataValue | null>;
  consumer: Map<string, ConsumerGroupRecords>;
}

const MAX_READ = 1 << 20;
const MAX_DECOMPRESSED = 64 << 20;

export async function loadPartition(log: OffsetsLog): Promise<LoadedPartition> {
  const out: LoadedPartition = { offsets: new Map(), classic: new Map(), consumer: new Map() };
  const cg = (group: string): ConsumerGroupRecords => {
    let c = out.consumer.get(group);
    if (c === undefined) out.consumer.set(group, (c = { epoch: null, assignmentEpoch: 0, members: new Map(), targets: new Map(), current: new Map() }));
    return c;
  };
  let offset = log.logStartOffset;
  const end = log.logEndOffset;
  while (offset < end) {
    const { records } = await log.read(offset, MAX_READ, { minOneMessage: true });
    const buf = records.length === 1 ? (records[0] as Buffer) : Buffer.concat(records);
    if (buf.length === 0) break;
    let progressed = false;
    for (const entry of logEntries(buf)) {
      if (entry.kind !== 'batch') break;
      const batch = entry.batch;
      progressed = true;
      offset = batch.nextOffset;
      if (batch.isControl) continue;
      for (const r of batch.records({ maxOutput: MAX_DECOMPRESSED })) {
        if (r.key === null) continue;
        const d = decodeCoordinatorRecord(r.key, r.value);
        switch (d.type) {
          case 'offset': {
            const v = d.value;
            out.offsets.set(`${d.group}\0${d.topic}\0${d.partition}`, {
              group: d.group,
              topic: d.topic,
              partition: d.partition,
              value: v === null ? null : { offset: v.offset, leaderEpoch: v.leaderEpoch, metadata: v.metadata, commitTimestamp: Number(v.commitTimestamp), expireTimestamp: v.expireTimestamp === null ? null : Number(v.expireTimestamp) },
            });
            break;
          }
          case 'group':
            out.classic.set(d.group, d.value);
            break;
          case 'consumer-group':
            if (d.epoch === null) out.consumer.delete(d.group);
            else cg(d.group).epoch = d.epoch;
            break;
          case 'consumer-member':
            if (d.value === null) cg(d.group).members.delete(d.memberId);
            else cg(d.group).members.set(d.memberId, d.value);
            break;
          case 'consumer-target-metadata':
            cg(d.group).assignmentEpoch = d.assignmentEpoch ?? 0;
            break;
          case 'consumer-target-member':
            if (d.value === null) cg(d.group).targets.delete(d.memberId);
            else cg(d.group).targets.set(d.memberId, d.value.topicPartitions);
            break;
          case 'consumer-current-member':
            if (d.value === null) cg(d.group).current.delete(d.memberId);
            else cg(d.group).current.set(d.memberId, d.value);
            break;
          default:
        }
      }
    }
    if (!progressed) break;
  }
  return out;
}

/** Builds a consumer group from its replayed records (members without metadata are dropped). */
export function buildConsumerGroup(groupId: string, r: ConsumerGroupRecords): ConsumerGroup {
  const g = new ConsumerGroup(groupId);
  g.groupEpoch = r.epoch ?? 0;
  g.assignmentEpoch = r.assignmentEpoch;
  for (const [memberId, v] of r.members) {
    const m = new ConsumerGroupMember(memberId);
    m.instanceId = v.instanceId;
    m.rackId = v.rackId;
    m.clientId = v.clientId;
    m.clientHost = v.clientHost;
    m.subscribedTopicNames = [...v.subscribedTopicNames].sort();
    m.subscribedTopicRegex = v.subscribedTopicRegex;
    m.rebalanceTimeoutMs = v.rebalanceTimeoutMs;
    m.serverAssignor = v.serverAssignor;
    g.members.set(memberId, m);
    const cur = r.current.get(memberId);
    if (cur !== undefined) {
      g.updateAssignment(m, {
        memberEpoch: cur.memberEpoch,
        previousMemberEpoch: cur.previousMemberEpoch,
        state: cur.state as MemberState,
        assignedPartitions: toAssignment(cur.assignedPartitions),
        partitionsPendingRevocation: toAssignment(cur.partitionsPendingRevocation),
      });
    }
    const target = r.targets.get(memberId);
    if (target !== undefined) g.targetAssignment.set(memberId, toAssignment(target));
  }
  return g;
}
