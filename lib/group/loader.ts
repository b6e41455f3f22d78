/**
 * Replays one `__consumer_offsets` partition into groups and offsets (Kafka's loadGroupsAndOffsets):
 * the last record per key wins, tombstones delete. Reads with the log's own `read`, batch by batch.
 * What is replayed goes into the coordinator (loadInto); a partition the coordinator resigns leaves
 * it (unloadPartition, Kafka's onResignation).
 */
import { ControlRecordType, type RecordBatch, readControlRecordKey } from '../../protocol/records/index.js';
import { type ReplayableLog, replayBatches } from '../log/replay.js';
import type { GroupMetadataValue } from '../../protocol/generated/data/group-metadata-value.js';
import type { ConsumerGroupMemberMetadataValue } from '../../protocol/generated/data/consumer-group-member-metadata-value.js';
import type { ConsumerGroupCurrentMemberAssignmentValue } from '../../protocol/generated/data/consumer-group-current-member-assignment-value.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { ClassicGroup, ClassicGroupState } from './classic-group.js';
import { toAssignment } from './consumer-coordinator.js';
import type { Group, GroupCoordinator } from './coordinator.js';
import { ConsumerGroup, ConsumerGroupMember, type MemberState } from './consumer-group.js';
import type { OffsetAndMetadata } from './offsets.js';
import { decodeCoordinatorRecord, OFFSETS_TOPIC } from './records.js';
import type { AppendOrigin } from '../txn/producer-state.js';
import { applyShareGroupRecord, type ShareGroupRecords } from './share-group-records.js';

/** The part of a partition log the coordinator uses (PartitionLog satisfies it). */
export interface OffsetsLog extends ReplayableLog {
  /** Whether the files are open: `append` needs them, `open()` first (a log known empty opens on its first write). */
  readonly isOpen: boolean;
  open(): Promise<void>;
  append(
    records: Buffer,
    opts: { leaderEpoch: number; origin?: AppendOrigin },
  ): { info: { firstOffset: bigint; lastOffset: bigint }; written: Promise<void> };
}

interface ConsumerGroupRecords {
  epoch: number | null;
  assignmentEpoch: number;
  members: Map<string, ConsumerGroupMemberMetadataValue>;
  targets: Map<string, { topicId: string; partitions: number[] }[]>;
  current: Map<string, ConsumerGroupCurrentMemberAssignmentValue>;
}

/** A transactional offset commit waiting for its transaction's marker. */
export interface PendingOffset {
  group: string;
  topic: string;
  partition: number;
  value: OffsetAndMetadata;
}

export interface LoadedPartition {
  offsets: Map<string, { group: string; topic: string; partition: number; value: OffsetAndMetadata | null; recordOffset: bigint }>;
  classic: Map<string, GroupMetadataValue | null>;
  consumer: Map<string, ConsumerGroupRecords>;
  /** KIP-932 share groups (their membership; what they consumed is in `__share_group_state`) */
  share: Map<string, ShareGroupRecords>;
  /** Transactional offset commits whose transaction had no marker yet: producer id → key → offset. */
  pendingTxn: Map<bigint, Map<string, PendingOffset>>;
}

const MAX_DECOMPRESSED = 64 << 20;

export const offsetKey = (group: string, topic: string, partition: number): string => `${group}\0${topic}\0${partition}`;

/** A marker in `__consumer_offsets`: the producer's pending offsets become committed (unless a later plain commit won) or go. */
function completeTxn(out: LoadedPartition, batch: RecordBatch): void {
  const marker = batch.records({ maxOutput: MAX_DECOMPRESSED })[0];
  if (marker === undefined) return;
  const type = readControlRecordKey(marker.key).type;
  if (type !== ControlRecordType.COMMIT && type !== ControlRecordType.ABORT) return;
  const pending = out.pendingTxn.get(batch.producerId);
  out.pendingTxn.delete(batch.producerId);
  if (pending === undefined || type === ControlRecordType.ABORT) return;
  for (const [k, p] of pending) {
    const cur = out.offsets.get(k);
    const at = p.value.recordOffset ?? -1n;
    if (cur === undefined || cur.recordOffset < at)
      out.offsets.set(k, { group: p.group, topic: p.topic, partition: p.partition, value: p.value, recordOffset: at });
  }
}

