/**
 * Fetch sessions (KIP-227), the leader's side, as Kafka's FetchSession / FetchSessionCache: a fetcher
 * (a follower, or a consumer that asks for it) opens a session with a full Fetch (session id 0, epoch
 * 0); the broker keeps each partition's fetch state (fetch offset, max bytes, leader epoch) and what
 * it last answered for it (high watermark, last stable offset, log start offset), and hands out a
 * random session id. Later (incremental) Fetches of that session carry only the partitions whose
 * state changed, plus `forgotten_topics_data`, and their answers only the partitions that have
 * records, an error, or new offsets. Epoch -1 asks for no session (a sessionless full Fetch) and,
 * with a session id, closes that session.
 *
 * The handlers take a context from `newContext`: the partitions to read (the whole session, as one
 * list of topics, in the session's order: those that returned records last move to its end), and
 * `respond`, which turns the answers for all of them into the response (an incremental one keeps only
 * what changed). A session-level error comes back as the context's `errorCode`.
 *
 * The cache holds `max.incremental.fetch.session.cache.slots` sessions. When it is full, a new
 * session takes the place of (in this order): the least recently used session if it has not been used
 * for EVICTION_MS; for a follower, the smallest consumer session; for a consumer, the smallest
 * consumer session older than EVICTION_MS that has fewer partitions than the newcomer (Kafka's
 * ordering: followers are privileged, and a session must live a while before a peer may take its
 * place). Otherwise the fetcher gets no session (session id 0) and its Fetch is answered in full.
 */
import { randomInt } from 'node:crypto';
import { recordsLength, type RecordsValue } from '../../protocol/codec/writer.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ChangeMark } from '../log/change-marks.js';
import type {
  FetchRequest,
  FetchRequestFetchPartition,
  FetchRequestFetchTopic,
  FetchResponse,
  FetchResponsePartitionData,
} from '../../protocol/generated/fetch.js';

/** Session epochs with a meaning of their own. */
export const FetchSessionEpoch = {
  /** a full Fetch that opens a session (with session id 0) or replaces one (with its id) */
  INITIAL: 0,
  /** a sessionless full Fetch (with session id 0), or one that closes the session named */
  FINAL: -1,
} as const;

/** Not used since the last `EVICTION_MS`: evictable by anyone (Kafka's 2 minutes). */
export const EVICTION_MS = 120_000;

const ZERO_UUID = '0'.repeat(32);

/** The epoch after `epoch` (1 after the last int32). */
export function nextEpoch(epoch: number): number {
  return epoch >= 0x7fffffff ? 1 : epoch + 1;
}

/** A session's partition: the request fields the handlers read, and what it was last answered. */
export interface CachedPartition extends FetchRequestFetchPartition, ChangeMark {
  /** answered last; -1n: never (the next answer names it whatever it says) */
  highWatermark: bigint;
  lastStableOffset: bigint;
  leaderLogStartOffset: bigint;
  /**
   * What the handler keeps for this partition from one Fetch of the session to the next (the replica
   * fetch path: the partition's leader state, looked up once); null until it keeps something. Absent
   * on a sessionless Fetch's partitions.
   */
  leaderState: object | null;
  /**
   * ChangeMark: the log the handler found the partition idle on (nothing to answer, the fetcher caught
   * up and in the ISR), until that log announces a change; null: not idle. A request naming the
   * partition clears it too. `idleSince` is the handler's key for the state it was found idle in.
   */
  idleOn: object | null;
  listedOn: object | null;
  idleSince: object | null;
  /** the session forgot it (forgotten_topics_data) */
  forgotten: boolean;
}

/**
 * What the replica fetch handler keeps of a session between its Fetches: the session's clock (set to
 * each Fetch's time: the idle partitions' followers are caught up as of it, FollowerProgress.idleClock),
 * how many idle marks its partitions' logs have cleared so far (ChangeMark.holder), and, when a Fetch
 * found every partition idle, that state (`allIdle`), which the next Fetch may reuse whole while
 * nothing was named, forgotten or cleared since.
 */
export interface SessionIdle {
  readonly clock: { ms: number };
  readonly marksCleared: number;
  allIdle: AllIdle | null;
}

/** Every partition of a session was idle under `state` (the handler's key) with no mark cleared past `marksCleared`. */
export interface AllIdle {
  readonly state: object;
  readonly marksCleared: number;
  /** the partitions' logs, in the session's order (what its long poll watches) */
  readonly logs: readonly object[];
}

