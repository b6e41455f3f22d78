/**
 * Shared pieces of the config APIs (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, CreateTopics
 * v5+): resource types, config sources and types as Kafka numbers them, the effective value of every
 * topic and broker key with its synonyms, and the resolution of a resource to a topic or this broker.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import {
  BROKER_CONFIG,
  type BrokerConfig,
  type ConfigDef,
  type ConfigType as DefType,
  type ConfigValue,
  parseTopicConfig,
  TOPIC_CONFIG,
} from '../config.js';
import { configDoc } from '../config/docs.js';
import { DynamicConfigError } from '../config/dynamic-configs.js';
import { brokerSynonymGroup, KAFKA_BROKER_KEYS, KAFKA_TOPIC_KEYS, type KafkaType, kafkaBrokerKey } from '../config/kafka-keys.js';
import { checkGroupResource, validateGroupConfigs } from '../group/group-configs.js';
import { invalidTopicName, type TopicRecord } from '../metadata/local-store.js';
import type { BrokerServices } from '../services.js';

export const ConfigResourceType = { UNKNOWN: 0, ANY: 1, TOPIC: 2, BROKER: 4, BROKER_LOGGER: 8, CLIENT_METRICS: 16, GROUP: 32 } as const;

export const ConfigSource = {
  UNKNOWN: 0,
  DYNAMIC_TOPIC_CONFIG: 1,
  DYNAMIC_BROKER_CONFIG: 2,
  DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
  STATIC_BROKER_CONFIG: 4,
  DEFAULT_CONFIG: 5,
  DYNAMIC_BROKER_LOGGER_CONFIG: 6,
} as const;

/** DescribeConfigs v3+ config types. */
export const ConfigType = {
  UNKNOWN: 0,
  BOOLEAN: 1,
  STRING: 2,
  INT: 3,
  SHORT: 4,
  LONG: 5,
  DOUBLE: 6,
  LIST: 7,
  CLASS: 8,
  PASSWORD: 9,
} as const;

const KAFKA_TYPE_IDS: Record<KafkaType, number> = {
  boolean: ConfigType.BOOLEAN,
  string: ConfigType.STRING,
  int: ConfigType.INT,
  short: ConfigType.SHORT,
  long: ConfigType.LONG,
  double: ConfigType.DOUBLE,
  list: ConfigType.LIST,
  class: ConfigType.CLASS,
  password: ConfigType.PASSWORD,
};

const TYPE_IDS: Record<DefType, number> = {
  boolean: ConfigType.BOOLEAN,
  string: ConfigType.STRING,
  int: ConfigType.INT,
  long: ConfigType.LONG,
  double: ConfigType.DOUBLE,
  list: ConfigType.LIST,
};

export interface ConfigSynonym {
  name: string;
  value: string | null;
  source: number;
}

export interface ConfigEntry {
  name: string;
  value: string | null;
  source: number;
  readOnly: boolean;
  isSensitive: boolean;
  configType: number;
  /** Every synonym, most specific first (the first one decides `source`). */
  synonyms: ConfigSynonym[];
}

