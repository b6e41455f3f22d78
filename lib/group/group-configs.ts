/**
 * Group configs (ConfigResource type GROUP, Kafka 4.x's GroupConfig): per-group overrides of the
 * broker's `group.consumer.*` and `group.share.*` settings, kept in the metadata store (local file or
 * etcd) like topic overrides. DescribeConfigs reports every key (override or the broker's value);
 * IncrementalAlterConfigs / AlterConfigs change them, validated within the broker's min/max bounds
 * with Kafka's rules and messages. The share coordinator reads them when a member joins, a lock is
 * taken or a share partition is initialised (`share.auto.offset.reset`).
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { BrokerConfig } from '../config.js';
import { ConfigSource, ConfigType, type ConfigEntry, ResourceError } from '../handlers/config-resources.js';

/** DescribeConfigs' source of a group override (Kafka's GROUP_CONFIG). */
export const GROUP_CONFIG_SOURCE = 8;

interface GroupKey {
  type: 'int' | 'string';
  /** The broker key whose value a group without an override gets. */
  brokerKey: string;
  /** Broker keys bounding the value (min, max), as Kafka's GroupConfig.validateValues checks them. */
  bounds?: readonly [string, string];
  /** The lowest value Kafka's ConfigDef accepts. */
  atLeast?: number;
  doc: string;
}

export const GROUP_CONFIG: Readonly<Record<string, GroupKey>> = {
  'consumer.heartbeat.interval.ms': {
    type: 'int',
    brokerKey: 'group.consumer.heartbeat.interval.ms',
    bounds: ['group.consumer.min.heartbeat.interval.ms', 'group.consumer.max.heartbeat.interval.ms'],
    atLeast: 1,
    doc: 'Heartbeat interval of this consumer-protocol group.',
  },
  'consumer.session.timeout.ms': {
    type: 'int',
    brokerKey: 'group.consumer.session.timeout.ms',
    bounds: ['group.consumer.min.session.timeout.ms', 'group.consumer.max.session.timeout.ms'],
    atLeast: 1,
    doc: 'Session timeout of this consumer-protocol group.',
  },
  'share.auto.offset.reset': {
    type: 'string',
    brokerKey: '',
    doc: 'Where a share partition of this group starts: latest, earliest or by_duration:<ISO-8601 duration>.',
  },
  'share.heartbeat.interval.ms': {
    type: 'int',
    brokerKey: 'group.share.heartbeat.interval.ms',
    bounds: ['group.share.min.heartbeat.interval.ms', 'group.share.max.heartbeat.interval.ms'],
    atLeast: 1,
    doc: 'Heartbeat interval of this share group.',
  },
  'share.record.lock.duration.ms': {
    type: 'int',
    brokerKey: 'group.share.record.lock.duration.ms',
    bounds: ['group.share.min.record.lock.duration.ms', 'group.share.max.record.lock.duration.ms'],
    atLeast: 1000,
    doc: 'How long a member of this share group holds an acquired record.',
  },
  'share.session.timeout.ms': {
    type: 'int',
    brokerKey: 'group.share.session.timeout.ms',
    bounds: ['group.share.min.session.timeout.ms', 'group.share.max.session.timeout.ms'],
    atLeast: 1,
    doc: 'Session timeout of this share group.',
  },
};

export const SHARE_AUTO_OFFSET_RESET_DEFAULT = 'latest';

/** share.auto.offset.reset parsed: by_duration carries its duration in ms. */
export type ShareAutoOffsetReset = { kind: 'latest' } | { kind: 'earliest' } | { kind: 'by_duration'; durationMs: number };

/** An ISO-8601 duration as Java's Duration.parse reads it (PnDTnHnMn.nS, no negative parts); undefined when it is not one. */
export function parseIsoDuration(s: string): number | undefined {
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d{1,9})?)S)?)?$/i.exec(s);
  if (m === null || s.toUpperCase() === 'P' || /T$/i.test(s)) return undefined;
  const [, d, h, min, sec] = m;
  return (Number(d ?? 0) * 86400 + Number(h ?? 0) * 3600 + Number(min ?? 0) * 60 + Number(sec ?? 0)) * 1000;
}

/** Parses share.auto.offset.reset (case-insensitive strategy names); undefined when invalid. */
export function parseShareAutoOffsetReset(v: string): ShareAutoOffsetReset | undefined {
  const lower = v.toLowerCase();
  if (lower === 'latest' || lower === 'earliest') return { kind: lower };
  if (lower.startsWith('by_duration:')) {
    const durationMs = parseIsoDuration(v.slice('by_duration:'.length));
    return durationMs === undefined ? undefined : { kind: 'by_duration', durationMs };
  }
  return undefined;
}

