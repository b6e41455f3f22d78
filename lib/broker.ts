/**
 * Wires the broker's services together and runs them: config → metadata store → logs → handlers →
 * listeners. `startBroker({ port: 0 })` is the embedded API the tests use.
 */
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { AppendPool } from './append/pool.js';
import { BrokerConfig, type ConfigValue, type Listener, parseListener } from './config.js';
import { createGroupCoordinator } from './group/index.js';
import { Dispatcher } from './handlers/dispatcher.js';
import { HANDLERS, advertisedVersions } from './handlers/index.js';
import { LogManager } from './log/log-manager.js';
import { LocalMetadataStore } from './metadata/local-store.js';
import type { ConnectionInfo } from './network/connection.js';
import { FaultInjector } from './network/faults.js';
import { KafkaServer } from './network/server.js';
import { createLogger, type Logger } from './observability/logger.js';
import { Purgatory } from './replica/purgatory.js';
import type { ApiVersionRange, BrokerServices } from './services.js';
import { TopicManager } from './topics.js';
import { createTransactionCoordinator } from './txn/index.js';
import { ProducerIdManager } from './txn/producer-ids.js';

export interface BrokerOptions {
  /** Port of the single PLAINTEXT listener (0: any free port). Overrides `listeners`. */
  port?: number;
  host?: string;
  /** Data directory (log.dir). */
  dataDir?: string;
  /** Kafka config keys → values (highest precedence). */
  config?: Record<string, string | ConfigValue>;
  /** A server.properties file. */
  configFile?: string;
  /** KAFKA_* variables to read (default: none for embedded use; the CLI passes process.env). */
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
}

export class Broker {
  readonly config: BrokerConfig;
  readonly logger: Logger;
  /** Fault-injection rules for tests (per-API errors, delays, dropped connections): lib/network/faults.ts. */
  readonly faults = new FaultInjector();
  private readonly servers: { listener: Listener; server: KafkaServer }[] = [];
  private readonly advertised = new Map<string, Listener>();
  private services!: BrokerServices;
  private logManager!: LogManager;
  private metadata!: LocalMetadataStore;
  private appendPool: AppendPool | null = null;
  private stopping: Promise<void> | null = null;

  constructor(opts: BrokerOptions = {}) {
    const overrides: Record<string, string | ConfigValue> = { ...(opts.config ?? {}) };
    if (opts.dataDir !== undefined) overrides['log.dir'] = opts.dataDir;
    if (opts.port !== undefined) overrides['listeners'] = `PLAINTEXT://${opts.host ?? '127.0.0.1'}:${opts.port}`;
    const sources: ConstructorParameters<typeof BrokerConfig>[0] = { overrides, env: opts.env ?? {} };
    if (opts.configFile !== undefined) sources.file = opts.configFile;
    this.config = new BrokerConfig(sources);
    this.logger = opts.logger ?? createLogger({ base: { broker: this.config.nodeId } });
  }

  /** host:port of the first listener, for clients. */
  get bootstrapServers(): string {
    const first = this.servers[0];
    if (first === undefined) throw new Error('broker not started');
    const adv = this.advertised.get(first.listener.name) ?? first.listener;
    return `${adv.host}:${adv.port}`;
  }

  /** host:port of the admin HTTP listener (metrics, health, faults), or null when there is none. */
  get adminAddress(): string | null {
    return null;
  }

  get port(): number {
    return this.servers[0]?.listener.port ?? -1;
  }

  get dataDir(): string {
    return resolve(this.config.logDirs[0] ?? './data');
  }

