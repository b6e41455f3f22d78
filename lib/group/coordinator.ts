/**
 * The group coordinator of this node: owns every group (classic and KIP-848) and every committed
 * offset, partitioned by `__consumer_offsets` partition (Java hash of the group id). Writes each
 * change as records to that partition and answers only once they are written; replays the topic at
 * start (COORDINATOR_LOAD_IN_PROGRESS meanwhile). Requests for offsets live in offset-manager.ts.
 */
import type { Logger } from 'pino';
import { InternalTopicOnFirstUse } from '../internal-topic.js';
import { storeErrorFor } from './store-errors.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import type { BrokerConfig } from '../config.js';
import { LogError } from '../log/errors.js';
import type { Purgatory } from '../replica/purgatory.js';
import { ClassicCoordinator, type GroupSettings } from './classic-coordinator.js';
import { ClassicGroup, ClassicGroupState } from './classic-group.js';
import { ClassicInConsumerGroup } from './consumer-classic.js';
import { ConsumerCoordinator, type ConsumerGroupLookup, type ConsumerSettings } from './consumer-coordinator.js';
import { ConsumerGroup } from './consumer-group.js';
import { loadInto, type OffsetsLog, unloadGroup, unloadPartition } from './loader.js';
import { OffsetStore } from './offsets.js';
import { PendingTxnOffsets } from './txn-offsets.js';
import { AppendOrigin } from '../txn/producer-state.js';
import {
  classicGroupFromConsumer,
  consumerGroupFromClassic,
  consumerGroupRecords,
  consumerGroupTombstones,
  isDowngradeEnabled,
  mayDowngradeWithoutMember,
  MigrationError,
  type MigrationPolicy,
  onlineUpgradeRefusal,
  parseMigrationPolicy,
} from './migration.js';
import { type CoordinatorRecord, groupMetadataRecord, offsetCommitRecord, OFFSETS_TOPIC, partitionFor } from './records.js';
import type { ShareGroupRecords } from './share-group-records.js';

export type Group = ClassicGroup | ConsumerGroup;

/** Which API validates a group id: offset APIs, DescribeGroups and DeleteGroups accept "". */
export type GroupApi = 'join' | 'sync' | 'heartbeat' | 'leave' | 'commit' | 'fetch' | 'describe' | 'delete' | 'consumer';

export interface CoordinatorDeps {
  config: BrokerConfig;
  logger: Logger;
  purgatory: Purgatory;
  /** Whether `__consumer_offsets` exists (it is created on first use, as Kafka does). */
  offsetsTopicExists(): boolean;
  /** Creates `__consumer_offsets` if missing (internal, compacted) and waits until its logs are made (those with data open). */
  ensureOffsetsTopic(numPartitions: number): Promise<void>;
  /** The log of an offsets partition this broker leads (clusters: undefined for one led elsewhere). */
  offsetsLog(partition: number): OffsetsLog | undefined;
  /** Clusters: whether this broker leads the offsets partition (one node: always). */
  leads?(partition: number): boolean;
  /** Clusters: the leader epoch of the offsets partition, stamped on the coordinator's batches (one node: 0). */
  leaderEpoch?(partition: number): number;
  /** Clusters: waits until the ISR holds the offsets partition up to `endOffset` (the coordinator writes with acks=all); NONE or an error. */
  awaitCommitted?(partition: number, endOffset: bigint): Promise<number>;
  topicByName: (name: string) => { topicId: string; partitions: number } | undefined;
  topicName: (topicId: string) => string | undefined;
  /** Every topic name, for KIP-848 regex subscriptions (none when absent). */
  topicNames?(): Iterable<string>;
  notifyAppend(topic: string, partition: number, bytes: number): void;
  now?: () => number;
}

/**
 * The owner of share groups (lib/share's coordinator): what a replayed `__consumer_offsets` partition
 * holds of them is given to it, and a partition resigned takes its share groups away.
 */
