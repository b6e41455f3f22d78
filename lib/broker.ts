/**
 * Wires the broker's services together and runs them: config → metadata store → logs → handlers →
 * listeners. `startBroker({ port: 0 })` is the embedded API the tests use.
 */
import { DynamicBrokerConfigs } from './config/dynamic-configs.js';
import { notApplyingLogLine } from './config/kafka-keys.js';
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { faultRoutes } from './admin/fault-routes.js';
import { healthRoutes } from './admin/health-routes.js';
import { metricsRoutes } from './admin/metrics-routes.js';
import { requestLogRoutes } from './admin/request-routes.js';
import type { AdminServer } from './admin/server.js';
import { uiRoutes } from './admin/ui-routes.js';
import { AppendPool } from './append/pool.js';
import { startAdminListener } from './broker/admin-listener.js';
import { openMetadata } from './broker/open-metadata.js';
import { makeReplication } from './broker/replication.js';
import { shutdown } from './broker/shutdown.js';
import { BrokerConfig, ConfigError, type ConfigValue, type Listener, parseListener } from './config.js';
import { createGroupCoordinator } from './group/index.js';
import { createShareService } from './share/index.js';
import { Dispatcher } from './handlers/dispatcher.js';
import { HANDLERS, advertisedVersions } from './handlers/index.js';
import { LogDirError, checkLogDirIdentity } from './log/log-dir-identity.js';
import { LogManager } from './log/log-dirs.js';
import { MetadataError, type MetadataStore } from './metadata/store.js';
import type { ConnectionInfo } from './network/connection.js';
import { FaultInjector } from './network/faults.js';
import { KafkaServer } from './network/server.js';
import { overloadLimits, type OverloadLimits } from './network/overload.js';
import { listenerSecurity, saslSessions, type ListenerSecurity } from './security/listener-security.js';
import { saslGate } from './security/sasl/gate.js';
import { AclAuthorizer } from './security/acl/authorizer.js';
import { checkAdvertisedListeners } from './network/advertised-check.js';
import type { LogCleaner } from './log/cleaner/cleaner.js';
import { startLogCleaner } from './log/cleaner/settings.js';
import { BrokerMetrics } from './observability/broker-metrics.js';
import { createLogger, type Logger } from './observability/logger.js';
import type { MetricsSource, PrometheusExporter } from './observability/prometheus.js';
import { topicAndGroupViews } from './observability/service-views.js';
import { FetchSessionCache } from './replica/fetch-sessions.js';
import { Readiness } from './observability/readiness.js';
import type { RequestTiming } from './observability/request-timing.js';
import { Purgatory } from './replica/purgatory.js';
import { ReadBufferPool } from './log/read-buffer-pool.js';
import type { Replication } from './replica/replication.js';
import type { ApiVersionRange, BrokerServices } from './services.js';
import { ensureTopics, type TopicSpec } from './topic-spec.js';
import { TopicManager } from './topics.js';
import { clientQuotaManager, connectionCreationRates } from './quota/index.js';
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
  /** Topics that exist before start() resolves: created when missing, an existing one is left as it is (a difference is logged). lib/topic-spec.ts */
  topics?: readonly TopicSpec[];
}

