/** The transaction coordinator wired to the broker's topics and groups: what broker.ts calls. */
import type { Logger } from 'pino';
import type { BrokerConfig } from '../config.js';
import type { GroupCoordinator } from '../group/coordinator.js';
import { OFFSETS_TOPIC } from '../group/records.js';
import { completeTxnOffsets } from '../group/txn-offsets.js';
import type { MetadataStore } from '../metadata/store.js';
import type { TopicManager } from '../topics.js';
import { TransactionCoordinator } from './coordinator.js';
import type { ProducerIdManager } from './producer-ids.js';
import { TRANSACTION_STATE_TOPIC } from './txn-metadata.js';

export { TransactionCoordinator } from './coordinator.js';
export { TRANSACTION_STATE_TOPIC } from './txn-metadata.js';

export interface TxnCoordinatorWiring {
  config: BrokerConfig;
  logger: Logger;
  topics: TopicManager;
  metadata: MetadataStore;
  groups: GroupCoordinator;
  producerIds: ProducerIdManager;
  notifyAppend(topic: string, partition: number, bytes: number): void;
}

export function createTransactionCoordinator(w: TxnCoordinatorWiring): TransactionCoordinator {
  const coordinator = new TransactionCoordinator({
    config: w.config,
    logger: w.logger.child({ component: 'transaction-coordinator' }),
    producerIds: w.producerIds,
    stateTopicExists: () => w.metadata.topic(TRANSACTION_STATE_TOPIC) !== undefined,
    async ensureStateTopic(numPartitions) {
      if (w.metadata.topic(TRANSACTION_STATE_TOPIC) === undefined) {
        const segmentBytes = String(w.config.int('transaction.state.log.segment.bytes'));
        await w.topics.create(
          {
            name: TRANSACTION_STATE_TOPIC,
            numPartitions,
            replicationFactor: w.config.int('transaction.state.log.replication.factor'),
            configs: {
              'cleanup.policy': 'compact',
              'compression.type': 'uncompressed',
              'min.insync.replicas': '1',
              'segment.bytes': segmentBytes,
              'unclean.leader.election.enable': 'false',
            },
          },
          { internal: true },
        );
      }
      await w.topics.ready(TRANSACTION_STATE_TOPIC);
    },
    stateLog: (p) => w.topics.partition(TRANSACTION_STATE_TOPIC, p),
    ...(w.topics.clustered ? { leads: (p: number) => w.topics.partition(TRANSACTION_STATE_TOPIC, p) !== undefined } : {}),
    partitionLog: (topic, partition) => w.topics.partition(topic, partition),
    offsetsTopic: OFFSETS_TOPIC,
    onOffsetsMarker: (partition, producerId, commit) => completeTxnOffsets(w.groups, partition, producerId, commit),
    groupsLoaded: () => w.groups.whenLoaded(),
    notifyAppend: (t, p, b) => w.notifyAppend(t, p, b),
  });
  // clusters: the state partitions this broker leads move with the controller's elections
  w.topics.onLeadershipChanged((topic, p, leads) => {
    if (topic === TRANSACTION_STATE_TOPIC) void coordinator.leadershipChanged(p, leads);
  });
  return coordinator;
}