export interface ShareGroupOwner {
  load(groupId: string, records: ShareGroupRecords): void;
  unload(inPartition: (groupId: string) => boolean): void;
}

export class GroupCoordinator {
  readonly groups = new Map<string, Group>();
  /** Set by the share service before the coordinator starts (share groups are replayed into it). */
  shareGroups: ShareGroupOwner | undefined;
  readonly offsets = new OffsetStore();
  /** Offsets committed in transactions that have no marker yet. */
  readonly pendingTxn = new PendingTxnOffsets();
  readonly classic: ClassicCoordinator;
  readonly consumer: ConsumerCoordinator;
  /** Classic members inside consumer groups. */
  readonly inConsumerGroup: ClassicInConsumerGroup;
  /** group.consumer.migration.policy */
  readonly migrationPolicy: MigrationPolicy;
  readonly numPartitions: number;
  readonly settings: GroupSettings & { offsetsRetentionMs: number; retentionCheckIntervalMs: number; offsetMetadataMaxBytes: number };
  readonly consumerSettings: ConsumerSettings;
  readonly now: () => number;
  private readonly loading = new Set<number>();
  private active = false;
  /** `__consumer_offsets`, created on first use */
  private readonly offsetsTopic: InternalTopicOnFirstUse;
  private loaded: Promise<void> = Promise.resolve();
  private retentionTimer: NodeJS.Timeout | undefined;

  constructor(readonly deps: CoordinatorDeps) {
    const c = deps.config;
    this.now = deps.now ?? Date.now;
    this.numPartitions = c.int('offsets.topic.num.partitions');
    this.offsetsTopic = new InternalTopicOnFirstUse({
      name: OFFSETS_TOPIC,
      create: () => deps.ensureOffsetsTopic(this.numPartitions),
      logger: deps.logger,
      errorCode: 'GREGOR_ERR_GROUP_TOPIC',
    });
    this.settings = {
      initialRebalanceDelayMs: c.int('group.initial.rebalance.delay.ms'),
      minSessionTimeoutMs: c.int('group.min.session.timeout.ms'),
      maxSessionTimeoutMs: c.int('group.max.session.timeout.ms'),
      maxSize: c.int('group.max.size'),
      offsetsRetentionMs: c.int('offsets.retention.minutes') * 60_000,
      retentionCheckIntervalMs: c.long('offsets.retention.check.interval.ms') ?? 600_000,
      offsetMetadataMaxBytes: c.int('offset.metadata.max.bytes'),
    };
    this.consumerSettings = {
      heartbeatIntervalMs: c.int('group.consumer.heartbeat.interval.ms'),
      sessionTimeoutMs: c.int('group.consumer.session.timeout.ms'),
      maxSize: c.explicit.has('group.consumer.max.size') ? c.int('group.consumer.max.size') : c.int('group.max.size'),
    };
    this.migrationPolicy = parseMigrationPolicy(c.string('group.consumer.migration.policy'));
    // The getters below read fields assigned after this constructor call; inside them `this` is the literal.
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- see above
    const self = this;
    this.classic = new ClassicCoordinator({
      purgatory: deps.purgatory,
      settings: this.settings,
      logger: deps.logger,
      now: this.now,
      storeGroup: (group, assignment) => this.storeGroup(group, assignment),
      classicGroup: (groupId, create) => this.classicGroup(groupId, create),
      get inConsumerGroup() {
        return self.inConsumerGroup;
      },
    });
    this.consumer = new ConsumerCoordinator({
      get settings() {
        return self.consumerSettings;
      },
      logger: deps.logger,
      consumerGroup: (groupId, create) => this.consumerGroup(groupId, create),
      maybeDowngrade: (group, leaving) =>
        mayDowngradeWithoutMember(group, leaving.memberId, this.migrationPolicy, this.settings.maxSize)
          ? this.downgrade(group, leaving.memberId)
          : null,
      write: (groupId, records) => this.write(groupId, records).then((e) => storeErrorFor(e, false)),
      topicByName: deps.topicByName,
      topicName: deps.topicName,
      topicNames: () => deps.topicNames?.() ?? [],
    });
    this.inConsumerGroup = new ClassicInConsumerGroup({
      consumer: this.consumer,
      logger: deps.logger,
      maxSize: () => this.consumerSettings.maxSize,
      write: (groupId, records) => this.write(groupId, records).then((e) => storeErrorFor(e, false)),
      topicByName: deps.topicByName,
      topicName: deps.topicName,
      maybeDowngradeReplaced: (group) =>
        isDowngradeEnabled(this.migrationPolicy) && group.members.size <= this.settings.maxSize ? this.downgrade(group, null) : null,
    });
  }