/** An error for one resource: Kafka code plus message. */
export class ResourceError extends Error {
  constructor(
    readonly errorCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** Formats a typed value the way Kafka prints configs (lists comma-joined, doubles with a fraction). */
export function configString(def: ConfigDef, v: ConfigValue): string | null {
  if (v === null) return null;
  if (Array.isArray(v)) return v.join(',');
  if (def.type === 'double' && typeof v === 'number' && Number.isInteger(v)) return `${v}.0`;
  return String(v);
}

/** Kafka's DescribeConfigs type of a key: the catalogue's when Kafka defines it, else from gregor's own def. */
function typeId(name: string, def: ConfigDef | undefined): number {
  const kk = kafkaBrokerKey(name)?.type ?? KAFKA_TOPIC_KEYS.get(name)?.type;
  if (kk !== undefined) return KAFKA_TYPE_IDS[kk];
  return def === undefined ? ConfigType.UNKNOWN : TYPE_IDS[def.type];
}

/** The value a broker key has at one source tier, as Kafka prints it (undefined: not set there). */
function tierValue(config: BrokerConfig, key: string, tier: number): string | null | undefined {
  const def = BROKER_CONFIG[key];
  switch (tier) {
    case ConfigSource.DYNAMIC_BROKER_CONFIG:
      return config.dynamicBroker.get(key);
    case ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG:
      return config.dynamicDefault.get(key);
    case ConfigSource.STATIC_BROKER_CONFIG:
      if (def !== undefined) return config.explicit.has(key) ? configString(def, config.staticValue(key)) : undefined;
      return config.inapplicable.get(key);
    default: {
      if (def !== undefined) return def.default === null ? undefined : configString(def, def.default);
      const d = kafkaBrokerKey(key)?.default;
      return d === null ? undefined : d;
    }
  }
}

const TIERS = [
  ConfigSource.DYNAMIC_BROKER_CONFIG,
  ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
  ConfigSource.STATIC_BROKER_CONFIG,
  ConfigSource.DEFAULT_CONFIG,
];

/**
 * Kafka's synonyms of broker key `name`: each source tier (dynamic per broker, dynamic cluster default,
 * static, default) in turn, each through the keys that stand for the same setting, most specific first;
 * as in Kafka, entries ahead of `name` itself are dropped (a default of log.retention.hours is not a
 * synonym of log.retention.ms set statically... but log.retention.hours is one of log.retention.ms).
 */
function brokerSynonyms(config: BrokerConfig, name: string, keys = brokerSynonymGroup(name)): ConfigSynonym[] {
  const sensitive = kafkaBrokerKey(name)?.type === 'password';
  const out: ConfigSynonym[] = [];
  for (const tier of TIERS) {
    for (const k of keys) {
      const v = tierValue(config, k, tier);
      if (v !== undefined) out.push({ name: k, value: sensitive ? null : v, source: tier });
    }
  }
  const first = out.findIndex((s) => s.name === name);
  return first < 0 ? [] : out.slice(first);
}

/** The broker-provided value of a topic key (what a topic without an override gets). */
function topicDefaultValue(config: BrokerConfig, key: string): ConfigValue {
  if (key === 'flush.ms') return config.get('log.flush.interval.ms') ?? config.get('log.flush.scheduler.interval.ms');
  return config.topicDefault(key);
}

/** One topic key as DescribeConfigs/CreateTopics report it, given the topic's overrides. */
export function topicConfigEntry(config: BrokerConfig, overrides: Record<string, string>, key: string): ConfigEntry {
  const t = TOPIC_CONFIG[key];
  if (t === undefined) throw new Error(`unknown topic config ${key}`);
  const chain = KAFKA_TOPIC_KEYS.get(key)?.brokerSynonyms ?? (t.brokerKey === undefined ? [] : [t.brokerKey]);
  const synonyms = chain[0] === undefined ? [] : brokerSynonyms(config, chain[0], chain);
  const override = overrides[key];
  let value: string | null;
  if (override !== undefined) {
    value = configString(t.def, parseTopicConfig(key, override));
    synonyms.unshift({ name: key, value, source: ConfigSource.DYNAMIC_TOPIC_CONFIG });
  } else {
    value = configString(t.def, topicDefaultValue(config, key));
  }
  return {
    name: key,
    value,
    source: synonyms[0]?.source ?? ConfigSource.DEFAULT_CONFIG,
    readOnly: false,
    isSensitive: false,
    configType: typeId(key, t.def),
    synonyms,
  };
}

export function topicConfigEntries(config: BrokerConfig, t: Pick<TopicRecord, 'configs'>, keys: readonly string[] | null): ConfigEntry[] {
  const names = Object.keys(TOPIC_CONFIG).sort();
  return names.filter((k) => keys === null || keys.includes(k)).map((k) => topicConfigEntry(config, t.configs, k));
}

/** One broker key as DescribeConfigs reports it: read-only unless Kafka updates it dynamically; passwords hidden. */
export function brokerConfigEntry(config: BrokerConfig, name: string): ConfigEntry {
  const def = BROKER_CONFIG[name];
  const kk = kafkaBrokerKey(name);
  const synonyms = brokerSynonyms(config, name);
  const sensitive = kk?.type === 'password';
  const value = def !== undefined ? configString(def, config.get(name)) : (synonyms[0]?.value ?? kk?.default ?? null);
  return {
    name,
    value: sensitive ? null : value,
    source: synonyms[0]?.source ?? ConfigSource.DEFAULT_CONFIG,
    readOnly: kk === undefined ? true : kk.mode === 'read-only',
    isSensitive: sensitive,
    configType: typeId(name, def),
    synonyms,
  };
}

/**
 * Every broker key Kafka 3.9 lists (the catalogue) plus gregor's own and any Kafka key set statically
 * (listener-prefixed ones too), with its effective value.
 */
export function brokerConfigEntries(config: BrokerConfig, keys: readonly string[] | null): ConfigEntry[] {
  const names = new Set([
    ...Object.keys(BROKER_CONFIG),
    ...[...KAFKA_BROKER_KEYS.values()].filter((k) => !k.since4).map((k) => k.name),
    ...config.inapplicable.keys(),
    ...config.dynamicBroker.keys(),
    ...config.dynamicDefault.keys(),
  ]);
  return [...names]
    .sort()
    .filter((k) => keys === null || keys.includes(k))
    .map((k) => brokerConfigEntry(config, k));
}

/** The cluster-wide default resource (''): only the dynamic defaults, as Kafka answers it. */
export function defaultBrokerConfigEntries(config: BrokerConfig, keys: readonly string[] | null): ConfigEntry[] {
  return [...config.dynamicDefault.keys()]
    .sort()
    .filter((k) => keys === null || keys.includes(k))
    .map((k) => {
      const e = brokerConfigEntry(config, k);
      const synonyms = e.synonyms.filter((s) => s.source !== ConfigSource.DYNAMIC_BROKER_CONFIG);
      return {
        ...e,
        value: e.isSensitive ? null : (config.dynamicDefault.get(k) ?? null),
        source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        synonyms,
      };
    });
}

/** gregor's own one-line documentation of a key (Kafka's reference explains the keys gregor only accepts). */
export function configDocumentation(name: string, topic: boolean): string | null {
  const own = configDoc(name, topic);
  if (own !== undefined) return own;
  if (kafkaBrokerKey(name) !== undefined || KAFKA_TOPIC_KEYS.has(name))
    return 'A Kafka setting gregor accepts and reports without acting on it.';
  return null;
}

/** Resolves a TOPIC resource to its record, or throws the error Kafka gives. */
export function topicResource(s: BrokerServices, name: string): TopicRecord {
  const bad = invalidTopicName(name);
  if (bad !== undefined) throw new ResourceError(ErrorCode.INVALID_TOPIC_EXCEPTION, bad);
  const t = s.metadata.topic(name);
  if (t === undefined) throw new ResourceError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `The topic '${name}' does not exist.`);
  return t;
}

/** Checks a BROKER resource name: this node's id, or '' for the cluster-wide defaults. */
export function checkBrokerResource(s: BrokerServices, name: string): 'self' | 'default' {
  if (name === '') return 'default';
  if (!/^-?\d+$/.test(name)) throw new ResourceError(ErrorCode.INVALID_REQUEST, `Broker id must be an integer, but it is: ${name}`);
  if (Number(name) !== s.nodeId) {
    throw new ResourceError(ErrorCode.INVALID_REQUEST, `Unexpected broker id, expected ${s.nodeId} or empty string, but received ${name}`);
  }
  return 'self';
}

/** The error for resource types gregor cannot alter or describe. */
export function unsupportedResource(type: number): ResourceError {
  return new ResourceError(ErrorCode.INVALID_REQUEST, `Unsupported resource type: ${type}`);
}

/** Duplicate resources in one request all fail with INVALID_REQUEST; returns the duplicated keys. */
export function duplicateResources(resources: readonly { resourceType: number; resourceName: string }[]): Set<string> {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const r of resources) {
    const k = `${r.resourceType}:${r.resourceName}`;
    if (seen.has(k)) dup.add(k);
    seen.add(k);
  }
  return dup;
}

