/**
 * Committed offsets on top of the coordinator (Kafka's OffsetMetadataManager): OffsetCommit and
 * OffsetFetch. The admin views (OffsetDelete, DeleteGroups, ListGroups, DescribeGroups,
 * ConsumerGroupDescribe) live in group-admin.ts and are re-exported here.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { ClassicGroup, ClassicGroupState as S } from './classic-group.js';
import type { GroupCoordinator } from './coordinator.js';
import { storeErrorFor } from './store-errors.js';
import { type CoordinatorRecord, offsetCommitRecord } from './records.js';
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
    // A member using the classic protocol commits with its generation (= member epoch), any version.
    if (m.useClassicProtocol) return gen === m.memberEpoch ? ErrorCode.NONE : ErrorCode.ILLEGAL_GENERATION;
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

export async function commitOffsets(
  c: GroupCoordinator,
  p: CommitParams,
  partitionExists: (topic: string, partition: number) => boolean,
): Promise<PartitionErrors> {
  const result: PartitionErrors = p.topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map((pp) => ({ partitionIndex: pp.partitionIndex, errorCode: ErrorCode.NONE })),
  }));
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
    const o: OffsetAndMetadata = {
      offset: v.part.committedOffset,
      leaderEpoch: v.part.committedLeaderEpoch,
      metadata,
      commitTimestamp,
      expireTimestamp,
    };
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
    if (m.memberEpoch !== member.memberEpoch)
      return { errorCode: m.useClassicProtocol ? ErrorCode.ILLEGAL_GENERATION : ErrorCode.STALE_MEMBER_EPOCH, topics: [] };
  }
  const unstable = (topic: string, partition: number): boolean => requireStable && c.pendingTxn.isPending(groupId, topic, partition);
  const entry = (partitionIndex: number, o: OffsetAndMetadata | undefined, topic: string): FetchedPartition =>
    unstable(topic, partitionIndex)
      ? { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT }
      : o === undefined
        ? { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.NONE }
        : {
            partitionIndex,
            committedOffset: o.offset,
            committedLeaderEpoch: o.leaderEpoch,
            metadata: o.metadata,
            errorCode: ErrorCode.NONE,
          };
  if (topics === null) {
    const byTopic = new Map<string, FetchedPartition[]>();
    for (const { topic, partition, offset } of c.offsets.all(groupId)) {
      const list = byTopic.get(topic) ?? [];
      list.push(entry(partition, offset, topic));
      byTopic.set(topic, list);
    }
    return {
      errorCode: ErrorCode.NONE,
      topics: [...byTopic].map(([name, partitions]) => ({
        name,
        partitions: partitions.sort((a, b) => a.partitionIndex - b.partitionIndex),
      })),
    };
  }
  return {
    errorCode: ErrorCode.NONE,
    topics: topics.map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((pi) => entry(pi, c.offsets.get(groupId, t.name, pi), t.name)),
    })),
  };
}

export {
  deleteGroups,
  deleteOffsets,
  describeConsumerGroup,
  describeGroup,
  type DescribedGroup,
  listGroups,
  type ListedGroup,
} from './group-admin.js';
