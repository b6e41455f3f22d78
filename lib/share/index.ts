/**
 * Share groups (KIP-932) on this broker: the share-group coordinator (membership and assignment),
 * the share partitions it leads (in-flight records, locks, delivery counts) and the share sessions
 * of the consumers fetching from it. `createShareService` is what broker.ts calls.
 */
import type { Logger } from 'pino';
import type { BrokerConfig } from '../config.js';
import type { GroupCoordinator } from '../group/coordinator.js';
import { groupConfigInt, shareAutoOffsetReset } from '../group/group-configs.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { MetadataStore } from '../metadata/store.js';
import type { Purgatory } from '../replica/purgatory.js';
import type { TopicManager } from '../topics.js';
import { ShareCoordinator } from './share-coordinator.js';
import { SharePartitions } from './share-partitions.js';
import { ShareSessionCache } from './share-sessions.js';
import { ShareStateStore } from './state-store.js';
import type { SharePartition } from './share-partition.js';

export { ShareCoordinator } from './share-coordinator.js';

export interface ShareServiceWiring {
  config: BrokerConfig;
  logger: Logger;
  purgatory: Purgatory;
  topics: TopicManager;
  metadata: MetadataStore;
  groups: GroupCoordinator;
}

export class ShareService {
  readonly coordinator: ShareCoordinator;
  readonly partitions: SharePartitions;
  readonly sessions: ShareSessionCache;
  /** `__share_group_state` */
  readonly store: ShareStateStore;

  constructor(private readonly w: ShareServiceWiring) {
    const c = w.config;
    this.sessions = new ShareSessionCache(c.int('group.share.max.share.sessions'));
    this.store = new ShareStateStore(
      w.topics,
      w.metadata,
      {
        numPartitions: c.int('share.coordinator.state.topic.num.partitions'),
        updatesPerSnapshot: c.int('share.coordinator.snapshot.update.records.per.snapshot'),
        lingerMs: c.int('share.coordinator.append.linger.ms'),
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
      onAssigned: (groupId, topicId, p) => void this.partitions.getOrCreate(groupId, topicId, p),
      // a member fenced by its session timeout: what it holds goes back at once (one that leaves still
      // sends its last acknowledgements, with its share session's final epoch, which releases the rest)
      onMemberFenced: (groupId, memberId) => {
        this.sessions.drop(groupId, memberId);
        this.partitions.releaseMember(groupId, memberId);
      },
    });
    w.topics.onTopicsChanged(() => this.coordinator.topicsChanged());
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
    const snapshots = await this.store.load();
    for (const s of snapshots) this.partitions.restore(s.groupId, s.topicId, s.partition, s.startOffset, s.batches);
    if (snapshots.length > 0) this.w.logger.info({ sharePartitions: snapshots.length }, 'share-partition state loaded');
  }

  /** Resolves once the state of the share partitions is written (an acknowledgement is answered after). */
  async durable(sps: Iterable<SharePartition>): Promise<void> {
    await Promise.all([...sps].map((sp) => this.store.persist(sp)));
  }

  /** DeleteGroups of an empty share group: its share partitions go too (tombstones in `__share_group_state`). */
  async deleteGroupState(groupId: string): Promise<void> {
    const sps = this.partitions.list(groupId);
    this.partitions.deleteGroup(groupId);
    await this.store.forget(sps);
  }

  shutdown(): void {
    this.coordinator.shutdown();
    this.partitions.close();
  }
}

export function createShareService(w: ShareServiceWiring): ShareService {
  return new ShareService({ ...w, logger: w.logger.child({ component: 'share-coordinator' }) });
}
