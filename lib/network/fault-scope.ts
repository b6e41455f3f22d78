/**
 * The topics and partitions a decoded request names, for the `topic` / `partition` filters of fault
 * rules (lib/network/faults.ts), and partition-scoped errors: an 'error' rule with a topic filter on
 * Produce or Fetch answers only the partitions it names with its error code, Kafka-style (a
 * NOT_LEADER_OR_FOLLOWER is per partition there), while the request's other partitions are served
 * normally; 'before', the handler runs on the request without those partitions (so a Produce
 * appends only the others). Every other API gets the whole-request error response.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';

/** Topic id → name (Fetch v13+ and Metadata v10+ may name topics by id only). */
export type TopicResolver = (topicId: string) => string | undefined;

/** A topic a request names, with the partitions it names (null: the topic only, e.g. Metadata). */
interface Named {
  topic: string;
  partitions: readonly number[] | null;
}

type Obj = Record<string, unknown>;
const arr = (v: unknown): Obj[] => (Array.isArray(v) ? (v as Obj[]) : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const nums = (v: unknown): number[] => (Array.isArray(v) ? (v as number[]) : []);
const TOPIC_RESOURCE = 2;

/** `name` (or `topic`) of a topic entry, resolving a topic id when the name is absent or empty. */
function topicName(t: Obj, key: 'name' | 'topic', resolve: TopicResolver | undefined): string | undefined {
  const n = str(t[key]);
  if (n !== undefined && n !== '') return n;
  const id = str(t['topicId']);
  return id === undefined || resolve === undefined ? undefined : resolve(id);
}

function each(
  list: unknown,
  key: 'name' | 'topic',
  parts: ((t: Obj) => number[]) | null,
  resolve: TopicResolver | undefined,
  out: Named[],
): void {
  for (const t of arr(list)) {
    const topic = topicName(t, key, resolve);
    if (topic !== undefined) out.push({ topic, partitions: parts === null ? null : parts(t) });
  }
}

const byIndex = (field: string, index: string) => (t: Obj) => arr(t[field]).map((p) => p[index] as number);

/** Per API: the topics (and partitions) its request names. */
const EXTRACTORS: ReadonlyMap<number, (req: Obj, resolve: TopicResolver | undefined, out: Named[]) => void> = new Map([
  [ApiKey.Produce, (r, res, out) => each(r['topicData'], 'name', byIndex('partitionData', 'index'), res, out)],
  [ApiKey.Fetch, (r, res, out) => each(r['topics'], 'topic', byIndex('partitions', 'partition'), res, out)],
  [ApiKey.ListOffsets, (r, res, out) => each(r['topics'], 'name', byIndex('partitions', 'partitionIndex'), res, out)],
  [ApiKey.Metadata, (r, res, out) => each(r['topics'], 'name', null, res, out)],
  [ApiKey.OffsetCommit, (r, res, out) => each(r['topics'], 'name', byIndex('partitions', 'partitionIndex'), res, out)],
  [
    ApiKey.OffsetFetch,
    (r, res, out) => {
      each(r['topics'], 'name', (t) => nums(t['partitionIndexes']), res, out);
      for (const g of arr(r['groups'])) each(g['topics'], 'name', (t) => nums(t['partitionIndexes']), res, out);
    },
  ],
  [ApiKey.CreateTopics, (r, res, out) => each(r['topics'], 'name', null, res, out)],
  [
    ApiKey.DeleteTopics,
    (r, res, out) => {
      for (const n of Array.isArray(r['topicNames']) ? (r['topicNames'] as unknown[]) : [])
        if (typeof n === 'string') out.push({ topic: n, partitions: null });
      each(r['topics'], 'name', null, res, out);
    },
  ],
  [ApiKey.DeleteRecords, (r, res, out) => each(r['topics'], 'name', byIndex('partitions', 'partitionIndex'), res, out)],
  [ApiKey.OffsetForLeaderEpoch, (r, res, out) => each(r['topics'], 'topic', byIndex('partitions', 'partition'), res, out)],
  [
    ApiKey.AddPartitionsToTxn,
    (r, res, out) => {
      each(r['v3AndBelowTopics'], 'name', (t) => nums(t['partitions']), res, out);
      for (const x of arr(r['transactions'])) each(x['topics'], 'name', (t) => nums(t['partitions']), res, out);
    },
  ],
  [ApiKey.TxnOffsetCommit, (r, res, out) => each(r['topics'], 'name', byIndex('partitions', 'partitionIndex'), res, out)],
  [ApiKey.CreatePartitions, (r, res, out) => each(r['topics'], 'name', null, res, out)],
  [ApiKey.OffsetDelete, (r, res, out) => each(r['topics'], 'name', byIndex('partitions', 'partitionIndex'), res, out)],
  [ApiKey.DescribeProducers, (r, res, out) => each(r['topics'], 'name', (t) => nums(t['partitionIndexes']), res, out)],
  ...[ApiKey.DescribeConfigs, ApiKey.AlterConfigs, ApiKey.IncrementalAlterConfigs].map(
    (k) =>
      [
        k,
        (r: Obj, _res: TopicResolver | undefined, out: Named[]) => {
          for (const x of arr(r['resources']))
            if (x['resourceType'] === TOPIC_RESOURCE && typeof x['resourceName'] === 'string')
              out.push({ topic: x['resourceName'], partitions: null });
        },
      ] as const,
  ),
]);

/** The APIs whose requests name topics: a topic filter on any other API could never match. */
export const TOPIC_APIS: ReadonlySet<number> = new Set(EXTRACTORS.keys());

/** The APIs whose 'error' rules with a topic filter answer only the partitions named (see the file comment). */
export const SCOPED_ERROR_APIS: ReadonlySet<number> = new Set([ApiKey.Produce, ApiKey.Fetch]);

/** The topics (and partitions) a decoded request of `apiKey` names; empty for APIs that name none. */
export function namedTopics(apiKey: number, req: unknown, resolve?: TopicResolver): Named[] {
  const ex = EXTRACTORS.get(apiKey);
  const out: Named[] = [];
  if (ex !== undefined && typeof req === 'object' && req !== null) ex(req as Obj, resolve, out);
  return out;
}

/**
 * Whether the request names `topic`, and when `partition` is given, that partition of it (a request
 * that names the topic only, as Metadata does, does not match a partition filter).
 */
export function namesTopicPartition(
  apiKey: number,
  req: unknown,
  topic: string,
  partition: number | undefined,
  resolve?: TopicResolver,
): boolean {
  for (const n of namedTopics(apiKey, req, resolve)) {
    if (n.topic !== topic) continue;
    if (partition === undefined) return true;
    if (n.partitions !== null && n.partitions.includes(partition)) return true;
  }
  return false;
}

export type PartitionHit = (topic: string, partition: number) => boolean;

/** Where the topic list and its partitions sit in a request / response of a scoped API. */
const LAYOUT = {
  [ApiKey.Produce]: {
    reqTopics: 'topicData',
    reqName: 'name',
    reqParts: 'partitionData',
    reqIndex: 'index',
    resTopics: 'responses',
    resName: 'name',
    resParts: 'partitionResponses',
    resIndex: 'index',
  },
  [ApiKey.Fetch]: {
    reqTopics: 'topics',
    reqName: 'topic',
    reqParts: 'partitions',
    reqIndex: 'partition',
    resTopics: 'responses',
    resName: 'topic',
    resParts: 'partitions',
    resIndex: 'partitionIndex',
  },
} as const;

function layout(apiKey: number) {
  const l = apiKey === ApiKey.Produce ? LAYOUT[ApiKey.Produce] : apiKey === ApiKey.Fetch ? LAYOUT[ApiKey.Fetch] : undefined;
  if (l === undefined) throw new Error(`no partition-scoped errors for API ${apiKey}`);
  return l;
}

/**
 * The request of a scoped API without the partitions `hit` selects (topics left without partitions
 * are dropped), or null when nothing is left.
 */
export function withoutPartitions(apiKey: number, req: unknown, hit: PartitionHit, resolve?: TopicResolver): unknown {
  const l = layout(apiKey);
  const r = req as Obj;
  let left = 0;
  const topics = arr(r[l.reqTopics])
    .map((t) => {
      const name = topicName(t, l.reqName, resolve);
      const parts = arr(t[l.reqParts]).filter((p) => name === undefined || !hit(name, p[l.reqIndex] as number));
      left += parts.length;
      return { ...t, [l.reqParts]: parts };
    })
    .filter((t) => (t[l.reqParts] as unknown[]).length > 0);
  return left === 0 ? null : { ...r, [l.reqTopics]: topics };
}

/**
 * The response to `req` where the partitions `hit` selects carry the entries of `errorBody` (the
 * handler's errorResponse to the whole request) and every other partition its entry in `realBody`
 * (the handler's answer to the whole request, or to withoutPartitions of it), in request order.
 * A Fetch whose real answer failed as a whole (top-level error) is returned as it is.
 */
export function mergeScopedError(
  apiKey: number,
  req: unknown,
  errorBody: unknown,
  realBody: unknown,
  hit: PartitionHit,
  resolve?: TopicResolver,
): unknown {
  const l = layout(apiKey);
  const real = realBody as Obj;
  if (apiKey === ApiKey.Fetch && typeof real['errorCode'] === 'number' && real['errorCode'] !== 0) return realBody;
  const key = (t: Obj, nameField: string, p: number) =>
    `${topicName(t, nameField as 'name', resolve) ?? `\0${str(t['topicId']) ?? ''}`}\0${p}`;
  const index = (body: Obj) => {
    const m = new Map<string, { topic: Obj; part: Obj }>();
    for (const t of arr(body[l.resTopics]))
      for (const p of arr(t[l.resParts])) m.set(key(t, l.resName, p[l.resIndex] as number), { topic: t, part: p });
    return m;
  };
  const errs = index(errorBody as Obj);
  const reals = index(real);
  const topics: Obj[] = [];
  for (const t of arr((req as Obj)[l.reqTopics])) {
    const name = topicName(t, l.reqName, resolve);
    // the topic's own fields from the real answer when it has any of its partitions (names resolved there)
    let realTopic: Obj | undefined;
    let errTopic: Obj | undefined;
    const parts: Obj[] = [];
    for (const p of arr(t[l.reqParts])) {
      const i = p[l.reqIndex] as number;
      const k = key(t, l.reqName, i);
      const injected = name !== undefined && hit(name, i);
      const from = injected ? errs.get(k) : reals.get(k);
      if (from === undefined) continue;
      if (injected) errTopic ??= from.topic;
      else realTopic ??= from.topic;
      parts.push(from.part);
    }
    const topicEntry = realTopic ?? errTopic;
    if (topicEntry !== undefined) topics.push({ ...topicEntry, [l.resParts]: parts });
  }
  return { ...real, [l.resTopics]: topics };
}
