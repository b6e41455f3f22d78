/**
 * The admin views of the coordinator, as Kafka 4's GroupCoordinatorService / GroupMetadataManager /
 * OffsetMetadataManager and KafkaApis answer them: DescribeGroups, ConsumerGroupDescribe,
 * ListGroups, DeleteGroups and OffsetDelete.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { ClassicGroupState as S, CONSUMER_PROTOCOL_TYPE } from './classic-group.js';
import { fromAssignment } from './consumer-coordinator.js';
import type { Assignment } from './assignors.js';
import type { GroupCoordinator } from './coordinator.js';
import { storeErrorFor } from './store-errors.js';
import type { PartitionErrors } from './offset-manager.js';
import {
  consumerGroupMetadataRecord,
  consumerGroupTargetMetadataRecord,
  type CoordinatorRecord,
  groupMetadataRecord,
  offsetCommitRecord,
} from './records.js';

/** AuthorizedOperations when they were not asked for (or the group is in error). */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

/**
 * Without an authorizer Kafka allows every operation a GROUP resource supports (AclEntry's
 * supportedOperations): READ(3), DELETE(6), DESCRIBE(8), DESCRIBE_CONFIGS(10), ALTER_CONFIGS(11),
 * as Utils.to32BitField sets them: 3400.
 */
export const GROUP_AUTHORIZED_OPERATIONS = [3, 6, 8, 10, 11].reduce((bits, op) => bits | (1 << op), 0);

const authorizedOperations = (include: boolean): number => (include ? GROUP_AUTHORIZED_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED);

// ---- ListGroups ----

export interface ListedGroup {
  groupId: string;
  protocolType: string;
  groupState: string;
  groupType: string;
}

/**
 * Every live group, filtered by state (v4+: trimmed, case-insensitive) and type (v5+: case-insensitive;
 * an unknown type matches no group). While any `__consumer_offsets` partition is still loading the
 * answer is COORDINATOR_LOAD_IN_PROGRESS without groups, as Kafka's read-all operation fails.
 */
export function listGroups(c: GroupCoordinator, states: string[], types: string[]): { errorCode: number; groups: ListedGroup[] } {
  if (!c.isActive) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, groups: [] };
  if (c.isLoading) return { errorCode: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, groups: [] };
  const wantStates = new Set(states.map((s) => s.toLowerCase().trim()));
  const wantTypes = new Set(types.map((s) => s.toLowerCase()));
  const groups: ListedGroup[] = [];
  for (const g of c.groups.values()) {
    const listed: ListedGroup =
      g.type === 'classic'
        ? { groupId: g.groupId, protocolType: g.protocolType ?? '', groupState: g.state, groupType: 'classic' }
        : { groupId: g.groupId, protocolType: CONSUMER_PROTOCOL_TYPE, groupState: g.state, groupType: 'consumer' };
    if (listed.groupState === S.DEAD) continue;
    if (states.length > 0 && !wantStates.has(listed.groupState.toLowerCase())) continue;
    if (types.length > 0 && !wantTypes.has(listed.groupType)) continue;
    groups.push(listed);
  }
  return { errorCode: ErrorCode.NONE, groups };
}

// ---- DescribeGroups ----

export interface DescribedGroup {
  errorCode: number;
  groupId: string;
  groupState: string;
  protocolType: string;
  protocolData: string;
  members: {
    memberId: string;
    groupInstanceId: string | null;
    clientId: string;
    clientHost: string;
    memberMetadata: Buffer;
    memberAssignment: Buffer;
  }[];
  authorizedOperations: number;
}

/**
 * A classic group; anything else (no group, a KIP-848 group) is `Dead` without error up to v5. Member
 * metadata, assignment and the protocol only while Stable. The authorized operations go on every
 * answer without error when asked for (the Dead ones too, as KafkaApis sets them).
 */
export function describeGroup(c: GroupCoordinator, groupId: string, includeAuthorizedOperations = false): DescribedGroup {
  const status = c.validateGroupStatus(groupId, 'describe');
  if (status !== ErrorCode.NONE)
    return {
      errorCode: status,
      groupId,
      groupState: '',
      protocolType: '',
      protocolData: '',
      members: [],
      authorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
    };
  const ops = authorizedOperations(includeAuthorizedOperations);
  const g = c.groups.get(groupId);
  if (g === undefined || g.type !== 'classic')
    return {
      errorCode: ErrorCode.NONE,
      groupId,
      groupState: S.DEAD,
      protocolType: '',
      protocolData: '',
      members: [],
      authorizedOperations: ops,
    };
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
    authorizedOperations: ops,
  };
}

