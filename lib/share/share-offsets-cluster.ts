/**
 * The share-group offset admin APIs in clusters, as Kafka 4.2's group coordinator serves them: every
 * share partition's state is resolved at its share coordinator through the persister (in-process when
 * that is this broker, otherwise over the wire) wherever its partition's leader is —
 * ReadShareGroupStateSummary for DescribeShareGroupOffsets, InitializeShareGroupState (a new state
 * epoch) for AlterShareGroupOffsets, DeleteShareGroupState for DeleteShareGroupOffsets and DeleteGroups.
 * A partition leader holding an older copy has it fenced (its next write answers FENCED_STATE_EPOCH)
 * and reads the new state when a member next fetches; members' leaving (their last share session here
 * closing) drops it already. Alter and delete need an empty group (NON_EMPTY_GROUP), as Kafka.
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
  DescribeShareGroupOffsetsResponseDescribeShareGroupOffsetsResponsePartition as DescribedPartition,
} from '../../protocol/generated/describe-share-group-offsets.js';
import type { ShareService } from './index.js';
import { RecordState } from './share-partition.js';
import { alterRefused, checkGroup, lagOf, OK, shareGroupKnown, UNINITIALIZED, unknownTopic, ZERO_UUID } from './share-offsets.js';

const errorText = (errorCode: number, what: string): string | null =>
  errorCode === ErrorCode.NONE ? null : `The share coordinator answered error ${errorCode} to ${what}.`;

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** Whether the group is known here: the coordinator's group, or topics it had share partitions of. */
const known = (share: ShareService, groupId: string): boolean => shareGroupKnown(share, groupId) || share.topicsOf(groupId).length > 0;

/** One share partition's start offset as its share coordinator holds it (this leader's copy when it leads it: newer by a linger). */
async function describePartition(
  share: ShareService,
  groupId: string,
  topicId: string,
  name: string,
  p: number,
  withLag: boolean,
): Promise<DescribedPartition> {
  const leaderEpoch = share.metadata.partitionState(name, p)?.leaderEpoch ?? -1;
  const local = share.partitions.get(groupId, topicId, p);
  if (local !== undefined)
    return {
      partitionIndex: p,
      startOffset: local.startOffset,
      leaderEpoch,
      lag: lagOf(share, local),
      errorCode: ErrorCode.NONE,
      errorMessage: null,
    };
  const r = await share.persister.readSummary(groupId, topicId, p);
  const startOffset = r.errorCode === ErrorCode.NONE ? r.summary.startOffset : UNINITIALIZED;
  return {
    partitionIndex: p,
    startOffset,
    leaderEpoch,
    lag: withLag && startOffset >= 0n ? await remoteLag(share, groupId, topicId, name, p, startOffset) : -1n,
    errorCode: r.errorCode,
    errorMessage: errorText(r.errorCode, 'ReadShareGroupStateSummary'),
  };
}

/**
 * The lag of a share partition led by another broker: its high watermark (ListOffsets at the leader)
 * less the start offset and the records past it already acknowledged or archived (the persisted state,
 * read with leader epoch -1, which fences nothing); -1 when either cannot be learnt.
 */
async function remoteLag(
  share: ShareService,
  groupId: string,
  topicId: string,
  name: string,
  p: number,
  startOffset: bigint,
): Promise<bigint> {
  const [hw, state] = await Promise.all([share.highWatermark(name, p), share.persister.read(groupId, topicId, p, -1)]);
  if (hw === undefined || state.errorCode !== ErrorCode.NONE) return -1n;
  let done = 0n;
  for (const b of state.state.batches) {
    if (b.state !== RecordState.ACKNOWLEDGED && b.state !== RecordState.ARCHIVED) continue;
    const lo = b.firstOffset > startOffset ? b.firstOffset : startOffset;
    const hi = b.lastOffset < hw - 1n ? b.lastOffset : hw - 1n;
    if (hi >= lo) done += hi - lo + 1n;
  }
  const lag = hw - startOffset - done;
  return lag < 0n ? 0n : lag;
}

/** `withLag`: DescribeShareGroupOffsets v1 (the lag of a partition led elsewhere costs a state read and a ListOffsets). */
export async function describeShareGroupOffsetsInCluster(
  share: ShareService,
  g: DescribeGroup,
  otherType: boolean,
  withLag: boolean,
): Promise<DescribedGroup> {
  const check = checkGroup(share, g.groupId, otherType, false, known(share, g.groupId));
  if (check.errorCode !== ErrorCode.NONE) return { groupId: g.groupId, topics: [], ...check };
  const md = share.metadata;
  const wanted =
    g.topics === null
      ? share.topicsOf(g.groupId).flatMap((topicId) => {
          const t = md.topicById(topicId);
          return t === undefined ? [] : [{ topicName: t.name, partitions: null as number[] | null }];
        })
      : g.topics.map((t) => ({ topicName: t.topicName, partitions: t.partitions }));
  const topics = await Promise.all(
    wanted.map(async (t) => {
      const rec = md.topic(t.topicName);
      if (rec === undefined) return unknownTopic(t.topicName, t.partitions ?? []);
      let partitions = await Promise.all(
        (t.partitions ?? range(rec.partitions)).map((p) => describePartition(share, g.groupId, rec.topicId, t.topicName, p, withLag)),
      );
      // all topics: the share partitions with state only
      if (t.partitions === null) partitions = partitions.filter((p) => p.startOffset >= 0n || p.errorCode !== ErrorCode.NONE);
      return { topicName: t.topicName, topicId: rec.topicId, partitions };
    }),
  );
  return { groupId: g.groupId, topics: topics.filter((t) => t.partitions.length > 0 || g.topics !== null), ...OK };
}

