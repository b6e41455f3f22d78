/**
 * Topics declared up front (`gregor start --topic`, GREGOR_TOPICS, `BrokerOptions.topics`): they exist
 * before the broker says it is ready.
 *
 * One spec is `name[:partitions[:key=value,key=value...]]`. Topic names cannot hold ':' so the first
 * two colons split the parts; the configs are comma-separated `key=value` pairs, and a piece without
 * '=' continues the previous value, so a list value keeps its commas (`cleanup.policy=compact,delete`).
 * Partitions left out (`name`, `name::k=v`) take num.partitions. GREGOR_TOPICS holds several specs
 * separated by whitespace or ';' (never ',', which belongs to the configs).
 *
 * An existing topic is left as it is (as KAFKA_CREATE_TOPICS scripts do with `--if-not-exists`); a
 * different partition count or config is logged as a warning, never changed.
 */
import type { Logger } from 'pino';
import { ConfigError, parseTopicConfig, TOPIC_CONFIG } from './config.js';
import { invalidTopicName, type TopicRecord } from './metadata/local-store.js';
import { INTERNAL_TOPICS, type TopicManager } from './topics.js';

export interface TopicSpec {
  name: string;
  /** -1: the broker's num.partitions */
  partitions: number;
  configs: Record<string, string>;
}

export class TopicSpecError extends Error {
  readonly code = 'GREGOR_ERR_TOPIC_SPEC';
  constructor(message: string) {
    super(`GREGOR_ERR_TOPIC_SPEC: ${message}`);
    this.name = 'TopicSpecError';
  }
}

export const TOPIC_SPEC_SYNTAX = 'name[:partitions[:key=value,...]]';

/** Parses and validates one spec (name, partition count, config names and values). Throws TopicSpecError. */
export function parseTopicSpec(spec: string, source = '--topic'): TopicSpec {
  const bad = (why: string) => new TopicSpecError(`${source} '${spec}': ${why} (syntax: ${TOPIC_SPEC_SYNTAX})`);
  const first = spec.indexOf(':');
  const name = first < 0 ? spec : spec.slice(0, first);
  const rest = first < 0 ? '' : spec.slice(first + 1);
  const second = rest.indexOf(':');
  const partsText = second < 0 ? rest : rest.slice(0, second);
  const configText = second < 0 ? '' : rest.slice(second + 1);
  const nameError = invalidTopicName(name);
  if (nameError !== undefined) throw bad(nameError);
  if (INTERNAL_TOPICS.has(name)) throw bad(`${name} is an internal topic; the broker creates it`);
  let partitions = -1;
  if (partsText !== '') {
    if (!/^\d+$/.test(partsText) || Number(partsText) < 1 || Number(partsText) > 2147483647) {
      throw bad(`partitions must be a positive integer, got '${partsText}'`);
    }
    partitions = Number(partsText);
  }
  const configs: Record<string, string> = {};
  let last: string | undefined;
  for (const piece of configText === '' ? [] : configText.split(',')) {
    const eq = piece.indexOf('=');
    if (eq < 0) {
      if (last === undefined) {
        const hint = /^\d+$/.test(piece) ? '; the replication factor is always 1 on one node, leave it out' : '';
        throw bad(`expected key=value, got '${piece}'${hint}`);
      }
      configs[last] = `${configs[last] ?? ''},${piece}`;
      continue;
    }
    const key = piece.slice(0, eq).trim();
    if (TOPIC_CONFIG[key] === undefined) throw bad(`unknown topic config '${key}'`);
    if (key in configs) throw bad(`config '${key}' given twice`);
    configs[key] = piece.slice(eq + 1);
    last = key;
  }
  for (const [k, v] of Object.entries(configs)) {
    try {
      parseTopicConfig(k, v);
    } catch (e) {
      throw bad(e instanceof ConfigError ? e.message.replace(/^GREGOR_ERR_CONFIG: /, '') : String(e));
    }
  }
  return { name, partitions, configs };
}

/** Splits GREGOR_TOPICS (specs separated by whitespace or ';') and parses each spec. */
export function parseTopicSpecList(text: string, source = 'GREGOR_TOPICS'): TopicSpec[] {
  const specs = text.split(/[\s;]+/).filter((s) => s !== '');
  return specs.map((s) => {
    // A KAFKA_CREATE_TOPICS habit: "a:1:1,b:3:1" (topics separated by commas).
    if (/^[^:]+:\d*:\d+,[^=]+:/.test(s)) {
      throw new TopicSpecError(
        `${source} '${s}': separate topics with spaces or ';' (',' separates the configs of one topic; syntax: ${TOPIC_SPEC_SYNTAX})`,
      );
    }
    return parseTopicSpec(s, source);
  });
}

/** Merges spec lists; the same topic declared twice must be declared alike. Throws TopicSpecError. */
export function mergeTopicSpecs(...lists: TopicSpec[][]): TopicSpec[] {
  const byName = new Map<string, TopicSpec>();
  for (const s of lists.flat()) {
    const prev = byName.get(s.name);
    if (prev === undefined) byName.set(s.name, s);
    else if (JSON.stringify(prev) !== JSON.stringify(s)) throw new TopicSpecError(`topic '${s.name}' is declared twice, differently`);
  }
  return [...byName.values()];
}

/**
 * Creates the declared topics that do not exist yet (concurrently) and warns about existing ones that
 * differ. Errors from the creation (a config the broker refuses) propagate.
 */
export async function ensureTopics(
  topics: TopicManager,
  existing: (name: string) => TopicRecord | undefined,
  specs: readonly TopicSpec[],
  logger: Logger,
  defaultPartitions: number,
): Promise<void> {
  const creations: Promise<unknown>[] = [];
  for (const spec of specs) {
    const t = existing(spec.name);
    if (t === undefined) {
      creations.push(topics.create({ name: spec.name, numPartitions: spec.partitions, replicationFactor: -1, configs: spec.configs }));
      continue;
    }
    const wanted = spec.partitions === -1 ? defaultPartitions : spec.partitions;
    const differing = Object.keys(spec.configs).filter((k) => t.configs[k] !== spec.configs[k]);
    if (t.partitions !== wanted || differing.length > 0) {
      logger.warn(
        {
          topic: spec.name,
          declared: { partitions: wanted, configs: spec.configs },
          existing: { partitions: t.partitions, configs: Object.fromEntries(differing.map((k) => [k, t.configs[k] ?? null])) },
        },
        `declared topic ${spec.name} exists with ${t.partitions !== wanted ? `${t.partitions} partitions instead of ${wanted}` : `other values for ${differing.join(', ')}`}; left as it is`,
      );
    }
  }
  await Promise.all(creations);
}
