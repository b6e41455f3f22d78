/**
 * A fetcher's side of a fetch session (KIP-227), as Kafka's FetchSessionHandler: the first Fetch to
 * a leader is a full one (every partition, session epoch 0) that asks for a session; once the leader
 * gave one, each Fetch is incremental: it names only the partitions added or whose fetch state
 * (fetch offset, log start offset, leader epoch, max bytes) changed since the last one, and lists the
 * ones no longer fetched in `forgotten_topics_data`. A session error (FETCH_SESSION_ID_NOT_FOUND,
 * INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR), any other failed Fetch, or a leader that
 * answers without a session sends the next Fetch in full again. Fetch v0–6 have no sessions.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type {
  FetchRequest,
  FetchRequestFetchPartition,
  FetchRequestFetchTopic,
  FetchRequestForgottenTopic,
  FetchResponse,
} from '../../protocol/generated/fetch.js';
import { FetchSessionEpoch, nextEpoch } from './fetch-sessions.js';

/** What the leader's session holds for a partition: the fetch state last sent. */
interface Sent {
  fetchOffset: bigint;
  logStartOffset: bigint;
  currentLeaderEpoch: number;
  partitionMaxBytes: number;
  /** the last request that named it or left it unchanged (older: no longer fetched) */
  round: number;
}

const SESSION_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
  ErrorCode.INVALID_FETCH_SESSION_EPOCH,
  ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
]);

export class FetchSessionClient {
  private sessionId = 0;
  private epoch: number = FetchSessionEpoch.INITIAL;
  /** by topic (id from Fetch v13, else name), then partition */
  private readonly sent = new Map<string, Map<number, Sent>>();
  private round = 0;
  /** Fetches sent in full and incrementally (for tests and logs). */
  readonly counts = { full: 0, incremental: 0 };

  /** The session the next Fetch uses (0: none). */
  get id(): number {
    return this.sessionId;
  }

  /**
   * The Fetch to send for `full`, the request naming every partition to fetch with its current state:
   * `full` itself (with the session fields set) or an incremental request made from it.
   */
  request(version: number, full: FetchRequest): { body: FetchRequest; incremental: boolean } {
    if (version < 7) {
      full.sessionId = 0;
      full.sessionEpoch = FetchSessionEpoch.FINAL;
      return { body: full, incremental: false };
    }
    const byId = version >= 13;
    const round = ++this.round;
    if (this.epoch === FetchSessionEpoch.INITIAL) {
      this.sent.clear();
      for (const t of full.topics) {
        const m = new Map<number, Sent>();
        this.sent.set(topicKey(t, byId), m);
        for (const p of t.partitions) m.set(p.partition, sentOf(p, round));
      }
      full.sessionId = this.sessionId;
      full.sessionEpoch = FetchSessionEpoch.INITIAL;
      full.forgottenTopicsData = [];
      this.counts.full++;
      return { body: full, incremental: false };
    }
    const topics: FetchRequestFetchTopic[] = [];
    for (const t of full.topics) {
      const k = topicKey(t, byId);
      let m = this.sent.get(k);
      if (m === undefined) this.sent.set(k, (m = new Map<number, Sent>()));
      let changed: FetchRequestFetchPartition[] | undefined;
      for (const p of t.partitions) {
        const s = m.get(p.partition);
        if (s === undefined) m.set(p.partition, sentOf(p, round));
        else {
          s.round = round;
          if (
            s.fetchOffset === p.fetchOffset &&
            s.logStartOffset === (p.logStartOffset ?? -1n) &&
            s.currentLeaderEpoch === (p.currentLeaderEpoch ?? -1) &&
            s.partitionMaxBytes === p.partitionMaxBytes
          )
            continue;
          Object.assign(s, sentOf(p, round));
        }
        (changed ??= []).push(p);
      }
      if (changed !== undefined)
        topics.push(byId ? { topicId: t.topicId ?? '', partitions: changed } : { topic: t.topic ?? '', partitions: changed });
    }
    const forgotten: FetchRequestForgottenTopic[] = [];
    for (const [k, m] of this.sent) {
      let gone: number[] | undefined;
      for (const [partition, s] of m) {
        if (s.round === round) continue;
        (gone ??= []).push(partition);
        m.delete(partition);
      }
      if (gone !== undefined) forgotten.push(byId ? { topicId: k, partitions: gone } : { topic: k, partitions: gone });
      if (m.size === 0) this.sent.delete(k);
    }
    this.counts.incremental++;
    return {
      body: { ...full, sessionId: this.sessionId, sessionEpoch: this.epoch, topics, forgottenTopicsData: forgotten },
      incremental: true,
    };
  }

  /**
   * Takes the answer to a request from `request`. Returns whether the answer's error is the session's
   * (the next Fetch goes in full at once; its partitions did not fail).
   */
  response(res: FetchResponse, incremental: boolean): boolean {
    const errorCode = res.errorCode ?? ErrorCode.NONE;
    if (errorCode !== ErrorCode.NONE) {
      // a session the leader does not know: ask for a new one; otherwise close it and ask anew
      if (errorCode === ErrorCode.FETCH_SESSION_ID_NOT_FOUND) this.sessionId = 0;
      this.epoch = FetchSessionEpoch.INITIAL;
      return SESSION_ERRORS.has(errorCode);
    }
    const id = res.sessionId ?? 0;
    if (id === 0) {
      // no session (the leader's cache is full, or it closed ours): full requests until one is given
      this.sessionId = 0;
      this.epoch = FetchSessionEpoch.INITIAL;
    } else if (!incremental) {
      this.sessionId = id;
      this.epoch = nextEpoch(FetchSessionEpoch.INITIAL);
    } else this.epoch = nextEpoch(this.epoch);
    return false;
  }

  /** The request failed (no answer): its epoch may or may not have been taken, so start over in full. */
  reset(): void {
    this.epoch = FetchSessionEpoch.INITIAL;
  }
}

function topicKey(t: FetchRequestFetchTopic, byId: boolean): string {
  return (byId ? t.topicId : t.topic) ?? '';
}

function sentOf(p: FetchRequestFetchPartition, round: number): Sent {
  return {
    fetchOffset: p.fetchOffset,
    logStartOffset: p.logStartOffset ?? -1n,
    currentLeaderEpoch: p.currentLeaderEpoch ?? -1,
    partitionMaxBytes: p.partitionMaxBytes,
    round,
  };
}
