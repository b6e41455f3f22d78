/**
 * ShareFetch and ShareAcknowledge as Kafka 4.2's SharePartitionManager serves them: the share session
 * (epoch 0 opens, -1 closes and releases what the member holds), acknowledgements applied first
 * (piggy-backed on ShareFetch, or on their own), then records acquired from the partitions of the
 * session, the member's own first, in an order that rotates with the session epoch. When nothing can
 * be acquired the fetch waits (purgatory, keyed by the partition logs and the share partitions) up to
 * MaxWaitMs for an append or a release.
 */
import { recordsLength, recordsSlices, type RecordsValue } from '../../protocol/codec/writer.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ShareFetchRequest, ShareFetchResponse, ShareFetchResponsePartitionData } from '../../protocol/generated/share-fetch.js';
import type { ShareAcknowledgeRequest, ShareAcknowledgeResponse } from '../../protocol/generated/share-acknowledge.js';
import type { Purgatory, PurgatoryKey } from '../replica/purgatory.js';
import type { ShareService } from './index.js';
import type { SharePartition } from './share-partition.js';
import { FINAL_EPOCH, type ShareSession } from './share-sessions.js';

export interface ShareRequestContext {
  purgatory: Purgatory;
  nodeId: number;
  leaderEpoch(topicId: string, partition: number): number;
  /** Resolves when the client's connection closes (its share sessions end then). */
  connectionClosed: Promise<void>;
  /**
   * Whether the principal may READ the topic, asked on every fetch for each partition of the session
   * (a denied topic stays in the session, answered TOPIC_AUTHORIZATION_FAILED, as Kafka); absent: all.
   */
  mayRead?: (topicId: string) => boolean;
}

interface AckBatch {
  firstOffset: bigint;
  lastOffset: bigint;
  acknowledgeTypes: number[];
}

/** records: the stored slices acquired, passed on to the socket uncopied */
type PartitionOut = ShareFetchResponsePartitionData<RecordsValue>;

function partitionOut(partitionIndex: number, leaderId: number, leaderEpoch: number): PartitionOut {
  return {
    partitionIndex,
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    acknowledgeErrorCode: ErrorCode.NONE,
    acknowledgeErrorMessage: null,
    currentLeader: { leaderId, leaderEpoch },
    records: Buffer.alloc(0),
    acquiredRecords: [],
  };
}

/** Applies a partition's acknowledgement batches; the error code for the partition (NONE when all applied). */
function acknowledge(
  share: ShareService,
  groupId: string,
  memberId: string,
  topicId: string,
  partition: number,
  batches: readonly AckBatch[],
  touched: Set<SharePartition>,
): number {
  if (batches.length === 0) return ErrorCode.NONE;
  const sp = share.partitions.get(groupId, topicId, partition);
  if (sp !== undefined) touched.add(sp);
  if (sp === undefined)
    return share.partitions.getOrCreate(groupId, topicId, partition) === undefined
      ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
      : ErrorCode.INVALID_RECORD_STATE;
  let error: number = ErrorCode.NONE;
  for (const b of batches)
    if (!sp.acknowledge(memberId, b.firstOffset, b.lastOffset, b.acknowledgeTypes)) error = ErrorCode.INVALID_RECORD_STATE;
  return error;
}

/** Opens or continues the member's session; the session or a top-level error code. */
function sessionFor(
  share: ShareService,
  groupId: string | null,
  memberId: string | null,
  epoch: number,
  ctx: ShareRequestContext,
): ShareSession | number {
  if (groupId === null || groupId === '' || memberId === null || memberId === '') return ErrorCode.INVALID_REQUEST;
  const s = share.sessions.open(groupId, memberId, epoch);
  if (typeof s === 'number') return s;
  if (epoch === 0) {
    // a client that goes away ends its share session: what it holds goes back to the others
    void ctx.connectionClosed.then(() => {
      if (share.sessions.get(groupId, memberId) !== s) return;
      share.sessions.close(s);
      share.partitions.releaseMember(groupId, memberId);
    });
  }
  return s;
}