  get logger(): Logger {
    return this.deps.logger;
  }

  // ---- lifecycle ----

  /**
   * Starts replaying the offsets topic when it exists (requests meanwhile get
   * COORDINATOR_LOAD_IN_PROGRESS). A broker without one creates it on first use, as Kafka does: the
   * first FindCoordinator for a group, or the first write.
   */
  async startup(): Promise<void> {
    if (this.deps.offsetsTopicExists()) {
      await this.deps.ensureOffsetsTopic(this.numPartitions);
      for (let p = 0; p < this.numPartitions; p++) this.loading.add(p);
      this.offsetsTopic.markReady();
    }
    this.active = true;
    this.loaded = this.loadAll();
    this.retentionTimer = setInterval(() => void this.cleanupGroupMetadata(), this.settings.retentionCheckIntervalMs);
    this.retentionTimer.unref();
  }

  /** Creates `__consumer_offsets` on first use. NONE once it is there, COORDINATOR_NOT_AVAILABLE when that failed. */
  async ensureReady(): Promise<number> {
    if (!this.active) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    return this.offsetsTopic.ensure();
  }

  /**
   * FindCoordinator's wait. One node: none; `__consumer_offsets` is created meanwhile on first use
   * (InternalTopicOnFirstUse.ensureStarted), and every write waits for it (append). Whatever a group
   * reads before then it reads from memory: a topic that did not exist holds no offsets. A cluster's
   * answer names the leader of the group's partition, so there the topic must exist first.
   */
  async ensureFound(): Promise<number> {
    if (!this.active) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    return this.deps.leads !== undefined ? this.offsetsTopic.ensure() : this.offsetsTopic.ensureStarted();
  }

  /**
   * Resolves once a creation of `__consumer_offsets` begun by a FindCoordinator (which no longer waits
   * for it) has ended: shutdown waits for it before it closes the logs.
   */
  offsetsTopicSettled(): Promise<void> {
    return this.offsetsTopic.settled();
  }

  /** Resolves when every partition has been replayed. */
  whenLoaded(): Promise<void> {
    return this.loaded;
  }

  private async loadAll(): Promise<void> {
    if (!this.offsetsTopic.isReady) return;
    const started = this.now();
    let groups = 0;
    let offsets = 0;
    for (let p = 0; p < this.numPartitions; p++) {
      try {
        const n = await loadInto(this, this.deps.offsetsLog(p));
        groups += n.groups;
        offsets += n.offsets;
      } catch (e) {
        this.logger.error({ err: e, partition: p, code: 'GREGOR_ERR_GROUP_LOAD' }, `failed to load ${OFFSETS_TOPIC}-${p}`);
      } finally {
        this.loading.delete(p);
      }
      if (!this.active) return;
    }
    this.logger.info({ groups, offsets, ms: this.now() - started }, 'group coordinator loaded');
  }

