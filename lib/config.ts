/**
 * Broker and topic configuration with Kafka's keys, types and defaults. Unknown or invalid keys fail fast
 * (GREGOR_ERR_CONFIG) with a message naming the key. Sources, lowest to highest precedence: defaults,
 * a server.properties file, KAFKA_* environment variables (Apache image mapping), --override k=v.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from './config/error.js';
import { adminListenerError, checkListenerProtocols, parseListener, securityProtocolOf } from './config/listeners.js';
import { ENV_IGNORED, envKeyToConfigKey, parseProperties } from './config/properties.js';
import {
  KAFKA_BROKER_KEYS,
  KAFKA_TOPIC_KEYS,
  kafkaBrokerKey,
  kafkaValueError,
  listenerPrefixedBase,
  nearestKey,
} from './config/kafka-keys.js';
import { SSL_BROKER_CONFIG } from './config/ssl-keys.js';
import { SASL_BROKER_CONFIG, SASL_PREFIXED_ONLY } from './config/sasl-keys.js';
import { ACL_BROKER_CONFIG } from './config/acl-keys.js';

export { ConfigError } from './config/error.js';
export { parseAdminListener, parseListener, type Listener } from './config/listeners.js';
export { envKeyToConfigKey, parseProperties } from './config/properties.js';

export type ConfigType = 'string' | 'int' | 'long' | 'boolean' | 'list' | 'double';
export type ConfigValue = string | number | bigint | boolean | string[] | null;

export interface ConfigDef {
  type: ConfigType;
  default: ConfigValue;
  /** Extra validation; returns an error message or undefined. */
  validate?: (v: ConfigValue) => string | undefined;
  /** Accepted for compatibility with Kafka but without effect in gregor. */
  inert?: boolean;
}

import {
  atLeast,
  cleanupPolicyError,
  COMPRESSION,
  connectionOverridesError,
  LONG_MAX,
  minusOneOrPositive,
  oneOf,
  oneOfIgnoringCase,
  replicaSelectorError,
  TIMESTAMP_TYPES,
} from './config/validators.js';
import { TOPIC_CONFIG } from './config/topic-keys.js';
export { RACK_AWARE_REPLICA_SELECTORS } from './config/validators.js';
export { TOPIC_CONFIG } from './config/topic-keys.js';

