import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type {
  FetchRequest,
  FetchRequestFetchPartition,
  FetchRequestFetchTopic,
  FetchResponse,
  FetchResponseAbortedTransaction,
  FetchResponsePartitionData,
} from '../../protocol/generated/fetch.js';
import { encodeOnce, type RecordsValue } from '../../protocol/codec/writer.js';
import { BatchField, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from '../../protocol/records/index.js';
import { announcedChanges } from '../log/lazy-log.js';
import { LogError, type PartitionLog } from '../log/partition-log.js';
import { type ReadBufferPool, type Releasable, releaseAll } from '../log/read-buffer-pool.js';
import type { TopicLogs } from '../topics.js';
import { type FetchContext, UNCHANGED } from '../replica/fetch-sessions.js';
import { fetchWatchFor } from '../replica/fetch-watch.js';
import { consumerReads } from '../replica/follower-reads.js';
import { readableBytes } from '../replica/purgatory.js';
import { countedAsCaughtUp } from '../observability/topic-metrics.js';
import { fetchVersionError, recordsForFetchVersion } from './fetch-down-convert.js';
import { fetchReplicaId, replicaFetch } from './fetch-replica.js';
import { AclOperation, clusterAllowed, topicAllowed } from '../security/acl/checks.js';
import { defineHandler, type RequestContext } from './types.js';
import { int64At } from '../../protocol/codec/int64.js';

const READ_COMMITTED = 1;
const ZERO_UUID = '0'.repeat(32);
const EMPTY = Buffer.alloc(0);

/** A partition's answer as built here: its records are the stored slices read from the log, passed on uncopied. */
type PartitionOut = FetchResponsePartitionData<RecordsValue>;

/**
 * A requested topic with its partition logs, resolved once per request. No object per partition: an
 * idle consumer names thousands of partitions in every poll, and whatever is made per partition
 * lives through the long poll (young-generation copies, promotions).
 */
interface TopicOut {
  topic: string;
  topicId: string;
  req: FetchRequestFetchTopic;
  /** the topic's logs by partition index; undefined when the topic is unknown */
  logs: TopicLogs | undefined;
  /** the error of a partition not in `logs` (clusters: NOT_LEADER_OR_FOLLOWER for one another broker leads, see notHere) */
  missing: number;
  /** clusters: the error of one of the topic's partitions this broker does not lead */
  notHere?: (partition: number) => number;
  /** clusters (KIP-392): partition → the replica the consumer is sent to read from instead */
  readReplicas: Map<number, number> | undefined;
}

/** Shared by every read_committed partition result without aborted transactions (the encoder only reads it). */
const NO_ABORTED: FetchResponseAbortedTransaction[] = [];

function partitionResult(
  partitionIndex: number,
  log: PartitionLog | undefined,
  readCommitted: boolean,
  errorCode: number,
  records: RecordsValue,
  aborted: FetchResponseAbortedTransaction[] = NO_ABORTED,
): PartitionOut {
  if (log === undefined) return resultOf(partitionIndex, readCommitted, errorCode, -1n, -1n, -1n, records, aborted);
  return resultOf(partitionIndex, readCommitted, errorCode, log.highWatermark, log.lastStableOffset, log.logStartOffset, records, aborted);
}

/** One shape for every partition result (the encoder's property reads stay monomorphic). */
function resultOf(
  partitionIndex: number,
  readCommitted: boolean,
  errorCode: number,
  highWatermark: bigint,
  lastStableOffset: bigint,
  logStartOffset: bigint,
  records: RecordsValue,
  aborted: FetchResponseAbortedTransaction[],
): PartitionOut {
  return {
    partitionIndex,
    errorCode,
    highWatermark,
    lastStableOffset,
    logStartOffset,
    // read_uncommitted gets null: librdkafka complains about a list it did not ask for
    abortedTransactions: readCommitted ? aborted : null,
    preferredReadReplica: -1,
    records,
  };
}

type TopicAnswer = FetchResponse<RecordsValue>['responses'][number];

/**
 * A topic's answer in which every partition was caught up, kept per request topic with its encoding
 * (EncodedOnce). A sessionless consumer (librdkafka) names every assigned partition in every Fetch, and
 * the decoded topics of a connection's Fetch are reused while their bytes repeat (fetch-request-reuse);
 * an idle one on thousands of partitions gets the same answers poll after poll, so a topic's answer
 * is sent again as long as its partitions are caught up at the offsets it gives, instead of being
 * built, counted and encoded partition by partition.
 */
interface IdleTopicAnswer {
  apiVersion: number;
  readCommitted: boolean;
  /** the log of each partition asked for, in request order */
  logs: PartitionLog[];
  answer: TopicAnswer;
  /** the topic's logs by partition when the answer was last found to hold */
  topicLogs: TopicLogs | undefined;
  /** announcedChanges() and the topics' generation then: while both stay, it holds without a look at its logs */
  changes: number;
  generation: number;
}

const idleTopicAnswers = new WeakMap<FetchRequestFetchTopic, IdleTopicAnswer>();

/**
 * The kept answer of `t` when it still holds: the same logs, each caught up at the offsets the answer
 * gives. When no log announced a change and no log was made, dropped or re-led since it was last found
 * to hold, it holds as it is (an idle broker: one check per topic, not per partition); otherwise its
 * partitions are checked one by one.
 */
function keptIdleAnswer(
  t: Pick<TopicOut, 'req' | 'logs' | 'readReplicas'>,
  readCommitted: boolean,
  apiVersion: number,
  changes: number,
  generation: number,
): IdleTopicAnswer | undefined {
  const kept = idleTopicAnswers.get(t.req);
  if (kept === undefined || kept.readCommitted !== readCommitted || kept.apiVersion !== apiVersion || t.readReplicas !== undefined)
    return undefined;
  if (kept.changes === changes && kept.generation === generation && kept.topicLogs === t.logs) return kept;
  const parts = t.req.partitions;
  const answers = kept.answer.partitions;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i] as FetchRequestFetchPartition;
    const log = t.logs?.[p.partition];
    const a = answers[i];
    if (log === undefined || log !== kept.logs[i] || a === undefined || !log.servable) return undefined;
    if (fetchVersionError(log, apiVersion) !== ErrorCode.NONE) return undefined;
    const highWatermark = log.highWatermark;
    const lastStableOffset = log.lastStableOffset;
    const logStartOffset = log.logStartOffset;
    if (a.highWatermark !== highWatermark || a.lastStableOffset !== lastStableOffset || a.logStartOffset !== logStartOffset)
      return undefined;
    if (!caughtUpAt(p.fetchOffset, readCommitted ? lastStableOffset : highWatermark, logStartOffset, log.logEndOffset)) return undefined;
  }
  kept.topicLogs = t.logs;
  kept.changes = changes;
  kept.generation = generation;
  return kept;
}

