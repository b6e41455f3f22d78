/**
 * The follower side of replication: a replica fetcher keeps this broker's replicas of the
 * partitions one leader leads in step with it, as Kafka's ReplicaFetcherThread does, over one
 * connection of our own protocol client.
 *
 * Each partition starts (and restarts, at a new leader epoch or after an append failed) by
 * truncation: OffsetForLeaderEpoch tells where its log and the leader's agree, and the log is cut
 * there (a log without leader epochs is cut to its high watermark). Then it is fetched: one Fetch at
 * a time covers every partition ready to fetch, from each log's end, as replica `replicaId`; the
 * leader's entries are appended as they are (appendAsFollower), and the high watermark and the log
 * start offset follow the leader's. The leader's long poll does the waiting: an idle fetcher sends
 * one request per `maxWaitMs`, in a fetch session (KIP-227: after the first, each Fetch names only
 * the partitions whose fetch state changed, and the leader answers only those that changed), and
 * the full request's arrays are rebuilt only when the set of partitions to fetch changes (a partition added, removed, delayed, back from a delay, or one that got data,
 * which moves to the end so that every partition gets its turn at the response's byte limit).
 *
 * Errors of one partition delay it by `backoffMs` while the others go on: NOT_LEADER_OR_FOLLOWER,
 * FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
 * KAFKA_STORAGE_ERROR and the like (metadata will tell the broker to follow again or stop); a
 * failed append or truncation also sends it back to truncation. OFFSET_OUT_OF_RANGE below the
 * leader's log start starts the log over there; above it, a leader whose log ends below ours (an
 * unclean election) truncates ours to its end (Kafka's fetchOffsetAndTruncate). A connection error
 * closes the connection; after `backoffMs` the fetcher connects again, to the address the leader
 * has then.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode, errorName } from '../../protocol/generated/error-codes.js';
import type {
  FetchRequest,
  FetchRequestFetchPartition,
  FetchResponse,
  FetchResponsePartitionData,
} from '../../protocol/generated/fetch.js';
import type { ListOffsetsResponse } from '../../protocol/generated/list-offsets.js';
import type { OffsetForLeaderEpochResponse } from '../../protocol/generated/offset-for-leader-epoch.js';
import type { BrokerAddress } from '../client/address.js';
import type { BrokerConnection } from '../client/connection.js';
import { ClientError } from '../client/errors.js';
import { FetchSessionClient } from './fetch-session-client.js';
import { FetcherLoop, type ReplicaFetcherSettings } from './fetcher-loop.js';
import {
  buildFetchRequest,
  buildListOffsetsRequest,
  buildOffsetForLeaderEpochRequest,
  fetchTopicsById,
  listedOffset,
  truncationTarget,
  type FetcherPartition,
} from './fetcher-requests.js';
import { applyFetched, applyWatermarks } from './follower-data.js';

export type { ReplicaFetcherSettings } from './fetcher-loop.js';
export type { FetcherPartition } from './fetcher-requests.js';
export { ReplicaFetcherManager } from './replica-fetcher-manager.js';

export function partitionKey(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

interface PartitionState {
  readonly key: string;
  readonly p: FetcherPartition;
  /** to be truncated (again) before it is fetched */
  truncating: boolean;
  /** not before then (ms since the epoch); 0: not delayed */
  delayedUntil: number;
  /** no longer followed by this fetcher (removed, or replaced at a new epoch) */
  removed: boolean;
}

/** The Fetch request for the current set of partitions to fetch, kept until that set changes. */
interface CachedFetch {
  version: number;
  body: FetchRequest;
  states: PartitionState[];
  entries: FetchRequestFetchPartition[];
  /** topic id (v13+) or name → partition → state */
  lookup: Map<string, Map<number, PartitionState>>;
}

const noop = (): void => undefined;

/** One fetcher per source (leader) broker, many partitions per Fetch request, as Kafka's ReplicaFetcherThread. */
export class ReplicaFetcher extends FetcherLoop {
  private readonly parts = new Map<string, PartitionState>();
  private readonly delayed = new Set<PartitionState>();
  private readonly toTruncate = new Set<PartitionState>();
  private request: CachedFetch | null = null;
  /** the fetch session with the leader (KIP-227) */
  readonly session = new FetchSessionClient();
  /** The partition whose log the loop is changing (append, truncation), until it is done. */
  private busy: { state: PartitionState; done: Promise<void> } | null = null;