export class Broker {
  readonly config: BrokerConfig;
  readonly logger: Logger;
  /** Fault-injection rules for tests (per-API errors, delays, dropped connections): lib/network/faults.ts. */
  readonly faults = new FaultInjector();
  /**
   * What must hold before the broker is ready (/v1/status/ready, `ready`): the Kafka listeners bound
   * and the group coordinator loaded; start-up code adds its own (`readiness.hold('declared topics')`
   * before start(), released once they exist).
   */
  readonly readiness = new Readiness();
  /** Request and topic meters behind /metrics and /v1/requests. */
  readonly metrics: BrokerMetrics;
  private readonly listenersBound = this.readiness.hold('listeners');
  private admin: AdminServer | null = null;
  private exporter: Promise<PrometheusExporter> | null = null;
  private readonly servers: { listener: Listener; server: KafkaServer }[] = [];
  private overload: OverloadLimits | null = null;
  private readonly advertised = new Map<string, Listener>();
  private services!: BrokerServices;
  private logManager!: LogManager;
  private metadata!: MetadataStore;
  private appendPool: AppendPool | null = null;
  /** The log cleaner (log.cleaner.enable); null when disabled or not started. */
  cleaner: LogCleaner | null = null;
  private replication: Replication | undefined;
  private stopping: Promise<void> | null = null;
  private readonly declaredTopics: readonly TopicSpec[];
  /** Aborts background start-up work (the advertised-listener check) on stop. */
  private readonly background = new AbortController();
  /** Each listener's TLS and SASL settings, read (key stores loaded) at construction so bad ones fail fast. */
  private readonly security = new Map<string, ListenerSecurity>();

  constructor(opts: BrokerOptions = {}) {
    const overrides: Record<string, string | ConfigValue> = { ...(opts.config ?? {}) };
    if (opts.dataDir !== undefined) overrides['log.dir'] = opts.dataDir;
    if (opts.port !== undefined) overrides['listeners'] = `PLAINTEXT://${opts.host ?? '127.0.0.1'}:${opts.port}`;
    const sources: ConstructorParameters<typeof BrokerConfig>[0] = { overrides, env: opts.env ?? {} };
    if (opts.configFile !== undefined) sources.file = opts.configFile;
    this.config = new BrokerConfig(sources);
    this.declaredTopics = opts.topics ?? [];
    this.logger = opts.logger ?? createLogger({ base: { broker: this.config.nodeId } });
    for (const spec of this.config.brokerListeners) {
      const name = parseListener(spec).name;
      this.security.set(name, listenerSecurity(this.config, name));
    }
    const interBroker =
      this.config.string('inter.broker.listener.name') ?? parseListener(this.config.list('listeners')[0] ?? 'PLAINTEXT://:9092').name;
    const interProtocol = this.security.get(interBroker.toUpperCase())?.protocol ?? 'PLAINTEXT';
    if (this.config.string('metadata.store') === 'etcd' && interProtocol !== 'PLAINTEXT')
      throw new ConfigError(
        `inter-broker listener ${interBroker} is ${interProtocol}: brokers of a gregor cluster speak neither TLS nor SASL to each other yet; set inter.broker.listener.name to a PLAINTEXT listener`,
      );
    const notApplying = notApplyingLogLine(this.config.notApplying());
    if (notApplying !== undefined) this.logger.info(notApplying.fields, notApplying.msg);
    this.metrics = new BrokerMetrics({ requestLogSize: this.config.int('admin.requests.log.size') });
  }

  /** Resolves once the broker is ready: listeners bound, group coordinator loaded, and every `readiness` condition met. */
  get ready(): Promise<void> {
    return this.readiness.whenReady();
  }

  get isReady(): boolean {
    return this.readiness.isReady;
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
    return this.admin?.address ?? null;
  }

  get port(): number {
    return this.servers[0]?.listener.port ?? -1;
  }

  /** host:port clients reach the listener `name` on (its advertised address), e.g. the SSL one's. */
  listenerAddress(name: string): string {
    const s = this.servers.find((x) => x.listener.name === name.toUpperCase());
    if (s === undefined) throw new Error(`no listener ${name}`);
    const adv = this.advertised.get(s.listener.name) ?? s.listener;
    return `${adv.host}:${adv.port}`;
  }

  /** The first log dir: the broker's metadata lives there (Kafka's metadata.log.dir default). */
  get dataDir(): string {
    return resolve(this.config.logDirs[0] ?? './data');
  }

  /** Every log dir (log.dirs, else log.dir), absolute, each once. */
  get logDirs(): string[] {
    return [...new Set(this.config.logDirs.map((d) => resolve(d)))];
  }

