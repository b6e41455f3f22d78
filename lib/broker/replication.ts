/** Clusters: the replication layer, with one replica fetcher per leader this broker follows. */
import { type BrokerConfig, parseListener } from '../config.js';
import type { LogManager } from '../log/log-dirs.js';
import type { MetadataStore } from '../metadata/store.js';
import type { Logger } from '../observability/logger.js';
import type { Purgatory } from '../replica/purgatory.js';
import { ReplicaFetcherManager } from '../replica/replica-fetcher.js';
import { Replication } from '../replica/replication.js';
import type { TopicManager } from '../topics.js';

export interface ReplicationParts {
  config: BrokerConfig;
  logger: Logger;
  metadata: MetadataStore;
  logManager: LogManager;
  topics: TopicManager;
  purgatory: Purgatory;
}

export function makeReplication({ config: c, logger, metadata, logManager, topics, purgatory }: ReplicationParts): Replication {
  const listener = c.string('inter.broker.listener.name') ?? parseListener(c.list('listeners')[0] ?? 'PLAINTEXT://:9092').name;
  const addressOf = (nodeId: number) => {
    const b = metadata.brokers().find((x) => x.nodeId === nodeId);
    const ep = b?.endpoints.find((e) => e.listener === listener) ?? b?.endpoints[0];
    return ep === undefined ? undefined : { host: ep.host, port: ep.port };
  };
  const followers = new ReplicaFetcherManager(addressOf, {
    replicaId: c.nodeId,
    clientId: `gregor-replica-fetcher-${c.nodeId}`,
    maxWaitMs: c.int('replica.fetch.wait.max.ms'),
    minBytes: c.int('replica.fetch.min.bytes'),
    maxBytes: c.int('replica.fetch.response.max.bytes'),
    partitionMaxBytes: c.int('replica.fetch.max.bytes'),
    backoffMs: c.int('replica.fetch.backoff.ms'),
    requestTimeoutMs: c.int('replica.socket.timeout.ms'),
    logger: logger.child({ component: 'replica-fetcher' }),
  });
  return new Replication({
    metadata,
    topics,
    purgatory,
    followers,
    config: c,
    logger: logger.child({ component: 'replication' }),
    checkpoint: { dataDirs: logManager.logDirs(), logs: (dir) => logManager.logsIn(dir) },
  });
}
