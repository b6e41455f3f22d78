/**
 * What the replication layer keeps per partition: the fetchers' view of a followed partition, the
 * leader's state of a partition it leads (its followers' progress, acks=all waiters, the ISR change
 * in flight) and the map they are kept in.
 */
import type { PartitionLog } from '../log/partition-log.js';
import type { PartitionState } from '../metadata/store.js';
import { ReadableBytes } from './readable-bytes.js';

/** What a follower needs to fetch a partition (the replica fetchers' view). */
export interface FollowedPartition {
  topic: string;
  topicId: string;
  partition: number;
  log: PartitionLog;
  leaderEpoch: number;
}

/** The replica fetchers, one per leader this broker follows. */
export interface Followers {
  follow(p: FollowedPartition, leaderId: number): Promise<void>;
  unfollow(topic: string, partition: number): Promise<void>;
  shutdown(): Promise<void>;
}

export interface FollowerProgress {
  /** The follower's log end offset (its last fetch offset); -1 until it fetches under this leadership. */
  logEndOffset: bigint;
  /** The log start offset its last fetch reported (Fetch v5+); -1 until then. */
  logStartOffset: bigint;
  /** When it last had everything the leader had (Kafka's lastCaughtUpTimeMs). */
  lastCaughtUpMs: number;
  /** When it fetched last, and the leader's log end offset then. */
  lastFetchMs: number;
  leaderEndAtLastFetch: bigint;
  /**
   * Set while the follower's fetch session finds the partition idle (caught up, nothing changed): the
   * session's clock, the time of its last Fetch, stands for both times above without a write per
   * partition and Fetch. Folded back into them when the partition is fetched again (Replication.fetchedBy).
   */
  idleClock: { readonly ms: number } | null;
  /** the session's partition it stands for: once the session forgets it, the clock no longer counts */
  idleOf: { readonly forgotten: boolean } | null;
}

/** A follower a consumer could read from instead of the leader (KIP-392), with how long ago it last caught up. */
export interface ReadCandidate {
  nodeId: number;
  logEndOffset: bigint;
  timeSinceCaughtUpMs: number;
}

/** When the follower last had everything the leader had (its idle session's clock counts). */
export function lastCaughtUpMs(f: FollowerProgress): number {
  const idle = f.idleClock;
  return idle !== null && f.idleOf?.forgotten !== true && idle.ms > f.lastCaughtUpMs ? idle.ms : f.lastCaughtUpMs;
}

/** Ends the stand-in of the idle session's clock (the partition is fetched again): its times become the follower's own. */
export function foldIdleClock(f: FollowerProgress): void {
  const idle = f.idleClock;
  if (idle === null) return;
  f.idleClock = null;
  if (f.idleOf?.forgotten !== true) {
    if (idle.ms > f.lastCaughtUpMs) f.lastCaughtUpMs = idle.ms;
    if (idle.ms > f.lastFetchMs) f.lastFetchMs = idle.ms;
  }
  f.idleOf = null;
}

export interface Waiter {
  offset: bigint;
  /** The min.insync.replicas the append was made under. */
  minIsr: number;
  resolve(errorCode: number): void;
  timer: NodeJS.Timeout;
}

/** A partition this broker leads (exported for the type of `LedFollower`). */
export class Led {
  readonly followers = new Map<number, FollowerProgress>();
  /** acks=all appends waiting for the high watermark, in offset order. */
  waiters: Waiter[] = [];
  /** An ISR change this leader asked for and has no answer to yet. */
  altering = false;
  /** how many bytes each high watermark move makes readable to consumers */
  readonly readable = new ReadableBytes();
  /** The log end offset when this leadership began (a follower must reach it to join the ISR, as Kafka requires); -1 until the log is open. */
  epochStartOffset = -1n;
  /** The purgatory key DeleteRecords waits under for the low watermark (a string: its watch set goes once empty). */
  readonly lowWatermarkKey: string;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly log: PartitionLog,
    public state: PartitionState,
    now: number,
  ) {
    this.lowWatermarkKey = `low-watermark\u0000${topic}\u0000${partition}`;
    this.resetFollowers(now);
  }

  /** The low watermark: the smallest log start offset of this leader's and its followers' on live brokers (DeleteRecords). */
  lowWatermark(nodeId: number, live: readonly { nodeId: number }[]): bigint {
    let low = this.log.logStartOffset;
    for (const [r, f] of this.followers)
      if (r !== nodeId && f.logStartOffset < low && live.some((b) => b.nodeId === r)) low = f.logStartOffset;
    return low;
  }

  /** KIP-392: the followers (not `self`) in the ISR whose log end offset, as of their last fetch, is at or past `fetchOffset`. */
  readCandidates(self: number, fetchOffset: bigint, now: number): ReadCandidate[] {
    const out: ReadCandidate[] = [];
    for (const r of this.state.isr) {
      const f = r === self ? undefined : this.followers.get(r);
      if (f !== undefined && f.logEndOffset >= fetchOffset)
        out.push({ nodeId: r, logEndOffset: f.logEndOffset, timeSinceCaughtUpMs: now - lastCaughtUpMs(f) });
    }
    return out;
  }

  /** Kafka starts every follower's clock at the election: ISR members get the lag time to show up. */
  resetFollowers(now: number): void {
    for (const r of this.state.replicas) {
      if (this.followers.has(r)) continue;
      this.followers.set(r, {
        logEndOffset: -1n,
        logStartOffset: -1n,
        lastCaughtUpMs: now,
        lastFetchMs: 0,
        leaderEndAtLastFetch: -1n,
        idleClock: null,
        idleOf: null,
      });
    }
    for (const r of this.followers.keys()) if (!this.state.replicas.includes(r)) this.followers.delete(r);
  }
}

/** Where a partition's acks=all wait ends: NONE once replicated to the ISR, an error otherwise. */
export type CommitOutcome = number;

/** A follower of a partition this broker leads, looked up once: it holds while `Replication.generation` stays the same. */
export interface LedFollower {
  readonly led: Led;
  readonly progress: FollowerProgress;
}

/** The `topic\0partition` key of the maps of partitions. */
export const partitionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/**
 * Partitions' values by `topic\0partition` key, with an index by topic and partition index beside it
 * for the lookups made per partition of every follower Fetch and every append (`at`): no key string
 * is built there. (Exported for its test.)
 */
export class PartitionMap<V extends { readonly topic: string; readonly partition: number }> extends Map<string, V> {
  private readonly byTopic = new Map<string, (V | undefined)[]>();

  override set(k: string, v: V): this {
    const old = super.get(k);
    if (old !== undefined && old !== v) this.unindex(old);
    super.set(k, v);
    let a = this.byTopic.get(v.topic);
    if (a === undefined) this.byTopic.set(v.topic, (a = []));
    a[v.partition] = v;
    return this;
  }

  override delete(k: string): boolean {
    const v = super.get(k);
    if (v !== undefined) this.unindex(v);
    return super.delete(k);
  }

  override clear(): void {
    this.byTopic.clear();
    super.clear();
  }

  at(topic: string, partition: number): V | undefined {
    return this.byTopic.get(topic)?.[partition];
  }

  /** Drops the topic's index once none of its partitions is left. */
  forgetTopic(topic: string): void {
    if (this.byTopic.get(topic)?.every((v) => v === undefined) === true) this.byTopic.delete(topic);
  }

  private unindex(v: V): void {
    const a = this.byTopic.get(v.topic);
    if (a?.[v.partition] === v) a[v.partition] = undefined;
  }
}
