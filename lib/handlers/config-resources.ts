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
import { invalidTopicName, type TopicRecord } from '../metadata/local-store.js';
import type { BrokerServices } from '../services.js';

export const ConfigResourceType = { UNKNOWN: 0, ANY: 1, TOPIC: 2, GROUP: 3, BROKER: 4, BROKER_LOGGER: 8, CLIENT_METRICS: 16 } as const;

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

/** Broker keys that stand for one setting (the first wins when several are set). */
const BROKER_SYNONYM_GROUPS: string[][] = [
  ['log.retention.ms', 'log.retention.minutes', 'log.retention.hours'],
  ['log.roll.ms', 'log.roll.hours'],
  ['log.flush.interval.ms', 'log.flush.scheduler.interval.ms'],
];

function brokerSynonymKeys(key: string): string[] {
  return BROKER_SYNONYM_GROUPS.find((g) => g.includes(key)) ?? [key];
}

/** The main broker key behind a topic key, if any. */
function topicBrokerKey(topicKey: string): string | undefined {
  switch (topicKey) {
    case 'retention.ms':
      return 'log.retention.ms';
    case 'segment.ms':
      return 'log.roll.ms';
    case 'flush.ms':
      return 'log.flush.interval.ms';
    default:
      return TOPIC_CONFIG[topicKey]?.brokerKey;
  }
}

/**
 * Broker-level synonyms of `name`: explicitly set keys (STATIC_BROKER_CONFIG) before built-in defaults
 * (DEFAULT_CONFIG). As in Kafka, entries ahead of `name` itself are dropped, so a default of
 * log.retention.hours is not reported as a synonym of log.retention.ms.
 */
function brokerSynonyms(config: BrokerConfig, name: string): ConfigSynonym[] {
  const keys = brokerSynonymKeys(name);
  const out: ConfigSynonym[] = [];
  for (const k of keys) {
    const def = BROKER_CONFIG[k];
    if (def !== undefined && config.explicit.has(k))
      out.push({ name: k, value: configString(def, config.get(k)), source: ConfigSource.STATIC_BROKER_CONFIG });
  }
  for (const k of keys) {
    const def = BROKER_CONFIG[k];
    if (def !== undefined && def.default !== null)
      out.push({ name: k, value: configString(def, def.default), source: ConfigSource.DEFAULT_CONFIG });
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
  const brokerKey = topicBrokerKey(key);
  const synonyms = brokerKey === undefined ? [] : brokerSynonyms(config, brokerKey);
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
    configType: TYPE_IDS[t.def.type],
    synonyms,
  };
}

export function topicConfigEntries(config: BrokerConfig, t: Pick<TopicRecord, 'configs'>, keys: readonly string[] | null): ConfigEntry[] {
  const names = Object.keys(TOPIC_CONFIG).sort();
  return names.filter((k) => keys === null || keys.includes(k)).map((k) => topicConfigEntry(config, t.configs, k));
}

/**
 * Every broker key with its effective value. Reported read-only: gregor has no dynamic broker configs
 * (Kafka marks the dynamically updatable ones writable).
 */
export function brokerConfigEntries(config: BrokerConfig, keys: readonly string[] | null): ConfigEntry[] {
  const names = Object.keys(BROKER_CONFIG).sort();
  return names
    .filter((k) => keys === null || keys.includes(k))
    .map((k) => {
      const def = BROKER_CONFIG[k] as ConfigDef;
      const synonyms = brokerSynonyms(config, k);
      return {
        name: k,
        value: configString(def, config.get(k)),
        source: synonyms[0]?.source ?? ConfigSource.DEFAULT_CONFIG,
        readOnly: true,
        isSensitive: false,
        configType: TYPE_IDS[def.type],
        synonyms,
      };
    });
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

/** The message for dynamic broker config changes, which gregor does not support. */
export const BROKER_ALTER_UNSUPPORTED =
  'Dynamic broker configs are not supported by gregor: set broker configs in server.properties, KAFKA_* variables or --override and restart.';

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

/** Maps anything thrown while handling one resource to a Kafka error code and message. */
export function resourceFailure(e: unknown): { errorCode: number; errorMessage: string } {
  if (e instanceof ResourceError) return { errorCode: e.errorCode, errorMessage: e.message };
  if (e !== null && typeof e === 'object' && 'errorCode' in e && typeof e.errorCode === 'number') {
    return { errorCode: e.errorCode, errorMessage: e instanceof Error ? e.message : `error code ${e.errorCode}` };
  }
  throw e;
}

export interface AlterResourceResult {
  errorCode: number;
  errorMessage: string | null;
  resourceType: number;
  resourceName: string;
}

/**
 * The per-resource loop AlterConfigs and IncrementalAlterConfigs share: refuses duplicate resources,
 * computes a topic's new overrides with `next` and stores them; broker and other resources are refused.
 */
export async function alterConfigResources<R extends { resourceType: number; resourceName: string }>(
  s: BrokerServices,
  resources: readonly R[],
  validateOnly: boolean,
  next: (r: R, topic: TopicRecord) => Record<string, string | null>,
): Promise<AlterResourceResult[]> {
  const dups = duplicateResources(resources);
  const out: AlterResourceResult[] = [];
  for (const r of resources) {
    const base = { resourceType: r.resourceType, resourceName: r.resourceName };
    try {
      if (dups.has(resourceKey(r))) throw new ResourceError(ErrorCode.INVALID_REQUEST, 'Duplicate resource.');
      if (r.resourceType === ConfigResourceType.TOPIC) {
        const t = topicResource(s, r.resourceName);
        await replaceTopicConfigs(s, r.resourceName, next(r, t), validateOnly);
      } else if (r.resourceType === ConfigResourceType.BROKER) {
        checkBrokerResource(s, r.resourceName);
        throw new ResourceError(ErrorCode.INVALID_REQUEST, BROKER_ALTER_UNSUPPORTED);
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
