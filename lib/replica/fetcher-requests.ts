/**
 * The requests a follower's replica fetcher sends its leader (Fetch, OffsetForLeaderEpoch,
 * ListOffsets) and the truncation rule it applies to OffsetForLeaderEpoch answers (Kafka's
 * AbstractFetcherThread.getOffsetTruncationState). No I/O here.
 */
import type { FetchRequest, FetchRequestFetchPartition, FetchRequestFetchTopic } from '../../protocol/generated/fetch.js';
import type { ListOffsetsRequest, ListOffsetsResponse } from '../../protocol/generated/list-offsets.js';
import type {
  OffsetForLeaderEpochRequest,
  OffsetForLeaderEpochResponseEpochEndOffset,
} from '../../protocol/generated/offset-for-leader-epoch.js';
import type { PartitionLog } from '../log/partition-log.js';

/** A partition a replica fetcher follows: what requests name it by, the log it feeds, its current leader epoch. */
export interface FetcherPartition {
  topic: string;
  topicId: string;
  partition: number;
  leaderEpoch: number;
  log: PartitionLog;
}

/** Fetch v13+ names topics by id, older versions by name. */
export function fetchTopicsById(version: number): boolean {
  return version >= 13;
}

/**
 * A Fetch request body for `parts` (in this order, grouped by topic in order of first appearance),
 * and each partition's entry in it, to be refreshed (fetchOffset, logStartOffset) before each send.
 */
export function buildFetchRequest(
  version: number,
  parts: readonly FetcherPartition[],
  s: { replicaId: number; maxWaitMs: number; minBytes: number; maxBytes: number; partitionMaxBytes: number },
): { body: FetchRequest; entries: FetchRequestFetchPartition[] } {
  const byId = fetchTopicsById(version);
  const topics = new Map<string, FetchRequestFetchTopic>();
  const entries: FetchRequestFetchPartition[] = [];
  for (const p of parts) {
    let t = topics.get(p.topic);
    if (t === undefined) {
      t = byId ? { topicId: p.topicId, partitions: [] } : { topic: p.topic, partitions: [] };
      topics.set(p.topic, t);
    }
    const entry: FetchRequestFetchPartition = {
      partition: p.partition,
      currentLeaderEpoch: p.leaderEpoch,
      fetchOffset: p.log.logEndOffset,
      logStartOffset: p.log.logStartOffset,
      partitionMaxBytes: s.partitionMaxBytes,
    };
    t.partitions.push(entry);
    entries.push(entry);
  }
  const body: FetchRequest = {
    maxWaitMs: s.maxWaitMs,
    minBytes: s.minBytes,
    maxBytes: s.maxBytes,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [...topics.values()],
  };
  if (version >= 15) body.replicaState = { replicaId: s.replicaId, replicaEpoch: -1n };
  else body.replicaId = s.replicaId;
  return { body, entries };
}

/** OffsetForLeaderEpoch for `parts`: each log's latest epoch, fenced by the partition's current leader epoch. */
export function buildOffsetForLeaderEpochRequest(
  version: number,
  parts: readonly FetcherPartition[],
  replicaId: number,
): OffsetForLeaderEpochRequest {
  const topics = new Map<string, OffsetForLeaderEpochRequest['topics'][number]>();
  for (const p of parts) {
    let t = topics.get(p.topic);
    if (t === undefined) {
      t = { topic: p.topic, partitions: [] };
      topics.set(p.topic, t);
    }
    t.partitions.push({
      partition: p.partition,
      ...(version >= 2 ? { currentLeaderEpoch: p.leaderEpoch } : {}),
      leaderEpoch: p.log.latestEpoch,
    });
  }
  return { ...(version >= 3 ? { replicaId } : {}), topics: [...topics.values()] };
}

/** ListOffsets of one partition at `timestamp` (-1 latest, -2 earliest) as replica `replicaId`. */
export function buildListOffsetsRequest(version: number, p: FetcherPartition, timestamp: bigint, replicaId: number): ListOffsetsRequest {
  return {
    replicaId,
    topics: [
      {
        name: p.topic,
        partitions: [{ partitionIndex: p.partition, timestamp, ...(version >= 4 ? { currentLeaderEpoch: p.leaderEpoch } : {}) }],
      },
    ],
  };
}

/** The offset (or error) a ListOffsets response gives for `p`. */
export function listedOffset(res: ListOffsetsResponse, p: FetcherPartition): { errorCode: number; offset: bigint } {
  const r = res.topics.find((t) => t.name === p.topic)?.partitions.find((x) => x.partitionIndex === p.partition);
  if (r === undefined) return { errorCode: -1, offset: -1n };
  return { errorCode: r.errorCode, offset: r.offset ?? r.oldStyleOffsets?.[0] ?? -1n };
}

/** Where to truncate, and whether that settles it (false: truncate there, then ask the leader again). */
export interface TruncationTarget {
  offset: bigint;
  done: boolean;
}

const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);

/**
 * Kafka's getOffsetTruncationState for the leader's answer `r` to this log's latest epoch:
 * - no end offset (the leader knows no such epoch): keep the log end (the fetch offset);
 * - no epoch in the answer (old protocol): the smaller of the leader's end and ours;
 * - the answer's epoch unknown here (our largest epoch below it is another): truncate to the end of
 *   that epoch of ours and ask again;
 * - an epoch both know: the smallest of its end here, its end on the leader and our log end.
 */
export function truncationTarget(log: PartitionLog, r: OffsetForLeaderEpochResponseEpochEndOffset): TruncationTarget {
  const leo = log.logEndOffset;
  if (r.endOffset < 0n) return { offset: leo, done: true };
  const epoch = r.leaderEpoch ?? -1;
  if (epoch < 0) return { offset: min(r.endOffset, leo), done: true };
  const ours = log.endOffsetForEpoch(epoch);
  if (ours.leaderEpoch < 0 || ours.endOffset < 0n) return { offset: min(r.endOffset, leo), done: true };
  if (ours.leaderEpoch !== epoch) return { offset: min(ours.endOffset, leo), done: false };
  return { offset: min(min(ours.endOffset, r.endOffset), leo), done: true };
}