  async start(): Promise<this> {
    const started = Date.now();
    const dataDir = this.dataDir;
    await mkdir(dataDir, { recursive: true });
    const apiVersions: ApiVersionRange[] = advertisedVersions(HANDLERS, this.config.string('broker.version.emulate'));
    this.metadata = await LocalMetadataStore.open(dataDir, { nodeId: this.config.nodeId, clusterId: this.config.string('cluster.id') });
    this.logManager = await LogManager.open(dataDir, this.config, this.logger);
    const purgatory = new Purgatory();
    this.appendPool = AppendPool.fromConfig(this.config.int('num.append.workers'), this.logger);
    const topics = new TopicManager(this.config, this.metadata, this.logManager, this.logger, this.appendPool);
    const groups = createGroupCoordinator({ config: this.config, logger: this.logger, purgatory, topics, metadata: this.metadata, notifyAppend: (t, p, b) => this.services.notifyAppend(t, p, b) });
    const producerIds = await ProducerIdManager.open(dataDir);
    const txn = createTransactionCoordinator({ config: this.config, logger: this.logger, topics, metadata: this.metadata, groups, producerIds, notifyAppend: (t, p, b) => this.services.notifyAppend(t, p, b) });
    this.services = {
      config: this.config,
      nodeId: this.config.nodeId,
      clusterId: this.metadata.clusterId,
      metadata: this.metadata,
      topics,
      purgatory,
      groups,
      txn,
      logger: this.logger,
      apiVersions,
      advertisedListener: (name) => this.advertised.get(name),
      notifyAppend: (topic, partition, bytes) => {
        const key = topics.partition(topic, partition);
        if (key === undefined) return;
        purgatory.checkAndComplete(key, bytes);
      },
    };
    await topics.loadAll();
    await groups.startup();
    await txn.startup();
    this.logManager.startMaintenance(this.config.long('log.retention.check.interval.ms') ?? 300000);
    this.logManager.startProducerExpiration(this.config.int('producer.id.expiration.check.interval.ms'), this.config.int('producer.id.expiration.ms'));

    const dispatcher = new Dispatcher(HANDLERS, () => this.services, this.faults);
    dispatcher.setAdvertised(apiVersions);
    const dispatch = (frame: Buffer, conn: ConnectionInfo) => dispatcher.dispatch(frame, conn, conn.logger);
    const advertisedSpecs = new Map(this.config.list('advertised.listeners').map((s) => parseListener(s)).map((l) => [l.name, l]));
    for (const spec of this.config.list('listeners')) {
      const l = parseListener(spec);
      const server = new KafkaServer(
        {
          name: l.name,
          host: l.host === '' ? '0.0.0.0' : l.host,
          port: l.port,
          socketSendBufferBytes: this.config.int('socket.send.buffer.bytes'),
          socketReceiveBufferBytes: this.config.int('socket.receive.buffer.bytes'),
          socketRequestMaxBytes: this.config.int('socket.request.max.bytes'),
          connectionsMaxIdleMs: this.config.long('connections.max.idle.ms') ?? 600000,
          maxConnections: this.config.int('max.connections'),
          maxConnectionsPerIp: this.config.int('max.connections.per.ip'),
          maxQueuedRequests: this.config.int('queued.max.requests'),
        },
        dispatch,
        this.logger,
      );
      const bound = await server.listen();
      const listener: Listener = { name: l.name, host: l.host === '' || l.host === '0.0.0.0' ? '127.0.0.1' : l.host, port: bound.port };
      this.servers.push({ listener, server });
      const adv = advertisedSpecs.get(l.name);
      this.advertised.set(l.name, adv === undefined ? listener : { ...adv, port: adv.port === 0 ? bound.port : adv.port });
    }
    this.logger.info(
      { clusterId: this.metadata.clusterId, nodeId: this.config.nodeId, dataDir, bootstrap: this.bootstrapServers, startupMs: Date.now() - started },
      'gregor started',
    );
    return this;
  }

  /** Stops accepting, lets in-flight requests finish, flushes the logs and writes the clean-shutdown marker. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.services?.groups.shutdown();
      this.services?.txn.shutdown();
      this.services?.purgatory.expireAll();
      await Promise.all(this.servers.map((s) => s.server.close(10_000)));
      this.services?.purgatory.expireAll();
      await this.metadata?.persisted();
      await this.logManager?.shutdown();
      await this.appendPool?.stop();
      this.logger.info('gregor stopped');
      this.logger.flush?.();
    })();
    return this.stopping;
  }
}

export async function startBroker(opts: BrokerOptions = {}): Promise<Broker> {
  return new Broker(opts).start();
}