  async start(): Promise<this> {
    const started = Date.now();
    const dataDir = this.dataDir;
    await mkdir(dataDir, { recursive: true });
    const apiVersions: ApiVersionRange[] = advertisedVersions(HANDLERS, this.config.string('broker.version.emulate'));
    try {
      this.metadata = await openMetadata(this.config, this.logger, dataDir);
    } catch (e) {
      // a data dir the broker must not start on: one error line, and the error (its message starts with the code) to the caller
      if (e instanceof MetadataError) this.logger.error({ code: e.code, file: e.file, dataDir }, e.message);
      throw e;
    }
    const dynamicConfigs = DynamicBrokerConfigs.open(this.metadata, this.config, (err) =>
      this.logger.error({ err }, 'stored dynamic broker configs do not apply; keeping the previous ones'),
    );
    const logDirs = this.logDirs;
    try {
      await checkLogDirIdentity(logDirs, this.metadata.clusterId, this.config.nodeId);
      this.logManager = await LogManager.open(logDirs, this.config, this.logger);
    } catch (e) {
      if (e instanceof LogDirError) this.logger.error({ code: e.code, file: e.file, logDirs }, e.message);
      await this.metadata.close().catch(() => undefined);
      throw e;
    }
    const purgatory = new Purgatory();
    const fetchSessions = new FetchSessionCache(this.config.int('max.incremental.fetch.session.cache.slots'));
    this.appendPool = AppendPool.fromConfig(this.config.int('num.append.workers'), this.logger);
    const topics = new TopicManager(this.config, this.metadata, this.logManager, this.logger, this.appendPool);
    // Kafka applies dynamic topic defaults (log.retention.ms, ...) to existing logs that do not override them
    dynamicConfigs.onApplied(() => topics.refreshLogConfigs());
    // clusters: made before the logs load, so that every replica's high watermark is driven by it
    const replication = topics.clustered
      ? makeReplication({
          config: this.config,
          logger: this.logger,
          metadata: this.metadata,
          logManager: this.logManager,
          topics,
          purgatory,
        })
      : undefined;
    this.replication = replication;
    const groups = createGroupCoordinator({
      config: this.config,
      logger: this.logger,
      purgatory,
      topics,
      metadata: this.metadata,
      notifyAppend: (t, p, b) => this.services.notifyAppend(t, p, b),
      replication: () => replication,
    });
    // a cluster's brokers hand out producer ids from disjoint ranges
    const producerIds = await ProducerIdManager.open(dataDir, undefined, topics.clustered ? BigInt(this.config.nodeId) << 40n : 0n);
    const txn = createTransactionCoordinator({
      config: this.config,
      logger: this.logger,
      topics,
      metadata: this.metadata,
      groups,
      producerIds,
      notifyAppend: (t, p, b, stable) => this.services.notifyAppend(t, p, b, stable),
      replication: () => replication,
    });
    const share = createShareService({
      config: this.config,
      logger: this.logger,
      purgatory,
      topics,
      metadata: this.metadata,
      groups,
      notifyAppend: (t, p, b) => this.services.notifyAppend(t, p, b),
      ...(replication === undefined
        ? {}
        : { awaitCommitted: (t, p, end, timeoutMs, minIsr) => replication.awaitCommitted(t, p, end, timeoutMs, minIsr) }),
    });
    this.services = {
      config: this.config,
      dynamicConfigs,
      nodeId: this.config.nodeId,
      clusterId: this.metadata.clusterId,
      metadata: this.metadata,
      topics,
      logManager: this.logManager,
      purgatory,
      fetchSessions,
      // only zero-copy responses recycle their read buffers: copying ones measured cheaper without (README)
      readBuffers: new ReadBufferPool(
        this.config.bool('gregor.fetch.zero.copy') ? this.config.int('gregor.fetch.read.buffer.pool.bytes') : 0,
      ),
      replication,
      groups,
      share,
      txn,
      logger: this.logger,
      ...(AclAuthorizer.enabledBy(this.config) ? { authorizer: new AclAuthorizer(this.metadata, this.config, this.logger) } : {}),
      metrics: this.metrics,
      quotas: clientQuotaManager(this.config, this.metadata),
      apiVersions,
      advertisedListener: (name) => this.advertised.get(name),
      notifyAppend: (topic, partition, bytes, stableBytes) => {
        const log = topics.partition(topic, partition);
        if (log === undefined) return;
        // on a single node the appended bytes are readable at once; with replication, once the high
        // watermark passes them (the replication layer tells the purgatory then)
        const readableBytes = log.externalHighWatermark ? 0 : bytes;
        log.noteChange();
        purgatory.checkAndComplete(log, { appendedBytes: bytes, readableBytes, stableBytes: stableBytes ?? readableBytes });
      },
    };
    await topics.loadAll();
    replication?.start();
    await groups.startup();
    await share.startup();
    this.readiness.add('group coordinator', groups.whenLoaded());
    topics.onTopicsChanged((topic, change) => {
      if (change === 'deleted') this.metrics.topics.forget(topic);
    });
    await txn.startup();
    try {
      await ensureTopics(topics, (name) => this.metadata.topic(name), this.declaredTopics, this.logger, this.config.int('num.partitions'));
    } catch (e) {
      await this.stop();
      throw e;
    }
    this.logManager.startMaintenance(this.config.long('log.retention.check.interval.ms') ?? 300000);
    this.cleaner = startLogCleaner(this.config, dynamicConfigs, this.logManager, this.logger);
    this.logManager.startProducerExpiration(
      this.config.int('producer.id.expiration.check.interval.ms'),
      this.config.int('producer.id.expiration.ms'),
    );

    const dispatcher = new Dispatcher(HANDLERS, () => this.services, this.faults, this.metrics);
    dispatcher.setAdvertised(apiVersions);
    const dispatch = (frame: Buffer, conn: ConnectionInfo, timing?: RequestTiming) => dispatcher.dispatch(frame, conn, conn.logger, timing);
    const advertisedSpecs = new Map(
      this.config
        .list('advertised.listeners')
        .map((s) => parseListener(s))
        .map((l) => [l.name, l]),
    );
    const limits = await overloadLimits(this.config);
    const connectionRates = connectionCreationRates(this.config, this.metadata);
    this.overload = limits;
    for (const spec of this.config.brokerListeners) {
      const l = parseListener(spec);
      const { tls, sasl } = this.security.get(l.name) ?? {};
      const server = new KafkaServer(
        {
          name: l.name,
          host: l.host === '' ? '0.0.0.0' : l.host,
          port: l.port,
          socketSendBufferBytes: this.config.int('socket.send.buffer.bytes'),
          socketReceiveBufferBytes: this.config.int('socket.receive.buffer.bytes'),
          socketRequestMaxBytes: this.config.int('socket.request.max.bytes'),
          connectionsMaxIdleMs: this.config.long('connections.max.idle.ms') ?? 600000,
          readDirect: this.config.bool('gregor.socket.read.direct'),
          writeDirect: this.config.bool('gregor.socket.write.direct'),
          sendFile: this.config.bool('gregor.fetch.sendfile') && this.config.bool('gregor.fetch.zero.copy'),
          ...limits,
          connectionRates,
          requestObserver: this.metrics,
          ...(tls === undefined ? {} : { tls }),
          ...(sasl === undefined ? {} : { sasl: saslSessions(sasl, () => this.metadata) }),
        },
        sasl === undefined ? dispatch : saslGate(dispatch),
        this.logger,
      );
      const bound = await server.listen();
      const listener: Listener = { name: l.name, host: l.host === '' || l.host === '0.0.0.0' ? '127.0.0.1' : l.host, port: bound.port };
      this.servers.push({ listener, server });
      const adv = advertisedSpecs.get(l.name);
      this.advertised.set(l.name, adv === undefined ? listener : { ...adv, port: adv.port === 0 ? bound.port : adv.port });
    }
    await this.metadata.register({
      nodeId: this.config.nodeId,
      rack: this.config.string('broker.rack'),
      endpoints: [...this.advertised.values()].map((l) => ({ listener: l.name, host: l.host, port: l.port })),
    });
    this.listenersBound.release();
    this.metrics.history.start();
    const views = topicAndGroupViews(this.services, this.logManager, this.config.int('min.insync.replicas'));
    this.metrics.trackGroupLag(views.groups, (t, p) => this.services.topics.partition(t, p)?.highWatermark);
    try {
      await this.startAdmin();
    } catch (e) {
      await this.stop();
      throw e;
    }
    this.logger.info(
      {
        clusterId: this.metadata.clusterId,
        nodeId: this.config.nodeId,
        dataDir,
        bootstrap: this.bootstrapServers,
        admin: this.adminAddress,
        startupMs: Date.now() - started,
      },
      'gregor started',
    );
    // after an unclean shutdown: the logs to recover that no request has opened yet, in the background
    void this.logManager.startRecovery();
    const advertised = this.servers.map((x) => ({ bound: x.listener, advertised: this.advertised.get(x.listener.name) ?? x.listener }));
    void checkAdvertisedListeners(advertised, {
      clusterId: this.metadata.clusterId,
      logger: this.logger,
      signal: this.background.signal,
    }).catch(() => undefined);
    return this;
  }

