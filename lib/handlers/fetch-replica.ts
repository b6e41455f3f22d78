/**
 * Fetch from a follower (a replica id ≥ 0, in a cluster): Kafka's leader side of replication. Reads
 * go up to the log end offset, not the high watermark; each partition's fetch offset is the
 * follower's log end offset, handed to the replication layer (high watermark, ISR); the follower's
 * leader epoch must be the current one. Idle followers long-poll on the connection's fetch watch
 * (woken by appends and by high watermark moves). In a fetch session the answers a session leaves
 * out are not built (UNCHANGED), and a partition found idle (caught up, in the ISR, nothing to say)
 * is not looked at again until its log announces a change or the follower names it (`idleLog`): an
 * idle follower's Fetch costs one read per partition, whatever the partition count.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type {
  FetchRequest,
  FetchRequestFetchPartition,
  FetchResponse,
  FetchResponsePartitionData,
} from '../../protocol/generated/fetch.js';
import type { RecordsValue } from '../../protocol/codec/writer.js';
import { LogError, type PartitionLog } from '../log/partition-log.js';
import { type AllIdle, type CachedPartition, type FetchContext, type SessionIdle, UNCHANGED } from '../replica/fetch-sessions.js';
import { fetchWatchFor } from '../replica/fetch-watch.js';
import { foldIdleClock } from '../replica/led-partition.js';
import type { LedFollower, Replication } from '../replica/replication.js';
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
  records: RecordsValue = EMPTY,
): FetchResponsePartitionData<RecordsValue> {
  if (log === undefined) return resultOf(partitionIndex, errorCode, -1n, -1n, -1n, records);
  return resultOf(partitionIndex, errorCode, log.highWatermark, log.lastStableOffset, log.logStartOffset, records);
}

/** One shape for every partition result (the encoder's property reads stay monomorphic). */
function resultOf(
  partitionIndex: number,
  errorCode: number,
  highWatermark: bigint,
  lastStableOffset: bigint,
  logStartOffset: bigint,
  records: RecordsValue,
): FetchResponsePartitionData<RecordsValue> {
  return {
    partitionIndex,
    errorCode,
    highWatermark,
    lastStableOffset,
    logStartOffset,
    abortedTransactions: null,
    preferredReadReplica: -1,
    records,
  };
}

/**
 * The error a partition's fetch answers before anything is read (NONE: it can be read from its fetch
 * offset): not led here, offline, another leader epoch, a fetch offset out of the log's range.
 */
function partitionError(ctx: RequestContext, topic: string, p: FetchRequestFetchPartition, log: PartitionLog | undefined): number {
  if (log === undefined) return ctx.services.topics.notHereError(topic, p.partition);
  return logError(log, ctx.services.topics.leaderEpoch(topic, p.partition), p);
}

/** `partitionError` for a partition led here at `leaderEpoch` by `log`. */
function logError(log: PartitionLog, leaderEpoch: number, p: FetchRequestFetchPartition): number {
  if (!log.servable) return ErrorCode.KAFKA_STORAGE_ERROR;
  const asked = p.currentLeaderEpoch ?? -1;
  if (asked >= 0 && asked !== leaderEpoch) return asked < leaderEpoch ? ErrorCode.FENCED_LEADER_EPOCH : ErrorCode.UNKNOWN_LEADER_EPOCH;
  if (p.fetchOffset < log.logStartOffset || p.fetchOffset > log.logEndOffset) return ErrorCode.OFFSET_OUT_OF_RANGE;
  return ErrorCode.NONE;
}

/**
 * A session partition's leader state (its `leaderState`), looked up by a follower's Fetch and kept for
 * the next ones, as Kafka's FetchSession keeps each partition's resolved state: the led log, the
 * leader epoch and the follower's progress record. It holds while neither the topic manager's nor the
 * replication layer's generation moves (every metadata change, leadership change and topic change
 * moves one) and for the replica that looked it up; what moves with the data (log end, high
 * watermark, last stable offset, log start) is read from the log on every Fetch. An idle follower's
 * Fetch then makes no map lookup per partition.
 */