/** Where a fetch of this isolation level stops: the last stable offset for read_committed. */
function readLimit(log: PartitionLog, readCommitted: boolean): bigint {
  return readCommitted ? log.lastStableOffset : log.highWatermark;
}

/** At the high watermark (read_committed: the last stable offset), inside the log: nothing to read yet. */
function caughtUp(fetchOffset: bigint, log: PartitionLog, readCommitted: boolean): boolean {
  return caughtUpAt(fetchOffset, readLimit(log, readCommitted), log.logStartOffset, log.logEndOffset);
}

/** caughtUp() from offsets already read: `readable` is the high watermark (read_committed: the last stable offset). */
function caughtUpAt(fetchOffset: bigint, readable: bigint, logStartOffset: bigint, logEndOffset: bigint): boolean {
  return fetchOffset >= readable && fetchOffset <= logEndOffset && fetchOffset >= logStartOffset;
}

/** The offset after the last whole entry in `records` (stored entries: v2 batches or magic 0/1 messages). */
function nextOffsetAfter(records: Buffer[], fallback: bigint): bigint {
  let next = fallback;
  for (const b of records) {
    for (let p = 0; p + LOG_OVERHEAD <= b.length;) {
      const size = LOG_OVERHEAD + b.readInt32BE(p + BatchField.BATCH_LENGTH);
      if (size <= BatchField.MAGIC || p + size > b.length || (b[p + BatchField.MAGIC] === 2 && size < RECORD_BATCH_OVERHEAD)) break;
      const base = int64At(b, p);
      next = (b[p + BatchField.MAGIC] === 2 ? base + BigInt(b.readInt32BE(p + BatchField.LAST_OFFSET_DELTA)) : base) + 1n;
      p += size;
    }
  }
  return next;
}

