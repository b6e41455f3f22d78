/**
 * The catalogue of Kafka's config keys (broker and topic), parsed from the hand-checked table in
 * kafka-key-table.ts: lookups, listener-prefixed keys (`listener.name.<l>.<key>`,
 * `listener.name.<l>.<mechanism>.sasl.*`), the topic key <- broker synonym chains in Kafka's order,
 * and the nearest known key for a misspelt one.
 */
import { KAFKA_BROKER_TABLE, type KafkaKey, type KafkaType, type UpdateMode } from './kafka-key-table.js';

export type { KafkaKey, KafkaType, UpdateMode };

const MODES: Record<string, UpdateMode> = { r: 'read-only', b: 'per-broker', c: 'cluster-wide' };
const LONG_MAX = '9223372036854775807';

function parseTable(text: string, since4: boolean): KafkaKey[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => {
      const [name = '', type = '', def = '', mode = ''] = line.split('|');
      const m = MODES[mode];
      if (m === undefined) throw new Error(`kafka-key-table: bad mode in ${line}`);
      return { name, type: type as KafkaType, default: def === 'null' ? null : def, mode: m, since4 };
    });
}

/** Every broker key Kafka 3.9 or 4.x defines, by name. */
export const KAFKA_BROKER_KEYS: ReadonlyMap<string, KafkaKey> = new Map(
  [...parseTable(KAFKA_BROKER_TABLE.v39, false), ...parseTable(KAFKA_BROKER_TABLE.v4x, true)].map((k) => [k.name, k]),
);

const REMOVED_IN_4: ReadonlySet<string> = new Set(KAFKA_BROKER_TABLE.removedIn4.split('\n').filter((l) => l.trim() !== ''));

/** The keys of `keys` that Kafka 4.0 removed (ZooKeeper mode's, and those its upgrade notes name), in order. */
export function removedInKafka4(keys: Iterable<string>): string[] {
  return [...keys].filter((k) => KAFKA_BROKER_KEYS.has(k) && (k.startsWith('zookeeper.') || REMOVED_IN_4.has(k)));
}

/** The start-up log line listing the keys set that Kafka defines but gregor does not act on (none: undefined). */
export function notApplyingLogLine(keys: string[]): { fields: { keys: string[]; removedInKafka4?: string[] }; msg: string } | undefined {
  if (keys.length === 0) return undefined;
  const removed = removedInKafka4(keys);
  const msg = 'config keys Kafka defines that do not apply to gregor: accepted, no effect';
  if (removed.length === 0) return { fields: { keys }, msg };
  return { fields: { keys, removedInKafka4: removed }, msg: `${msg}; removed in Kafka 4.0: ${removed.join(', ')}` };
}

export interface KafkaTopicKey {
  name: string;
  type: KafkaType;
  default: string | null;
  /** The broker keys a topic without an override inherits from, most specific first (Kafka's order). */
  brokerSynonyms: string[];
}

// name|type|default|broker synonyms (comma-separated, most specific first)
const TOPIC_TABLE = `
cleanup.policy|list|delete|log.cleanup.policy
compression.gzip.level|int|-1|compression.gzip.level
compression.lz4.level|int|9|compression.lz4.level
compression.type|string|producer|compression.type
compression.zstd.level|int|3|compression.zstd.level
delete.retention.ms|long|86400000|log.cleaner.delete.retention.ms
file.delete.delay.ms|long|60000|log.segment.delete.delay.ms
flush.messages|long|${LONG_MAX}|log.flush.interval.messages
flush.ms|long|${LONG_MAX}|log.flush.interval.ms,log.flush.scheduler.interval.ms
follower.replication.throttled.replicas|list||
index.interval.bytes|int|4096|log.index.interval.bytes
leader.replication.throttled.replicas|list||
local.retention.bytes|long|-2|log.local.retention.bytes
local.retention.ms|long|-2|log.local.retention.ms
max.compaction.lag.ms|long|${LONG_MAX}|log.cleaner.max.compaction.lag.ms
max.message.bytes|int|1048588|message.max.bytes
message.downconversion.enable|boolean|true|log.message.downconversion.enable
message.format.version|string|3.0-IV1|log.message.format.version
message.timestamp.after.max.ms|long|${LONG_MAX}|log.message.timestamp.after.max.ms
message.timestamp.before.max.ms|long|${LONG_MAX}|log.message.timestamp.before.max.ms
message.timestamp.difference.max.ms|long|${LONG_MAX}|log.message.timestamp.difference.max.ms
message.timestamp.type|string|CreateTime|log.message.timestamp.type
min.cleanable.dirty.ratio|double|0.5|log.cleaner.min.cleanable.ratio
min.compaction.lag.ms|long|0|log.cleaner.min.compaction.lag.ms
min.insync.replicas|int|1|min.insync.replicas
preallocate|boolean|false|log.preallocate
remote.log.copy.disable|boolean|false|
remote.log.delete.on.disable|boolean|false|
remote.storage.enable|boolean|false|
retention.bytes|long|-1|log.retention.bytes
retention.ms|long|604800000|log.retention.ms,log.retention.minutes,log.retention.hours
segment.bytes|int|1073741824|log.segment.bytes
segment.index.bytes|int|10485760|log.index.size.max.bytes
segment.jitter.ms|long|0|log.roll.jitter.ms,log.roll.jitter.hours
segment.ms|long|604800000|log.roll.ms,log.roll.hours
unclean.leader.election.enable|boolean|false|unclean.leader.election.enable
`;