interface LeaderSlot {
  readonly topicsGeneration: number;
  readonly replicationGeneration: number;
  readonly replicaId: number;
  readonly log: PartitionLog;
  readonly leaderEpoch: number;
  readonly follower: LedFollower;
}

/**
 * The state the leader slots of a Fetch hold under: the generations and the replica. The same object
 * while they stay the same (one per replication layer and replica), so that a partition found idle
 * under it (`CachedPartition.idleSince`) is recognised by one identity compare.
 */
interface SlotState {
  readonly topics: number;
  readonly replication: number;
}

const slotStates = new WeakMap<Replication, Map<number, SlotState>>();

function slotState(replication: Replication, replicaId: number, gens: Generations): SlotState {
  let byReplica = slotStates.get(replication);
  if (byReplica === undefined) slotStates.set(replication, (byReplica = new Map<number, SlotState>()));
  const cur = byReplica.get(replicaId);
  if (cur !== undefined && cur.topics === gens.topics && cur.replication === gens.replication) return cur;
  const next = { topics: gens.topics, replication: gens.replication };
  byReplica.set(replicaId, next);
  return next;
}

/**
 * The log of an incremental session's partition still as the handler last found it idle, else null.
 * Idle: nothing to answer, the follower caught up and in the ISR. It stays so while the leader state
 * holds (`state`), the request does not name the partition and its log announces no change (no
 * append, no high watermark move, no log start move: LazyLog.noteChange): its answer is UNCHANGED
 * and its follower still caught up, as of the session's clock. An idle follower's Fetch of thousands
 * of partitions then reads one object per partition and writes none.
 */
function idleLog(p: FetchRequestFetchPartition, state: SlotState | null): PartitionLog | null {
  const c = p as Partial<CachedPartition>;
  return state !== null && c.idleSince === state ? ((c.idleOn ?? null) as PartitionLog | null) : null;
}

/** The generations a `LeaderSlot` must carry to hold now. */
interface Generations {
  readonly topics: number;
  readonly replication: number;
}

/** The slot kept for a session partition, if it still holds. */
function keptSlot(p: FetchRequestFetchPartition, replicaId: number, now: Generations): LeaderSlot | undefined {
  const kept = (p as Partial<CachedPartition>).leaderState as LeaderSlot | null | undefined;
  if (kept === null || kept === undefined) return undefined;
  const holds = kept.topicsGeneration === now.topics && kept.replicationGeneration === now.replication && kept.replicaId === replicaId;
  return holds ? kept : undefined;
}

/** What the first pass found (see replicaFetch). */
interface FirstPass {
  /** every partition's log (what the long poll watches) */
  logs: readonly PartitionLog[];
  /** the logs read (not idle) and their log end offsets then */
  read: PartitionLog[];
  ends: bigint[];
  /** partitions the replication layer refused (NOT_LEADER_OR_FOLLOWER: not a replica of it) */
  refused: Map<FetchRequestFetchPartition, number> | undefined;
  caughtUp: boolean;
}