export class FetchSession implements SessionIdle {
  /** by topic (id from Fetch v13, else name) and partition index, in fetch order */
  readonly partitions = new Map<string, { topic: string; topicId: string; part: CachedPartition }>();
  /** the epoch the next incremental Fetch must carry */
  epoch = nextEpoch(FetchSessionEpoch.INITIAL);
  readonly clock = { ms: 0 };
  marksCleared = 0;
  allIdle: AllIdle | null = null;
  private view: FetchRequestFetchTopic[] | null = null;

  constructor(
    readonly id: number,
    /** a follower's (Kafka's privileged sessions) */
    readonly privileged: boolean,
    /** opened by Fetch v13+ (topics by id): only such Fetches may use it */
    readonly usesTopicIds: boolean,
    readonly createdMs: number,
    public lastUsedMs: number,
  ) {}

  get size(): number {
    return this.partitions.size;
  }

  /** A change cleared the idle mark of one of the session's partitions. */
  markCleared(): void {
    this.marksCleared++;
  }

  /** Every partition as the topics of a Fetch request (consecutive partitions of a topic together), kept until the session changes. */
  topics(): FetchRequestFetchTopic[] {
    if (this.view !== null) return this.view;
    const view: FetchRequestFetchTopic[] = [];
    let last: FetchRequestFetchTopic | undefined;
    let lastKey = '';
    for (const e of this.partitions.values()) {
      const key = this.usesTopicIds ? e.topicId : e.topic;
      if (last === undefined || key !== lastKey) {
        last = { topic: e.topic, topicId: e.topicId, partitions: [] };
        lastKey = key;
        view.push(last);
      }
      last.partitions.push(e.part);
    }
    return (this.view = view);
  }

  /** Adds a partition or updates its fetch state from a request. */
  upsert(topic: string, topicId: string, p: FetchRequestFetchPartition): void {
    const k = this.key(topic, topicId, p.partition);
    const cur = this.partitions.get(k);
    this.allIdle = null;
    if (cur !== undefined) {
      const c = cur.part;
      c.fetchOffset = p.fetchOffset;
      c.partitionMaxBytes = p.partitionMaxBytes;
      if (p.currentLeaderEpoch !== undefined) c.currentLeaderEpoch = p.currentLeaderEpoch;
      if (p.logStartOffset !== undefined) c.logStartOffset = p.logStartOffset;
      if (p.lastFetchedEpoch !== undefined) c.lastFetchedEpoch = p.lastFetchedEpoch;
      c.idleOn = null;
      return;
    }
    const part: CachedPartition = {
      partition: p.partition,
      currentLeaderEpoch: p.currentLeaderEpoch ?? -1,
      fetchOffset: p.fetchOffset,
      lastFetchedEpoch: p.lastFetchedEpoch ?? -1,
      logStartOffset: p.logStartOffset ?? -1n,
      partitionMaxBytes: p.partitionMaxBytes,
      highWatermark: -1n,
      lastStableOffset: -1n,
      leaderLogStartOffset: -1n,
      leaderState: null,
      idleOn: null,
      listedOn: null,
      idleSince: null,
      forgotten: false,
      holder: this,
    };
    this.partitions.set(k, { topic, topicId, part });
    this.view = null;
  }

  forget(topic: string, topicId: string, partition: number): void {
    const k = this.key(topic, topicId, partition);
    const e = this.partitions.get(k);
    if (e === undefined) return;
    e.part.forgotten = true;
    e.part.idleOn = null;
    this.allIdle = null;
    this.partitions.delete(k);
    this.view = null;
  }

  /** Moves a partition that returned records to the end, so that the others go first next time. */
  moveToEnd(topic: string, topicId: string, partition: number): void {
    const k = this.key(topic, topicId, partition);
    const e = this.partitions.get(k);
    if (e === undefined) return;
    this.partitions.delete(k);
    this.partitions.set(k, e);
    this.view = null;
    this.allIdle = null;
  }

  private key(topic: string, topicId: string, partition: number): string {
    return `${this.usesTopicIds ? topicId : topic}\u0000${partition}`;
  }
}

/** Whether the answer `pd` for `c` must be sent in an incremental response; records the offsets sent (an error: none). */
function mustRespond(c: CachedPartition, pd: FetchResponsePartitionData<RecordsValue>): boolean {
  let must = pd.errorCode !== ErrorCode.NONE || hasRecords(pd) || (pd.preferredReadReplica ?? -1) >= 0;
  if (pd.highWatermark !== c.highWatermark) {
    c.highWatermark = pd.highWatermark;
    must = true;
  }
  const lso = pd.lastStableOffset ?? -1n;
  if (lso !== c.lastStableOffset) {
    c.lastStableOffset = lso;
    must = true;
  }
  const start = pd.logStartOffset ?? -1n;
  if (start !== c.leaderLogStartOffset) {
    c.leaderLogStartOffset = start;
    must = true;
  }
  if (pd.errorCode !== ErrorCode.NONE) {
    // answered again once the error is gone (the fetcher ignored this answer's offsets)
    c.highWatermark = -1n;
  }
  return must;
}