export const resourceKey = (r: { resourceType: number; resourceName: string }): string => `${r.resourceType}:${r.resourceName}`;

/** Applies a full set of topic overrides (replace semantics) through the topic manager, mapping errors. */
export async function replaceTopicConfigs(
  s: BrokerServices,
  name: string,
  configs: Record<string, string | null>,
  validateOnly: boolean,
): Promise<void> {
  const nulls = Object.entries(configs)
    .filter(([, v]) => v === null)
    .map(([k]) => k);
  if (nulls.length > 0) throw new ResourceError(ErrorCode.INVALID_CONFIG, `Null value not supported for topic configs: ${nulls.join(',')}`);
  await s.topics.alterConfigs(name, configs, { incremental: false, validateOnly });
}

/** Stores a BROKER resource's new dynamic configs (null values, and keys no longer named, go back to static). */
async function alterBrokerConfigs(
  s: BrokerServices,
  name: string,
  next: (current: Record<string, string>) => Record<string, string | null>,
  validateOnly: boolean,
): Promise<void> {
  const resource = checkBrokerResource(s, name) === 'default' ? '' : name;
  const set: Record<string, string> = {};
  for (const [k, v] of Object.entries(next(s.dynamicConfigs.current(resource)))) if (v !== null) set[k] = v;
  try {
    await s.dynamicConfigs.replace(resource, set, validateOnly);
  } catch (e) {
    if (e instanceof DynamicConfigError) throw new ResourceError(ErrorCode.INVALID_REQUEST, e.message);
    throw e;
  }
}

