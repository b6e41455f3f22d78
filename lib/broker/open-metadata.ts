/** The metadata store metadata.store names: the data dir's file (local), or etcd (its client loaded only then). */
import type { BrokerConfig } from '../config.js';
import { LocalMetadataStore } from '../metadata/local-store.js';
import type { MetadataStore } from '../metadata/store.js';
import type { Logger } from '../observability/logger.js';

export async function openMetadata(config: BrokerConfig, logger: Logger, dataDir: string): Promise<MetadataStore> {
  if (config.string('metadata.store') !== 'etcd')
    return LocalMetadataStore.open(dataDir, { nodeId: config.nodeId, clusterId: config.string('cluster.id') });
  const { EtcdMetadataStore } = await import('../metadata/etcd-store.js');
  return EtcdMetadataStore.open({
    endpoints: config.list('etcd.endpoints'),
    clusterId: config.string('cluster.id') ?? '',
    nodeId: config.nodeId,
    sessionTimeoutMs: config.int('broker.session.timeout.ms'),
    controllerOptions: {
      autoLeaderRebalance: config.bool('auto.leader.rebalance.enable'),
      imbalanceCheckIntervalMs: (config.long('leader.imbalance.check.interval.seconds') ?? 300) * 1000,
      imbalancePercentage: config.int('leader.imbalance.per.broker.percentage'),
      uncleanLeaderElection: config.bool('unclean.leader.election.enable'),
    },
    logger: logger.child({ component: 'etcd-store' }),
    dataDir,
  });
}