/** Moves start offsets: each named share partition gets a new state epoch at its share coordinator. */
export async function alterShareGroupOffsetsInCluster(
  share: ShareService,
  req: AlterShareGroupOffsetsRequest,
  otherType: boolean,
): Promise<Omit<AlterShareGroupOffsetsResponse, 'throttleTimeMs'>> {
  const check = checkGroup(share, req.groupId, otherType, true, true);
  if (check.errorCode !== ErrorCode.NONE) return { ...check, responses: [] };
  const responses = await Promise.all(
    req.topics.map(async (t) => {
      const rec = share.metadata.topic(t.topicName);
      const partitions = await Promise.all(
        t.partitions.map(async (p) => {
          const fail = (errorCode: number, errorMessage: string | null) => ({ partitionIndex: p.partitionIndex, errorCode, errorMessage });
          const invalid = alterRefused(rec, p);
          if (invalid !== undefined || rec === undefined) return invalid ?? fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, null);
          const cur = await share.persister.readSummary(req.groupId, rec.topicId, p.partitionIndex);
          if (cur.errorCode !== ErrorCode.NONE) return fail(cur.errorCode, errorText(cur.errorCode, 'ReadShareGroupStateSummary'));
          const errorCode = await share.persister.initialize(
            req.groupId,
            rec.topicId,
            p.partitionIndex,
            cur.summary.stateEpoch + 1,
            p.startOffset,
          );
          if (errorCode !== ErrorCode.NONE) return fail(errorCode, errorText(errorCode, 'InitializeShareGroupState'));
          share.noteTopic(req.groupId, rec.topicId);
          forgetLocal(share, req.groupId, rec.topicId, p.partitionIndex);
          return fail(ErrorCode.NONE, null);
        }),
      );
      return { topicName: t.topicName, topicId: rec?.topicId ?? ZERO_UUID, partitions };
    }),
  );
  return { ...OK, responses };
}

/** This broker's copy of a share partition goes: its next use reads the coordinator's state. */
function forgetLocal(share: ShareService, groupId: string, topicId: string, p: number): void {
  const sp = share.partitions.get(groupId, topicId, p);
  if (sp !== undefined) share.forgetHere(sp);
}

/** DeleteShareGroupState of every partition of a topic; the first error, or NONE. */
async function deleteTopicState(share: ShareService, groupId: string, topicId: string, partitions: number): Promise<number> {
  const codes = await Promise.all(
    range(partitions).map(async (p) => {
      forgetLocal(share, groupId, topicId, p);
      return share.persister.delete(groupId, topicId, p);
    }),
  );
  return codes.find((c) => c !== ErrorCode.NONE) ?? ErrorCode.NONE;
}

/** Forgets the share partitions of each named topic at their share coordinators. */
export async function deleteShareGroupOffsetsInCluster(
  share: ShareService,
  req: DeleteShareGroupOffsetsRequest,
  otherType: boolean,
): Promise<Omit<DeleteShareGroupOffsetsResponse, 'throttleTimeMs'>> {
  const check = checkGroup(share, req.groupId, otherType, true, known(share, req.groupId));
  if (check.errorCode !== ErrorCode.NONE) return { ...check, responses: [] };
  const responses = await Promise.all(
    req.topics.map(async (t) => {
      const rec = share.metadata.topic(t.topicName);
      if (rec === undefined)
        return {
          topicName: t.topicName,
          topicId: ZERO_UUID,
          errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          errorMessage: 'This server does not host this topic-partition.',
        };
      const errorCode = await deleteTopicState(share, req.groupId, rec.topicId, rec.partitions);
      if (errorCode === ErrorCode.NONE) share.unnoteTopic(req.groupId, rec.topicId);
      return { topicName: t.topicName, topicId: rec.topicId, errorCode, errorMessage: errorText(errorCode, 'DeleteShareGroupState') };
    }),
  );
  return { ...OK, responses };
}

/** DeleteGroups of an empty share group: the state of every topic it had share partitions of. */
export async function deleteShareGroupStateInCluster(share: ShareService, groupId: string): Promise<number> {
  const codes = await Promise.all(
    share.topicsOf(groupId).map(async (topicId) => {
      const rec = share.metadata.topicById(topicId);
      return rec === undefined ? ErrorCode.NONE : deleteTopicState(share, groupId, topicId, rec.partitions);
    }),
  );
  share.unnoteTopic(groupId);
  return codes.find((c) => c !== ErrorCode.NONE) ?? ErrorCode.NONE;
}