export async function shareFetch(
  share: ShareService,
  req: ShareFetchRequest,
  ctx: ShareRequestContext,
): Promise<Omit<ShareFetchResponse<RecordsValue>, 'throttleTimeMs'>> {
  const lockMs = share.recordLockDurationMs(req.groupId ?? '');
  const top = (errorCode: number) => ({
    errorCode,
    errorMessage: null,
    acquisitionLockTimeoutMs: lockMs,
    responses: [],
    nodeEndpoints: [],
  });
  const session = sessionFor(share, req.groupId, req.memberId, req.shareSessionEpoch, ctx);
  if (typeof session === 'number') return top(session);
  const groupId = session.groupId;
  const memberId = session.memberId;
  const out = new Map<string, Map<number, PartitionOut>>();
  const entry = (topicId: string, p: number): PartitionOut => {
    let t = out.get(topicId);
    if (t === undefined) out.set(topicId, (t = new Map<number, PartitionOut>()));
    let e = t.get(p);
    if (e === undefined) t.set(p, (e = partitionOut(p, ctx.nodeId, ctx.leaderEpoch(topicId, p))));
    return e;
  };
  const closing = req.shareSessionEpoch === FINAL_EPOCH;
  const touched = new Set<SharePartition>();
  for (const t of req.topics) {
    for (const p of t.partitions) {
      if (!closing) session.add(t.topicId, p.partitionIndex);
      const e = entry(t.topicId, p.partitionIndex);
      if (p.acknowledgementBatches.length > 0) {
        e.acknowledgeErrorCode =
          ctx.mayRead?.(t.topicId) === false
            ? ErrorCode.TOPIC_AUTHORIZATION_FAILED
            : acknowledge(share, groupId, memberId, t.topicId, p.partitionIndex, p.acknowledgementBatches, touched);
      }
    }
  }
  // as Kafka's ShareSession.update: what the request forgets goes after what it names was added, so a
  // partition that carries its last acknowledgements in the request that forgets it leaves the session
  for (const f of req.forgottenTopicsData) for (const p of f.partitions) session.remove(f.topicId, p);
  if (closing) {
    share.sessions.close(session);
    share.partitions.releaseMember(groupId, memberId);
    await share.durable(touched);
    return responseOf(out, lockMs);
  }
  // the share partitions of the session (unknown topics or partitions this broker does not lead answer an error)
  const targets: Target[] = [];
  for (const { topicId, partition } of session.partitions.values()) {
    if (ctx.mayRead?.(topicId) === false) {
      Object.assign(entry(topicId, partition), {
        errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        currentLeader: { leaderId: -1, leaderEpoch: -1 },
      });
      continue;
    }
    const sp = share.partitions.getOrCreate(groupId, topicId, partition);
    if (sp === undefined) entry(topicId, partition).errorCode = share.notHereError(topicId, partition);
    else targets.push({ topicId, partition, sp });
  }
  fetchOrder(share, memberId, targets, req.shareSessionEpoch);
  // a long poll: woken by an append or a release, it may find another member took the records first
  const deadline = Date.now() + Math.max(0, req.maxWaitMs);
  let acquired = await acquireAll(share, targets, memberId, req, lockMs, entry);
  while (acquired === 0 && targets.length > 0 && Date.now() < deadline && share.sessions.get(groupId, memberId) === session) {
    await waitForRecords(share, ctx.purgatory, targets, deadline - Date.now());
    acquired = await acquireAll(share, targets, memberId, req, lockMs, entry);
  }
  // acknowledgements are answered once written to __share_group_state, and what was acquired is written
  // too (so that a restart redelivers it with its delivery count): one write per share partition holds both
  for (const t of targets) if (out.get(t.topicId)?.get(t.partition)?.acquiredRecords.length) touched.add(t.sp);
  await share.durable(touched);
  return responseOf(out, lockMs);
}

interface Target {
  topicId: string;
  partition: number;
  sp: SharePartition;
}

/**
 * Among how many members a fetch shares the partition's record locks, and whether the member reads it
 * alone (batch-optimised). The members the coordinator assigns the partition count. A member whose
 * share session still holds a partition the coordinator has given to others (it learns so at its next
 * heartbeat, and forgets the partition then) shares it with them and never reads it alone, so that the
 * members it now belongs to are not held to slices of MaxRecords meanwhile. For a member the
 * coordinator does not know (no heartbeat) the share sessions holding the partition count.
 */
function sharing(share: ShareService, memberId: string, sp: SharePartition): { sharers: number; alone: boolean } {
  const assigned = share.assignedMembers(sp.groupId, sp.topicId, sp.partition);
  const mine = share.isAssigned(sp.groupId, memberId, sp.topicId, sp.partition);
  if (mine === undefined) {
    const sessions = share.sessions.sharers(sp.groupId, sp.topicId, sp.partition);
    return { sharers: Math.max(1, sessions), alone: sessions <= 1 && assigned <= 1 };
  }
  return mine ? { sharers: Math.max(1, assigned), alone: assigned <= 1 } : { sharers: assigned + 1, alone: false };
}

/**
 * The order a fetch visits the session's partitions in (a fetch that reaches MaxRecords stops): the
 * partitions the coordinator assigns the member first, then the ones it no longer does; each run
 * rotated by the session epoch, as Kafka's round-robin PartitionRotateStrategy, so that no partition
 * starves behind another that always has records.
 */
