/**
 * Fetch from a follower (a replica id ≥ 0, in a cluster): Kafka's leader side of replication. Reads
 * go up to the log end offset, not the high watermark; each partition's fetch offset is the
 * follower's log end offset, handed to the replication layer (high watermark, ISR); the follower's
 * leader epoch must be the current one. Idle followers long-poll on the connection's fetch watch
 * (woken by appends and by high watermark moves).
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { FetchRequest, FetchResponse, FetchResponsePartitionData } from '../../protocol/generated/fetch.js';
import { LogError, type PartitionLog } from '../log/partition-log.js';
import { fetchWatchFor } from '../replica/fetch-watch.js';
import type { Replication } from '../replica/replication.js';
import type { RequestContext } from './types.js';

const ZERO_UUID = '0'.repeat(32);
const EMPTY = Buffer.alloc(0);

/** The replica id a Fetch carries: the field up to v14, the replica state from v15 (-1: a consumer). */
export function fetchReplicaId(req: FetchRequest, apiVersion: number): number {
  return apiVersion >= 15 ? (req.replicaState?.replicaId ?? -1) : (req.replicaId ?? -1);
}

function result(
  partitionIndex: number,
  errorCode: number,
  log: PartitionLog | undefined,
  records: Buffer = EMPTY,
): FetchResponsePartitionData {
  return {
    partitionIndex,
    errorCode,
    highWatermark: log?.highWatermark ?? -1n,
    lastStableOffset: log?.lastStableOffset ?? -1n,
    logStartOffset: log?.logStartOffset ?? -1n,
    abortedTransactions: null,
    preferredReadReplica: -1,
    records,
  };
}

export async function replicaFetch(
  req: FetchRequest,
  ctx: RequestContext,
  replicaId: number,
  replication: Replication,
): Promise<FetchResponse> {
  const s = ctx.services;
  const byId = ctx.apiVersion >= 13;
  // `track`: hand each fetch offset to the replication layer. Only the first read of a Fetch does, as
  // Kafka's ReplicaManager updates the follower's state from the read before the long poll and not
  // from the DelayedFetch's read after it (the offsets are the same; only the clock moved).
  const read = async (
    track: boolean,
  ): Promise<{
    responses: FetchResponse['responses'];
    total: number;
    caughtUp: boolean;
    logs: PartitionLog[];
    /** each log's end offset as read */
    ends: bigint[];
  }> => {
    let budget = req.maxBytes ?? 0x7fffffff;
    let total = 0;
    let caughtUp = true;
    const logs: PartitionLog[] = [];
    const ends: bigint[] = [];
    const now = track ? replication.now() : 0;
    const responses: FetchResponse['responses'] = [];
    for (const t of req.topics) {
      const rec = byId ? s.metadata.topicById(t.topicId ?? ZERO_UUID) : s.metadata.topic(t.topic ?? '');
      const partitions: FetchResponsePartitionData[] = [];
      for (const p of t.partitions) {
        if (rec === undefined) {
          partitions.push(result(p.partition, byId ? ErrorCode.UNKNOWN_TOPIC_ID : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, undefined));
          continue;
        }
        const log = s.topics.partition(rec.name, p.partition);
        if (log === undefined || !log.servable) {
          partitions.push(
            result(
              p.partition,
              log === undefined ? s.topics.notHereError(rec.name, p.partition) : ErrorCode.KAFKA_STORAGE_ERROR,
              undefined,
            ),
          );
          continue;
        }
        const epoch = s.topics.leaderEpoch(rec.name, p.partition);
        const asked = p.currentLeaderEpoch ?? -1;
        if (asked >= 0 && asked !== epoch) {
          partitions.push(result(p.partition, asked < epoch ? ErrorCode.FENCED_LEADER_EPOCH : ErrorCode.UNKNOWN_LEADER_EPOCH, log));
          continue;
        }
        const logEnd = log.logEndOffset;
        if (p.fetchOffset < log.logStartOffset || p.fetchOffset > logEnd) {
          partitions.push(result(p.partition, ErrorCode.OFFSET_OUT_OF_RANGE, log));
          continue;
        }
        const code = track ? replication.followerFetched(rec.name, p.partition, replicaId, p.fetchOffset, now) : ErrorCode.NONE;
        if (code !== ErrorCode.NONE) {
          partitions.push(result(p.partition, code, log));
          continue;
        }
        logs.push(log);
        ends.push(logEnd);
        if (p.fetchOffset >= logEnd) {
          partitions.push(result(p.partition, ErrorCode.NONE, log));
          continue;
        }
        caughtUp = false;
        try {
          const limit = Math.max(0, Math.min(p.partitionMaxBytes, budget));
          const { records, size } = await log.read(p.fetchOffset, limit, { minOneMessage: total === 0, maxOffset: logEnd });
          budget -= size;
          total += size;
          const bytes = records.length === 0 ? EMPTY : records.length === 1 ? (records[0] ?? EMPTY) : Buffer.concat(records, size);
          partitions.push(result(p.partition, ErrorCode.NONE, log, bytes));
        } catch (e) {
          if (!(e instanceof LogError)) throw e;
          partitions.push(result(p.partition, e.errorCode, log));
        }
      }
      responses.push({ topic: rec?.name ?? t.topic ?? '', topicId: rec?.topicId ?? t.topicId ?? ZERO_UUID, partitions });
    }
    return { responses, total, caughtUp, logs, ends };
  };
  let r = await read(true);
  if (r.caughtUp && r.logs.length > 0 && req.maxWaitMs > 0 && req.minBytes > 0) {
    const parkedAt = performance.now();
    // Any change to a fetched partition (an append, a high watermark move) ends the wait. The check a
    // wait starts with (no change) only asks whether a log grew since it was read (an append between
    // the read and the wait): a caught-up follower must park, not poll.
    const { logs, ends } = r;
    const grown = (): boolean => {
      for (let i = 0; i < logs.length; i++) if (logs[i]!.logEndOffset !== ends[i]) return true;
      return false;
    };
    await fetchWatchFor(s.purgatory, ctx.conn).wait(logs, req.maxWaitMs, (change) => change !== undefined || grown());
    if (ctx.timing !== undefined) ctx.timing.remoteMs += performance.now() - parkedAt;
    r = await read(false);
  }
  return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, sessionId: 0, responses: r.responses };
}
