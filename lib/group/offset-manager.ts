/**
 * Offset and group administration on top of the coordinator (Kafka's OffsetMetadataManager and the
 * admin paths of GroupCoordinator): OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups,
 * ListGroups, DescribeGroups, ConsumerGroupDescribe.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { ClassicGroup, ClassicGroupState as S, CONSUMER_PROTOCOL_TYPE } from './classic-group.js';
import { fromAssignment } from './consumer-coordinator.js';
import type { ConsumerGroup } from './consumer-group.js';
import { type GroupCoordinator, storeErrorFor } from './coordinator.js';
import { consumerGroupMetadataRecord, consumerGroupTargetMetadataRecord, type CoordinatorRecord, groupMetadataRecord, offsetCommitRecord } from './records.js';
import type { OffsetAndMetadata } from './offsets.js';
import { putIfNewer } from './txn-offsets.js';

export interface CommitPartition {
  partitionIndex: number;
  committedOffset: bigint;
  committedLeaderEpoch: number;
  /** v1 only; -1: now. */
  commitTimestamp: number;
  committedMetadata: string | null;
}

export interface CommitParams {
  groupId: string;
  memberId: string;
  groupInstanceId: string | null;
  generationIdOrMemberEpoch: number;
  /** v2–v4; -1: broker default. */
  retentionTimeMs: number;
  apiVersion: number;
  topics: { name: string; partitions: CommitPartition[] }[];
}

export type PartitionErrors = { name: string; partitions: { partitionIndex: number; errorCode: number }[] }[];

/** Validates the committer against the group; NONE when the commit may proceed. */
function validateCommit(c: GroupCoordinator, p: CommitParams): number {
  const gen = p.generationIdOrMemberEpoch;
  let g = c.groups.get(p.groupId);
  if (g === undefined) {
    // No group: only a simple (assign-based) consumer may commit, and that creates an empty group.
    if (gen >= 0) return p.apiVersion >= 9 ? ErrorCode.GROUP_ID_NOT_FOUND : ErrorCode.ILLEGAL_GENERATION;
    g = new ClassicGroup(p.groupId, c.now);
    c.groups.set(p.groupId, g);
  }
  if (g.type === 'consumer') {
    if (gen < 0 && g.members.size === 0) return ErrorCode.NONE;
    const m = g.members.get(p.memberId);
    if (m === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (p.apiVersion < 9) return ErrorCode.UNSUPPORTED_VERSION;
    if (gen > m.memberEpoch) return ErrorCode.FENCED_MEMBER_EPOCH;
    if (gen < m.memberEpoch) return ErrorCode.STALE_MEMBER_EPOCH;
    return ErrorCode.NONE;
  }
  if (g.is(S.DEAD)) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
  if (gen >= 0 || p.memberId !== '' || p.groupInstanceId !== null) {
    const e = c.classic.validateCurrentMember(g, p.memberId, p.groupInstanceId);
    if (e !== ErrorCode.NONE) return e;
    if (gen !== g.generationId) return ErrorCode.ILLEGAL_GENERATION;
  } else if (!g.is(S.EMPTY)) {
    return ErrorCode.UNKNOWN_MEMBER_ID;
  }
  if (g.is(S.COMPLETING_REBALANCE)) return ErrorCode.REBALANCE_IN_PROGRESS;
  const member = g.members.get(p.memberId);
  if (member !== undefined) c.classic.scheduleHeartbeat(g, member);
  return ErrorCode.NONE;
}

export async function commitOffsets(c: GroupCoordinator, p: CommitParams, partitionExists: (topic: string, partition: number) => boolean): Promise<PartitionErrors> {
  const result: PartitionErrors = p.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((pp) => ({ partitionIndex: pp.partitionIndex, errorCode: ErrorCode.NONE })) }));
  const setAll = (code: number) => result.forEach((t) => t.partitions.forEach((pp) => (pp.errorCode = code)));
  const status = c.validateGroupStatus(p.groupId, 'commit');
  if (status !== ErrorCode.NONE) {
    setAll(status);
    return result;
  }
  const valid: { topic: string; part: CommitPartition; out: { errorCode: number } }[] = [];
  p.topics.forEach((t, ti) =>
    t.partitions.forEach((pp, pi) => {
      const out = result[ti]?.partitions[pi] as { errorCode: number };
      if (!partitionExists(t.name, pp.partitionIndex)) out.errorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
      else valid.push({ topic: t.name, part: pp, out });
    }),
  );
  if (valid.length === 0) return result;
  const groupError = validateCommit(c, p);
  if (groupError !== ErrorCode.NONE) {
    for (const v of valid) v.out.errorCode = groupError;
    return result;
  }
  const now = c.now();
  const records: CoordinatorRecord[] = [];
  const toStore: { topic: string; partition: number; o: OffsetAndMetadata; out: { errorCode: number } }[] = [];
  for (const v of valid) {
    const metadata = v.part.committedMetadata ?? '';
    if (Buffer.byteLength(metadata) > c.settings.offsetMetadataMaxBytes) {
      v.out.errorCode = ErrorCode.OFFSET_METADATA_TOO_LARGE;
      continue;
    }
    const commitTimestamp = v.part.commitTimestamp >= 0 ? v.part.commitTimestamp : now;
    let expireTimestamp: number | null = null;
    if (p.apiVersion >= 2 && p.apiVersion <= 4 && p.retentionTimeMs >= 0) expireTimestamp = commitTimestamp + p.retentionTimeMs;
    else if (p.apiVersion === 1 && v.part.commitTimestamp >= 0) expireTimestamp = commitTimestamp + c.settings.offsetsRetentionMs;
    const o: OffsetAndMetadata = { offset: v.part.committedOffset, leaderEpoch: v.part.committedLeaderEpoch, metadata, commitTimestamp, expireTimestamp };
    records.push(
      offsetCommitRecord(p.groupId, v.topic, v.part.partitionIndex, {
        offset: o.offset,
        leaderEpoch: o.leaderEpoch,
        metadata,
        commitTimestamp: BigInt(commitTimestamp),
        expireTimestamp: expireTimestamp === null ? null : BigInt(expireTimestamp),
      }),
    );
    toStore.push({ topic: v.topic, partition: v.part.partitionIndex, o, out: v.out });
  }
  if (records.length === 0) return result;
  const res = await c.append(p.groupId, records);
  const error = storeErrorFor(res.errorCode, true);
  toStore.forEach((s, i) => {
    if (error !== ErrorCode.NONE) {
      s.out.errorCode = error;
      return;
    }
    s.o.recordOffset = res.offset + BigInt(i);
    putIfNewer(c, p.groupId, s.topic, s.partition, s.o);
  });
  return result;
}

