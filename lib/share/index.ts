/**
 * Share groups (KIP-932) on this broker: the share-group coordinator (membership and assignment),
 * the share partitions it leads (in-flight records, locks, delivery counts) and the share sessions
 * of the consumers fetching from it. `createShareService` is what broker.ts calls.
 */
import type { Logger } from 'pino';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ListOffsetsResponse } from '../../protocol/generated/list-offsets.js';
import type { BrokerConfig } from '../config.js';
import type { GroupCoordinator } from '../group/coordinator.js';
import { storeErrorFor } from '../group/store-errors.js';
import { groupConfigInt, shareAutoOffsetReset } from '../group/group-configs.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { MetadataStore } from '../metadata/store.js';
import type { Purgatory } from '../replica/purgatory.js';
import type { TopicManager } from '../topics.js';
import { type BrokerChannels, interBrokerChannels } from '../txn/inter-broker.js';
import { RoutingPersister, type SharePersister } from './persister.js';
import { ShareCoordinator } from './share-coordinator.js';
import { deleteShareGroupStateInCluster } from './share-offsets-cluster.js';
import { SharePartitions } from './share-partitions.js';
import { ShareSessionCache } from './share-sessions.js';
import { ShareStateStore } from './state-store.js';
import type { SharePartition } from './share-partition.js';
import { SHARE_STATE_TOPIC, ShareStateCoordinator } from './state-coordinator.js';

export { ShareCoordinator } from './share-coordinator.js';

export interface ShareServiceWiring {
  config: BrokerConfig;
  logger: Logger;
  purgatory: Purgatory;
  topics: TopicManager;
  metadata: MetadataStore;
  groups: GroupCoordinator;
  /** Wakes fetches waiting on a partition after an append (followers of `__share_group_state`). */
  notifyAppend(topic: string, partition: number, bytes: number): void;
  /** Clusters: waits until the ISR holds a partition up to `endOffset`; NONE or an error. */
  awaitCommitted?(topic: string, partition: number, endOffset: bigint, timeoutMs: number, minIsr: number): Promise<number>;
}

export class ShareService {
  readonly coordinator: ShareCoordinator;
  readonly partitions: SharePartitions;
  readonly sessions: ShareSessionCache;
  /** the partition leader's writer of share-partition state */
  readonly store: ShareStateStore;
  /** the share coordinator of the `__share_group_state` partitions this broker leads */
  readonly stateCoordinator: ShareStateCoordinator;
  /** reads and writes state where its share coordinator is (in-process or another broker) */
  readonly persister: SharePersister;
  /** clusters: share partitions (group, topic id, partition) whose persisted state this leader has read */
  private readonly stateRead = new Set<string>();
  private readonly stateReading = new Map<string, Promise<void>>();
  /** clusters: per share group this broker coordinates, the topics it has share partitions of */
  private readonly groupTopicIds = new Map<string, Set<string>>();
  /** clusters: connections to the other brokers' share coordinators */
  private readonly channels: BrokerChannels | undefined;