/** The aborted transactions overlapping what a read_committed fetch returns, in the response's shape. */
function abortedIn(log: PartitionLog, fetchOffset: bigint, records: Buffer[], nextOffset?: bigint): FetchResponseAbortedTransaction[] {
  if (records.length === 0 && nextOffset === undefined) return NO_ABORTED;
  const found = log.abortedTransactions(fetchOffset, nextOffset ?? nextOffsetAfter(records, fetchOffset));
  return found.length === 0 ? NO_ABORTED : found.map((a) => ({ producerId: a.producerId, firstOffset: a.firstOffset }));
}

/** After an unclean shutdown: recovers the partitions asked for whose logs wait for it (a no-op otherwise). */
async function recoverFetched(req: FetchRequest, ctx: RequestContext): Promise<void> {
  const s = ctx.services;
  if (!s.topics.recovering) return;
  for (const t of req.topics) {
    const rec = ctx.apiVersion >= 13 ? s.metadata.topicById(t.topicId ?? ZERO_UUID) : s.metadata.topic(t.topic ?? '');
    if (rec !== undefined)
      await s.topics.recoverPartitions(
        rec.name,
        t.partitions.map((p) => p.partition),
      );
  }
}

/**
 * The topics asked for with their logs (one pass), every partition log found (as lists, for the long
 * poll: see WatchedLogs), and whether all are caught up. With `reuse` (a sessionless Fetch), a topic
 * whose kept answer still holds is caught up as a whole: its partitions are checked once, by
 * keptIdleAnswer, not walked again here, and its logs are the kept answer's list (the same list every
 * poll while it holds).
 */
function resolve(req: FetchRequest, ctx: RequestContext, readCommitted: boolean, reuse: boolean) {
  const s = ctx.services;
  const byId = ctx.apiVersion >= 13;
  const unknownTopic = byId ? ErrorCode.UNKNOWN_TOPIC_ID : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
  const topics: TopicOut[] = [];
  const logs: PartitionLog[][] = [];
  // nothing here waits, so the logs cannot change while this runs
  const changes = announcedChanges();
  let allCaughtUp = true;
  for (const t of req.topics) {
    const found = byId ? s.metadata.topicById(t.topicId ?? ZERO_UUID) : s.metadata.topic(t.topic ?? '');
    // a topic the principal may not read is answered TOPIC_AUTHORIZATION_FAILED, its logs untouched
    const denied = found !== undefined && !topicAllowed(ctx, AclOperation.READ, found.name);
    const rec = denied ? undefined : found;
    // the led partitions' logs; clusters (KIP-392): also followed ones, and those sent to another replica
    const reads = rec === undefined ? undefined : consumerReads(s, ctx.apiVersion, rec.name, t.partitions, req.rackId ?? '');
    const partitionLogs = reads?.logs;
    const readReplicas = reads?.readReplicas;
    const out: TopicOut = {
      topic: found?.name ?? t.topic ?? '',
      topicId: found?.topicId ?? t.topicId ?? ZERO_UUID,
      req: t,
      logs: partitionLogs,
      missing: denied ? ErrorCode.TOPIC_AUTHORIZATION_FAILED : rec === undefined ? unknownTopic : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      readReplicas,
      ...(rec !== undefined && s.topics.clustered ? { notHere: (partition: number) => s.topics.notHereError(rec.name, partition) } : {}),
    };
    topics.push(out);
    if (reuse && partitionLogs !== undefined) {
      const kept = keptIdleAnswer(out, readCommitted, ctx.apiVersion, changes, s.topics.generation);
      if (kept !== undefined) {
        logs.push(kept.logs);
        continue;
      }
    }
    const parts = t.partitions;
    const topicLogs: PartitionLog[] = [];
    if (parts.length > 0) logs.push(topicLogs);
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] as FetchRequestFetchPartition;
      const log = reads?.readReplicas?.has(p.partition) === true ? undefined : partitionLogs?.[p.partition];
      if (log === undefined) {
        allCaughtUp = false;
        continue;
      }
      if (!log.servable) {
        // its recovery failed (see recoverFetched): offline, answered KAFKA_STORAGE_ERROR by readAll
        allCaughtUp = false;
        continue;
      }
      topicLogs.push(log);
      if (allCaughtUp && !caughtUp(p.fetchOffset, log, readCommitted)) allCaughtUp = false;
    }
  }
  return { topics, logs, allCaughtUp };
}