export type FetchContextKind = 'error' | 'sessionless' | 'full' | 'incremental';

/** What a Fetch reads and how it answers (see the module's comment). */
export interface FetchContext {
  readonly kind: FetchContextKind;
  /** a session-level error (kind 'error'): the response carries it and nothing else */
  readonly errorCode: number;
  /** the partitions to read */
  readonly topics: FetchRequestFetchTopic[];
  /** the session id the response carries */
  readonly sessionId: number;
  /**
   * Whether the answer for a partition of `topics` with no records, no error and these offsets would
   * be left out of the response (an incremental one, nothing changed): the handler may then answer
   * UNCHANGED instead of building it (an idle session of thousands of partitions builds nothing).
   */
  unchanged(p: FetchRequestFetchPartition, highWatermark: bigint, lastStableOffset: bigint, logStartOffset: bigint): boolean;
  /** What the replica fetch handler keeps of the session (null without a session: see SessionIdle). */
  readonly idle: SessionIdle | null;
  /** The response's topics from the answers for `topics` (same order; one per partition, or UNCHANGED). */
  respond(responses: FetchResponse<RecordsValue>['responses']): FetchResponse<RecordsValue>['responses'];
}

/** The answer for a partition that `FetchContext.unchanged` leaves out (never sent). */
export const UNCHANGED: FetchResponsePartitionData = Object.freeze({
  partitionIndex: -1,
  errorCode: ErrorCode.NONE,
  highWatermark: -1n,
  lastStableOffset: -1n,
  logStartOffset: -1n,
  abortedTransactions: null,
  preferredReadReplica: -1,
  records: null,
});

const passThrough = (responses: FetchResponse<RecordsValue>['responses']) => responses;

/** Whether a partition's answer carries record bytes (its records may be the stored slices). */
function hasRecords(pd: FetchResponsePartitionData<RecordsValue>): boolean {
  return pd.records !== null && recordsLength(pd.records) > 0;
}
const never = () => false;

function errorContext(errorCode: number): FetchContext {
  return { kind: 'error', errorCode, topics: [], sessionId: 0, idle: null, unchanged: never, respond: () => [] };
}

/** An incremental session's partition whose answer would carry nothing new. */
function unchangedIn(p: FetchRequestFetchPartition, highWatermark: bigint, lastStableOffset: bigint, logStartOffset: bigint): boolean {
  const c = p as CachedPartition;
  return c.highWatermark === highWatermark && c.lastStableOffset === lastStableOffset && c.leaderLogStartOffset === logStartOffset;
}

/** Fetches by who sent them and what context they got. */
export type FetchCounts = Record<'follower' | 'consumer', Record<FetchContextKind, number>>;

export interface FetchSessionStats {
  sessions: number;
  /** of which followers' */
  followerSessions: number;
  /** partitions cached over all sessions */
  partitions: number;
  evictions: number;
  fetches: FetchCounts;
}

const zeroCounts = (): Record<FetchContextKind, number> => ({ error: 0, sessionless: 0, full: 0, incremental: 0 });

export class FetchSessionCache {
  /** least recently used first */
  private readonly sessions = new Map<number, FetchSession>();
  private evictions = 0;
  private readonly fetches: FetchCounts = { follower: zeroCounts(), consumer: zeroCounts() };