function fetchOrder(share: ShareService, memberId: string, targets: Target[], epoch: number): void {
  if (targets.length < 2) return;
  const own: Target[] = [];
  const stale: Target[] = [];
  for (const t of targets) (share.isAssigned(t.sp.groupId, memberId, t.topicId, t.partition) === false ? stale : own).push(t);
  const rotated = (ts: Target[]): Target[] => {
    const at = ts.length > 1 && epoch > 0 ? epoch % ts.length : 0;
    return at === 0 ? ts : [...ts.slice(at), ...ts.slice(0, at)];
  };
  targets.splice(0, targets.length, ...rotated(own), ...rotated(stale));
}

async function acquireAll(
  share: ShareService,
  targets: readonly Target[],
  memberId: string,
  req: ShareFetchRequest,
  lockMs: number,
  entry: (topicId: string, p: number) => PartitionOut,
): Promise<number> {
  let remainingRecords = req.maxRecords > 0 ? req.maxRecords : 500;
  let remainingBytes = req.maxBytes > 0 ? req.maxBytes : 2147483647;
  let total = 0;
  for (const { topicId, partition, sp } of targets) {
    if (remainingRecords <= 0 || remainingBytes <= 0) break;
    // members sharing a partition each take at most their share of its record locks, so that all get work
    const { sharers, alone } = sharing(share, memberId, sp);
    const fairShare = Math.ceil(share.maxRecordLocks / sharers);
    const maxRecords = Math.min(remainingRecords, fairShare);
    // a member alone on the partition gets Kafka's batch-optimised acquisition (MaxRecords soft: a batch
    // begun is finished, hard cap 0); members sharing it keep to MaxRecords and their share of the locks
    const r = await share.partitions.acquire(sp, memberId, maxRecords, remainingBytes, lockMs, alone ? 0 : maxRecords);
    if (r.count === 0) continue;
    const e = entry(topicId, partition);
    e.records = e.records === null || recordsLength(e.records) === 0 ? r.records : [...recordsSlices(e.records), ...r.records];
    e.acquiredRecords.push(...r.acquired);
    remainingRecords -= r.count;
    remainingBytes -= r.bytes;
    total += r.count;
  }
  return total;
}

/** Waits until one of the partitions has records to hand out, or `maxWaitMs`. */
function waitForRecords(share: ShareService, purgatory: Purgatory, targets: readonly Target[], maxWaitMs: number): Promise<void> {
  const keys: PurgatoryKey[] = [];
  for (const t of targets) {
    keys.push(t.sp);
    const log = share.partitionLog(t.topicId, t.partition);
    if (log !== undefined) keys.push(log);
  }
  return new Promise((resolve) => {
    purgatory.tryCompleteElseWatch(
      { tryComplete: () => targets.some((t) => share.partitions.acquirable(t.sp)), onComplete: () => resolve() },
      keys,
      maxWaitMs,
    );
  });
}

function responseOf(out: Map<string, Map<number, PartitionOut>>, lockMs: number): Omit<ShareFetchResponse<RecordsValue>, 'throttleTimeMs'> {
  return {
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    acquisitionLockTimeoutMs: lockMs,
    responses: [...out].map(([topicId, ps]) => ({ topicId, partitions: [...ps.values()] })),
    nodeEndpoints: [],
  };
}

export async function shareAcknowledge(
  share: ShareService,
  req: ShareAcknowledgeRequest,
  ctx: ShareRequestContext,
): Promise<Omit<ShareAcknowledgeResponse, 'throttleTimeMs'>> {
  const top = (errorCode: number) => ({ errorCode, errorMessage: null, responses: [], nodeEndpoints: [] });
  if (req.shareSessionEpoch === 0) return top(ErrorCode.INVALID_SHARE_SESSION_EPOCH);
  const session = sessionFor(share, req.groupId, req.memberId, req.shareSessionEpoch, ctx);
  if (typeof session === 'number') return top(session);
  const touched = new Set<SharePartition>();
  const responses = req.topics.map((t) => ({
    topicId: t.topicId,
    partitions: t.partitions.map((p) => ({
      partitionIndex: p.partitionIndex,
      errorCode: acknowledge(share, session.groupId, session.memberId, t.topicId, p.partitionIndex, p.acknowledgementBatches, touched),
      errorMessage: null,
      currentLeader: { leaderId: ctx.nodeId, leaderEpoch: ctx.leaderEpoch(t.topicId, p.partitionIndex) },
    })),
  }));
  if (req.shareSessionEpoch === FINAL_EPOCH) {
    share.sessions.close(session);
    share.partitions.releaseMember(session.groupId, session.memberId);
  }
  await share.durable(touched);
  return { errorCode: ErrorCode.NONE, errorMessage: null, responses, nodeEndpoints: [] };
}