/** Broker-level keys (server.properties). */
export const BROKER_CONFIG: Record<string, ConfigDef> = {
  listeners: { type: 'list', default: ['PLAINTEXT://127.0.0.1:9092'] },
  'advertised.listeners': { type: 'list', default: null },
  'listener.security.protocol.map': {
    type: 'list',
    default: ['PLAINTEXT:PLAINTEXT', 'SSL:SSL', 'SASL_PLAINTEXT:SASL_PLAINTEXT', 'SASL_SSL:SASL_SSL'],
  },
  'inter.broker.listener.name': { type: 'string', default: null },
  'node.id': { type: 'int', default: -1 },
  'broker.id': { type: 'int', default: -1 },
  'broker.rack': { type: 'string', default: null },
  'cluster.id': { type: 'string', default: null },
  'process.roles': { type: 'list', default: null, inert: true },
  'controller.quorum.voters': { type: 'list', default: null, inert: true },
  'controller.listener.names': { type: 'list', default: null, inert: true },
  'log.dirs': { type: 'list', default: null },
  'log.dir': { type: 'string', default: './data' },
  'num.partitions': { type: 'int', default: 1, validate: atLeast(1) },
  'default.replication.factor': { type: 'int', default: 1, validate: atLeast(1) },
  'auto.create.topics.enable': { type: 'boolean', default: true },
  'delete.topic.enable': { type: 'boolean', default: true },
  'num.network.threads': { type: 'int', default: 3, inert: true },
  'num.io.threads': { type: 'int', default: 8, inert: true },
  'num.recovery.threads.per.data.dir': { type: 'int', default: 1, inert: true },
  'offsets.topic.replication.factor': { type: 'int', default: 1, validate: atLeast(1) },
  'offsets.topic.num.partitions': { type: 'int', default: 50, validate: atLeast(1) },
  'offsets.topic.segment.bytes': { type: 'int', default: 104857600, validate: atLeast(1) },
  'offsets.commit.timeout.ms': { type: 'int', default: 5000, validate: atLeast(1) },
  /** Kafka's broker request.timeout.ms: how long transaction markers and `__transaction_state` writes wait for the ISR (clusters). */
  'request.timeout.ms': { type: 'int', default: 30000, validate: atLeast(0) },
  'transaction.state.log.replication.factor': { type: 'int', default: 1 },
  'transaction.state.log.min.isr': { type: 'int', default: 1 },
  'transaction.state.log.num.partitions': { type: 'int', default: 50, validate: atLeast(1) },
  'transaction.state.log.segment.bytes': { type: 'int', default: 104857600, validate: atLeast(14) },
  'transaction.state.log.load.buffer.size': { type: 'int', default: 5242880, inert: true },
  'transaction.max.timeout.ms': { type: 'int', default: 900000, validate: atLeast(1) },
  'transactional.id.expiration.ms': { type: 'int', default: 604800000, validate: atLeast(1) },
  'transaction.abort.timed.out.transaction.cleanup.interval.ms': { type: 'int', default: 10000, validate: atLeast(1) },
  'transaction.remove.expired.transaction.cleanup.interval.ms': { type: 'int', default: 3600000, validate: atLeast(1) },
  'transaction.partition.verification.enable': { type: 'boolean', default: true },
  'producer.id.expiration.ms': { type: 'int', default: 86400000, validate: atLeast(1) },
  'producer.id.expiration.check.interval.ms': { type: 'int', default: 600000, validate: atLeast(1) },
  'group.initial.rebalance.delay.ms': { type: 'int', default: 3000, validate: atLeast(0) },
  'socket.send.buffer.bytes': { type: 'int', default: 102400, validate: atLeast(-1) },
  'socket.receive.buffer.bytes': { type: 'int', default: 102400, validate: atLeast(-1) },
  'socket.request.max.bytes': { type: 'int', default: 104857600, validate: atLeast(1) },
  'connections.max.idle.ms': { type: 'long', default: 600000 },
  'max.connections': { type: 'int', default: 2147483647, validate: atLeast(0) },
  'max.connections.per.ip': { type: 'int', default: 2147483647, validate: atLeast(0) },
  'max.connection.creation.rate': { type: 'int', default: 2147483647, validate: atLeast(0) },
  'quota.window.num': { type: 'int', default: 11, validate: atLeast(1) },
  'quota.window.size.seconds': { type: 'int', default: 1, validate: atLeast(1) },
  'controller.quota.window.num': { type: 'int', default: 11, validate: atLeast(1) },
  'controller.quota.window.size.seconds': { type: 'int', default: 1, validate: atLeast(1) },
  'max.connections.per.ip.overrides': { type: 'string', default: '', validate: connectionOverridesError },
  'queued.max.requests': { type: 'int', default: 500, validate: atLeast(1) },
  'queued.max.request.bytes': { type: 'long', default: -1, validate: minusOneOrPositive },
  'message.max.bytes': { type: 'int', default: 1048588, validate: atLeast(0) },
  'replica.fetch.max.bytes': { type: 'int', default: 1048576 },
  'max.incremental.fetch.session.cache.slots': { type: 'int', default: 1000, validate: atLeast(0) },
  'replica.fetch.wait.max.ms': { type: 'int', default: 500, validate: atLeast(0) },
  'replica.fetch.min.bytes': { type: 'int', default: 1, validate: atLeast(1) },
  'replica.fetch.response.max.bytes': { type: 'int', default: 10485760, validate: atLeast(0) },
  'replica.fetch.backoff.ms': { type: 'int', default: 1000, validate: atLeast(0) },
  'replica.socket.timeout.ms': { type: 'int', default: 30000, validate: atLeast(1) },
  'fetch.max.bytes': { type: 'int', default: 57671680, validate: atLeast(1024) },
  'log.segment.bytes': { type: 'int', default: 1073741824, validate: atLeast(14) },
  'log.roll.ms': { type: 'long', default: null },
  'log.roll.hours': { type: 'int', default: 168, validate: atLeast(1) },
  'log.retention.ms': { type: 'long', default: null },
  'log.retention.minutes': { type: 'int', default: null },
  'log.retention.hours': { type: 'int', default: 168 },
  'log.retention.bytes': { type: 'long', default: -1 },
  'log.retention.check.interval.ms': { type: 'long', default: 300000 },
  'log.index.interval.bytes': { type: 'int', default: 4096, validate: atLeast(0) },
  'log.index.size.max.bytes': { type: 'int', default: 10485760, validate: atLeast(4) },
  'log.flush.interval.messages': { type: 'long', default: LONG_MAX },
  'log.flush.interval.ms': { type: 'long', default: null },
  'log.flush.scheduler.interval.ms': { type: 'long', default: LONG_MAX },
  'log.flush.offset.checkpoint.interval.ms': { type: 'int', default: 60000, validate: atLeast(0) },
  'log.flush.policy': { type: 'string', default: 'default', validate: oneOf('default', 'always') },
  'log.cleanup.policy': { type: 'list', default: ['delete'], validate: cleanupPolicyError('log.cleanup.policy') },
  'log.cleaner.enable': { type: 'boolean', default: true },
  'log.cleaner.delete.retention.ms': { type: 'long', default: 86400000 },
  'log.cleaner.min.compaction.lag.ms': { type: 'long', default: 0 },
  'log.cleaner.max.compaction.lag.ms': { type: 'long', default: LONG_MAX, validate: atLeast(1) },
  'log.cleaner.min.cleanable.ratio': { type: 'double', default: 0.5 },
  'log.cleaner.threads': { type: 'int', default: 1, validate: atLeast(0) },
  'log.cleaner.dedupe.buffer.size': { type: 'long', default: 134217728 },
  'log.cleaner.io.buffer.size': { type: 'int', default: 524288, validate: atLeast(0) },
  'log.cleaner.io.buffer.load.factor': { type: 'double', default: 0.9 },
  'log.cleaner.io.max.bytes.per.second': { type: 'double', default: Number.MAX_VALUE },
  'log.cleaner.backoff.ms': { type: 'long', default: 15000, validate: atLeast(0) },
  'log.segment.delete.delay.ms': { type: 'long', default: 60000 },
  'log.message.timestamp.type': { type: 'string', default: 'CreateTime', validate: oneOf(...TIMESTAMP_TYPES) },
  'log.message.timestamp.difference.max.ms': { type: 'long', default: LONG_MAX },
  'log.message.timestamp.before.max.ms': { type: 'long', default: LONG_MAX },
  'log.message.timestamp.after.max.ms': { type: 'long', default: LONG_MAX },
  'log.message.format.version': { type: 'string', default: '3.0-IV1' },
  'log.message.downconversion.enable': { type: 'boolean', default: true },
  'compression.type': { type: 'string', default: 'producer', validate: oneOf(...COMPRESSION) },
  'compression.gzip.level': { type: 'int', default: -1 },
  'compression.lz4.level': { type: 'int', default: 9 },
  'compression.zstd.level': { type: 'int', default: 3 },
  'min.insync.replicas': { type: 'int', default: 1, validate: atLeast(1) },
  'unclean.leader.election.enable': { type: 'boolean', default: false },
  'replica.lag.time.max.ms': { type: 'long', default: 30000 },
  // KIP-392: null (leader only) or the rack-aware selector (Kafka's class name, or the alias rack-aware)
  'replica.selector.class': { type: 'string', default: null, validate: (v) => replicaSelectorError(v) },
  'replica.high.watermark.checkpoint.interval.ms': { type: 'long', default: 5000, validate: atLeast(1) },
  // clusters: the controller hands leadership back to preferred replicas when a broker leads too few of its own
  'auto.leader.rebalance.enable': { type: 'boolean', default: true },
  'leader.imbalance.check.interval.seconds': { type: 'long', default: 300, validate: atLeast(1) },
  'leader.imbalance.per.broker.percentage': { type: 'int', default: 10, validate: atLeast(0) },
  'group.min.session.timeout.ms': { type: 'int', default: 6000 },
  'group.max.session.timeout.ms': { type: 'int', default: 1800000 },
  'group.max.size': { type: 'int', default: 2147483647, validate: atLeast(1) },
  'group.consumer.heartbeat.interval.ms': { type: 'int', default: 5000, validate: atLeast(1) },
  'group.consumer.session.timeout.ms': { type: 'int', default: 45000, validate: atLeast(1) },
  'group.consumer.max.size': { type: 'int', default: 2147483647, validate: atLeast(1) },
  // Online migration of non-empty groups between the classic and the consumer protocol (Kafka 3.8+ default).
  'group.consumer.migration.policy': {
    type: 'string',
    default: 'bidirectional',
    validate: oneOfIgnoringCase('disabled', 'upgrade', 'downgrade', 'bidirectional'),
  },
  // KIP-932 share groups (Kafka 4.2's defaults and bounds)
  'group.share.session.timeout.ms': { type: 'int', default: 45000, validate: atLeast(1) },
  'group.share.min.session.timeout.ms': { type: 'int', default: 45000, validate: atLeast(1) },
  'group.share.max.session.timeout.ms': { type: 'int', default: 60000, validate: atLeast(1) },
  'group.share.heartbeat.interval.ms': { type: 'int', default: 5000, validate: atLeast(1) },
  'group.share.min.heartbeat.interval.ms': { type: 'int', default: 5000, validate: atLeast(1) },
  'group.share.max.heartbeat.interval.ms': { type: 'int', default: 15000, validate: atLeast(1) },
  'group.share.record.lock.duration.ms': { type: 'int', default: 30000, validate: atLeast(1000) },
  'group.share.min.record.lock.duration.ms': { type: 'int', default: 15000, validate: atLeast(1000) },
  'group.share.max.record.lock.duration.ms': { type: 'int', default: 60000, validate: atLeast(1000) },
  'group.share.delivery.count.limit': { type: 'int', default: 5, validate: atLeast(2) },
  'group.share.partition.max.record.locks': { type: 'int', default: 2000, validate: atLeast(100) },
  'group.share.max.size': { type: 'int', default: 200, validate: atLeast(1) },
  'group.share.max.share.sessions': { type: 'int', default: 2000, validate: atLeast(1) },
  'share.coordinator.state.topic.num.partitions': { type: 'int', default: 50, validate: atLeast(1) },
  'offsets.retention.minutes': { type: 'int', default: 10080, validate: atLeast(1) },
  'offsets.retention.check.interval.ms': { type: 'long', default: 600000 },
  'offset.metadata.max.bytes': { type: 'int', default: 4096 },
  'fetch.purgatory.purge.interval.requests': { type: 'int', default: 1000, inert: true },
  'producer.purgatory.purge.interval.requests': { type: 'int', default: 1000, inert: true },
  'zookeeper.connect': { type: 'string', default: null, inert: true },
  // gregor's own keys.
  'broker.version.emulate': { type: 'string', default: null },
  'validation.deep': { type: 'boolean', default: false },
  'num.append.workers': { type: 'int', default: -1, validate: atLeast(-1) },
  // How long one request may take to arrive whole, from its first byte (slow-loris clients); 0: no limit.
  'gregor.request.read.timeout.ms': { type: 'int', default: 30000, validate: atLeast(0) },
  'metadata.store': { type: 'string', default: 'local', validate: oneOf('local', 'etcd') },
  // metadata.store=etcd: the etcd client URLs (comma-separated), and how long a broker's registration
  // outlives its last keep-alive (Kafka's broker.session.timeout.ms, the etcd lease's TTL).
  'etcd.endpoints': { type: 'list', default: null },
  'broker.session.timeout.ms': { type: 'int', default: 9000, validate: atLeast(1000) },
  // The admin HTTP listener (metrics, health, request log, fault injection): host:port, 0 or host:0
  // for a free port, none to disable. Clients other than loopback ones are refused unless allowed.
  'admin.listener': { type: 'string', default: '127.0.0.1:9644', validate: (v) => adminListenerError(v) },
  'admin.listener.allow.remote': { type: 'boolean', default: false },
  // How many of the last requests GET /v1/requests keeps (0: none).
  'admin.requests.log.size': { type: 'int', default: 1000, validate: atLeast(0) },
  ...SSL_BROKER_CONFIG,
  ...SASL_BROKER_CONFIG,
  ...ACL_BROKER_CONFIG,
};