  constructor(private readonly w: ShareServiceWiring) {
    const c = w.config;
    // clusters: a group's share partitions here go once its last share session closes (after their state
    // is written), so the next member reads what an admin may have changed meanwhile (Kafka's onGroupEmpty)
    this.sessions = new ShareSessionCache(
      c.int('group.share.max.share.sessions'),
      w.topics.clustered ? (g) => setImmediate(() => void this.groupEmptyHere(g)) : undefined,
    );
    this.stateCoordinator = createStateCoordinator(w);
    this.channels = w.topics.clustered ? interBrokerChannels(c, w.metadata, w.logger, `gregor-share-${c.nodeId}`) : undefined;
    this.persister = new RoutingPersister({
      nodeId: c.nodeId,
      coordinator: this.stateCoordinator,
      coordinatorOf: (p) => (w.topics.clustered ? (w.metadata.partitionState(SHARE_STATE_TOPIC, p)?.leader ?? -1) : c.nodeId),
      ...(this.channels === undefined ? {} : { channels: this.channels }),
      // a coordinator failover (session timeout, election, replay) fits in Kafka's request timeout
      timeoutMs: c.int('request.timeout.ms'),
      logger: w.logger,
    });
    this.store = new ShareStateStore(
      this.persister,
      {
        lingerMs: c.int('share.coordinator.append.linger.ms'),
        leaderEpoch: (topicId, p) => this.leaderEpochOf(topicId, p),
        ...(w.topics.clustered ? { onFenced: (sp: SharePartition) => this.forgetHere(sp) } : {}),
      },
      w.logger,
    );
    this.partitions = new SharePartitions({
      limits: {
        deliveryCountLimit: () => c.int('group.share.delivery.count.limit'),
        maxRecordLocks: () => c.int('group.share.partition.max.record.locks'),
      },
      autoOffsetReset: (g) => shareAutoOffsetReset(w.metadata.groupConfigs(g)),
      log: (topicId, p) => this.partitionLog(topicId, p),
      // clusters: a share partition starts from share.auto.offset.reset only once its persisted state was read
      mayInitialise: (g, topicId, p) => !w.topics.clustered || this.stateRead.has(`${g}\0${topicId}\0${p}`),
      onReleased: (sp) => w.purgatory.checkAndComplete(sp),
      onChange: (sp) => this.store.schedule(sp),
    });
    this.coordinator = new ShareCoordinator({
      settings: {
        sessionTimeoutMs: (g) => this.groupInt(g, 'share.session.timeout.ms'),
        heartbeatIntervalMs: (g) => this.groupInt(g, 'share.heartbeat.interval.ms'),
        maxSize: c.int('group.share.max.size'),
      },
      topicByName: (name) => {
        const t = w.metadata.topic(name);
        return t === undefined ? undefined : { topicId: t.topicId, partitions: t.partitions };
      },
      topicName: (id) => w.metadata.topicById(id)?.name,
      otherGroupExists: (id) => w.groups.groups.has(id),
      onAssigned: (groupId, topicId, p) => {
        if (!w.topics.clustered) return void this.partitions.getOrCreate(groupId, topicId, p);
        this.noteTopic(groupId, topicId);
        void this.readState(groupId, topicId, p);
      },
      // a member fenced by its session timeout: what it holds goes back at once (one that leaves still
      // sends its last acknowledgements, with its share session's final epoch, which releases the rest)
      onMemberFenced: (groupId, memberId) => {
        this.sessions.drop(groupId, memberId);
        this.partitions.releaseMember(groupId, memberId);
      },
      write: (groupId, records) => w.groups.write(groupId, records).then((e) => storeErrorFor(e, false)),
      logger: w.logger,
    });
    // share groups' membership is replayed from `__consumer_offsets` with the other groups
    w.groups.shareGroups = this.coordinator;
    w.topics.onTopicsChanged(() => this.coordinator.topicsChanged());
    // clusters: state partitions move with the controller's elections; share partitions live with their partition's leader
    w.topics.onLeadershipChanged((topic, p, leads) => {
      if (topic === SHARE_STATE_TOPIC) void this.stateCoordinator.leadershipChanged(p, leads);
      else if (!leads) this.resigned(topic, p);
    });
  }

  /**
   * Clusters: reads the persisted state of the share partitions a ShareFetch or ShareAcknowledge names
   * (and those of the member's share session) that this broker leads and has not read yet, so that a new
   * leader continues from what the old one wrote.
   */
  async readStates(
    groupId: string | null,
    memberId: string | null,
    topics: readonly { topicId: string; partitions: readonly { partitionIndex: number }[] }[],
  ): Promise<void> {
    if (!this.w.topics.clustered || groupId === null || groupId === '') return;
    const reads: Promise<void>[] = [];
    for (const t of topics) for (const p of t.partitions) reads.push(this.readState(groupId, t.topicId, p.partitionIndex));
    const session = memberId === null ? undefined : this.sessions.get(groupId, memberId);
    for (const x of session?.partitions.values() ?? []) reads.push(this.readState(groupId, x.topicId, x.partition));
    await Promise.all(reads);
  }

