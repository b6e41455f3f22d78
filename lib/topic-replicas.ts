/**
 * Clusters: which partitions' logs a broker holds follows the replicas in the partition states (a
 * reassignment changes them). A partition this broker became a replica of gets its log (the
 * replication layer then follows it); one it no longer is a replica of loses its log, deleted from
 * disk once the replica-removed listeners have let go of it (Kafka's StopReplica with delete); and at
 * start-up the logs of partitions taken away while it was down are deleted (Kafka's stray replicas).
 * TopicManager's part, kept apart.
 */
import type { Logger } from 'pino';
import type { LogManager } from './log/log-dirs.js';
import type { PartitionLog } from './log/partition-log.js';
import type { MetadataStore } from './metadata/store.js';

/** Resolves once nothing uses the replica's log any more (its fetcher stopped): the log is deleted next. */
export type ReplicaRemovedListener = (topic: string, partition: number) => Promise<void>;

export interface TopicReplicasHost {
  readonly metadata: MetadataStore;
  readonly logManager: LogManager;
  readonly logger: Logger;
  /** The topic's logs by partition index (undefined where none is held), unless they are being made. */
  settledLogs(topic: string): (PartitionLog | undefined)[] | undefined;
  /** Makes the partition's log (opened on first use), holds it, and tells the partition listeners. */
  attach(topic: string, partition: number): void;
}

export class TopicReplicas {
  private readonly removedListeners: ReplicaRemovedListener[] = [];

  constructor(private readonly host: TopicReplicasHost) {}

  /** Called when a reassignment takes a replica off this broker, before its log is deleted. */
  onRemoved(l: ReplicaRemovedListener): void {
    this.removedListeners.push(l);
  }

  /** Whether this broker is one of the partition's replicas. */
  holds(topic: string, partition: number): boolean {
    const { metadata } = this.host;
    return metadata.partitionState(topic, partition)?.replicas.includes(metadata.nodeId) ?? false;
  }

  /** The partition's state changed: make or drop its log here to match. */
  changed(topic: string, partition: number): void {
    const logs = this.host.settledLogs(topic);
    if (logs === undefined || partition >= logs.length) return;
    const holds = this.holds(topic, partition);
    if (holds && logs[partition] === undefined) {
      this.host.attach(topic, partition);
      this.host.logger.info({ topic, partition }, 'replica added to this broker');
    } else if (!holds && logs[partition] !== undefined) {
      logs[partition] = undefined;
      void this.remove(topic, partition).catch((err: unknown) =>
        this.host.logger.error({ err, topic, partition }, 'deleting a removed replica failed'),
      );
    }
  }

  /** At start-up: deletes the logs on disk of existing partitions this broker is not a replica of. */
  async deleteStray(): Promise<void> {
    const { metadata, logManager, logger } = this.host;
    for (const { topic, partition } of await logManager.listPartitions()) {
      const t = metadata.topic(topic);
      if (t === undefined || partition >= t.partitions || this.holds(topic, partition)) continue;
      await logManager.deletePartition(topic, partition);
      logger.info({ topic, partition }, 'stray replica deleted: this broker is no longer one of its replicas');
    }
  }

  private async remove(topic: string, partition: number): Promise<void> {
    await Promise.all(this.removedListeners.map((l) => l(topic, partition).catch(() => undefined)));
    if (this.host.settledLogs(topic)?.[partition] !== undefined) return; // a replica here again meanwhile: it keeps the log
    await this.host.logManager.deletePartition(topic, partition);
    this.host.logger.info({ topic, partition }, 'replica removed from this broker: log deleted');
  }
}