/** Reads every partition within the byte limits; returns the response parts and the bytes read. */
async function readAll(
  topics: TopicOut[],
  maxBytes: number,
  allowOversized: boolean,
  readCommitted: boolean,
  apiVersion: number,
  session: Pick<FetchContext, 'unchanged' | 'kind'>,
  buffers: { pool: ReadBufferPool; leases: Releasable[]; fileSlices: boolean },
  services: RequestContext['services'],
) {
  // a sessionless Fetch: each topic's answer goes out whole (sessions leave unchanged partitions out)
  const reuse = session.kind === 'sessionless';
  let budget = maxBytes;
  let total = 0;
  let errors = 0;
  const out: FetchResponse<RecordsValue>['responses'] = [];
  for (const t of topics) {
    if (reuse) {
      // read afresh for each topic: reading an earlier one may have waited on I/O
      const kept = keptIdleAnswer(t, readCommitted, apiVersion, announcedChanges(), services.topics.generation);
      if (kept !== undefined) {
        out.push(kept.answer);
        continue;
      }
    }
    const parts = t.req.partitions;
    const partitions: PartitionOut[] = [];
    // whether every partition was caught up (its answer then kept for the next Fetch)
    let idle = reuse && t.readReplicas === undefined && parts.length > 0;
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] as FetchRequestFetchPartition;
      const log = t.logs?.[p.partition];
      const readReplica = t.readReplicas?.get(p.partition);
      if (readReplica !== undefined && log !== undefined) {
        idle = false;
        // KIP-392: no records, the replica to read from instead; answered at once (counted as an error for that)
        errors++;
        partitions.push({ ...partitionResult(p.partition, log, readCommitted, ErrorCode.NONE, EMPTY), preferredReadReplica: readReplica });
        continue;
      }
      if (log === undefined) {
        idle = false;
        errors++;
        partitions.push(partitionResult(p.partition, undefined, readCommitted, t.notHere?.(p.partition) ?? t.missing, EMPTY));
        continue;
      }
      if (!log.servable) {
        // its recovery failed: offline, no offsets to give
        idle = false;
        errors++;
        partitions.push(partitionResult(p.partition, undefined, readCommitted, ErrorCode.KAFKA_STORAGE_ERROR, EMPTY));
        continue;
      }
      const versionError = fetchVersionError(log, apiVersion);
      if (versionError !== ErrorCode.NONE) {
        idle = false;
        errors++;
        partitions.push(partitionResult(p.partition, log, readCommitted, versionError, EMPTY));
        continue;
      }
      // Caught up: nothing to read, so no read call (an idle consumer on thousands of partitions is all
      // this). The log's offsets are read once for both the check and the answer.
      const highWatermark = log.highWatermark;
      const lastStableOffset = log.lastStableOffset;
      const logStartOffset = log.logStartOffset;
      const fetchOffset = p.fetchOffset;
      if (caughtUpAt(fetchOffset, readCommitted ? lastStableOffset : highWatermark, logStartOffset, log.logEndOffset)) {
        partitions.push(
          session.unchanged(p, highWatermark, lastStableOffset, logStartOffset)
            ? UNCHANGED
            : resultOf(p.partition, readCommitted, ErrorCode.NONE, highWatermark, lastStableOffset, logStartOffset, EMPTY, NO_ABORTED),
        );
        continue;
      }
      idle = false;
      partitions.push(await readOne(p, log));
    }
    if (!idle) {
      out.push({ topic: t.topic, topicId: t.topicId, partitions });
      continue;
    }
    const answer: TopicAnswer = { topic: t.topic, topicId: t.topicId, partitions, _encoded: encodeOnce() };
    countedAsCaughtUp(answer);
    const logs: PartitionLog[] = [];
    for (const p of parts) logs.push(t.logs?.[p.partition] as PartitionLog);
    idleTopicAnswers.set(t.req, {
      apiVersion,
      readCommitted,
      logs,
      answer,
      topicLogs: t.logs,
      changes: announcedChanges(),
      generation: services.topics.generation,
    });
    out.push(answer);
  }
  return { responses: out, total, errors };

  async function readOne(p: FetchRequestFetchPartition, log: PartitionLog): Promise<PartitionOut> {
    try {
      const limit = Math.max(0, Math.min(p.partitionMaxBytes, budget));
      const { records, size, lease, file } = await log.read(p.fetchOffset, limit, {
        minOneMessage: allowOversized && total === 0,
        maxOffset: readLimit(log, readCommitted),
        pool: buffers.pool,
        fileSlices: buffers.fileSlices && apiVersion > 3,
      });
      // the response holds views of it (released by the dispatcher or, zero-copy, once written)
      if (lease != null) buffers.leases.push(lease);
      budget -= size;
      total += size;
      if (file !== undefined) {
        // the entries stay in the segment file: the connection sends them with sendfile, then this closes its descriptor
        buffers.leases.push(file);
        const aborted = readCommitted ? abortedIn(log, p.fetchOffset, records, file.nextOffset) : NO_ABORTED;
        return partitionResult(p.partition, log, readCommitted, ErrorCode.NONE, file.slice, aborted);
      }
      if (apiVersion <= 3) {
        // old readers get magic 0/1 (down-converted on the append pool when stored newer)
        const r = await recordsForFetchVersion(log, records, apiVersion, p.fetchOffset);
        if (r.errorCode !== ErrorCode.NONE) errors++;
        return partitionResult(p.partition, log, readCommitted, r.errorCode, r.records);
      }
      // the stored slices as read: the response carries them to the socket without copying (zero-copy)
      const aborted = readCommitted ? abortedIn(log, p.fetchOffset, records) : NO_ABORTED;
      return partitionResult(p.partition, log, readCommitted, ErrorCode.NONE, records.length === 0 ? EMPTY : records, aborted);
    } catch (e) {
      if (!(e instanceof LogError)) throw e;
      errors++;
      return partitionResult(p.partition, log, readCommitted, e.errorCode, EMPTY);
    }
  }
}