export interface FetchedPartition {
  partitionIndex: number;
  committedOffset: bigint;
  committedLeaderEpoch: number;
  metadata: string;
  errorCode: number;
}

export function fetchOffsets(
  c: GroupCoordinator,
  groupId: string,
  topics: { name: string; partitionIndexes: number[] }[] | null,
  member: { memberId: string | null; memberEpoch: number } = { memberId: null, memberEpoch: -1 },
  requireStable = false,
): { errorCode: number; topics: { name: string; partitions: FetchedPartition[] }[] } {
  const status = c.validateGroupStatus(groupId, 'fetch');
  if (status !== ErrorCode.NONE) return { errorCode: status, topics: [] };
  const g = c.groups.get(groupId);
  if (g?.type === 'consumer' && (member.memberEpoch >= 0 || (member.memberId !== null && member.memberId !== ''))) {
    const m = g.members.get(member.memberId ?? '');
    if (m === undefined) return { errorCode: ErrorCode.UNKNOWN_MEMBER_ID, topics: [] };
    if (m.memberEpoch !== member.memberEpoch) return { errorCode: ErrorCode.STALE_MEMBER_EPOCH, topics: [] };
  }
  const unstable = (topic: string, partition: number): boolean => requireStable && c.pendingTxn.isPending(groupId, topic, partition);
  const entry = (partitionIndex: number, o: OffsetAndMetadata | undefined, topic: string): FetchedPartition =>
    unstable(topic, partitionIndex)
      ? { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT }
      : o === undefined
      ? { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.NONE }
      : { partitionIndex, committedOffset: o.offset, committedLeaderEpoch: o.leaderEpoch, metadata: o.metadata, errorCode: ErrorCode.NONE };
  if (topics === null) {
    const byTopic = new Map<string, FetchedPartition[]>();
    for (const { topic, partition, offset } of c.offsets.all(groupId)) {
      const list = byTopic.get(topic) ?? [];
      list.push(entry(partition, offset, topic));
      byTopic.set(topic, list);
    }
    return { errorCode: ErrorCode.NONE, topics: [...byTopic].map(([name, partitions]) => ({ name, partitions: partitions.sort((a, b) => a.partitionIndex - b.partitionIndex) })) };
  }
  return {
    errorCode: ErrorCode.NONE,
    topics: topics.map((t) => ({ name: t.name, partitions: t.partitionIndexes.map((pi) => entry(pi, c.offsets.get(groupId, t.name, pi), t.name)) })),
  };
}