export async function loadPartition(log: ReplayableLog): Promise<LoadedPartition> {
  const out: LoadedPartition = { offsets: new Map(), classic: new Map(), consumer: new Map(), share: new Map(), pendingTxn: new Map() };
  const cg = (group: string): ConsumerGroupRecords => {
    let c = out.consumer.get(group);
    if (c === undefined)
      out.consumer.set(group, (c = { epoch: null, assignmentEpoch: 0, members: new Map(), targets: new Map(), current: new Map() }));
    return c;
  };
  await replayBatches(log, (batch) => {
    if (batch.isControl) {
      if (batch.isTransactional) completeTxn(out, batch);
      return;
    }
    const txn = batch.isTransactional ? batch.producerId : null;
    for (const r of batch.records({ maxOutput: MAX_DECOMPRESSED })) {
      if (r.key === null) continue;
      const d = decodeCoordinatorRecord(r.key, r.value);
      switch (d.type) {
        case 'offset': {
          const v = d.value;
          const k = offsetKey(d.group, d.topic, d.partition);
          const value: OffsetAndMetadata | null =
            v === null
              ? null
              : {
                  offset: v.offset,
                  leaderEpoch: v.leaderEpoch,
                  metadata: v.metadata,
                  commitTimestamp: Number(v.commitTimestamp),
                  expireTimestamp: v.expireTimestamp === null ? null : Number(v.expireTimestamp),
                  recordOffset: r.offset,
                };
          if (txn !== null) {
            if (value === null) break;
            let pending = out.pendingTxn.get(txn);
            if (pending === undefined) out.pendingTxn.set(txn, (pending = new Map<string, PendingOffset>()));
            pending.set(k, { group: d.group, topic: d.topic, partition: d.partition, value });
            break;
          }
          out.offsets.set(k, { group: d.group, topic: d.topic, partition: d.partition, value, recordOffset: r.offset });
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
        case 'share':
          applyShareGroupRecord(out.share, d.record);
          break;
        default:
      }
    }
  });
  return out;
}

/** What consumer-group and share-group members keep alike of their replayed metadata. */
export interface ReplayedMemberMetadata {
  rackId: string | null;
  clientId: string;
  clientHost: string;
  subscribedTopicNames: string[];
}

/** Sets a replayed member's rack, client id and host, and subscribed topic names (sorted, as the coordinators keep them). */
export function restoreMemberMetadata(m: ReplayedMemberMetadata, v: Readonly<ReplayedMemberMetadata>): void {
  m.rackId = v.rackId;
  m.clientId = v.clientId;
  m.clientHost = v.clientHost;
  m.subscribedTopicNames = [...v.subscribedTopicNames].sort();
}

/**
 * Builds a consumer group from its replayed records (members without metadata are dropped); members
 * using the classic protocol come back with their classic metadata.
 */
export function buildConsumerGroup(groupId: string, r: ConsumerGroupRecords): ConsumerGroup {
  const g = new ConsumerGroup(groupId);
  g.groupEpoch = r.epoch ?? 0;
  g.assignmentEpoch = r.assignmentEpoch;
  for (const [memberId, v] of r.members) {
    const m = new ConsumerGroupMember(memberId);
    m.instanceId = v.instanceId;
    restoreMemberMetadata(m, v);
    m.subscribedTopicRegex = v.subscribedTopicRegex;
    m.rebalanceTimeoutMs = v.rebalanceTimeoutMs;
    m.serverAssignor = v.serverAssignor;
    const classic = v.classicMemberMetadata ?? null;
    if (classic !== null)
      m.classicMemberMetadata = {
        sessionTimeoutMs: classic.sessionTimeoutMs,
        supportedProtocols: classic.supportedProtocols.map((p) => ({ name: p.name, metadata: p.metadata })),
      };
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

/** The coordinator state partitions are loaded into and unloaded from (GroupCoordinator). */
export type LoadTarget = Pick<
  GroupCoordinator,
  'groups' | 'offsets' | 'pendingTxn' | 'classic' | 'consumer' | 'now' | 'partitionFor' | 'logger' | 'shareGroups'
>;

/**
 * Replays an offsets partition (nothing when it is missing or empty) into the coordinator: committed
 * and pending transactional offsets, groups with their members' timers. `groups` is the
 * coordinator's group count afterwards.
 */
export async function loadInto(c: LoadTarget, log: OffsetsLog | undefined): Promise<{ groups: number; offsets: number }> {
  if (log === undefined || log.logEndOffset <= log.logStartOffset) return { groups: 0, offsets: 0 };
  const l = await loadPartition(log);
  let offsets = 0;
  for (const o of l.offsets.values()) {
    if (o.value === null) continue;
    c.offsets.put(o.group, o.topic, o.partition, o.value);
    offsets++;
  }
  for (const [pid, pending] of l.pendingTxn) for (const p of pending.values()) c.pendingTxn.add(pid, p);
  for (const [groupId, v] of l.classic) {
    if (v === null) continue;
    const g = ClassicGroup.load(groupId, v, c.now);
    c.groups.set(groupId, g);
    for (const m of g.members.values()) c.classic.scheduleHeartbeat(g, m);
  }
  for (const [groupId, r] of l.consumer) {
    if (r.epoch === null) continue;
    const g = buildConsumerGroup(groupId, r);
    c.groups.set(groupId, g);
    c.consumer.subscriptions.loaded(g);
    for (const m of g.members.values()) c.consumer.timers.scheduleSessionTimeout(g, m);
  }
  for (const [groupId, r] of l.share) if (r.epoch !== null) c.shareGroups?.load(groupId, r);
  // Groups known only by their offsets are simple (assign-based) groups.
  for (const groupId of c.offsets.groups()) if (!c.groups.has(groupId)) c.groups.set(groupId, new ClassicGroup(groupId, c.now));
  return { groups: c.groups.size, offsets };
}

/** A group leaving the coordinator: its waiting members are answered NOT_COORDINATOR, its timers stop. */
export function unloadGroup(c: LoadTarget, g: Group): void {
  if (g.type === 'classic') {
    c.classic.unload(g, ErrorCode.NOT_COORDINATOR);
    g.state = ClassicGroupState.DEAD;
  } else {
    for (const m of g.members.values()) c.consumer.timers.cancelTimers(m);
    g.dead = true;
  }
}

/** The coordinator resigned offsets partition `p`: its groups and offsets are dropped. */
export function unloadPartition(c: LoadTarget, p: number): void {
  for (const [groupId, g] of c.groups) {
    if (c.partitionFor(groupId) !== p) continue;
    unloadGroup(c, g);
    c.groups.delete(groupId);
  }
  for (const groupId of [...c.offsets.groups()]) if (c.partitionFor(groupId) === p) c.offsets.removeGroup(groupId);
  c.shareGroups?.unload((groupId) => c.partitionFor(groupId) === p);
  c.logger.info({ partition: p }, `resigned as coordinator of ${OFFSETS_TOPIC}-${p}`);
}