export function parseValue(key: string, def: ConfigDef, raw: string | ConfigValue): ConfigValue {
  if (raw === null) return null;
  if (typeof raw !== 'string') return raw;
  const s = raw.trim();
  switch (def.type) {
    case 'string':
      return s;
    case 'boolean':
      if (s.toLowerCase() === 'true') return true;
      if (s.toLowerCase() === 'false') return false;
      throw new ConfigError(`${key}=${raw}: expected true or false`);
    case 'int': {
      if (!/^-?\d+$/.test(s)) throw new ConfigError(`${key}=${raw}: expected an integer`);
      const n = Number(s);
      if (n > 2147483647 || n < -2147483648) throw new ConfigError(`${key}=${raw}: out of int range`);
      return n;
    }
    case 'long': {
      if (!/^-?\d+$/.test(s)) throw new ConfigError(`${key}=${raw}: expected an integer`);
      const n = BigInt(s);
      if (n > LONG_MAX || n < -LONG_MAX - 1n) throw new ConfigError(`${key}=${raw}: out of long range`);
      return Number.isSafeInteger(Number(n)) ? Number(n) : n;
    }
    case 'double': {
      const n = Number(s);
      if (s === '' || Number.isNaN(n)) throw new ConfigError(`${key}=${raw}: expected a number`);
      return n;
    }
    case 'list':
      return s === '' ? [] : s.split(',').map((x) => x.trim());
  }
}

