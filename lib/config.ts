/**
 * Broker and topic configuration with Kafka's keys, types and defaults. Unknown or invalid keys fail fast
 * (GREGOR_ERR_CONFIG) with a message naming the key. Sources, lowest to highest precedence: defaults,
 * a server.properties file, KAFKA_* environment variables (Apache image mapping), --override k=v.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from './config/error.js';
import { checkListenerProtocols, parseListener, securityProtocolOf } from './config/listeners.js';
import { ENV_IGNORED, envKeyToConfigKey, parseProperties } from './config/properties.js';
import { jaasFileFromOpts } from './security/sasl/jaas-file.js';
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
import { BROKER_CONFIG } from './config/broker-keys.js';
import { TOPIC_CONFIG } from './config/topic-keys.js';
import { LONG_MAX } from './config/validators.js';

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

/** The broker-level keys: lib/config/broker-keys.ts. */
export { BROKER_CONFIG } from './config/broker-keys.js';
export { RACK_AWARE_REPLICA_SELECTORS } from './config/validators.js';
export { TOPIC_CONFIG } from './config/topic-keys.js';

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
  /** A static JAAS file: `-Djava.security.auth.login.config=<file>` in KAFKA_OPTS (lib/security/sasl/jaas-file.ts). */
  readonly jaasFile: string | undefined;

  constructor(sources: ConfigSources = {}) {
    this.jaasFile = jaasFileFromOpts(sources.env?.['KAFKA_OPTS']);
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