  /**
   * Clusters: this broker became (or stopped being) the leader of offsets partition `p`. Gaining it
   * replays the partition (its groups answer COORDINATOR_LOAD_IN_PROGRESS meanwhile), as Kafka's
   * onElection does; losing it drops the partition's groups and offsets (their members are answered
   * NOT_COORDINATOR and find the new coordinator), as onResignation does (both in loader.ts).
   */
  async leadershipChanged(p: number, leads: boolean): Promise<void> {
    if (!this.active) return;
    if (!this.offsetsTopic.isReady) {
      // another broker created the topic: this one learns of it by leading one of its partitions
      if (!leads || !this.deps.offsetsTopicExists()) return;
      this.offsetsTopic.markReady();
    }
    if (!leads) {
      unloadPartition(this, p);
      return;
    }
    if (this.loading.has(p)) return;
    this.loading.add(p);
    try {
      const n = await loadInto(this, this.deps.offsetsLog(p));
      this.logger.info({ partition: p, ...n }, `elected coordinator of ${OFFSETS_TOPIC}-${p}`);
    } catch (e) {
      this.logger.error({ err: e, partition: p, code: 'GREGOR_ERR_GROUP_LOAD' }, `failed to load ${OFFSETS_TOPIC}-${p}`);
    } finally {
      this.loading.delete(p);
    }
  }

  /** Answers everyone waiting with NOT_COORDINATOR and stops every timer. */
  shutdown(): void {
    this.active = false;
    if (this.retentionTimer !== undefined) clearInterval(this.retentionTimer);
    for (const g of this.groups.values()) unloadGroup(this, g);
    this.groups.clear();
  }

  // ---- routing and validation ----

  partitionFor(groupId: string): number {
    return partitionFor(groupId, this.numPartitions);
  }

  validateGroupStatus(groupId: string | null, api: GroupApi): number {
    const emptyOk = api === 'commit' || api === 'fetch' || api === 'describe' || api === 'delete';
    if (groupId === null || (!emptyOk && groupId === '')) return ErrorCode.INVALID_GROUP_ID;
    if (!this.active) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const p = this.partitionFor(groupId);
    if (this.deps.leads !== undefined && !this.deps.leads(p)) return ErrorCode.NOT_COORDINATOR;
    if (this.loading.has(p)) return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    return ErrorCode.NONE;
  }

  get isActive(): boolean {
    return this.active;
  }

  /** Some `__consumer_offsets` partition is still being replayed. */
  get isLoading(): boolean {
    return this.loading.size > 0;
  }

  private classicGroup(groupId: string, create: boolean): ClassicGroup | ConsumerGroup | undefined {
    const g = this.groups.get(groupId);
    if (g?.type === 'classic') return g;
    if (g !== undefined) {
      // A consumer group serves classic members; an empty one is taken over by a joining classic member.
      if (!create || g.members.size > 0) return g;
      g.dead = true;
      void this.write(groupId, consumerGroupTombstones(g));
    }
    if (!create) return undefined;
    const created = new ClassicGroup(groupId, this.now);
    this.groups.set(groupId, created);
    return created;
  }

  /**
   * Kafka's getOrMaybeCreateConsumerGroup: the consumer group; with `create` a new one, one replacing an
   * empty classic group, or (the online upgrade, when the policy allows it) one converted from a live
   * classic group of the consumer protocol type. A new group is registered only by `create()`.
   */
  private consumerGroup(groupId: string, create: boolean): ConsumerGroupLookup {
    const g = this.groups.get(groupId);
    if (g?.type === 'consumer') return { group: g };
    if (g === undefined) {
      if (!create) return { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: `Consumer group ${groupId} not found.` };
      const created = new ConsumerGroup(groupId);
      return { group: created, create: () => (this.groups.set(groupId, created), []) };
    }
    const notConsumer = { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: `Group ${groupId} is not a consumer group` };
    if (!create) return notConsumer;
    if (g.is(ClassicGroupState.EMPTY)) {
      const created = new ConsumerGroup(groupId);
      return {
        group: created,
        create: () => {
          g.transitionTo(ClassicGroupState.DEAD);
          this.groups.set(groupId, created);
          return g.protocolType === null ? [] : [groupMetadataRecord(groupId, null)];
        },
      };
    }
    const refusal = onlineUpgradeRefusal(g, this.migrationPolicy, this.consumerSettings.maxSize);
    if (refusal !== null) {
      this.logger.info({ group: groupId }, `Cannot upgrade classic group ${groupId} to consumer group because ${refusal}.`);
      return notConsumer;
    }
    let converted: ConsumerGroup;
    try {
      converted = consumerGroupFromClassic(g, (name) => this.deps.topicByName(name)?.topicId);
    } catch (e) {
      if (!(e instanceof MigrationError)) throw e;
      this.logger.warn({ group: groupId, err: e }, 'cannot upgrade the classic group');
      return { errorCode: e.errorCode, errorMessage: e.message };
    }
    return { group: converted, create: () => this.upgrade(g, converted) };
  }