function validated(key: string, def: ConfigDef, v: ConfigValue): ConfigValue {
  const msg = v === null ? undefined : def.validate?.(v);
  // a message already in Kafka's shape ("Invalid value x for configuration k: ...") is kept as it is
  if (msg !== undefined) throw new ConfigError(msg.startsWith('Invalid value ') ? msg : `${key}=${String(v)}: ${msg}`);
  return v;
}

export interface ConfigSources {
  file?: string;
  env?: NodeJS.ProcessEnv;
  overrides?: Record<string, string | ConfigValue>;
}

export class BrokerConfig {
  private readonly values = new Map<string, ConfigValue>();
  /** Keys set explicitly by a source (not defaults). */
  readonly explicit = new Set<string>();
  /**
   * Keys Kafka defines that gregor accepts without acting on them (KRaft controller, ZooKeeper, SSL/SASL,
   * quotas, tiered storage, ...), with the value given; DescribeConfigs reports them.
   */
  readonly inapplicable = new Map<string, string>();
  /** Dynamic broker configs (AlterConfigs on this broker's id, and on '' for every broker), as stored. */
  readonly dynamicBroker = new Map<string, string>();
  readonly dynamicDefault = new Map<string, string>();
  /** Parsed dynamic values of the keys gregor honours: per broker over cluster default; they win over static values. */
  private readonly dynamicValues = new Map<string, ConfigValue>();