/** The effective value of a group key: the group's override, or the broker's value. */
export function groupConfigValue(config: BrokerConfig, overrides: Record<string, string>, key: string): string {
  const o = overrides[key];
  if (o !== undefined) return o;
  if (key === 'share.auto.offset.reset') return SHARE_AUTO_OFFSET_RESET_DEFAULT;
  const k = GROUP_CONFIG[key];
  return k === undefined ? '' : String(config.int(k.brokerKey));
}

/** The effective int value of a group key. */
export function groupConfigInt(config: BrokerConfig, overrides: Record<string, string>, key: string): number {
  return Number(groupConfigValue(config, overrides, key));
}

/** The ResourceError Kafka gives for a GROUP resource it cannot take (the default resource ''). */
export function checkGroupResource(name: string): void {
  if (name === '') throw new ResourceError(ErrorCode.INVALID_REQUEST, 'Default group resources are not allowed.');
}

/** DescribeConfigs of a GROUP resource: every group key (or those asked for), sorted. */
export function groupConfigEntries(config: BrokerConfig, overrides: Record<string, string>, keys: readonly string[] | null): ConfigEntry[] {
  return Object.keys(GROUP_CONFIG)
    .sort()
    .filter((k) => keys === null || keys.includes(k))
    .map((name) => {
      const overridden = overrides[name] !== undefined;
      const value = groupConfigValue(config, overrides, name);
      const source = overridden ? GROUP_CONFIG_SOURCE : ConfigSource.DEFAULT_CONFIG;
      return {
        name,
        value,
        source,
        readOnly: false,
        isSensitive: false,
        configType: GROUP_CONFIG[name]?.type === 'int' ? ConfigType.INT : ConfigType.STRING,
        synonyms: overridden ? [{ name, value, source }] : [],
      };
    });
}

const invalid = (message: string): ResourceError => new ResourceError(ErrorCode.INVALID_CONFIG, message);

/**
 * Checks a group's full set of overrides as Kafka's GroupConfig.validate does: known names, values of
 * the key's type, each set value within the broker's min/max bounds, session timeouts above heartbeat
 * intervals (when either is set).
 * Returns the set with null values (deletions) dropped.
 */
export function validateGroupConfigs(config: BrokerConfig, next: Record<string, string | null>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(next)) {
    const k = GROUP_CONFIG[name];
    if (k === undefined) throw invalid(`Unknown group config name: ${name}`);
    if (v === null) continue;
    if (k.type === 'int') {
      const n = Number(v.trim());
      if (v.trim() === '' || !Number.isInteger(n) || n > 2147483647 || n < -2147483648)
        throw invalid(`Invalid value ${v} for configuration ${name}: Not a number of type INT`);
      if (k.atLeast !== undefined && n < k.atLeast)
        throw invalid(`Invalid value ${v} for configuration ${name}: Value must be at least ${k.atLeast}`);
      out[name] = String(n);
    } else {
      if (parseShareAutoOffsetReset(v.trim()) === undefined)
        throw invalid(`Invalid value ${v} for configuration ${name}: must be latest, earliest or by_duration:<ISO-8601 duration>`);
      out[name] = v.trim();
    }
  }
  // only what the group sets is checked: the broker's own values may lie outside its bounds (gregor does not refuse that)
  for (const [name, k] of Object.entries(GROUP_CONFIG)) {
    if (k.bounds === undefined || out[name] === undefined) continue;
    const v = groupConfigInt(config, out, name);
    if (v < config.int(k.bounds[0])) throw invalid(`${name} must be greater than or equal to ${k.bounds[0]}`);
    if (v > config.int(k.bounds[1])) throw invalid(`${name} must be less than or equal to ${k.bounds[1]}`);
  }
  for (const prefix of ['consumer', 'share']) {
    if (out[`${prefix}.session.timeout.ms`] === undefined && out[`${prefix}.heartbeat.interval.ms`] === undefined) continue;
    if (groupConfigInt(config, out, `${prefix}.session.timeout.ms`) <= groupConfigInt(config, out, `${prefix}.heartbeat.interval.ms`))
      throw invalid(`${prefix}.session.timeout.ms must be greater than ${prefix}.heartbeat.interval.ms`);
  }
  return out;
}

/** A group's share.auto.offset.reset, parsed (latest when unset). */
export function shareAutoOffsetReset(overrides: Record<string, string>): ShareAutoOffsetReset {
  return parseShareAutoOffsetReset(overrides['share.auto.offset.reset'] ?? SHARE_AUTO_OFFSET_RESET_DEFAULT) ?? { kind: 'latest' };
}