export async function deleteOffsets(
  c: GroupCoordinator,
  groupId: string,
  topics: { name: string; partitions: number[] }[],
  partitionExists: (topic: string, partition: number) => boolean,
): Promise<{ errorCode: number; topics: PartitionErrors }> {
  const status = c.validateGroupStatus(groupId, 'delete');
  if (status !== ErrorCode.NONE) return { errorCode: status, topics: [] };
  const g = c.groups.get(groupId);
  if (g === undefined || (g.type === 'classic' && g.is(S.DEAD))) return { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, topics: [] };
  let subscribed: (topic: string) => boolean = () => false;
  if (g.type === 'classic' && !g.is(S.EMPTY)) {
    if (g.protocolType !== CONSUMER_PROTOCOL_TYPE) return { errorCode: ErrorCode.NON_EMPTY_GROUP, topics: [] };
    subscribed = (t) => g.isSubscribedToTopic(t);
  } else if (g.type === 'consumer') {
    const names = g.subscribedTopicNames();
    subscribed = (t) => names.has(t);
  }
  const records: CoordinatorRecord[] = [];
  const removed: { topic: string; partition: number }[] = [];
  const out: PartitionErrors = topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map((partitionIndex) => {
      if (!partitionExists(t.name, partitionIndex)) return { partitionIndex, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION };
      if (subscribed(t.name)) return { partitionIndex, errorCode: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC };
      if (c.offsets.get(groupId, t.name, partitionIndex) !== undefined) {
        records.push(offsetCommitRecord(groupId, t.name, partitionIndex, null));
        removed.push({ topic: t.name, partition: partitionIndex });
      }
      return { partitionIndex, errorCode: ErrorCode.NONE };
    }),
  }));
  for (const r of removed) c.offsets.remove(groupId, r.topic, r.partition);
  const error = await c.write(groupId, records);
  if (error !== ErrorCode.NONE) return { errorCode: storeErrorFor(error, false), topics: [] };
  return { errorCode: ErrorCode.NONE, topics: out };
}

export async function deleteGroups(c: GroupCoordinator, groupIds: string[]): Promise<{ groupId: string; errorCode: number }[]> {
  return Promise.all(
    groupIds.map(async (groupId) => {
      const status = c.validateGroupStatus(groupId, 'delete');
      if (status !== ErrorCode.NONE) return { groupId, errorCode: status };
      const g = c.groups.get(groupId);
      if (g === undefined || (g.type === 'classic' && g.is(S.DEAD))) return { groupId, errorCode: ErrorCode.GROUP_ID_NOT_FOUND };
      const records: CoordinatorRecord[] = [];
      if (g.type === 'classic') {
        if (!g.is(S.EMPTY)) return { groupId, errorCode: ErrorCode.NON_EMPTY_GROUP };
        g.transitionTo(S.DEAD);
        records.push(groupMetadataRecord(groupId, null));
      } else {
        if (g.members.size > 0) return { groupId, errorCode: ErrorCode.NON_EMPTY_GROUP };
        g.dead = true;
        records.push(consumerGroupTargetMetadataRecord(groupId, null), consumerGroupMetadataRecord(groupId, null));
      }
      for (const { topic, partition } of [...c.offsets.all(groupId)]) records.unshift(offsetCommitRecord(groupId, topic, partition, null));
      c.offsets.removeGroup(groupId);
      c.pendingTxn.removeGroup(groupId);
      c.groups.delete(groupId);
      const error = await c.write(groupId, records);
      return { groupId, errorCode: storeErrorFor(error, false) };
    }),
  );
}

export interface ListedGroup {
  groupId: string;
  protocolType: string;
  groupState: string;
  groupType: string;
}