  /** What a share request answers for a partition with no share partition here. */
  notHereError(topicId: string, partition: number): number {
    const name = this.w.metadata.topicById(topicId)?.name;
    if (name === undefined) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    // led here, but its state could not be read from the share coordinator yet
    if (this.w.topics.partition(name, partition) !== undefined) return ErrorCode.LEADER_NOT_AVAILABLE;
    return this.w.topics.notHereError(name, partition);
  }

  private readState(groupId: string, topicId: string, partition: number): Promise<void> {
    const key = `${groupId}\0${topicId}\0${partition}`;
    if (this.stateRead.has(key) || this.partitionLog(topicId, partition) === undefined) return Promise.resolve();
    let reading = this.stateReading.get(key);
    if (reading === undefined) {
      reading = this.readStateOnce(groupId, topicId, partition, key).finally(() => this.stateReading.delete(key));
      this.stateReading.set(key, reading);
    }
    return reading;
  }

  private async readStateOnce(groupId: string, topicId: string, partition: number, key: string): Promise<void> {
    const leaderEpoch = this.leaderEpochOf(topicId, partition);
    const r = await this.persister.read(groupId, topicId, partition, leaderEpoch);
    if (r.errorCode !== ErrorCode.NONE) {
      this.w.logger.warn(
        { group: groupId, topicId, partition, errorCode: r.errorCode },
        'GREGOR_ERR_SHARE_STATE_READ: share-partition state not read',
      );
      return;
    }
    if (this.partitionLog(topicId, partition) === undefined || this.leaderEpochOf(topicId, partition) !== leaderEpoch) return; // moved meanwhile
    if (this.partitions.get(groupId, topicId, partition) === undefined && r.state.startOffset >= 0n) {
      this.partitions.restore(groupId, topicId, partition, r.state.startOffset, r.state.batches);
      const sp = this.partitions.get(groupId, topicId, partition);
      if (sp !== undefined) this.store.restored(sp, r.state.stateEpoch);
    }
    this.stateRead.add(key);
  }

  /** Clusters: this broker no longer leads `topic`-`p`: its share partitions go (the new leader reads their state). */
  private resigned(topic: string, p: number): void {
    const topicId = this.w.metadata.topic(topic)?.topicId;
    if (topicId === undefined) return;
    for (const sp of this.partitions.list()) if (sp.topicId === topicId && sp.partition === p) this.forgetHere(sp);
  }

  /** Clusters: the share partition goes from this broker's memory (not from its share coordinator): its next use reads the state again. */
  forgetHere(sp: SharePartition): void {
    this.store.drop(sp);
    this.partitions.drop(sp);
    this.stateRead.delete(`${sp.groupId}\0${sp.topicId}\0${sp.partition}`);
  }

  /** Clusters: no member of the group fetches here any more: its share partitions go once their state is written. */
  private async groupEmptyHere(groupId: string): Promise<void> {
    const sps = this.partitions.list(groupId);
    await this.durable(sps);
    if (this.sessions.hasGroup(groupId)) return; // a member came back meanwhile
    for (const sp of sps) if (this.partitions.get(sp.groupId, sp.topicId, sp.partition) === sp) this.forgetHere(sp);
  }