  constructor(leaderId: number, leaderAddress: () => BrokerAddress | undefined, settings: ReplicaFetcherSettings) {
    super(leaderId, leaderAddress, settings);
    this.start();
  }

  get partitionCount(): number {
    return this.parts.size;
  }

  /** Starts (or, at a new leader epoch, restarts) following these partitions: each is first truncated to where it agrees with the leader, then fetched from its log end. */
  addPartitions(parts: readonly FetcherPartition[]): void {
    if (this.closed) throw new Error(`replica fetcher for broker ${this.leaderId} is closed`);
    for (const p of parts) {
      const key = partitionKey(p.topic, p.partition);
      const cur = this.parts.get(key);
      if (cur !== undefined) {
        if (cur.p.leaderEpoch === p.leaderEpoch && cur.p.log === p.log && cur.p.topicId === p.topicId) continue;
        this.drop(cur);
      }
      const s: PartitionState = { key, p, truncating: true, delayedUntil: 0, removed: false };
      this.parts.set(key, s);
      this.toTruncate.add(s);
    }
    this.wakeIfIdle();
  }

  /** Stops following them; resolves once no append of theirs is in flight. */
  async removePartitions(keys: readonly { topic: string; partition: number }[]): Promise<void> {
    const gone = new Set<PartitionState>();
    for (const k of keys) {
      const s = this.parts.get(partitionKey(k.topic, k.partition));
      if (s === undefined) continue;
      this.drop(s);
      gone.add(s);
    }
    const busy = this.busy;
    if (busy !== null && gone.has(busy.state)) await busy.done;
  }

  private drop(s: PartitionState): void {
    s.removed = true;
    this.parts.delete(s.key);
    this.delayed.delete(s);
    this.toTruncate.delete(s);
    this.request = null;
  }

  /** One round: the partitions due for truncation, else one Fetch of the others, else a wait. */
  protected async step(): Promise<void> {
    if (this.parts.size === 0) {
      await this.sleep(null, true);
      return;
    }
    const now = Date.now();
    let nextDue = Number.POSITIVE_INFINITY;
    for (const s of this.delayed) {
      if (s.delayedUntil <= now) {
        s.delayedUntil = 0;
        this.delayed.delete(s);
        if (!s.truncating) this.request = null;
      } else if (s.delayedUntil < nextDue) nextDue = s.delayedUntil;
    }
    const truncating: PartitionState[] = [];
    for (const s of this.toTruncate) if (s.delayedUntil === 0) truncating.push(s);
    const fetchable = this.parts.size - this.toTruncate.size - this.delayed.size + countBoth(this.toTruncate, this.delayed);
    if (truncating.length === 0 && fetchable === 0) {
      await this.sleep(nextDue === Number.POSITIVE_INFINITY ? null : nextDue - now, true);
      return;
    }
    const conn = await this.connection();
    if (truncating.length > 0) {
      await this.truncate(conn, truncating);
      return;
    }
    await this.fetch(conn);
  }

  private delay(s: PartitionState, why: string, err?: unknown): void {
    if (s.removed) return;
    s.delayedUntil = Date.now() + this.settings.backoffMs;
    this.delayed.add(s);
    if (!s.truncating) this.request = null;
    this.logger.debug(
      { err, topic: s.p.topic, partition: s.p.partition, leader: this.leaderId, why },
      'replica fetcher: partition delayed',
    );
  }

  private retruncate(s: PartitionState): void {
    if (s.removed || s.truncating) return;
    s.truncating = true;
    this.toTruncate.add(s);
    this.request = null;
  }

  private truncated(s: PartitionState): void {
    if (s.removed) return;
    s.truncating = false;
    this.toTruncate.delete(s);
    this.request = null;
  }

  /**
   * Runs `fn`, which changes the log of `s`, as the busy operation (removePartitions waits for it).
   * A failure other than the connection's delays the partition and sends it back to truncation.
   */
  private async onPartition(s: PartitionState, what: string, fn: () => Promise<void>): Promise<void> {
    if (s.removed) return;
    const run = fn();
    const done = run.then(noop, noop);
    this.busy = { state: s, done };
    try {
      await run;
    } catch (e) {
      if (e instanceof ClientError) throw e;
      this.failed(s, what, e);
    } finally {
      this.settled(done);
    }
  }

