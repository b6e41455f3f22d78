/** What handlers can reach: the broker's state owners and settings. Built once by broker.ts. */
import type { DynamicBrokerConfigs } from './config/dynamic-configs.js';
import type { Logger } from 'pino';
import type { BrokerConfig, Listener } from './config.js';
import type { MetadataStore } from './metadata/store.js';
import type { LogManager } from './log/log-dirs.js';
import type { GroupCoordinator } from './group/coordinator.js';
import type { BrokerMetrics } from './observability/broker-metrics.js';
import type { FetchSessionCache } from './replica/fetch-sessions.js';
import type { Purgatory } from './replica/purgatory.js';
import type { ReadBufferPool } from './log/read-buffer-pool.js';
import type { Replication } from './replica/replication.js';
import type { TopicManager } from './topics.js';
import type { TransactionCoordinator } from './txn/coordinator.js';
import type { ShareService } from './share/index.js';
import type { ClientQuotaManager } from './quota/manager.js';
import type { AclAuthorizer } from './security/acl/authorizer.js';

export interface ApiVersionRange {
  apiKey: number;
  minVersion: number;
  maxVersion: number;
}

export interface BrokerServices {
  readonly config: BrokerConfig;
  /** Dynamic broker configs (AlterConfigs on BROKER resources), persisted and applied to `config`. */
  readonly dynamicConfigs: DynamicBrokerConfigs;
  readonly nodeId: number;
  readonly clusterId: string;
  readonly metadata: MetadataStore;
  readonly topics: TopicManager;
  /** The partition logs of every log dir (DescribeLogDirs). */
  readonly logManager: LogManager;
  readonly purgatory: Purgatory;
  /** Fetch sessions (KIP-227) of followers and consumers. */
  readonly fetchSessions: FetchSessionCache;
  /** Segment read buffers of Fetch, recycled once each response is done with them (gregor.fetch.read.buffer.pool.bytes). */
  readonly readBuffers: ReadBufferPool;
  /** Clusters: followers, high watermarks, the ISR and acks=all (undefined on one node). */
  readonly replication: Replication | undefined;
  /** Consumer groups and committed offsets (on __consumer_offsets). */
  readonly groups: GroupCoordinator;
  /** Share groups (KIP-932): their coordinator, the share partitions this broker leads and share sessions. */
  readonly share: ShareService;
  /** Producer ids, transactions (on __transaction_state) and their markers. */
  readonly txn: TransactionCoordinator;
  readonly logger: Logger;
  /** The ACL authorizer, when `authorizer.class.name` is set (absent: every request is allowed). */
  readonly authorizer?: AclAuthorizer;
  /** Request and topic meters (/metrics, /v1/requests): the Produce handler counts what it appends here. */
  readonly metrics: BrokerMetrics;
  /** Client quotas (AlterClientQuotas) and the rates they limit (lib/quota/). */
  readonly quotas: ClientQuotaManager;
  /** Advertised endpoint per listener name (after binding, so port 0 is resolved). */
  advertisedListener(name: string): Listener | undefined;
  /** The API ranges this broker advertises (all handlers, or an emulated release's). */
  readonly apiVersions: readonly ApiVersionRange[];
  /**
   * Called after every append: wakes delayed fetches on that partition (purgatory key: its log; the
   * appended byte count goes along, readable at once on a single node, so each fetch can add up
   * toward its min_bytes). `stableBytes`: the bytes the append made readable to read_committed
   * fetches (a transaction marker moves the last stable offset past the transaction's data); absent:
   * the appended bytes.
   */
  notifyAppend(topic: string, partition: number, bytes: number, stableBytes?: number): void;
}