  constructor(sources: ConfigSources = {}) {
    for (const [k, d] of Object.entries(BROKER_CONFIG)) this.values.set(k, d.default);
    if (sources.file !== undefined) {
      const props = parseProperties(readFileSync(sources.file, 'utf8'));
      for (const [k, v] of props) this.set(k, v);
    }
    for (const [name, value] of Object.entries(sources.env ?? {})) {
      if (!name.startsWith('KAFKA_') || ENV_IGNORED.has(name) || value === undefined) continue;
      this.set(envKeyToConfigKey(name), value);
    }
    for (const [k, v] of Object.entries(sources.overrides ?? {})) this.set(k, v);
    this.checkConsistency();
  }

  set(key: string, raw: string | ConfigValue): void {
    const def = BROKER_CONFIG[key];
    if (def !== undefined) {
      this.values.set(key, validated(key, def, parseValue(key, def, raw)));
      this.explicit.add(key);
      return;
    }
    if (TOPIC_CONFIG[key] !== undefined || KAFKA_TOPIC_KEYS.has(key))
      throw new ConfigError(`'${key}' is a topic config; the broker key is '${brokerKeyFor(key) ?? '(none)'}'`);
    if (kafkaBrokerKey(key) !== undefined) {
      const text = raw === null ? '' : Array.isArray(raw) ? raw.join(',') : String(raw);
      const bad = kafkaValueError(key, text);
      if (bad !== undefined) throw new ConfigError(bad);
      this.inapplicable.set(key, text);
      return;
    }
    const near = nearestKey(key, knownBrokerKeys());
    throw new ConfigError(`unknown config key '${key}'${near === undefined ? '' : `; did you mean '${near}'?`}`);
  }

  /** The listeners gregor binds: Kafka's `listeners` minus the KRaft controller ones (controller.listener.names). */
  get brokerListeners(): string[] {
    const controller = new Set(this.list('controller.listener.names').map((n) => n.toUpperCase()));
    return this.list('listeners').filter((l) => !controller.has(parseListener(l).name));
  }