  /**
   * Clusters: the high watermark of a partition, from its log when led here, otherwise by ListOffsets
   * (latest, read_uncommitted) at its leader; undefined when that cannot be learnt now.
   */
  async highWatermark(topic: string, partition: number): Promise<bigint | undefined> {
    const log = this.w.topics.partition(topic, partition);
    if (log !== undefined) return log.highWatermark;
    const leader = this.w.metadata.partitionState(topic, partition)?.leader ?? -1;
    if (this.channels === undefined || leader < 0) return undefined;
    try {
      const res = await this.channels.request<ListOffsetsResponse>(
        leader,
        ApiKey.ListOffsets,
        () => ({
          replicaId: -1,
          isolationLevel: 0,
          topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: -1n, maxNumOffsets: 1 }] }],
          timeoutMs: this.w.config.int('request.timeout.ms'),
        }),
        1,
      );
      const p = res.topics[0]?.partitions[0];
      return p?.errorCode === ErrorCode.NONE && p.offset !== undefined && p.offset >= 0n ? p.offset : undefined;
    } catch (err) {
      this.w.logger.debug({ err, topic, partition, leader }, 'high watermark not learnt');
      return undefined;
    }
  }

  get clustered(): boolean {
    return this.w.topics.clustered;
  }

  /** Clusters (group coordinator): a topic the group has share partitions of (assigned, or its offsets altered). */
  noteTopic(groupId: string, topicId: string): void {
    let ts = this.groupTopicIds.get(groupId);
    if (ts === undefined) this.groupTopicIds.set(groupId, (ts = new Set()));
    ts.add(topicId);
  }

  /** Clusters (group coordinator): forgets a topic (DeleteShareGroupOffsets), or all (undefined: DeleteGroups). */
  unnoteTopic(groupId: string, topicId?: string): void {
    if (topicId === undefined) this.groupTopicIds.delete(groupId);
    else this.groupTopicIds.get(groupId)?.delete(topicId);
  }

  /**
   * Clusters: the topic ids the group may have share-partition state of, as this broker knows them:
   * assigned (or altered) while it coordinated the group, subscribed by its members, or led here.
   */
  topicsOf(groupId: string): string[] {
    const out = new Set(this.groupTopicIds.get(groupId));
    for (const name of this.coordinator.groups.get(groupId)?.subscribedTopics() ?? []) {
      const id = this.w.metadata.topic(name)?.topicId;
      if (id !== undefined) out.add(id);
    }
    for (const sp of this.partitions.list(groupId)) out.add(sp.topicId);
    return [...out];
  }

  private leaderEpochOf(topicId: string, partition: number): number {
    const name = this.w.metadata.topicById(topicId)?.name;
    return name === undefined ? -1 : this.w.topics.leaderEpoch(name, partition);
  }

  get metadata(): MetadataStore {
    return this.w.metadata;
  }

  /** DeleteShareGroupOffsets of one topic: its share partitions go (tombstones in `__share_group_state`). */
  async forgetTopic(groupId: string, topicId: string): Promise<void> {
    await this.store.forget(this.partitions.deleteTopic(groupId, topicId));
  }

  /** The log of a partition this broker leads, by topic id. */
  partitionLog(topicId: string, partition: number): PartitionLog | undefined {
    const name = this.w.metadata.topicById(topicId)?.name;
    return name === undefined ? undefined : this.w.topics.partition(name, partition);
  }

  /** How many members of the group are assigned the partition (the simple assignor may share it). */
  assignedMembers(groupId: string, topicId: string, partition: number): number {
    let n = 0;
    for (const m of this.coordinator.groups.get(groupId)?.members.values() ?? [])
      if (m.assignment.get(topicId)?.includes(partition) === true) n++;
    return n;
  }

  /** Whether the coordinator assigns the partition to the member (undefined: no such member in the group). */
  isAssigned(groupId: string, memberId: string, topicId: string, partition: number): boolean | undefined {
    const m = this.coordinator.groups.get(groupId)?.members.get(memberId);
    return m === undefined ? undefined : m.assignment.get(topicId)?.includes(partition) === true;
  }

  /** group.share.partition.max.record.locks */
  get maxRecordLocks(): number {
    return this.w.config.int('group.share.partition.max.record.locks');
  }

  /** share.record.lock.duration.ms of the group (its group config, else group.share.record.lock.duration.ms) */
  recordLockDurationMs(groupId: string): number {
    return this.groupInt(groupId, 'share.record.lock.duration.ms');
  }

  /** A group config's effective int value (the group's override, else the broker's key). */
  private groupInt(groupId: string, key: string): number {
    return groupConfigInt(this.w.config, this.w.metadata.groupConfigs(groupId), key);
  }

  /** Restores the share partitions `__share_group_state` holds (broker start). */
  async startup(): Promise<void> {
    const snapshots = await this.stateCoordinator.load();
    // clusters: each leader reads its share partitions' state when they are first used
    if (this.w.topics.clustered) return;
    for (const s of snapshots) {
      this.partitions.restore(s.groupId, s.topicId, s.partition, s.startOffset, s.batches);
      const sp = this.partitions.get(s.groupId, s.topicId, s.partition);
      if (sp !== undefined) this.store.restored(sp, s.stateEpoch);
    }
    if (snapshots.length > 0) this.w.logger.info({ sharePartitions: snapshots.length }, 'share-partition state loaded');
  }

  /** Resolves once the state of the share partitions is written (an acknowledgement is answered after). */
  async durable(sps: Iterable<SharePartition>): Promise<void> {
    await Promise.all([...sps].map((sp) => this.store.persist(sp)));
  }

  /** DeleteGroups of an empty share group: its share partitions go too (tombstones in `__share_group_state`). */
  async deleteGroupState(groupId: string): Promise<void> {
    if (this.clustered) {
      const errorCode = await deleteShareGroupStateInCluster(this, groupId);
      if (errorCode !== ErrorCode.NONE)
        this.w.logger.warn({ group: groupId, errorCode }, 'GREGOR_ERR_SHARE_STATE_DELETE: share-group state not deleted');
      return;
    }
    const sps = this.partitions.list(groupId);
    this.partitions.deleteGroup(groupId);
    await this.store.forget(sps);
  }

  shutdown(): void {
    this.coordinator.shutdown();
    this.stateCoordinator.shutdown();
    this.channels?.close();
    this.partitions.close();
  }
}