  constructor(
    /** max.incremental.fetch.session.cache.slots */
    readonly maxSlots: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  get(id: number): FetchSession | undefined {
    return this.sessions.get(id);
  }

  stats(): FetchSessionStats {
    let followerSessions = 0;
    let partitions = 0;
    for (const s of this.sessions.values()) {
      if (s.privileged) followerSessions++;
      partitions += s.size;
    }
    return { sessions: this.sessions.size, followerSessions, partitions, evictions: this.evictions, fetches: this.fetches };
  }

  /**
   * The context of a Fetch of `apiVersion` (7+ have sessions; older ones are sessionless). `follower`:
   * sent by a replica (its session is privileged).
   */
  newContext(req: FetchRequest, apiVersion: number, follower: boolean): FetchContext {
    const ctx = this.context(req, apiVersion, follower);
    this.fetches[follower ? 'follower' : 'consumer'][ctx.kind]++;
    return ctx;
  }

  private context(req: FetchRequest, apiVersion: number, follower: boolean): FetchContext {
    const sessionId = apiVersion >= 7 ? (req.sessionId ?? 0) : 0;
    const epoch = apiVersion >= 7 ? (req.sessionEpoch ?? FetchSessionEpoch.FINAL) : FetchSessionEpoch.FINAL;
    const byId = apiVersion >= 13;
    if (epoch === FetchSessionEpoch.INITIAL || epoch === FetchSessionEpoch.FINAL) {
      if (sessionId !== 0) this.sessions.delete(sessionId);
      const session = epoch === FetchSessionEpoch.INITIAL ? this.create(follower, byId, countPartitions(req)) : undefined;
      if (session === undefined)
        return {
          kind: 'sessionless',
          errorCode: ErrorCode.NONE,
          topics: req.topics,
          sessionId: 0,
          idle: null,
          unchanged: never,
          respond: passThrough,
        };
      for (const t of req.topics) for (const p of t.partitions) session.upsert(t.topic ?? '', t.topicId ?? ZERO_UUID, p);
      return this.sessionContext('full', session);
    }
    const session = this.sessions.get(sessionId);
    if (session === undefined) return errorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND);
    if (session.epoch !== epoch) return errorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH);
    if (session.usesTopicIds !== byId) return errorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR);
    for (const t of req.topics) for (const p of t.partitions) session.upsert(t.topic ?? '', t.topicId ?? ZERO_UUID, p);
    for (const f of req.forgottenTopicsData ?? [])
      for (const p of f.partitions ?? []) session.forget(f.topic ?? '', f.topicId ?? ZERO_UUID, p);
    session.epoch = nextEpoch(epoch);
    this.touch(session);
    return this.sessionContext('incremental', session);
  }

  private sessionContext(kind: 'full' | 'incremental', session: FetchSession): FetchContext {
    const topics = session.topics();
    return {
      kind,
      errorCode: ErrorCode.NONE,
      topics,
      sessionId: session.id,
      idle: session,
      unchanged: kind === 'incremental' ? unchangedIn : never,
      respond: (responses) => {
        const out: FetchResponse<RecordsValue>['responses'] = [];
        const moved: [string, string, number][] = [];
        for (let i = 0; i < responses.length; i++) {
          const r = responses[i]!;
          const asked = topics[i]?.partitions as CachedPartition[] | undefined;
          let kept: FetchResponsePartitionData<RecordsValue>[] | null = kind === 'full' ? r.partitions : null;
          for (let j = 0; j < r.partitions.length; j++) {
            const pd = r.partitions[j]!;
            const c = asked?.[j];
            if (pd === UNCHANGED || c === undefined || !mustRespond(c, pd)) continue;
            if (hasRecords(pd)) moved.push([r.topic ?? '', r.topicId ?? ZERO_UUID, pd.partitionIndex]);
            if (kind === 'incremental') (kept ??= []).push(pd);
          }
          if (kept !== null) out.push(kept === r.partitions ? r : { ...r, partitions: kept });
        }
        if (this.sessions.get(session.id) === session) for (const [t, id, p] of moved) session.moveToEnd(t, id, p);
        return out;
      },
    };
  }

  /** A new session if there is room (made by eviction if need be), else undefined. */
  private create(privileged: boolean, usesTopicIds: boolean, size: number, now = this.now()): FetchSession | undefined {
    if (this.maxSlots <= 0) return undefined;
    if (this.sessions.size >= this.maxSlots) {
      const victim = this.evictable(privileged, size, now);
      if (victim === undefined) return undefined;
      this.sessions.delete(victim.id);
      this.evictions++;
    }
    let id: number;
    do id = randomInt(1, 0x7fffffff);
    while (this.sessions.has(id));
    const s = new FetchSession(id, privileged, usesTopicIds, now, now);
    this.sessions.set(id, s);
    return s;
  }

  /** The session a newcomer may take the place of (see the module's comment). */
  private evictable(privileged: boolean, size: number, now: number): FetchSession | undefined {
    const lru = this.sessions.values().next().value;
    if (lru !== undefined && now - lru.lastUsedMs >= EVICTION_MS) return lru;
    let best: FetchSession | undefined;
    for (const s of this.sessions.values()) {
      if (s.privileged) continue;
      if (!privileged && (now - s.createdMs < EVICTION_MS || s.size >= size)) continue;
      if (best === undefined || s.size < best.size) best = s;
    }
    return best;
  }

  private touch(s: FetchSession): void {
    s.lastUsedMs = this.now();
    this.sessions.delete(s.id);
    this.sessions.set(s.id, s);
  }
}

function countPartitions(req: FetchRequest): number {
  let n = 0;
  for (const t of req.topics) n += t.partitions.length;
  return n;
}