/** Maps anything thrown while handling one resource to a Kafka error code and message. */
export function resourceFailure(e: unknown): { errorCode: number; errorMessage: string } {
  if (e instanceof ResourceError) return { errorCode: e.errorCode, errorMessage: e.message };
  if (e !== null && typeof e === 'object' && 'errorCode' in e && typeof e.errorCode === 'number') {
    return { errorCode: e.errorCode, errorMessage: e instanceof Error ? e.message : `error code ${e.errorCode}` };
  }
  throw e;
}

/** The message of a config resource the principal may not describe or alter. */
export const AUTHORIZATION_FAILED = 'Authorization failed.';

export interface AlterResourceResult {
  errorCode: number;
  errorMessage: string | null;
  resourceType: number;
  resourceName: string;
}

export type ConfigTarget = 'topic' | 'broker' | 'group';

/**
 * The per-resource loop AlterConfigs and IncrementalAlterConfigs share: refuses duplicate resources,
 * computes the resource's new set with `next` (from its current one) and stores it: a topic's overrides,
 * this broker's (or the cluster-wide '') dynamic configs, or a group's configs; other resource types are refused.
 */
export async function alterConfigResources<R extends { resourceType: number; resourceName: string }>(
  s: BrokerServices,
  resources: readonly R[],
  validateOnly: boolean,
  next: (r: R, current: Record<string, string>, target: ConfigTarget) => Record<string, string | null>,
  /** the resource's authorization error (NONE: allowed) */
  denied: (r: R) => number = () => ErrorCode.NONE,
): Promise<AlterResourceResult[]> {
  const dups = duplicateResources(resources);
  const out: AlterResourceResult[] = [];
  for (const r of resources) {
    const base = { resourceType: r.resourceType, resourceName: r.resourceName };
    try {
      if (dups.has(resourceKey(r))) throw new ResourceError(ErrorCode.INVALID_REQUEST, 'Duplicate resource.');
      const authError = denied(r);
      if (authError !== ErrorCode.NONE) throw new ResourceError(authError, AUTHORIZATION_FAILED);
      if (r.resourceType === ConfigResourceType.TOPIC) {
        const t = topicResource(s, r.resourceName);
        await replaceTopicConfigs(s, r.resourceName, next(r, t.configs, 'topic'), validateOnly);
      } else if (r.resourceType === ConfigResourceType.BROKER) {
        await alterBrokerConfigs(s, r.resourceName, (current) => next(r, current, 'broker'), validateOnly);
      } else if (r.resourceType === ConfigResourceType.GROUP) {
        checkGroupResource(r.resourceName);
        const configs = validateGroupConfigs(s.config, next(r, s.metadata.groupConfigs(r.resourceName), 'group'));
        if (!validateOnly) await s.metadata.setGroupConfigs(r.resourceName, configs);
      } else {
        throw unsupportedResource(r.resourceType);
      }
      out.push({ errorCode: ErrorCode.NONE, errorMessage: null, ...base });
    } catch (e) {
      out.push({ ...resourceFailure(e), ...base });
    }
  }
  return out;
}