  /** A failure of the log (a LogError, say): one line, then the partition waits and is truncated again. */
  private failed(s: PartitionState, what: string, err: unknown): void {
    this.logger.warn(
      { err, topic: s.p.topic, partition: s.p.partition, leader: this.leaderId },
      `replica fetcher: ${what} failed; retrying after a truncation`,
    );
    this.delay(s, `${what} failed`, err);
    this.retruncate(s);
  }

  private settled(done: Promise<void>): void {
    if (this.busy?.done === done) this.busy = null;
  }

  /** Step 1: truncates each log to where it agrees with the leader (several rounds when epochs differ). */
  private async truncate(conn: BrokerConnection, states: PartitionState[]): Promise<void> {
    const ask: PartitionState[] = [];
    for (const s of states) {
      if (this.closed) return;
      await this.onPartition(s, 'truncation', async () => {
        const log = s.p.log;
        await log.open();
        if (s.removed) return;
        if (log.latestEpoch >= 0) {
          ask.push(s);
          return;
        }
        // no leader epochs (a new log, or only magic 0/1 data): Kafka's fallback, the high watermark
        await log.truncateTo(log.highWatermark);
        this.truncated(s);
      });
    }
    if (ask.length === 0) return;
    const version = conn.version(ApiKey.OffsetForLeaderEpoch);
    const body = buildOffsetForLeaderEpochRequest(
      version,
      ask.map((s) => s.p),
      this.settings.replicaId,
    );
    const res = (await conn.request<OffsetForLeaderEpochResponse>(ApiKey.OffsetForLeaderEpoch, () => body)).body;
    const answers = new Map<string, OffsetForLeaderEpochResponse['topics'][number]['partitions'][number]>();
    for (const t of res.topics) for (const r of t.partitions) answers.set(partitionKey(t.topic, r.partition), r);
    for (const s of ask) {
      if (this.closed) return;
      const r = answers.get(s.key);
      if (s.removed) continue;
      if (r === undefined) {
        this.delay(s, 'no OffsetForLeaderEpoch answer');
        continue;
      }
      if (r.errorCode !== ErrorCode.NONE) {
        this.delay(s, `OffsetForLeaderEpoch: ${errorName(r.errorCode)}`);
        continue;
      }
      await this.onPartition(s, 'truncation', async () => {
        const log = s.p.log;
        const target = truncationTarget(log, r);
        const cut = await log.truncateTo(target.offset);
        if (cut) {
          this.logger.info(
            { topic: s.p.topic, partition: s.p.partition, leader: this.leaderId, offset: target.offset.toString(), epoch: r.leaderEpoch },
            'replica fetcher: truncated the log to where it agrees with the leader',
          );
        }
        // an intermediate cut that removed nothing would only get the same answer again
        if (target.done || !cut) this.truncated(s);
      });
    }
  }

  /** The Fetch request for the partitions ready to fetch (rebuilt when that set changed), offsets refreshed. */
  private fetchRequest(version: number): CachedFetch | null {
    let req = this.request;
    if (req === null || req.version !== version) {
      const states: PartitionState[] = [];
      for (const s of this.parts.values()) if (!s.truncating && s.delayedUntil === 0) states.push(s);
      if (states.length === 0) return null;
      const { body, entries } = buildFetchRequest(
        version,
        states.map((s) => s.p),
        this.settings,
      );
      const byId = fetchTopicsById(version);
      const lookup = new Map<string, Map<number, PartitionState>>();
      for (const s of states) {
        const name = byId ? s.p.topicId : s.p.topic;
        let m = lookup.get(name);
        if (m === undefined) lookup.set(name, (m = new Map<number, PartitionState>()));
        m.set(s.p.partition, s);
      }
      req = { version, body, states, entries, lookup };
      this.request = req;
    } else {
      const { states, entries } = req;
      for (let i = 0; i < states.length; i++) {
        const log = (states[i] as PartitionState).p.log;
        const e = entries[i] as FetchRequestFetchPartition;
        e.fetchOffset = log.logEndOffset;
        e.logStartOffset = log.logStartOffset;
      }
    }
    return req;
  }