  /** Keys set by a source that gregor accepts without acting on them (Kafka-only, or inert), for the start-up log line. */
  notApplying(): string[] {
    const inert = [...this.explicit].filter((k) => BROKER_CONFIG[k]?.inert === true);
    return [...inert, ...[...this.inapplicable.keys()].filter((k) => !this.honouredPerListener(k))].sort();
  }

  /** A listener-prefixed key whose base key gregor honours (listener.name.<l>.ssl.keystore.location, listener.name.<l>.plain.sasl.jaas.config). */
  private honouredPerListener(key: string): boolean {
    const base = listenerPrefixedBase(key);
    return (
      base !== undefined &&
      (SSL_BROKER_CONFIG[base] !== undefined || SASL_BROKER_CONFIG[base] !== undefined || SASL_PREFIXED_ONLY.has(base))
    );
  }

  /**
   * A key as set for one listener: `listener.name.<lowercase name>.<key>` (dynamic per broker, then
   * static) when given, else the broker-wide value.
   */
  listenerValue(listenerName: string, key: string): ConfigValue {
    const prefixed = `listener.name.${listenerName.toLowerCase()}.${key}`;
    const raw = this.dynamicBroker.get(prefixed) ?? this.inapplicable.get(prefixed);
    const def = BROKER_CONFIG[key];
    if (raw === undefined || def === undefined) return this.get(key);
    return validated(prefixed, def, parseValue(prefixed, def, raw));
  }

  /** The security protocol of a listener name (listener.security.protocol.map). */
  securityProtocol(listenerName: string): string {
    return securityProtocolOf(this.list('listener.security.protocol.map'), listenerName);
  }

  private checkConsistency(): void {
    const nodeId = this.int('node.id');
    const brokerId = this.int('broker.id');
    if (nodeId >= 0 && brokerId >= 0 && nodeId !== brokerId) throw new ConfigError(`node.id=${nodeId} and broker.id=${brokerId} disagree`);
    for (const l of this.list('listeners')) parseListener(l);
    if (this.list('listeners').length > 0 && this.brokerListeners.length === 0) {
      throw new ConfigError(
        `listeners=${this.list('listeners').join(',')} names only KRaft controller listeners (controller.listener.names): gregor serves clients on a broker listener; add one, e.g. PLAINTEXT://:9092`,
      );
    }
    for (const l of this.list('advertised.listeners')) parseListener(l);
    checkListenerProtocols(
      this.brokerListeners.map((l) => parseListener(l).name),
      this.list('listener.security.protocol.map'),
    );
  }

  get(key: string): ConfigValue {
    if (this.dynamicValues.has(key)) return this.dynamicValues.get(key) ?? null;
    if (!this.values.has(key)) return this.kafkaOnlyValue(key);
    return this.staticValue(key);
  }

  /**
   * A Kafka key gregor does not define (yet): dynamic, else static, else Kafka's default, typed by the
   * catalogue, so that code reading such a key (e.g. log.cleaner.threads) sees dynamic updates.
   */
  private kafkaOnlyValue(key: string): ConfigValue {
    const k = kafkaBrokerKey(key);
    if (k === undefined) throw new ConfigError(`unknown config key '${key}'`);
    const raw = this.dynamicBroker.get(key) ?? this.dynamicDefault.get(key) ?? this.inapplicable.get(key) ?? k.default;
    if (raw === null) return null;
    const type: ConfigType = k.type === 'short' ? 'int' : k.type === 'class' || k.type === 'password' ? 'string' : k.type;
    return parseValue(key, { type, default: null }, raw);
  }

  /** The value from defaults, the file, KAFKA_* variables and overrides, ignoring dynamic configs. */
  staticValue(key: string): ConfigValue {
    if (!this.values.has(key)) throw new ConfigError(`unknown config key '${key}'`);
    return this.values.get(key) ?? null;
  }

  /** Parses and validates one dynamic value of a key gregor honours (throws ConfigError); Kafka-only keys pass as they are. */
  static parseDynamic(key: string, raw: string): ConfigValue {
    const def = BROKER_CONFIG[key];
    if (def !== undefined) return validated(key, def, parseValue(key, def, raw));
    const bad = kafkaValueError(key, raw);
    if (bad !== undefined) throw new ConfigError(bad);
    return raw;
  }