/** The first pass: checks each partition not idle and hands its fetch offset to the replication layer. */
function firstPass(
  req: FetchRequest,
  ctx: RequestContext,
  replicaId: number,
  replication: Replication,
  gens: Generations,
  state: SlotState | null,
  now: number,
): FirstPass {
  const s = ctx.services;
  const byId = ctx.apiVersion >= 13;
  const out: FirstPass = { logs: [], read: [], ends: [], refused: undefined, caughtUp: true };
  const logs = out.logs as PartitionLog[];
  for (const t of req.topics) {
    const rec = byId ? s.metadata.topicById(t.topicId ?? ZERO_UUID) : s.metadata.topic(t.topic ?? '');
    if (rec === undefined) continue;
    const led = s.topics.logsOf(rec.name);
    for (const p of t.partitions) {
      const idle = idleLog(p, state);
      if (idle !== null) {
        logs.push(idle);
        continue;
      }
      let log: PartitionLog | undefined;
      const slot = keptSlot(p, replicaId, gens);
      if (slot !== undefined) {
        log = slot.log;
        foldIdleClock(slot.follower.progress);
        if (logError(log, slot.leaderEpoch, p) !== ErrorCode.NONE) continue;
        replication.fetchedBy(slot.follower, replicaId, p.fetchOffset, now, p.logStartOffset ?? -1n);
      } else {
        log = led?.[p.partition];
        if (log === undefined || partitionError(ctx, rec.name, p, log) !== ErrorCode.NONE) continue;
        const follower = replication.follower(rec.name, p.partition, replicaId);
        if (follower === undefined) {
          (out.refused ??= new Map()).set(p, ErrorCode.NOT_LEADER_OR_FOLLOWER); // not led here, or not a replica of it
          continue;
        }
        replication.fetchedBy(follower, replicaId, p.fetchOffset, now, p.logStartOffset ?? -1n);
        const c = p as Partial<CachedPartition>;
        if (c.leaderState !== undefined) {
          const leaderEpoch = s.topics.leaderEpoch(rec.name, p.partition);
          c.leaderState = { topicsGeneration: gens.topics, replicationGeneration: gens.replication, replicaId, log, leaderEpoch, follower };
        }
      }
      const logEnd = log.logEndOffset;
      logs.push(log);
      out.read.push(log);
      out.ends.push(logEnd);
      if (p.fetchOffset < logEnd) out.caughtUp = false;
    }
  }
  return out;
}

/** Whether the session's last Fetch found every partition idle under `state`, with nothing named, forgotten or cleared since. */
function stillAllIdle(idle: SessionIdle | null, state: SlotState | null): idle is SessionIdle & { allIdle: AllIdle } {
  const all = idle?.allIdle;
  return all !== undefined && all !== null && all.state === state && all.marksCleared === idle?.marksCleared;
}

/**
 * The answers for `req`'s partitions (in its order; UNCHANGED for one `session` leaves out). Two
 * passes: the first checks each partition and hands its fetch offset to the replication layer (as
 * Kafka's ReplicaManager updates the follower's state from the read before the long poll, not from
 * the DelayedFetch's read after it), builds nothing and tells whether everything is caught up; after
 * the long poll, if any, the second reads and answers. A partition found idle is skipped by both
 * (`idleLog`); a session whose partitions were all idle at its last Fetch, and still are, skips both
 * passes (`SessionIdle.allIdle`): its Fetch costs the same whatever its partition count.
 */
export async function replicaFetch(
  req: FetchRequest,
  ctx: RequestContext,
  replicaId: number,
  replication: Replication,
  session: Pick<FetchContext, 'unchanged' | 'kind' | 'idle'>,
): Promise<FetchResponse<RecordsValue>['responses']> {
  const s = ctx.services;
  const idle = session.kind === 'incremental' ? session.idle : null;
  const now = replication.now();
  let gens: Generations = { topics: s.topics.generation, replication: replication.generation };
  const firstState = idle !== null ? slotState(replication, replicaId, gens) : null;
  const first = stillAllIdle(idle, firstState)
    ? { logs: idle.allIdle.logs as readonly PartitionLog[], read: [], ends: [], refused: undefined, caughtUp: true }
    : firstPass(req, ctx, replicaId, replication, gens, firstState, now);
  // the idle partitions' followers are caught up as of now (FollowerProgress.idleClock)
  if (idle !== null) idle.clock.ms = now;
  if (first.caughtUp && first.logs.length > 0 && req.maxWaitMs > 0 && req.minBytes > 0) {
    const parkedAt = performance.now();
    // Any change to a fetched partition (an append, a high watermark move) ends the wait. The check a
    // wait starts with (no change) only asks whether a log grew since it was read (an append between
    // the read and the wait): a caught-up follower must park, not poll.
    const { read, ends } = first;
    const grown = (): boolean => {
      for (let i = 0; i < read.length; i++) if (read[i]!.logEndOffset !== ends[i]) return true;
      return false;
    };
    await fetchWatchFor(s.purgatory, ctx.conn).wait([first.logs], req.maxWaitMs, (change) => change !== undefined || grown());
    if (ctx.timing !== undefined) ctx.timing.remoteMs += performance.now() - parkedAt;
  }
  gens = { topics: s.topics.generation, replication: replication.generation };
  const state = idle !== null ? slotState(replication, replicaId, gens) : null;
  if (stillAllIdle(idle, state)) return []; // nothing to answer (an incremental response leaves every partition out)
  const { responses, allIdle } = await secondPass(req, ctx, replicaId, gens, state, session, first.refused);
  if (idle !== null && state !== null && allIdle && state === firstState)
    idle.allIdle = { state, marksCleared: idle.marksCleared, logs: first.logs };
  return responses;
}

