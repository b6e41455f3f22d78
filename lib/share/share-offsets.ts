/**
 * The share-group offset admin APIs (KIP-932): DescribeShareGroupOffsets (the start offset of each
 * share partition, and its lag from v1), AlterShareGroupOffsets (moves start offsets; the window of
 * in-flight records is dropped) and DeleteShareGroupOffsets (forgets a topic's share partitions, so
 * they start again from share.auto.offset.reset). Alter and delete need an empty group
 * (NON_EMPTY_GROUP otherwise), as Kafka's group coordinator requires.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse } from '../../protocol/generated/alter-share-group-offsets.js';
import type {
  DeleteShareGroupOffsetsRequest,
  DeleteShareGroupOffsetsResponse,
} from '../../protocol/generated/delete-share-group-offsets.js';
import type {
  DescribeShareGroupOffsetsRequestDescribeShareGroupOffsetsRequestGroup as DescribeGroup,
  DescribeShareGroupOffsetsResponseDescribeShareGroupOffsetsResponseGroup as DescribedGroup,
  DescribeShareGroupOffsetsResponseDescribeShareGroupOffsetsResponseTopic as DescribedTopic,
} from '../../protocol/generated/describe-share-group-offsets.js';
import type { ShareService } from './index.js';
import type { SharePartition } from './share-partition.js';

/** A topic name that is unknown: Kafka answers with the zero UUID. */
export const ZERO_UUID = '00000000000000000000000000000000';
/** A share partition never initialised (Kafka's UNINITIALIZED_START_OFFSET). */
export const UNINITIALIZED = -1n;

export type GroupCheck = { errorCode: number; errorMessage: string | null };
export const OK: GroupCheck = { errorCode: ErrorCode.NONE, errorMessage: null };

/** The group-level answer: unknown or of another type → GROUP_ID_NOT_FOUND; with members (when `mustBeEmpty`) → NON_EMPTY_GROUP. */
export function checkGroup(share: ShareService, groupId: string, otherType: boolean, mustBeEmpty: boolean, known: boolean): GroupCheck {
  if (otherType) return { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: `Group ${groupId} is not a share group.` };
  if (!known) return { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: `Group ${groupId} not found.` };
  const members = share.coordinator.groups.get(groupId)?.members.size ?? 0;
  if (mustBeEmpty && members > 0)
    return {
      errorCode: ErrorCode.NON_EMPTY_GROUP,
      errorMessage: 'The group is not empty: share group offsets can only be changed while it has no members.',
    };
  return OK;
}

/** Whether the share group exists: members in the coordinator, or share partitions with state. */
export function shareGroupKnown(share: ShareService, groupId: string): boolean {
  return share.coordinator.groups.has(groupId) || share.partitions.list(groupId).length > 0;
}

/** A topic Describe names that does not exist: Kafka answers it with the zero UUID and uninitialised partitions. */
export function unknownTopic(topicName: string, partitions: readonly number[]): DescribedTopic {
  return {
    topicName,
    topicId: ZERO_UUID,
    partitions: partitions.map((partitionIndex) => ({
      partitionIndex,
      startOffset: UNINITIALIZED,
      leaderEpoch: -1,
      lag: -1n,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
    })),
  };
}

/** Records from the start offset to the high watermark not yet acknowledged or archived (-1: unknown). */
export function lagOf(share: ShareService, sp: SharePartition): bigint {
  const log = share.partitionLog(sp.topicId, sp.partition);
  if (log === undefined) return -1n;
  const c = sp.counts();
  const lag = log.highWatermark - sp.startOffset - BigInt(c.acknowledged + c.archived);
  return lag < 0n ? 0n : lag;
}