/** A consumer's Fetch (replica id -1) of the partitions in `req`: the answer for each, in order. */
async function consumerFetch(
  req: FetchRequest,
  ctx: RequestContext,
  session: Pick<FetchContext, 'unchanged' | 'kind'>,
): Promise<FetchResponse<RecordsValue>['responses']> {
  const s = ctx.services;
  const readCommitted = ctx.apiVersion >= 4 && (req.isolationLevel ?? 0) === READ_COMMITTED;
  await recoverFetched(req, ctx);
  const reuse = session.kind === 'sessionless';
  const { topics, logs, allCaughtUp } = resolve(req, ctx, readCommitted, reuse);
  const maxBytes = ctx.apiVersion >= 3 ? (req.maxBytes ?? 0x7fffffff) : 0x7fffffff;
  const allowOversized = ctx.apiVersion >= 3;
  const longPoll = req.maxWaitMs > 0 && req.minBytes > 0;
  // Long poll: wait in the purgatory (on the connection's standing watch of these partitions) until
  // enough bytes became readable in them. A consumer that is caught up everywhere waits before any
  // response is built, so an idle consumer on thousands of partitions holds no response objects
  // across the wait.
  // The time parked there is Kafka's RemoteTimeMs for this request, not handler (local) time.
  const waitForBytes = async (needed: number) => {
    let readable = 0;
    const parkedAt = performance.now();
    await fetchWatchFor(s.purgatory, ctx.conn).wait(
      logs,
      req.maxWaitMs,
      (change) => (readable += readableBytes(change, readCommitted)) >= needed,
    );
    if (ctx.timing !== undefined) ctx.timing.remoteMs += performance.now() - parkedAt;
  };
  if (longPoll && allCaughtUp) await waitForBytes(req.minBytes);
  // FileSlices where the connection can send them: the dispatcher then encodes zero-copy (both follow gregor.fetch.zero.copy)
  const buffers = { pool: s.readBuffers, leases: (ctx.readLeases ??= []), fileSlices: ctx.conn.sendsFiles === true };
  let result = await readAll(topics, maxBytes, allowOversized, readCommitted, ctx.apiVersion, session, buffers, s);
  if (longPoll && !allCaughtUp && result.total < req.minBytes && result.errors === 0) {
    // too little: this answer is dropped (its read buffers go back before the wait) and read again after it
    releaseAll(buffers.leases);
    buffers.leases.length = 0;
    await waitForBytes(req.minBytes - result.total);
    result = await readAll(topics, maxBytes, allowOversized, readCommitted, ctx.apiVersion, session, buffers, s);
  }
  return result.responses;
}