/** The second pass: reads and answers; tells whether every partition is idle now (found so before or by this pass). */
async function secondPass(
  req: FetchRequest,
  ctx: RequestContext,
  replicaId: number,
  gens: Generations,
  state: SlotState | null,
  session: Pick<FetchContext, 'unchanged' | 'idle'>,
  refused: Map<FetchRequestFetchPartition, number> | undefined,
): Promise<{ responses: FetchResponse<RecordsValue>['responses']; allIdle: boolean }> {
  const s = ctx.services;
  const byId = ctx.apiVersion >= 13;
  let allIdle = true;
  let budget = req.maxBytes ?? 0x7fffffff;
  let total = 0;
  const responses: FetchResponse<RecordsValue>['responses'] = [];
  for (const t of req.topics) {
    const rec = byId ? s.metadata.topicById(t.topicId ?? ZERO_UUID) : s.metadata.topic(t.topic ?? '');
    const partitions: FetchResponsePartitionData<RecordsValue>[] = [];
    const led = rec === undefined ? undefined : s.topics.logsOf(rec.name);
    for (const p of t.partitions) {
      if (rec === undefined) {
        partitions.push(result(p.partition, byId ? ErrorCode.UNKNOWN_TOPIC_ID : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, undefined));
        allIdle = false;
        continue;
      }
      if (idleLog(p, state) !== null) {
        partitions.push(UNCHANGED);
        continue;
      }
      const slot = keptSlot(p, replicaId, gens);
      const log = slot?.log ?? led?.[p.partition];
      const error =
        refused?.get(p) ?? (slot !== undefined ? logError(slot.log, slot.leaderEpoch, p) : partitionError(ctx, rec.name, p, log));
      if (log === undefined || error !== ErrorCode.NONE) {
        const known = log !== undefined && error !== ErrorCode.KAFKA_STORAGE_ERROR;
        partitions.push(result(p.partition, error, known ? log : undefined));
        allIdle = false;
        continue;
      }
      if (p.fetchOffset >= log.logEndOffset) {
        const hw = log.highWatermark;
        const lso = log.lastStableOffset;
        const start = log.logStartOffset;
        if (session.unchanged(p, hw, lso, start)) {
          // idle until its log or the request moves, if its follower is in the ISR (otherwise each
          // Fetch must look again whether it may join)
          const idle = session.idle;
          if (state !== null && idle !== null && slot !== undefined && slot.follower.led.state.isr.includes(replicaId)) {
            const c = p as CachedPartition;
            c.idleSince = state;
            log.markUntilChange(c);
            slot.follower.progress.idleClock = idle.clock;
            slot.follower.progress.idleOf = c;
          } else allIdle = false;
          partitions.push(UNCHANGED);
        } else {
          partitions.push(resultOf(p.partition, ErrorCode.NONE, hw, lso, start, EMPTY));
          allIdle = false;
        }
        continue;
      }
      allIdle = false;
      try {
        const limit = Math.max(0, Math.min(p.partitionMaxBytes, budget));
        const { records, size } = await log.read(p.fetchOffset, limit, { minOneMessage: total === 0, maxOffset: log.logEndOffset });
        budget -= size;
        total += size;
        // the stored slices as read, passed on to the socket uncopied
        partitions.push(result(p.partition, ErrorCode.NONE, log, records.length === 0 ? EMPTY : records));
      } catch (e) {
        if (!(e instanceof LogError)) throw e;
        partitions.push(result(p.partition, e.errorCode, log));
      }
    }
    responses.push({ topic: rec?.name ?? t.topic ?? '', topicId: rec?.topicId ?? t.topicId ?? ZERO_UUID, partitions });
  }
  return { responses, allIdle };
}