  /** Replaces the dynamic broker configs (both levels) with the stored ones; readers see them at once. */
  setDynamic(perBroker: Record<string, string>, clusterDefault: Record<string, string>): void {
    const parsed = new Map<string, ConfigValue>();
    for (const [k, v] of [...Object.entries(clusterDefault), ...Object.entries(perBroker)]) parsed.set(k, BrokerConfig.parseDynamic(k, v));
    this.dynamicBroker.clear();
    this.dynamicDefault.clear();
    this.dynamicValues.clear();
    for (const [k, v] of Object.entries(perBroker)) this.dynamicBroker.set(k, v);
    for (const [k, v] of Object.entries(clusterDefault)) this.dynamicDefault.set(k, v);
    for (const [k, v] of parsed) if (BROKER_CONFIG[k] !== undefined) this.dynamicValues.set(k, v);
  }

  int(key: string): number {
    const v = this.get(key);
    return typeof v === 'number' ? v : Number(v ?? 0);
  }

  /** A long as a number, saturating at Number.MAX_SAFE_INTEGER (Long.MAX means "never"). */
  long(key: string): number | null {
    const v = this.get(key);
    if (v === null) return null;
    if (typeof v === 'bigint') return v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);
    return Number(v);
  }

  bool(key: string): boolean {
    return this.get(key) === true;
  }

  string(key: string): string | null {
    const v = this.get(key);
    return v === null ? null : String(v);
  }

  list(key: string): string[] {
    const v = this.get(key);
    return Array.isArray(v) ? v : [];
  }

  get nodeId(): number {
    const n = this.int('node.id');
    if (n >= 0) return n;
    const b = this.int('broker.id');
    return b >= 0 ? b : 0;
  }

  get logDirs(): string[] {
    const dirs = this.get('log.dirs');
    if (Array.isArray(dirs) && dirs.length > 0) return dirs;
    return [this.string('log.dir') ?? './data'];
  }

  /** log.retention.ms, else minutes, else hours (Kafka's precedence); -1 means forever. */
  get retentionMs(): number {
    const ms = this.long('log.retention.ms');
    if (ms !== null) return ms;
    const min = this.get('log.retention.minutes');
    if (typeof min === 'number') return min * 60000;
    return this.int('log.retention.hours') * 3600000;
  }

  get rollMs(): number {
    const ms = this.long('log.roll.ms');
    return ms !== null ? ms : this.int('log.roll.hours') * 3600000;
  }

  /** Topic-level default for `key` from the broker config. */
  topicDefault(key: string): ConfigValue {
    if (key === 'retention.ms') return this.retentionMs;
    if (key === 'segment.ms') return this.rollMs;
    if (key === 'flush.ms') return this.long('log.flush.interval.ms') ?? Number.MAX_SAFE_INTEGER;
    const t = TOPIC_CONFIG[key];
    if (t === undefined) throw new ConfigError(`unknown topic config '${key}'`);
    if (t.brokerKey !== undefined) return this.get(t.brokerKey);
    return t.def.default;
  }

  /** Every key with its effective value, for the start-up log line. */
  effective(): Record<string, ConfigValue> {
    const out: Record<string, ConfigValue> = {};
    for (const [k, v] of [...this.values.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
      // passwords are never logged (Kafka prints [hidden])
      out[k] = v !== null && KAFKA_BROKER_KEYS.get(k)?.type === 'password' ? '[hidden]' : typeof v === 'bigint' ? v.toString() : v;
    }
    return out;
  }
}

function brokerKeyFor(topicKey: string): string | undefined {
  return TOPIC_CONFIG[topicKey]?.brokerKey ?? KAFKA_TOPIC_KEYS.get(topicKey)?.brokerSynonyms[0];
}

/** Every broker key gregor knows: its own and Kafka's (for the nearest-key suggestion). */
function knownBrokerKeys(): string[] {
  return [...Object.keys(BROKER_CONFIG), ...KAFKA_BROKER_KEYS.keys()];
}

/** Validates and normalises a topic-level config value (CreateTopics, AlterConfigs). */
export function parseTopicConfig(key: string, raw: string | null): ConfigValue {
  const t = TOPIC_CONFIG[key];
  if (t === undefined) throw new ConfigError(`unknown topic config '${key}'`);
  return validated(key, t.def, parseValue(key, t.def, raw));
}