/** Every topic key Kafka 3.9 defines, by name. */
export const KAFKA_TOPIC_KEYS: ReadonlyMap<string, KafkaTopicKey> = new Map(
  TOPIC_TABLE.split('\n')
    .filter((l) => l.trim() !== '')
    .map((line): [string, KafkaTopicKey] => {
      const [name = '', type = '', def = '', syn = ''] = line.split('|');
      return [name, { name, type: type as KafkaType, default: def, brokerSynonyms: syn === '' ? [] : syn.split(',') }];
    }),
);

/**
 * Broker keys that stand for one setting, most specific first: a topic's synonym chain minus the topic
 * key itself (log.retention.ms <- log.retention.minutes <- log.retention.hours, ...).
 */
export function brokerSynonymGroup(key: string): string[] {
  for (const t of KAFKA_TOPIC_KEYS.values()) if (t.brokerSynonyms.length > 1 && t.brokerSynonyms.includes(key)) return t.brokerSynonyms;
  return [key];
}

/** Keys Kafka accepts with a `listener.name.<listener>.` prefix. */
const LISTENER_PREFIXABLE =
  /^(ssl\.|sasl\.|max\.connections|max\.connection\.creation\.rate$|connections\.max\.reauth\.ms$|principal\.builder\.class$)/;
/** Keys Kafka accepts with a `listener.name.<listener>.<sasl mechanism>.` prefix. */
const MECHANISM_PREFIXABLE = /^(sasl\.jaas\.config|sasl\.login\.|sasl\.server\.callback\.handler\.class|connections\.max\.reauth\.ms)/;

/** The base key of a listener-prefixed key (`listener.name.internal.ssl.keystore.location` -> `ssl.keystore.location`). */
export function listenerPrefixedBase(key: string): string | undefined {
  const m = /^listener\.name\.([^.]+)\.(.+)$/.exec(key);
  if (m === null || m[2] === undefined) return undefined;
  const rest = m[2];
  if (KAFKA_BROKER_KEYS.has(rest) && LISTENER_PREFIXABLE.test(rest)) return rest;
  const mech = /^([a-z0-9-]+)\.(.+)$/.exec(rest);
  if (mech?.[2] !== undefined && KAFKA_BROKER_KEYS.has(mech[2]) && MECHANISM_PREFIXABLE.test(mech[2])) return mech[2];
  return undefined;
}

/** The catalogue entry for a broker key, listener-prefixed keys resolving to their base key (per-broker). */
export function kafkaBrokerKey(key: string): KafkaKey | undefined {
  const direct = KAFKA_BROKER_KEYS.get(key);
  if (direct !== undefined) return direct;
  const base = listenerPrefixedBase(key);
  const k = base === undefined ? undefined : KAFKA_BROKER_KEYS.get(base);
  return k === undefined ? undefined : { ...k, name: key, mode: 'per-broker' };
}

/** Kafka's type check of a value for a key gregor only accepts: the error (Kafka's wording), or undefined when it parses. */
export function kafkaValueError(key: string, raw: string): string | undefined {
  const k = kafkaBrokerKey(key);
  if (k === undefined) return undefined;
  const v = raw.trim();
  const ok = ((): boolean => {
    switch (k.type) {
      case 'int':
      case 'short':
      case 'long':
        return /^-?\d+$/.test(v);
      case 'double':
        return v !== '' && !Number.isNaN(Number(v));
      case 'boolean':
        return v.toLowerCase() === 'true' || v.toLowerCase() === 'false';
      default:
        return true;
    }
  })();
  return ok ? undefined : `Invalid value ${raw} for configuration ${key}: Not a number of type ${k.type.toUpperCase()}`;
}

/** Levenshtein distance (insertions, deletions, substitutions). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const sub = (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      cur.push(Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, sub));
    }
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

/** The known key nearest to `key`, when it is close enough to be a likely misspelling. */
export function nearestKey(key: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = editDistance(key, k);
    if (d < bestD || (d === bestD && best !== undefined && k < best)) {
      best = k;
      bestD = d;
    }
  }
  return best !== undefined && bestD <= Math.max(3, Math.floor(key.length / 3)) ? best : undefined;
}