  /**
   * Registers the consumer group converted from a live classic group (Kafka's convertToConsumerGroup):
   * classic members waiting in a join or a sync are told to rejoin, their classic timers stop, sessions
   * restart on their own timeouts. Returns the classic group's tombstone and the new group's records.
   */
  private upgrade(classic: ClassicGroup, converted: ConsumerGroup): CoordinatorRecord[] {
    this.classic.unload(classic, ErrorCode.REBALANCE_IN_PROGRESS);
    classic.transitionTo(ClassicGroupState.DEAD);
    this.groups.set(classic.groupId, converted);
    for (const m of converted.members.values())
      this.consumer.timers.scheduleSessionTimeout(converted, m, m.classicMemberMetadata?.sessionTimeoutMs);
    this.logger.info(
      { group: classic.groupId, epoch: converted.groupEpoch, members: converted.members.size },
      'upgraded classic group to consumer group',
    );
    return [groupMetadataRecord(classic.groupId, null), ...consumerGroupRecords(converted)];
  }

  /**
   * Kafka's convertToClassicGroup: the consumer group's records are tombstoned, the classic group (every
   * member but `leavingMemberId`) written and registered, the members' classic sessions started; when a
   * member left, a rebalance so that the others rejoin. Throws MigrationError when it cannot be done.
   */
  private downgrade(group: ConsumerGroup, leavingMemberId: string | null): CoordinatorRecord[] {
    const classic = classicGroupFromConsumer(group, leavingMemberId, this.now, (id) => this.deps.topicName(id));
    const records = [...consumerGroupTombstones(group), groupMetadataRecord(group.groupId, classic.toRecordValue())];
    for (const m of group.members.values()) this.consumer.timers.cancelTimers(m);
    group.dead = true;
    this.groups.set(group.groupId, classic);
    for (const m of classic.members.values()) this.classic.scheduleHeartbeat(classic, m);
    this.logger.info(
      { group: group.groupId, generation: classic.generationId, members: classic.size },
      'downgraded consumer group to classic group',
    );
    if (leavingMemberId !== null) this.classic.maybePrepareRebalance(classic, `Downgrade group ${group.groupId} from consumer to classic.`);
    return records;
  }

  // ---- persistence ----

  /** Appends the records to the group's partition; resolves with a Kafka error code once written. */
  async write(groupId: string, records: CoordinatorRecord[]): Promise<number> {
    if (records.length === 0) return ErrorCode.NONE;
    return (await this.append(groupId, records)).errorCode;
  }

