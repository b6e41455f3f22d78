/** The transaction coordinator wired to the broker's topics and groups: what broker.ts calls. */
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { BrokerConfig } from '../config.js';
import type { GroupCoordinator } from '../group/coordinator.js';
import { OFFSETS_TOPIC, partitionFor } from '../group/records.js';
import { completeTxnOffsets } from '../group/txn-offsets.js';
import type { MetadataStore } from '../metadata/store.js';
import type { Replication } from '../replica/replication.js';
import type { TopicManager } from '../topics.js';
import { TransactionCoordinator, type TxnCoordinatorDeps } from './coordinator.js';
import { interBrokerChannels, RemoteTxnMarkers, RemoteTxnVerifier } from './inter-broker.js';
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
  notifyAppend(topic: string, partition: number, bytes: number, stableBytes?: number): void;
  /** Clusters: the replication layer (made after the coordinator). */
  replication?: () => Replication | undefined;
}

/**
 * Clusters: leader epochs and acks=all for the coordinator's appends (markers and
 * `__transaction_state`), markers for partitions other brokers lead sent to those leaders, and
 * KIP-890 checks of writes whose transactional id another broker coordinates sent to it.
 */
function clusterDeps(w: TxnCoordinatorWiring, partitionFor: (transactionalId: string) => number): Partial<TxnCoordinatorDeps> {
  const c = w.config;
  const minIsr = (topic: string): number => {
    const v = w.metadata.topic(topic)?.configs['min.insync.replicas'];
    return v !== undefined ? Number(v) : c.int('min.insync.replicas');
  };
  // Kafka waits request.timeout.ms for the ISR on both (TransactionStateManager.appendTransactionToLog, WriteTxnMarkers)
  const requestTimeoutMs = c.int('request.timeout.ms');
  const logger = w.logger.child({ component: 'transaction-inter-broker' });
  const channels = interBrokerChannels(c, w.metadata, logger);
  const markers = new RemoteTxnMarkers(channels, {
    nodeId: c.nodeId,
    logger,
    leaderOf: (topic, p) => (w.topics.exists(topic, p) ? (w.metadata.partitionState(topic, p)?.leader ?? -1) : undefined),
  });
  const verifier = new RemoteTxnVerifier(channels, {
    nodeId: c.nodeId,
    logger,
    coordinatorOf: (id) => w.metadata.partitionState(TRANSACTION_STATE_TOPIC, partitionFor(id))?.leader ?? -1,
  });
  return {
    leaderEpoch: (topic, p) => w.topics.leaderEpoch(topic, p),
    notHereError: (topic, p) => w.topics.notHereError(topic, p),
    checkIsr(topic, p) {
      const r = w.replication?.();
      return r !== undefined && r.isrSize(topic, p) < minIsr(topic) ? ErrorCode.NOT_ENOUGH_REPLICAS : ErrorCode.NONE;
    },
    awaitCommitted: (topic, p, endOffset) =>
      w.replication?.()?.awaitCommitted(topic, p, endOffset, requestTimeoutMs, minIsr(topic)) ?? Promise.resolve(ErrorCode.NONE),
    remoteMarker: (m) => markers.send(m),
    remoteVerify: (v) => verifier.verify(v),
    onShutdown: () => channels.close(),
  };
}

export function createTransactionCoordinator(w: TxnCoordinatorWiring): TransactionCoordinator {
  const numPartitions = w.config.int('transaction.state.log.num.partitions');
  const coordinator: TransactionCoordinator = new TransactionCoordinator({
    config: w.config,
    logger: w.logger.child({ component: 'transaction-coordinator' }),
    producerIds: w.producerIds,
    stateTopicExists: () => w.metadata.topic(TRANSACTION_STATE_TOPIC) !== undefined,
    async ensureStateTopic(numPartitions) {
      const segmentBytes = String(w.config.int('transaction.state.log.segment.bytes'));
      await w.topics.ensureInternal({
        name: TRANSACTION_STATE_TOPIC,
        numPartitions,
        replicationFactor: w.config.int('transaction.state.log.replication.factor'),
        configs: {
          'cleanup.policy': 'compact',
          'compression.type': 'uncompressed',
          'min.insync.replicas': String(w.config.int('transaction.state.log.min.isr')),
          'segment.bytes': segmentBytes,
          'unclean.leader.election.enable': 'false',
        },
      });
    },
    stateLog: (p) => w.topics.partition(TRANSACTION_STATE_TOPIC, p),
    ...(w.topics.clustered ? { leads: (p: number) => w.topics.partition(TRANSACTION_STATE_TOPIC, p) !== undefined } : {}),
    partitionLog: (topic, partition) => w.topics.partition(topic, partition),
    offsetsTopic: OFFSETS_TOPIC,
    onOffsetsMarker: (partition, producerId, commit) => completeTxnOffsets(w.groups, partition, producerId, commit),
    groupsLoaded: () => w.groups.whenLoaded(),
    notifyAppend: (t, p, b, stable) => w.notifyAppend(t, p, b, stable),
    ...(w.topics.clustered ? clusterDeps(w, (id) => partitionFor(id, numPartitions)) : {}),
  });
  // clusters: the state partitions this broker leads move with the controller's elections
  w.topics.onLeadershipChanged((topic, p, leads) => {
    if (topic === TRANSACTION_STATE_TOPIC) void coordinator.routing.leadershipChanged(p, leads);
  });
  return coordinator;
}