  /** Step 2: one Fetch of every partition ready, its answers applied partition by partition. */
  private async fetch(conn: BrokerConnection): Promise<void> {
    const version = conn.version(ApiKey.Fetch);
    const req = this.fetchRequest(version);
    if (req === null) return;
    // KIP-227: after the first (full) Fetch, only the partitions whose fetch state changed
    const { body, incremental } = this.session.request(version, req.body);
    let res: FetchResponse;
    try {
      res = (await conn.request<FetchResponse>(ApiKey.Fetch, () => body)).body;
    } catch (e) {
      this.session.reset();
      throw e;
    }
    const sessionError = this.session.response(res, incremental);
    if ((res.errorCode ?? 0) !== ErrorCode.NONE) {
      if (sessionError) {
        // the leader lost or refused our session: the next round asks for a new one in full
        this.logger.debug({ leader: this.leaderId, errorCode: errorName(res.errorCode ?? 0) }, 'replica fetcher: fetch session reset');
        return;
      }
      // the whole request refused: every partition in it waits
      for (const s of req.states) this.delay(s, `Fetch: ${errorName(res.errorCode ?? 0)}`);
      return;
    }
    const byId = fetchTopicsById(version);
    const gotData: PartitionState[] = [];
    for (const t of res.responses) {
      const m = req.lookup.get((byId ? t.topicId : t.topic) ?? '');
      if (m === undefined) continue;
      for (const pd of t.partitions) {
        if (this.closed) return;
        const s = m.get(pd.partitionIndex);
        if (s === undefined || s.removed || s.truncating || s.delayedUntil !== 0) continue;
        if (pd.errorCode === ErrorCode.NONE) {
          if (pd.records === null || pd.records.length === 0) {
            try {
              applyWatermarks(s.p.log, pd);
            } catch (e) {
              this.failed(s, 'high watermark update', e);
            }
            continue;
          }
          gotData.push(s);
          await this.onPartition(s, 'append', () => applyFetched(s.p.log, pd, () => s.removed));
        } else if (pd.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
          await this.onPartition(s, 'out-of-range handling', () => this.outOfRange(conn, s, pd));
        } else {
          this.delay(s, `Fetch: ${errorName(pd.errorCode)}`);
        }
      }
    }
    // Kafka's updateAndMoveToEnd: those that got data go last, so every partition gets its turn first
    for (const s of gotData) {
      if (s.removed) continue;
      this.parts.delete(s.key);
      this.parts.set(s.key, s);
      this.request = null;
    }
  }

  /** OFFSET_OUT_OF_RANGE: start over at the leader's log start when below it; cut to the leader's end when above it. */
  private async outOfRange(conn: BrokerConnection, s: PartitionState, pd: FetchResponsePartitionData): Promise<void> {
    const log = s.p.log;
    const fetchOffset = log.logEndOffset;
    let leaderStart = pd.logStartOffset ?? -1n;
    if (leaderStart < 0n) {
      const r = await this.listOffset(conn, s, -2n);
      if (r === null) return;
      leaderStart = r;
    }
    if (fetchOffset < leaderStart) {
      this.logger.info(
        { topic: s.p.topic, partition: s.p.partition, leader: this.leaderId, from: fetchOffset.toString(), to: leaderStart.toString() },
        "replica fetcher: behind the leader's log start; starting the log over there",
      );
      await log.truncateFullyAndStartAt(leaderStart);
      return;
    }
    const leaderEnd = await this.listOffset(conn, s, -1n);
    if (leaderEnd === null) return;
    if (leaderEnd < log.logEndOffset) {
      this.logger.warn(
        { topic: s.p.topic, partition: s.p.partition, leader: this.leaderId, from: log.logEndOffset.toString(), to: leaderEnd.toString() },
        "replica fetcher: the leader's log ends below ours; truncating to its end",
      );
      await log.truncateTo(leaderEnd);
      return;
    }
    this.delay(s, 'OFFSET_OUT_OF_RANGE within the leader log');
  }

  /** ListOffsets of one partition (-1 latest, -2 earliest) as this replica; null (partition delayed) on an error or removal. */
  private async listOffset(conn: BrokerConnection, s: PartitionState, timestamp: bigint): Promise<bigint | null> {
    const version = conn.version(ApiKey.ListOffsets);
    const body = buildListOffsetsRequest(version, s.p, timestamp, this.settings.replicaId);
    const res = (await conn.request<ListOffsetsResponse>(ApiKey.ListOffsets, () => body)).body;
    if (s.removed) return null;
    const r = listedOffset(res, s.p);
    if (r.errorCode !== ErrorCode.NONE || r.offset < 0n) {
      this.delay(s, `ListOffsets: ${r.errorCode === ErrorCode.NONE ? 'no offset' : errorName(r.errorCode)}`);
      return null;
    }
    return r.offset;
  }
}

function countBoth<T>(a: Set<T>, b: Set<T>): number {
  let n = 0;
  for (const x of a) if (b.has(x)) n++;
  return n;
}
