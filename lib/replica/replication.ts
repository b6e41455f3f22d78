/**
 * Replication in a cluster (metadata.store=etcd), Kafka's Partition/ReplicaManager in our terms. For
 * every partition this broker holds a replica of, the controller's partition state says its role:
 * - leader: its followers' fetch offsets are their log end offsets; the high watermark is the
 *   smallest log end offset in the ISR (this broker's own: what it has written); acks=all appends
 *   complete once the high watermark passes them; a follower that caught up joins the ISR and one
 *   that lags more than replica.lag.time.max.ms leaves it (both through the store's alterIsr);
 *   DeleteRecords completes once the low watermark (the smallest log start offset its followers on
 *   live brokers reported in their fetches, and its own) reaches the requested offset;
 * - follower: the replica fetchers (lib/replica/replica-fetcher.ts) keep the log in step with the
 *   leader's, and set its high watermark and log start offset from the leader's;
 * - neither (no leader): nothing is fetched until the controller elects one.
 * Every local replica's high watermark is driven from here (PartitionLog.useExternalHighWatermark).
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { BrokerConfig } from '../config.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { MetadataChange, MetadataStore } from '../metadata/store.js';
import { MetadataWriteError } from '../metadata/store.js';
import type { TopicManager } from '../topics.js';
import { HighWatermarkCheckpoints } from './hw-checkpoint.js';
import { waitFor, type Purgatory } from './purgatory.js';
import { ReadableBytes } from './readable-bytes.js';

import {
  type CommitOutcome,
  type Followers,
  foldIdleClock,
  lastCaughtUpMs,
  Led,
  type LedFollower,
  PartitionMap,
  partitionKey as key,
  type ReadCandidate,
  type Waiter,
} from './led-partition.js';

export { Led, PartitionMap, partitionKey } from './led-partition.js';
export type { CommitOutcome, FollowedPartition, Followers, FollowerProgress, LedFollower, Waiter } from './led-partition.js';

export class Replication {
  private readonly led = new PartitionMap<Led>();
  /** Partitions followed, with the leader and epoch they are followed at. */
  /** Followed partitions: whom and at which epoch, and the bytes each high watermark move makes readable (KIP-392 readers). */
  private readonly following = new Map<string, { leader: number; leaderEpoch: number; readable: ReadableBytes }>();
  private readonly lagMaxMs: number;
  private readonly nodeId: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly hwCheckpoint: HighWatermarkCheckpoints | undefined;
  private checkpointTimer: NodeJS.Timeout | undefined;
  private started = false;
  private stopped = false;
  private changes = 0;

  constructor(
    private readonly deps: {
      metadata: MetadataStore;
      topics: TopicManager;
      purgatory: Purgatory;
      followers: Followers;
      config: BrokerConfig;
      logger: Logger;
      now?: () => number;
      /** The log dirs, each with its replication-offset-checkpoint, and the replicas in each (absent: no checkpoint; tests). */
      checkpoint?: { dataDirs: readonly string[]; logs: (dataDir: string) => Iterable<PartitionLog> };
    },
  ) {
    this.nodeId = deps.metadata.nodeId;
    this.lagMaxMs = deps.config.long('replica.lag.time.max.ms') ?? 30000;
    const cp = deps.checkpoint;
    this.hwCheckpoint = cp === undefined ? undefined : new HighWatermarkCheckpoints(cp.dataDirs, deps.logger);
    // every local replica's high watermark is set by the replication layer, whatever its role; it
    // starts at the checkpointed one, and consumers' long polls (on leaders and, KIP-392, followers)
    // wake when it moves
    deps.topics.onPartitionOpened((topic, partition, log) => {
      const initial = this.hwCheckpoint?.initial(topic, partition);
      log.useExternalHighWatermark(() => this.written(topic, partition), {
        ...(initial === undefined ? {} : { initialHighWatermark: initial }),
        onAdvanced: (hw) => this.followerAdvanced(topic, partition, log, hw),
      });
      // a replica made after its state arrived (this broker created the topic): take up its role once
      // the topic manager holds it (it is listed right after this call)
      if (this.started) queueMicrotask(() => this.apply(topic, partition));
    });
    deps.metadata.onChange((c) => this.changed(c));
    // a reassignment took the replica off this broker: stop leading and fetching it before its log goes
    deps.topics.onReplicaRemoved((topic, partition) => {
      const k = key(topic, partition);
      const wasLed = this.led.get(k);
      if (wasLed !== undefined) this.resign(k, wasLed);
      this.following.delete(k);
      return this.deps.followers.unfollow(topic, partition);
    });
  }

  /**
   * Counts the changes that may end a leadership or change its followers (every metadata change, every
   * role applied, a topic dropped): a `LedFollower` holds while it stays the same.
   */
  get generation(): number {
    return this.changes;
  }

  /** The clock of the ISR's lag checks (ms). */
  now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** Applies the current state of every local replica, and starts the ISR lag check. */
  start(): void {
    this.started = true;
    for (const t of this.deps.metadata.topics()) this.applyTopic(t.name);
    this.timer = setInterval(() => this.checkLag(), Math.max(100, Math.floor(this.lagMaxMs / 2)));
    this.timer.unref();
    if (this.hwCheckpoint !== undefined) {
      const every = this.deps.config.long('replica.high.watermark.checkpoint.interval.ms') ?? 5000;
      this.checkpointTimer = setInterval(() => void this.checkpointHighWatermarks(), Math.min(every, 2 ** 31 - 1));
      this.checkpointTimer.unref();
    }
  }

  /** Writes every replica's high watermark to the replication-offset-checkpoint (a failure is logged). */
  checkpointHighWatermarks(): Promise<void> {
    const cp = this.hwCheckpoint;
    if (cp === undefined || this.deps.checkpoint === undefined) return Promise.resolve();
    return cp
      .write(this.deps.checkpoint.logs)
      .catch((err: unknown) => this.deps.logger.error({ err }, 'writing the replication-offset-checkpoint failed'));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.changes++;
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.checkpointTimer !== undefined) clearInterval(this.checkpointTimer);
    for (const l of this.led.values()) this.failWaiters(l, ErrorCode.NOT_LEADER_OR_FOLLOWER);
    const ended = [...this.led.values()];
    this.led.clear();
    for (const l of ended) this.deps.purgatory.checkAndComplete(l.lowWatermarkKey);
    this.following.clear();
    await this.deps.followers.shutdown();
    // the high watermarks as they end (no fetcher moves them any more), for the next start
    await this.checkpointHighWatermarks();
  }

  private changed(c: MetadataChange): void {
    this.changes++;
    if (this.stopped) return;
    if (c.kind === 'brokers') this.checkLowWatermarks();
    else if (c.kind === 'partition') this.apply(c.topic, c.partition);
    else if (c.kind === 'topic' && (c.change === 'created' || c.change === 'partitions')) this.applyTopic(c.topic);
    else if (c.kind === 'topic' && c.change === 'deleted') this.dropTopic(c.topic);
  }

  private applyTopic(topic: string): void {
    const t = this.deps.metadata.topic(topic);
    if (t === undefined) return;
    for (let p = 0; p < t.partitions; p++) this.apply(topic, p);
  }

  private dropTopic(topic: string): void {
    this.changes++;
    for (const [k, l] of this.led) {
      if (l.topic !== topic) continue;
      this.failWaiters(l, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
      this.led.delete(k);
      this.deps.purgatory.checkAndComplete(l.lowWatermarkKey);
    }
    this.led.forgetTopic(topic);
    for (const k of this.following.keys()) {
      if (!k.startsWith(`${topic}\u0000`)) continue;
      this.following.delete(k);
      void this.deps.followers.unfollow(topic, Number(k.slice(topic.length + 1)));
    }
  }

  /** Makes this broker's role for the partition match its state: leader, follower or neither. */
  private apply(topic: string, partition: number): void {
    this.changes++;
    const state = this.deps.metadata.partitionState(topic, partition);
    const log = this.deps.topics.replica(topic, partition);
    const k = key(topic, partition);
    const wasLed = this.led.get(k);
    if (state === undefined || log === undefined || !state.replicas.includes(this.nodeId)) {
      if (wasLed !== undefined) this.resign(k, wasLed);
      if (this.following.delete(k)) void this.deps.followers.unfollow(topic, partition);
      return;
    }
    if (state.leader === this.nodeId) {
      if (this.following.delete(k)) void this.deps.followers.unfollow(topic, partition);
      if (wasLed !== undefined && wasLed.state.leaderEpoch === state.leaderEpoch) {
        // same leadership, new ISR (or replicas): keep the followers' progress
        wasLed.state = state;
        wasLed.altering = false;
        wasLed.resetFollowers(this.now());
        this.failIfUnderMinIsr(wasLed);
        this.advance(wasLed);
        return;
      }
      if (wasLed !== undefined) this.resign(k, wasLed);
      const led = new Led(topic, partition, log, state, this.now());
      this.led.set(k, led);
      this.deps.logger.info({ topic, partition, leaderEpoch: state.leaderEpoch, isr: state.isr }, 'leading the partition');
      const begin = () => {
        led.epochStartOffset = log.logEndOffset;
        led.readable.start(log.size);
        this.advance(led);
      };
      if (log.isOpen) begin();
      else void log.open().then(begin, () => undefined);
      return;
    }
    if (wasLed !== undefined) this.resign(k, wasLed);
    if (state.leader === -1) {
      if (this.following.delete(k)) void this.deps.followers.unfollow(topic, partition);
      return;
    }
    const was = this.following.get(k);
    if (was !== undefined && was.leader === state.leader && was.leaderEpoch === state.leaderEpoch) return;
    const readable = new ReadableBytes();
    if (log.isOpen) readable.start(log.size);
    this.following.set(k, { leader: state.leader, leaderEpoch: state.leaderEpoch, readable });
    const topicId = this.deps.metadata.topic(topic)?.topicId ?? '0'.repeat(32);
    void this.deps.followers
      .follow({ topic, topicId, partition, log, leaderEpoch: state.leaderEpoch }, state.leader)
      .catch((err: unknown) => this.deps.logger.error({ err, topic, partition }, 'following the partition failed'));
  }

  /**
   * A replica's high watermark moved. A leader's consumers were woken by `advance`; a follower's
   * (KIP-392 readers) count what the move made readable, as a leader's do.
   */
  private followerAdvanced(topic: string, partition: number, log: PartitionLog, highWatermark: bigint): void {
    if (this.led.at(topic, partition) !== undefined) return;
    const f = this.following.get(key(topic, partition));
    const readableBytes = f === undefined ? 1 : f.readable.committed(highWatermark);
    log.noteChange();
    this.deps.purgatory.checkAndComplete(log, { appendedBytes: 0, readableBytes });
  }

  private resign(k: string, l: Led): void {
    this.led.delete(k);
    this.failWaiters(l, ErrorCode.NOT_LEADER_OR_FOLLOWER);
    this.deps.purgatory.checkAndComplete(l.lowWatermarkKey);
  }

  // ---- leader side ----

  /** The leader's own write reached the log: with an ISR of one, that is the new high watermark. */
  private written(topic: string, partition: number): void {
    const l = this.led.at(topic, partition);
    if (l === undefined) {
      const f = this.following.get(key(topic, partition));
      const log = f === undefined ? undefined : this.deps.topics.replica(topic, partition);
      if (f !== undefined && log?.isOpen === true) f.readable.written(log.writtenEndOffset, log.size);
      return;
    }
    if (l.log.isOpen) l.readable.written(l.log.writtenEndOffset, l.log.size);
    this.advance(l);
  }

  /**
   * A follower fetched the partition from `fetchOffset` (it holds everything before): its log end
   * offset. Moves the high watermark, and asks for the follower to join the ISR once it caught up.
   * Returns the error the fetch answers for this partition (NONE when this broker leads it). `now`: the
   * clock read once for a request naming many partitions.
   */
  followerFetched(
    topic: string,
    partition: number,
    replicaId: number,
    fetchOffset: bigint,
    now = this.now(),
    logStartOffset = -1n,
  ): number {
    const f = this.follower(topic, partition, replicaId);
    if (f === undefined) return ErrorCode.NOT_LEADER_OR_FOLLOWER; // not led here, or not a replica of it
    this.fetchedBy(f, replicaId, fetchOffset, now, logStartOffset);
    return ErrorCode.NONE;
  }

  /** The follower `replicaId` of a partition this broker leads (undefined: not led here, or not a replica of it). */
  follower(topic: string, partition: number, replicaId: number): LedFollower | undefined {
    const led = this.led.at(topic, partition);
    const progress = led?.followers.get(replicaId);
    return led === undefined || progress === undefined ? undefined : { led, progress };
  }

  /** `followerFetched` for a follower looked up before (while `generation` has not moved since). */
  fetchedBy({ led: l, progress: f }: LedFollower, replicaId: number, fetchOffset: bigint, now: number, logStartOffset = -1n): void {
    foldIdleClock(f); // its session's idle Fetches, up to the last one, found it caught up
    const leaderEnd = l.log.logEndOffset;
    if (fetchOffset >= leaderEnd) f.lastCaughtUpMs = now;
    else if (f.leaderEndAtLastFetch >= 0n && fetchOffset >= f.leaderEndAtLastFetch)
      f.lastCaughtUpMs = Math.max(f.lastCaughtUpMs, f.lastFetchMs);
    // the high watermark moves with a follower's log end (and with the leader's writes and ISR
    // changes, which advance it themselves): an idle follower's fetch leaves it where it is
    const moved = f.logEndOffset !== fetchOffset;
    f.logEndOffset = fetchOffset;
    f.lastFetchMs = now;
    f.leaderEndAtLastFetch = leaderEnd;
    if (f.logStartOffset !== logStartOffset) {
      f.logStartOffset = logStartOffset;
      this.deps.purgatory.checkAndComplete(l.lowWatermarkKey);
    }
    if (moved) this.advance(l);
    if (
      !l.state.isr.includes(replicaId) &&
      fetchOffset >= l.log.highWatermark &&
      l.epochStartOffset >= 0n &&
      fetchOffset >= l.epochStartOffset
    ) {
      this.alterIsr(l, [...l.state.isr, replicaId], 'expand');
    }
  }

  /**
   * True while this broker leads the partition and its high watermark is still below the log end its
   * leadership began at (Kafka's KIP-207): that high watermark is the one it knew as a follower, which
   * can be behind what the previous leader already answered, so clients' offset lookups wait
   * (OFFSET_NOT_AVAILABLE) until the ISR's first fetches move it past there.
   */
  highWatermarkBehindEpochStart(topic: string, partition: number): boolean {
    const l = this.led.at(topic, partition);
    return l !== undefined && l.log.isOpen && l.epochStartOffset > l.log.highWatermark;
  }

  /**
   * KIP-392, for a partition this broker leads (undefined otherwise): the followers a consumer at
   * `fetchOffset` could read from instead, as Kafka chooses them: in the ISR, and with a log end
   * offset (as of their last fetch) at or past the offset; with how long ago each last caught up.
   */
  readCandidates(topic: string, partition: number, fetchOffset: bigint, now = this.now()): ReadCandidate[] | undefined {
    return this.led.at(topic, partition)?.readCandidates(this.nodeId, fetchOffset, now);
  }

  /** The ISR's size as this leader sees it (min.insync.replicas checks), 0 when it does not lead. */
  isrSize(topic: string, partition: number): number {
    return this.led.at(topic, partition)?.state.isr.length ?? 0;
  }

  /**
   * Resolves once the partition's high watermark is past `endOffset` (the acks=all append's last
   * offset + 1) with NONE; REQUEST_TIMED_OUT after `timeoutMs`; NOT_ENOUGH_REPLICAS_AFTER_APPEND when
   * the ISR shrinks below `minIsr` meanwhile; NOT_LEADER_OR_FOLLOWER when leadership moves.
   */
  awaitCommitted(topic: string, partition: number, endOffset: bigint, timeoutMs: number, minIsr: number): Promise<CommitOutcome> {
    const l = this.led.get(key(topic, partition));
    if (l === undefined) return Promise.resolve(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    if (l.log.highWatermark >= endOffset) return Promise.resolve(ErrorCode.NONE);
    if (l.state.isr.length < minIsr) return Promise.resolve(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND);
    return new Promise((resolve) => {
      const w: Waiter = {
        offset: endOffset,
        minIsr,
        resolve,
        timer: setTimeout(() => {
          l.waiters = l.waiters.filter((x) => x !== w);
          resolve(ErrorCode.REQUEST_TIMED_OUT);
        }, timeoutMs),
      };
      // appends complete in offset order: almost always at the end
      let i = l.waiters.length;
      while (i > 0 && (l.waiters[i - 1]?.offset ?? 0n) > endOffset) i--;
      l.waiters.splice(i, 0, w);
    });
  }

  /**
   * Kafka's low watermark: the smallest log start offset among this leader's and those its followers
   * reported, counting only followers on live brokers (a follower not heard from under this
   * leadership counts as -1).
   */
  private lowWatermarkOf(l: Led): bigint {
    return l.lowWatermark(this.nodeId, this.deps.metadata.brokers());
  }

  /**
   * DeleteRecords' wait (Kafka's DelayedDeleteRecords): resolves once the low watermark reaches
   * `offset` with it and NONE; with REQUEST_TIMED_OUT after `timeoutMs`; NOT_LEADER_OR_FOLLOWER
   * (UNKNOWN_TOPIC_OR_PARTITION once the partition is gone) when this leadership ends meanwhile.
   */
  async awaitLowWatermark(
    topic: string,
    partition: number,
    offset: bigint,
    timeoutMs: number,
  ): Promise<{ errorCode: number; lowWatermark: bigint }> {
    const l = this.led.at(topic, partition);
    if (l === undefined) return { errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, lowWatermark: -1n };
    const leading = () => this.led.at(topic, partition) === l;
    const lowWatermark = this.lowWatermarkOf(l);
    const ok = await waitFor(this.deps.purgatory, [l.lowWatermarkKey], timeoutMs, () => !leading() || this.lowWatermarkOf(l) >= offset);
    if (!leading()) {
      const gone = this.deps.metadata.partitionState(topic, partition) === undefined;
      return { errorCode: gone ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : ErrorCode.NOT_LEADER_OR_FOLLOWER, lowWatermark: -1n };
    }
    // Kafka answers a timed-out partition with the low watermark of the delete itself
    return ok
      ? { errorCode: ErrorCode.NONE, lowWatermark: this.lowWatermarkOf(l) }
      : { errorCode: ErrorCode.REQUEST_TIMED_OUT, lowWatermark };
  }

  /** Re-checks the DeleteRecords waits of every led partition (a broker came or went, a leadership ended). */
  private checkLowWatermarks(): void {
    for (const l of this.led.values()) this.deps.purgatory.checkAndComplete(l.lowWatermarkKey);
  }

  /** Recomputes the high watermark: the smallest log end offset among the ISR (this broker's: what it wrote). */
  private advance(l: Led): void {
    if (!l.log.isOpen) return;
    let hw = l.log.writtenEndOffset;
    for (const r of l.state.isr) {
      if (r === this.nodeId) continue;
      const f = l.followers.get(r);
      const leo = f === undefined ? -1n : f.logEndOffset;
      if (leo < hw) hw = leo;
    }
    if (hw < 0n) return;
    const before = l.log.highWatermark;
    const after = l.log.setHighWatermark(hw);
    if (after <= before) return;
    let done = 0;
    while (done < l.waiters.length && (l.waiters[done]?.offset ?? 0n) <= after) done++;
    if (done > 0) {
      for (const w of l.waiters.splice(0, done)) {
        clearTimeout(w.timer);
        w.resolve(ErrorCode.NONE);
      }
    }
    // consumers read up to the high watermark: their long polls count what its move made readable
    l.log.noteChange();
    this.deps.purgatory.checkAndComplete(l.log, { appendedBytes: 0, readableBytes: l.readable.committed(after) });
  }

  private failIfUnderMinIsr(l: Led): void {
    const keep: Waiter[] = [];
    for (const w of l.waiters) {
      if (l.state.isr.length < w.minIsr) {
        clearTimeout(w.timer);
        w.resolve(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND);
      } else keep.push(w);
    }
    l.waiters = keep;
  }

  private failWaiters(l: Led, errorCode: number): void {
    for (const w of l.waiters) {
      clearTimeout(w.timer);
      w.resolve(errorCode);
    }
    l.waiters = [];
  }

  /** Followers in the ISR that have not caught up for replica.lag.time.max.ms leave it. */
  private checkLag(): void {
    const now = this.now();
    for (const l of this.led.values()) {
      if (l.altering || l.state.isr.length <= 1) continue;
      const lagging = l.state.isr.filter((r) => {
        const f = l.followers.get(r);
        return r !== this.nodeId && f !== undefined && now - lastCaughtUpMs(f) > this.lagMaxMs;
      });
      if (lagging.length > 0)
        this.alterIsr(
          l,
          l.state.isr.filter((r) => !lagging.includes(r)),
          'shrink',
        );
    }
  }

  private alterIsr(l: Led, isr: number[], why: 'expand' | 'shrink'): void {
    if (l.altering) return;
    l.altering = true;
    const { topic, partition } = l;
    const from = l.state;
    this.deps.metadata
      .alterIsr(topic, partition, { leaderEpoch: from.leaderEpoch, partitionEpoch: from.partitionEpoch, isr })
      .then(
        (next) => {
          this.deps.logger.info({ topic, partition, isr: next.isr, was: from.isr, why }, `ISR ${why === 'expand' ? 'expanded' : 'shrunk'}`);
        },
        (err: unknown) => {
          const code = err instanceof MetadataWriteError ? err.errorCode : undefined;
          this.deps.logger.warn({ topic, partition, isr, why, errorCode: code, err: (err as Error).message }, 'ISR change refused');
        },
      )
      .finally(() => {
        // the new state arrives through the watch (apply); allow the next change either way
        const cur = this.led.get(key(topic, partition));
        if (cur !== undefined) cur.altering = false;
      });
  }
}