  /**
   * Appends the records as one batch (a transactional one of `txn`'s producer for TxnOffsetCommit);
   * resolves with a Kafka error code and the offset of the first record once written.
   */
  async append(
    groupId: string,
    records: CoordinatorRecord[],
    txn?: { producerId: bigint; producerEpoch: number },
  ): Promise<{ errorCode: number; offset: bigint }> {
    if (!this.offsetsTopic.isReady) {
      const errorCode = await this.ensureReady();
      if (errorCode !== ErrorCode.NONE) return { errorCode, offset: -1n };
    }
    const p = this.partitionFor(groupId);
    const log = this.deps.offsetsLog(p);
    if (log === undefined) {
      const notHere = this.deps.leads !== undefined && !this.deps.leads(p);
      return { errorCode: notHere ? ErrorCode.NOT_LEADER_OR_FOLLOWER : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, offset: -1n };
    }
    // a log known empty opens on its first write (TopicManager.openLogs); append needs it open
    if (!log.isOpen) await log.open().catch(() => undefined); // a failed open: append throws its LogError
    const ts = BigInt(this.now());
    const producer =
      txn === undefined ? {} : { producerId: txn.producerId, producerEpoch: txn.producerEpoch, baseSequence: 0, isTransactional: true };
    const batch = buildRecordBatch(
      records.map((r) => ({ key: r.key, value: r.value, timestamp: ts })),
      producer,
    );
    try {
      const { info, written } = log.append(batch, { leaderEpoch: this.deps.leaderEpoch?.(p) ?? 0, origin: AppendOrigin.COORDINATOR });
      await written;
      this.deps.notifyAppend(OFFSETS_TOPIC, p, batch.length);
      if (this.deps.awaitCommitted !== undefined) {
        const errorCode = await this.deps.awaitCommitted(p, info.lastOffset + 1n);
        if (errorCode !== ErrorCode.NONE) return { errorCode, offset: -1n };
      }
      return { errorCode: ErrorCode.NONE, offset: info.firstOffset };
    } catch (e) {
      this.logger.warn({ err: e, group: groupId, partition: p, code: 'GREGOR_ERR_GROUP_WRITE' }, `failed to write to ${OFFSETS_TOPIC}`);
      return { errorCode: e instanceof LogError ? e.errorCode : ErrorCode.UNKNOWN_SERVER_ERROR, offset: -1n };
    }
  }

  async storeGroup(group: ClassicGroup, assignment: ReadonlyMap<string, Buffer>): Promise<number> {
    return storeErrorFor(await this.write(group.groupId, [groupMetadataRecord(group.groupId, group.toRecordValue(assignment))]), false);
  }

  // ---- retention ----

  /** Kafka's cleanupGroupMetadata: drops expired offsets, then empty groups without offsets. */
  async cleanupGroupMetadata(): Promise<number> {
    const now = this.now();
    const retention = this.settings.offsetsRetentionMs;
    let removed = 0;
    for (const [groupId, g] of [...this.groups]) {
      const subscribed = g.type === 'classic' ? g.subscribedTopics : g.subscribedTopicNames();
      const empty = g.type === 'classic' ? g.is(ClassicGroupState.EMPTY) : g.members.size === 0;
      let base: ((commitTs: number) => number) | null = null;
      if (g.type === 'classic' && g.protocolType === null) base = (ts) => ts;
      else if (empty) base = (ts) => (g.type === 'classic' ? (g.currentStateTimestamp ?? ts) : ts);
      else if (g.type === 'classic' && g.is(ClassicGroupState.STABLE) && subscribed !== null) base = (ts) => ts;
      const records: CoordinatorRecord[] = [];
      const expired: { topic: string; partition: number }[] = [];
      if (base !== null) {
        for (const { topic, partition, offset } of this.offsets.all(groupId)) {
          if (!empty && subscribed?.has(topic) === true) continue;
          const gone = offset.expireTimestamp !== null ? now >= offset.expireTimestamp : now - base(offset.commitTimestamp) >= retention;
          if (gone) expired.push({ topic, partition });
        }
      }
      for (const e of expired) {
        this.offsets.remove(groupId, e.topic, e.partition);
        records.push(offsetCommitRecord(groupId, e.topic, e.partition, null));
      }
      removed += expired.length;
      if (g.type === 'classic' && g.is(ClassicGroupState.EMPTY) && !this.offsets.hasOffsets(groupId)) {
        g.transitionTo(ClassicGroupState.DEAD);
        this.groups.delete(groupId);
        records.push(groupMetadataRecord(groupId, null));
      }
      if (records.length > 0) await this.write(groupId, records);
    }
    if (removed > 0) this.logger.info({ removed }, 'removed expired offsets');
    return removed;
  }
}