// ---- ConsumerGroupDescribe ----

/** An answer without a group: the epochs at their schema default (0), as Kafka leaves them. */
export function consumerGroupDescribeError(groupId: string, errorCode: number, errorMessage: string | null = null) {
  return {
    errorCode,
    errorMessage,
    groupId,
    groupState: '',
    groupEpoch: 0,
    assignmentEpoch: 0,
    assignorName: '',
    members: [],
    authorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
  };
}

/**
 * ConsumerGroupDescribe for one id (ConsumerGroup.asDescribedGroup): GROUP_ID_NOT_FOUND with Kafka's
 * message for a missing or classic group; assignments name their topics, and a topic that no longer
 * exists is left out.
 */
export function describeConsumerGroup(c: GroupCoordinator, groupId: string, includeAuthorizedOperations = false) {
  const status = c.validateGroupStatus(groupId, 'consumer');
  if (status !== ErrorCode.NONE) return consumerGroupDescribeError(groupId, status);
  const g = c.groups.get(groupId);
  if (g === undefined || (g.type === 'consumer' && g.dead))
    return consumerGroupDescribeError(groupId, ErrorCode.GROUP_ID_NOT_FOUND, `Group ${groupId} not found.`);
  if (g.type !== 'consumer')
    return consumerGroupDescribeError(groupId, ErrorCode.GROUP_ID_NOT_FOUND, `Group ${groupId} is not a consumer group.`);
  const named = (a: Assignment) => ({
    topicPartitions: fromAssignment(a).flatMap((tp) => {
      const topicName = c.deps.topicName(tp.topicId);
      return topicName === undefined ? [] : [{ topicId: tp.topicId, topicName, partitions: tp.partitions }];
    }),
  });
  return {
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    groupId,
    groupState: g.state,
    groupEpoch: g.groupEpoch,
    assignmentEpoch: g.assignmentEpoch,
    assignorName: g.preferredAssignor('uniform'),
    members: [...g.members.values()].map((m) => ({
      memberId: m.memberId,
      instanceId: m.instanceId,
      rackId: m.rackId,
      memberEpoch: m.memberEpoch,
      clientId: m.clientId,
      clientHost: m.clientHost,
      subscribedTopicNames: m.subscribedTopicNames,
      subscribedTopicRegex: m.subscribedTopicRegex,
      assignment: named(m.assignedPartitions),
      targetAssignment: named(g.targetAssignment.get(m.memberId) ?? new Map<string, Set<number>>()),
    })),
    authorizedOperations: authorizedOperations(includeAuthorizedOperations),
  };
}

// ---- DeleteGroups ----

/**
 * DeleteGroups: GROUP_ID_NOT_FOUND for no group, NON_EMPTY_GROUP while it has members; else a
 * tombstone for every committed offset and every offset pending in a transaction, then the group's.
 */
export async function deleteGroups(c: GroupCoordinator, groupIds: string[]): Promise<{ groupId: string; errorCode: number }[]> {
  return Promise.all(
    groupIds.map(async (groupId) => {
      const status = c.validateGroupStatus(groupId, 'delete');
      if (status !== ErrorCode.NONE) return { groupId, errorCode: status };
      const g = c.groups.get(groupId);
      if (g === undefined || (g.type === 'classic' && g.is(S.DEAD)) || (g.type === 'consumer' && g.dead))
        return { groupId, errorCode: ErrorCode.GROUP_ID_NOT_FOUND };
      if (g.type === 'classic' ? !g.is(S.EMPTY) : g.members.size > 0) return { groupId, errorCode: ErrorCode.NON_EMPTY_GROUP };
      const records: CoordinatorRecord[] = [];
      for (const { topic, partition } of c.offsets.all(groupId)) records.push(offsetCommitRecord(groupId, topic, partition, null));
      for (const { topic, partition } of c.pendingTxn.partitionsOf(groupId)) {
        if (c.offsets.get(groupId, topic, partition) === undefined) records.push(offsetCommitRecord(groupId, topic, partition, null));
      }
      if (g.type === 'classic') {
        g.transitionTo(S.DEAD);
        records.push(groupMetadataRecord(groupId, null));
      } else {
        g.dead = true;
        records.push(consumerGroupTargetMetadataRecord(groupId, null), consumerGroupMetadataRecord(groupId, null));
      }
      c.offsets.removeGroup(groupId);
      c.pendingTxn.removeGroup(groupId);
      c.groups.delete(groupId);
      const error = await c.write(groupId, records);
      return { groupId, errorCode: storeErrorFor(error, false) };
    }),
  );
}

