/** The group coordinator wired to the broker's topics: `createGroupCoordinator` is what broker.ts calls. */
import type { Logger } from 'pino';
import type { BrokerConfig } from '../config.js';
import type { MetadataStore } from '../metadata/store.js';
import type { Purgatory } from '../replica/purgatory.js';
import type { TopicManager } from '../topics.js';
import { GroupCoordinator } from './coordinator.js';
import { OFFSETS_TOPIC } from './records.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { Replication } from '../replica/replication.js';

export { GroupCoordinator } from './coordinator.js';
export { OFFSETS_TOPIC, partitionFor } from './records.js';

export interface GroupCoordinatorWiring {
  config: BrokerConfig;
  logger: Logger;
  purgatory: Purgatory;
  topics: TopicManager;
  metadata: MetadataStore;
  notifyAppend(topic: string, partition: number, bytes: number): void;
  /** Clusters: the replication layer (made after the coordinator). */
  replication?: () => Replication | undefined;
}

export function createGroupCoordinator(w: GroupCoordinatorWiring): GroupCoordinator {
  const coordinator = new GroupCoordinator({
    config: w.config,
    logger: w.logger.child({ component: 'group-coordinator' }),
    purgatory: w.purgatory,
    offsetsTopicExists: () => w.metadata.topic(OFFSETS_TOPIC) !== undefined,
    async ensureOffsetsTopic(numPartitions) {
      await w.topics.ensureInternal({
        name: OFFSETS_TOPIC,
        numPartitions,
        replicationFactor: w.config.int('offsets.topic.replication.factor'),
        configs: {
          'cleanup.policy': 'compact',
          'compression.type': 'producer',
          'segment.bytes': String(w.config.int('offsets.topic.segment.bytes')),
        },
      });
    },
    offsetsLog: (p) => w.topics.partition(OFFSETS_TOPIC, p),
    ...(w.topics.clustered
      ? {
          leads: (p: number) => w.topics.partition(OFFSETS_TOPIC, p) !== undefined,
          leaderEpoch: (p: number) => w.topics.leaderEpoch(OFFSETS_TOPIC, p),
          awaitCommitted: (p: number, endOffset: bigint) =>
            w.replication?.()?.awaitCommitted(OFFSETS_TOPIC, p, endOffset, w.config.int('offsets.commit.timeout.ms'), 1) ??
            Promise.resolve(ErrorCode.NONE),
        }
      : {}),
    topicByName(name) {
      const t = w.metadata.topic(name);
      return t === undefined ? undefined : { topicId: t.topicId, partitions: t.partitions };
    },
    topicName: (id) => w.metadata.topicById(id)?.name,
    topicNames: () => w.metadata.topics().map((t) => t.name),
    notifyAppend: (t, p, b) => w.notifyAppend(t, p, b),
  });
  // clusters: the offsets partitions this broker leads move with the controller's elections
  w.topics.onLeadershipChanged((topic, p, leads) => {
    if (topic === OFFSETS_TOPIC) void coordinator.leadershipChanged(p, leads);
  });
  // KIP-848: topics created, deleted or grown change what consumer groups subscribe to (names and regexes).
  w.topics.onTopicsChanged(() => coordinator.consumer.subscriptions.topicsChanged(coordinator.groups.values()));
  return coordinator;
}