  /** The admin HTTP listener (admin.listener): lib/broker/admin-listener.ts. */
  private async startAdmin(): Promise<void> {
    const routes = () => [
      ...metricsRoutes(
        () => (this.exporter ??= import('./observability/prometheus.js').then((m) => new m.PrometheusExporter(this.metricsSource()))),
      ),
      ...healthRoutes(this.readiness),
      ...requestLogRoutes(this.metrics.requestLog),
      ...faultRoutes(this.faults),
      ...uiRoutes(() => ({ services: this.services, broker: this, signal: this.background.signal })),
    ];
    this.admin = await startAdminListener(this.config, routes, this.logger);
  }

  /** What /metrics reads (computed at scrape time). */
  private metricsSource(): MetricsSource {
    const s = this.services;
    return {
      metrics: this.metrics,
      nodeId: this.config.nodeId,
      fetchSessions: () => s.fetchSessions.stats(),
      brokerAddress: () => this.bootstrapServers,
      isReady: () => this.readiness.isReady,
      logCleaner: () => this.cleaner?.stats ?? null,
      ...topicAndGroupViews(s, this.logManager, this.config.int('min.insync.replicas')),
      listeners: () => this.servers.map((x) => ({ name: x.listener.name, connections: x.server.connections.values() })),
      overload: () => this.overload,
      quotaThrottles: () => s.quotas.throttleTotals(),
      recentCache: () => {
        const b = this.logManager.recentCacheBudget;
        return { bytes: b.bytes, entries: b.entries, limit: b.limit };
      },
    };
  }

  /** Stops accepting, lets in-flight requests finish, flushes the logs and writes the clean-shutdown marker. */
  stop(): Promise<void> {
    this.stopping ??= shutdown({
      background: this.background,
      metrics: this.metrics,
      readiness: this.readiness,
      faults: this.faults,
      logger: this.logger,
      servers: this.servers,
      // stop() may run before start() got as far as the services (a failed start cleans up through it)
      parts: () => ({
        replication: this.replication,
        admin: this.admin,
        services: this.services,
        metadata: this.metadata,
        logManager: this.logManager,
        cleaner: this.cleaner,
        appendPool: this.appendPool,
      }),
    });
    return this.stopping;
  }
}

export async function startBroker(opts: BrokerOptions = {}): Promise<Broker> {
  return new Broker(opts).start();
}