export function listGroups(c: GroupCoordinator, states: string[], types: string[]): { errorCode: number; groups: ListedGroup[] } {
  if (!c.isActive) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, groups: [] };
  const wantStates = new Set(states.map((s) => s.toLowerCase()));
  const wantTypes = new Set(types.map((s) => s.toLowerCase()));
  const groups: ListedGroup[] = [];
  let loading = false;
  for (const g of c.groups.values()) {
    if (c.validateGroupStatus(g.groupId, 'describe') === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) loading = true;
    const listed: ListedGroup =
      g.type === 'classic'
        ? { groupId: g.groupId, protocolType: g.protocolType ?? '', groupState: g.state, groupType: 'classic' }
        : { groupId: g.groupId, protocolType: CONSUMER_PROTOCOL_TYPE, groupState: g.state, groupType: 'consumer' };
    if (listed.groupState === S.DEAD) continue;
    if (wantStates.size > 0 && !wantStates.has(listed.groupState.toLowerCase())) continue;
    if (wantTypes.size > 0 && !wantTypes.has(listed.groupType)) continue;
    groups.push(listed);
  }
  return { errorCode: loading ? ErrorCode.COORDINATOR_LOAD_IN_PROGRESS : ErrorCode.NONE, groups };
}

export interface DescribedGroup {
  errorCode: number;
  groupId: string;
  groupState: string;
  protocolType: string;
  protocolData: string;
  members: { memberId: string; groupInstanceId: string | null; clientId: string; clientHost: string; memberMetadata: Buffer; memberAssignment: Buffer }[];
}

export function describeGroup(c: GroupCoordinator, groupId: string): DescribedGroup {
  const status = c.validateGroupStatus(groupId, 'describe');
  if (status !== ErrorCode.NONE) return { errorCode: status, groupId, groupState: '', protocolType: '', protocolData: '', members: [] };
  const g = c.groups.get(groupId);
  if (g === undefined || g.type !== 'classic') return { errorCode: ErrorCode.NONE, groupId, groupState: S.DEAD, protocolType: '', protocolData: '', members: [] };
  const stable = g.is(S.STABLE);
  return {
    errorCode: ErrorCode.NONE,
    groupId,
    groupState: g.state,
    protocolType: g.protocolType ?? '',
    protocolData: stable ? (g.protocolName ?? '') : '',
    members: [...g.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      memberMetadata: stable ? m.metadata(g.protocolName) : Buffer.alloc(0),
      memberAssignment: stable ? m.assignment : Buffer.alloc(0),
    })),
  };
}

/** ConsumerGroupDescribe for one id. */
export function describeConsumerGroup(c: GroupCoordinator, groupId: string) {
  const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;
  const base = { groupId, groupState: '', groupEpoch: -1, assignmentEpoch: -1, assignorName: '', members: [], authorizedOperations: AUTHORIZED_OPERATIONS_OMITTED };
  const status = c.validateGroupStatus(groupId, 'consumer');
  if (status !== ErrorCode.NONE) return { ...base, errorCode: status, errorMessage: null };
  const g = c.groups.get(groupId);
  if (g === undefined || g.type !== 'consumer' || g.dead) {
    return { ...base, errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: g === undefined ? `Group ${groupId} not found.` : `Group ${groupId} is not a consumer group.` };
  }
  const named = (a: Map<string, Set<number>>) => ({
    topicPartitions: fromAssignment(a).map((tp) => ({ topicId: tp.topicId, topicName: c.deps.topicName(tp.topicId) ?? '', partitions: tp.partitions })),
  });
  const cg: ConsumerGroup = g;
  return {
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    groupId,
    groupState: cg.state,
    groupEpoch: cg.groupEpoch,
    assignmentEpoch: cg.assignmentEpoch,
    assignorName: cg.preferredAssignor('uniform'),
    members: [...cg.members.values()].map((m) => ({
      memberId: m.memberId,
      instanceId: m.instanceId,
      rackId: m.rackId,
      memberEpoch: m.memberEpoch,
      clientId: m.clientId,
      clientHost: m.clientHost,
      subscribedTopicNames: m.subscribedTopicNames,
      subscribedTopicRegex: m.subscribedTopicRegex,
      assignment: named(m.assignedPartitions),
      targetAssignment: named(cg.targetAssignment.get(m.memberId) ?? new Map()),
    })),
    authorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
  };
}