/** The share coordinator of this broker's `__share_group_state` partitions (replicated, written with acks=all in clusters). */
function createStateCoordinator(w: ShareServiceWiring): ShareStateCoordinator {
  const c = w.config;
  const numPartitions = c.int('share.coordinator.state.topic.num.partitions');
  // Kafka's share.coordinator.state.topic.replication.factor (3), capped by the brokers there are, as gregor's other internal topics
  const replicationFactor = (): number =>
    Math.max(1, Math.min(c.int('share.coordinator.state.topic.replication.factor'), w.metadata.brokers().length));
  const minIsr = (): number => {
    const v = w.metadata.topic(SHARE_STATE_TOPIC)?.configs['min.insync.replicas'];
    return v !== undefined ? Number(v) : c.int('share.coordinator.state.topic.min.isr');
  };
  const awaitCommitted = w.awaitCommitted?.bind(w);
  return new ShareStateCoordinator({
    logger: w.logger,
    numPartitions,
    updatesPerSnapshot: c.int('share.coordinator.snapshot.update.records.per.snapshot'),
    topicExists: () => w.metadata.topic(SHARE_STATE_TOPIC) !== undefined,
    async createTopic() {
      const rf = replicationFactor();
      await w.topics.ensureInternal({
        name: SHARE_STATE_TOPIC,
        numPartitions,
        replicationFactor: rf,
        // as Kafka creates it: compaction would keep only a share partition's last update
        configs: {
          'cleanup.policy': 'delete',
          'retention.ms': '-1',
          'retention.bytes': '-1',
          'min.insync.replicas': String(Math.min(rf, c.int('share.coordinator.state.topic.min.isr'))),
        },
      });
    },
    log: (p) => w.topics.partition(SHARE_STATE_TOPIC, p),
    leaderEpoch: (p) => w.topics.leaderEpoch(SHARE_STATE_TOPIC, p),
    ...(w.topics.clustered && awaitCommitted !== undefined
      ? {
          awaitCommitted: (p: number, end: bigint) =>
            awaitCommitted(SHARE_STATE_TOPIC, p, end, c.int('share.coordinator.write.timeout.ms'), minIsr()),
        }
      : {}),
    notifyAppend: (p, bytes) => w.notifyAppend(SHARE_STATE_TOPIC, p, bytes),
  });
}

export function createShareService(w: ShareServiceWiring): ShareService {
  return new ShareService({ ...w, logger: w.logger.child({ component: 'share-coordinator' }) });
}