// ---- OffsetDelete ----

/**
 * OffsetDelete as KafkaApis and OffsetMetadataManager answer it: INVALID_GROUP_ID for "",
 * GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP for a live classic group of another protocol type than
 * "consumer" (all with no topics). Partitions that do not exist get UNKNOWN_TOPIC_OR_PARTITION and
 * come first in their topic (KafkaApis answers them before merging the coordinator's answer); a
 * topic the group subscribes to gets GROUP_SUBSCRIBED_TO_TOPIC for every partition; every other
 * partition gets NONE, with a tombstone when it had an offset, committed or pending in a
 * transaction (the pending one is dropped).
 */
export async function deleteOffsets(
  c: GroupCoordinator,
  groupId: string,
  topics: { name: string; partitions: number[] }[],
  partitionExists: (topic: string, partition: number) => boolean,
): Promise<{ errorCode: number; topics: PartitionErrors }> {
  if (!c.isActive) return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, topics: [] };
  if (groupId === '') return { errorCode: ErrorCode.INVALID_GROUP_ID, topics: [] };
  const status = c.validateGroupStatus(groupId, 'delete');
  if (status !== ErrorCode.NONE) return { errorCode: status, topics: [] };
  const g = c.groups.get(groupId);
  if (g === undefined || (g.type === 'classic' && g.is(S.DEAD)) || (g.type === 'consumer' && g.dead))
    return { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, topics: [] };
  let subscribed: (topic: string) => boolean = () => false;
  if (g.type === 'classic' && !g.is(S.EMPTY)) {
    if (g.protocolType !== CONSUMER_PROTOCOL_TYPE) return { errorCode: ErrorCode.NON_EMPTY_GROUP, topics: [] };
    subscribed = (t) => g.isSubscribedToTopic(t);
  } else if (g.type === 'consumer') {
    const names = g.subscribedTopicNames();
    subscribed = (t) => names.has(t);
  }
  // KafkaApis: the partitions that do not exist, answered first.
  const out: PartitionErrors = [];
  const valid: { name: string; partitions: number[] }[] = [];
  for (const t of topics) {
    const unknown = t.partitions.filter((p) => !partitionExists(t.name, p));
    if (unknown.length > 0)
      out.push({
        name: t.name,
        partitions: unknown.map((partitionIndex) => ({ partitionIndex, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })),
      });
    const known = t.partitions.filter((p) => partitionExists(t.name, p));
    if (known.length > 0) valid.push({ name: t.name, partitions: known });
  }
  // The coordinator's answer, merged in: partitions join their topic's entry, new topics go last.
  const records: CoordinatorRecord[] = [];
  const removed: { topic: string; partition: number }[] = [];
  for (const t of valid) {
    const isSubscribed = subscribed(t.name);
    const answered = t.partitions.map((partitionIndex) => {
      if (isSubscribed) return { partitionIndex, errorCode: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC };
      if (c.offsets.get(groupId, t.name, partitionIndex) !== undefined || c.pendingTxn.isPending(groupId, t.name, partitionIndex)) {
        records.push(offsetCommitRecord(groupId, t.name, partitionIndex, null));
        removed.push({ topic: t.name, partition: partitionIndex });
      }
      return { partitionIndex, errorCode: ErrorCode.NONE };
    });
    const existing = out.find((o) => o.name === t.name);
    if (existing !== undefined) existing.partitions.push(...answered);
    else out.push({ name: t.name, partitions: answered });
  }
  for (const r of removed) {
    c.offsets.remove(groupId, r.topic, r.partition);
    c.pendingTxn.remove(groupId, r.topic, r.partition);
  }
  const error = await c.write(groupId, records);
  if (error !== ErrorCode.NONE) return { errorCode: storeErrorFor(error, false), topics: [] };
  return { errorCode: ErrorCode.NONE, topics: out };
}