export const fetchHandler = defineHandler<FetchRequest, FetchResponse<RecordsValue>>({
  apiKey: ApiKey.Fetch,
  minVersion: 0,
  maxVersion: 17,
  async handle(request, ctx) {
    const s = ctx.services;
    const replicaId = s.replication !== undefined ? fetchReplicaId(request, ctx.apiVersion) : -1;
    // a follower's fetch needs CLUSTER_ACTION (Kafka answers the whole request CLUSTER_AUTHORIZATION_FAILED)
    if (replicaId >= 0 && !clusterAllowed(ctx, AclOperation.CLUSTER_ACTION))
      return this.errorResponse(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    // KIP-227: the session decides which partitions are read (all of the session's) and which of
    // their answers are sent (an incremental response: only those that changed)
    const session = s.fetchSessions.newContext(request, ctx.apiVersion, replicaId >= 0);
    if (session.kind === 'error') return { throttleTimeMs: 0, errorCode: session.errorCode, sessionId: 0, responses: [] };
    const req = session.topics === request.topics ? request : { ...request, topics: session.topics };
    const responses =
      replicaId >= 0 && s.replication !== undefined
        ? await replicaFetch(req, ctx, replicaId, s.replication, session)
        : await consumerFetch(req, ctx, session);
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, sessionId: session.sessionId, responses: session.respond(responses) };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      errorCode,
      sessionId: 0,
      responses: req.topics.map((t) => ({
        topic: t.topic ?? '',
        topicId: t.topicId ?? ZERO_UUID,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partition,
          errorCode,
          highWatermark: -1n,
          lastStableOffset: -1n,
          logStartOffset: -1n,
          abortedTransactions: null,
          preferredReadReplica: -1,
          records: EMPTY,
        })),
      })),
    };
  },
});