export function describeShareGroupOffsets(share: ShareService, g: DescribeGroup, otherType: boolean): DescribedGroup {
  const check = checkGroup(share, g.groupId, otherType, false, shareGroupKnown(share, g.groupId));
  if (check.errorCode !== ErrorCode.NONE) return { groupId: g.groupId, topics: [], ...check };
  const md = share.metadata;
  const partitionOut = (topicId: string, partitionIndex: number) => {
    const sp = share.partitions.get(g.groupId, topicId, partitionIndex);
    return {
      partitionIndex,
      startOffset: sp?.startOffset ?? UNINITIALIZED,
      leaderEpoch: md.partitionState(md.topicById(topicId)?.name ?? '', partitionIndex)?.leaderEpoch ?? -1,
      lag: sp === undefined ? -1n : lagOf(share, sp),
      errorCode: ErrorCode.NONE,
      errorMessage: null,
    };
  };
  let topics: DescribedTopic[];
  if (g.topics === null) {
    // every share partition the group has state for
    const byTopic = new Map<string, number[]>();
    for (const sp of share.partitions.list(g.groupId)) {
      const ps = byTopic.get(sp.topicId) ?? [];
      ps.push(sp.partition);
      byTopic.set(sp.topicId, ps);
    }
    topics = [...byTopic].flatMap(([topicId, ps]) => {
      const name = md.topicById(topicId)?.name;
      if (name === undefined) return [];
      return [{ topicName: name, topicId, partitions: ps.sort((a, b) => a - b).map((p) => partitionOut(topicId, p)) }];
    });
  } else {
    topics = g.topics.map((t) => {
      const rec = md.topic(t.topicName);
      if (rec === undefined) return unknownTopic(t.topicName, t.partitions);
      return { topicName: t.topicName, topicId: rec.topicId, partitions: t.partitions.map((p) => partitionOut(rec.topicId, p)) };
    });
  }
  return { groupId: g.groupId, topics, ...OK };
}

/** Why AlterShareGroupOffsets refuses a partition before touching any state (unknown, negative offset), or undefined. */
export function alterRefused(
  rec: { partitions: number } | undefined,
  p: { partitionIndex: number; startOffset: bigint },
): { partitionIndex: number; errorCode: number; errorMessage: string } | undefined {
  const fail = (errorCode: number, errorMessage: string) => ({ partitionIndex: p.partitionIndex, errorCode, errorMessage });
  if (rec === undefined || p.partitionIndex < 0 || p.partitionIndex >= rec.partitions)
    return fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.');
  if (p.startOffset < 0n) return fail(ErrorCode.INVALID_REQUEST, `Invalid start offset ${p.startOffset}.`);
  return undefined;
}

/**
 * Moves the start offset of each named share partition (made when the group had none). An unknown
 * group is created empty, so an operator can place a new group before its members join.
 */
export async function alterShareGroupOffsets(
  share: ShareService,
  req: AlterShareGroupOffsetsRequest,
  otherType: boolean,
): Promise<Omit<AlterShareGroupOffsetsResponse, 'throttleTimeMs'>> {
  const check = checkGroup(share, req.groupId, otherType, true, true);
  if (check.errorCode !== ErrorCode.NONE) return { ...check, responses: [] };
  const changed: SharePartition[] = [];
  const responses = req.topics.map((t) => {
    const rec = share.metadata.topic(t.topicName);
    const partitions = t.partitions.map((p) => {
      const fail = (errorCode: number, errorMessage: string) => ({ partitionIndex: p.partitionIndex, errorCode, errorMessage });
      const invalid = alterRefused(rec, p);
      if (invalid !== undefined || rec === undefined) return invalid ?? fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, '');
      const sp = share.partitions.setStartOffset(req.groupId, rec.topicId, p.partitionIndex, p.startOffset);
      if (sp === undefined) return fail(ErrorCode.NOT_LEADER_OR_FOLLOWER, 'This broker does not lead the partition.');
      changed.push(sp);
      return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE, errorMessage: null };
    });
    return { topicName: t.topicName, topicId: rec?.topicId ?? ZERO_UUID, partitions };
  });
  await share.durable(changed);
  return { ...OK, responses };
}

/** Forgets the share partitions of each named topic: they start again from share.auto.offset.reset. */
export async function deleteShareGroupOffsets(
  share: ShareService,
  req: DeleteShareGroupOffsetsRequest,
  otherType: boolean,
): Promise<Omit<DeleteShareGroupOffsetsResponse, 'throttleTimeMs'>> {
  const check = checkGroup(share, req.groupId, otherType, true, shareGroupKnown(share, req.groupId));
  if (check.errorCode !== ErrorCode.NONE) return { ...check, responses: [] };
  const responses = [];
  for (const t of req.topics) {
    const rec = share.metadata.topic(t.topicName);
    if (rec === undefined) {
      responses.push({
        topicName: t.topicName,
        topicId: ZERO_UUID,
        errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        errorMessage: 'This server does not host this topic-partition.',
      });
      continue;
    }
    await share.forgetTopic(req.groupId, rec.topicId);
    responses.push({ topicName: t.topicName, topicId: rec.topicId, errorCode: ErrorCode.NONE, errorMessage: null });
  }
  return { ...OK, responses };
}
