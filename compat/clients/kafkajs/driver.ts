/**
 * kafkajs 2.2.4 (the root devDependency). Producer, admin and group consumer through the public API;
 * reads by partition go through kafkajs's own cluster/broker objects (its consumer always joins a
 * group), so they are still kafkajs's Fetch requests and decoder. The transactions read uses its real
 * consumer (a fresh group with readUncommitted: false).
 */
import { createRequire } from 'node:module';
import { type FlowMember, regexFlow } from '../../lib/group-flows.js';
import { sleep, withTimeout } from '../../lib/records.js';
import { type Client, type GroupObservation, NotSupportedError, type ReadRecord, type TestRecord } from '../../lib/types.js';

const require = createRequire(import.meta.url);
type Any = any;
type Kjs = typeof import('kafkajs');
const kjs = (): Kjs => require('kafkajs') as Kjs;

function kafka(bootstrap: string): Any {
  const { Kafka, logLevel } = kjs();
  return new Kafka({ brokers: bootstrap.split(','), clientId: 'gregor-compat-kafkajs', logLevel: logLevel.NOTHING, retry: { retries: 3 } });
}

const CODEC: Record<string, number> = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 };

function messages(records: TestRecord[]): Any[] {
  return records.map((r) => ({
    partition: r.partition,
    key: r.key,
    value: r.value,
    headers: Object.fromEntries(r.headers),
    timestamp: String(r.timestamp),
  }));
}

function toRead(partition: number, m: Any): ReadRecord {
  const headers: [string, string][] = [];
  for (const [k, v] of Object.entries(m.headers ?? {})) for (const x of Array.isArray(v) ? v : [v]) headers.push([k, String(x)]);
  return {
    partition,
    offset: Number(m.offset),
    key: m.key === null ? null : String(m.key),
    value: m.value === null ? null : String(m.value),
    headers,
    timestamp: Number(m.timestamp),
  };
}

/** Partition reads through kafkajs's cluster (real kafkajs Fetch encode/decode, no group). */
async function readPartitions(
  bootstrap: string,
  topic: string,
  parts: { partition: number; from: number; count: number }[],
  timeoutMs: number,
  isolationLevel = 1,
): Promise<ReadRecord[]> {
  const Cluster = require('kafkajs/src/cluster') as new (o: object) => Any;
  const { createLogger, LEVELS } = require('kafkajs/src/loggers');
  const Batch = require('kafkajs/src/consumer/batch') as new (t: string, o: string, p: Any) => { messages: Any[] };
  const socketFactory = (require('kafkajs/src/network/socketFactory') as () => unknown)();
  const logger = createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined });
  const cluster = new Cluster({
    brokers: bootstrap.split(','),
    clientId: 'gregor-compat-kafkajs',
    logger,
    socketFactory,
    connectionTimeout: 5000,
    requestTimeout: 30000,
    retry: { retries: 3 },
  });
  await cluster.connect();
  const out: ReadRecord[] = [];
  try {
    await cluster.addTargetTopic(topic);
    const deadline = Date.now() + timeoutMs;
    for (const { partition, from, count } of parts) {
      const leaders = cluster.findLeaderForPartitions(topic, [partition]);
      const broker = await cluster.findBroker({ nodeId: Object.keys(leaders)[0] });
      let next = from;
      while (next < from + count && Date.now() < deadline) {
        const res = await broker.fetch({
          isolationLevel,
          maxWaitTime: 100,
          minBytes: 1,
          maxBytes: 1 << 20,
          topics: [{ topic, partitions: [{ partition, fetchOffset: String(next), maxBytes: 1 << 20 }] }],
        });
        const p = res.responses[0]?.partitions[0];
        if (p.errorCode !== 0) throw new Error(`kafkajs fetch ${topic}-${partition}: error ${p.errorCode}`);
        // kafkajs's own Batch drops aborted transactional data and control records, as its consumer does.
        const batch = new Batch(topic, String(next), p);
        for (const m of batch.messages) out.push(toRead(partition, m));
        for (const m of p.messages) next = Math.max(next, Number(m.offset) + 1);
        if (p.messages.length === 0 && Number(p.lastStableOffset ?? p.highWatermark) <= next) await sleep(50);
      }
    }
  } finally {
    await cluster.disconnect();
  }
  return out;
}

async function withAdmin<T>(bootstrap: string, fn: (admin: Any) => Promise<T>): Promise<T> {
  const admin = kafka(bootstrap).admin();
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.disconnect();
  }
}

async function group(bootstrap: string, spec: import('../../lib/types.js').GroupSpec): Promise<GroupObservation> {
  const k = kafka(bootstrap);
  const all = Array.from({ length: spec.partitions }, (_, i) => i);
  const member = async (name: string) => {
    const c = k.consumer({
      groupId: spec.groupId,
      sessionTimeout: 10000,
      rebalanceTimeout: 10000,
      heartbeatInterval: 500,
      retry: { retries: 3 },
    });
    const state = { name, c, assignment: [] as number[], first: new Map<number, number>(), seen: new Map<number, number>() };
    c.on(c.events.GROUP_JOIN, (e: Any) => (state.assignment = (e.payload.memberAssignment[spec.topic] ?? []).slice().sort()));
    await c.connect();
    await c.subscribe({ topic: spec.topic, fromBeginning: true });
    await c.run({
      autoCommit: false,
      eachMessage: ({ partition, message }: Any) => {
        if (!state.first.has(partition)) state.first.set(partition, Number(message.offset));
        state.seen.set(partition, Number(message.offset) + 1);
        return Promise.resolve();
      },
    });
    return state;
  };
  const until = async (what: string, cond: () => boolean) => {
    const deadline = Date.now() + spec.timeoutMs;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`kafkajs group: timed out waiting for ${what}`);
      await sleep(50);
    }
  };
  const a = await member('A');
  const members = [a];
  try {
    await until(
      'member A to get every partition and read them',
      () => a.assignment.length === spec.partitions && all.every((p) => (a.seen.get(p) ?? 0) >= spec.commitAt),
    );
    const firstAssignment = [...a.assignment];
    await a.c.commitOffsets(all.map((p) => ({ topic: spec.topic, partition: p, offset: String(spec.commitAt) })));
    const b = await member('B');
    members.push(b);
    await until(
      'the rebalance to split the partitions',
      () => a.assignment.length > 0 && b.assignment.length > 0 && a.assignment.length + b.assignment.length === spec.partitions,
    );
    const rebalanced = [[...a.assignment], [...b.assignment]];
    await Promise.all(members.splice(0).map((m) => m.c.disconnect()));
    const c = await member('C');
    members.push(c);
    await until('a fresh member to resume every partition', () => all.every((p) => c.first.has(p)));
    return {
      firstAssignment,
      rebalanced,
      committed: Object.fromEntries(all.map((p) => [p, spec.commitAt])),
      resumed: Object.fromEntries(c.first),
    };
  } finally {
    await Promise.all(members.map((m) => m.c.disconnect().catch(() => undefined)));
  }
}

/** A kafkajs group member subscribed with a RegExp, for regexFlow (lib/group-flows.ts); assignments from GROUP_JOIN. */
async function regexMember(bootstrap: string, spec: import('../../lib/types.js').RegexGroupSpec): Promise<FlowMember> {
  const c = kafka(bootstrap).consumer({
    groupId: spec.groupId,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 100,
    metadataMaxAge: spec.metadataRefreshMs,
  });
  const events: FlowMember['events'] = [];
  const records: FlowMember['records'] = [];
  let assignment: { topic: string; partition: number }[] = [];
  c.on(c.events.GROUP_JOIN, (e: Any) => {
    assignment = Object.entries(e.payload.memberAssignment as Record<string, number[]>).flatMap(([topic, ps]) =>
      ps.map((partition) => ({ topic, partition })),
    );
    events.push({ kind: 'assign', partitions: assignment });
  });
  await c.connect();
  await c.subscribe({ topics: [new RegExp(spec.pattern)], fromBeginning: true });
  await c.run({
    autoCommit: false,
    eachMessage: ({ topic, partition, message }: Any) => {
      records.push({
        topic,
        partition,
        offset: Number(message.offset),
        value: message.value === null ? null : String(message.value),
        at: Date.now(),
      });
      return Promise.resolve();
    },
  });
  return { assignment: () => assignment, events, records, stop: () => c.disconnect() };
}

/**
 * Reads a topic with kafkajs's own consumer (a fresh group, fromBeginning, readUncommitted: false, i.e.
 * Fetch with isolation_level=1 and its Batch filtering of aborted data and control records) until the
 * record with value `last` arrived, plus a short grace for anything that would wrongly follow it.
 */
async function consumeCommitted(bootstrap: string, topic: string, last: string | undefined, timeoutMs: number): Promise<ReadRecord[]> {
  const c = kafka(bootstrap).consumer({
    groupId: `${topic}-read-committed`,
    readUncommitted: false,
    maxWaitTimeInMs: 100,
    sessionTimeout: 10000,
    heartbeatInterval: 500,
  });
  const out: ReadRecord[] = [];
  let seen!: () => void;
  const seenLast = new Promise<void>((resolve) => (seen = resolve));
  await c.connect();
  try {
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({
      autoCommit: false,
      eachMessage: ({ partition, message }: Any) => {
        out.push(toRead(partition, message));
        if (message.value !== null && String(message.value) === last) seen();
        return Promise.resolve();
      },
    });
    await Promise.race([seenLast.then(() => sleep(300)), sleep(timeoutMs)]);
  } finally {
    await c.disconnect();
  }
  return out;
}

export const kafkajsClient: Client = {
  id: 'kafkajs',
  title: 'kafkajs',
  description: 'kafkajs 2.2.4, pure JavaScript; producer, admin and group consumer through its public API',
  caps: {
    codecs: ['none', 'gzip'],
    timestamps: true,
    headers: 'per-record',
    idempotence: true,
    consumerProtocol: false,
    regexResolvedOnce:
      'kafkajs matches a RegExp subscription once, in subscribe(), against the metadata of that moment (src/consumer/index.js; docs/Consuming.md: "The consumer will not match topics created after the subscription")',
  },
  unsupported: {
    shareGroup: 'kafkajs 2.2.4 has no share consumer (KIP-932: ShareGroupHeartbeat/ShareFetch/ShareAcknowledge)',
    consumerProtocol:
      'kafkajs 2.2.4 speaks only the classic group protocol (JoinGroup/SyncGroup/Heartbeat); it has no ConsumerGroupHeartbeat (KIP-848)',
    staticGroup:
      'kafkajs 2.2.4 has no static membership (KIP-345): consumer() takes no group instance id and Broker.joinGroup() never sends one (only its unused JoinGroup v5 encoder has the field)',
    cooperativeGroup:
      'kafkajs 2.2.4 has only the eager rebalance protocol: each generation replaces the whole assignment (ConsumerGroup.sync → SubscriptionState.assign) and its member metadata (v0: topics, user data) carries no owned partitions; there is no cooperative/incremental protocol (KIP-429)',
    snappy: 'kafkajs 2.2.4 ships only gzip; snappy needs a third-party codec plug-in (not installed)',
    lz4: 'kafkajs 2.2.4 ships only gzip; lz4 needs a third-party codec plug-in (not installed)',
    zstd: 'kafkajs 2.2.4 ships only gzip; zstd needs a third-party codec plug-in (not installed)',
  },
  unavailable() {
    try {
      kjs();
      return null;
    } catch (e) {
      return `kafkajs cannot be loaded: ${(e as Error).message}`;
    }
  },
  versions() {
    return { kafkajs: (require('kafkajs/package.json') as { version: string }).version };
  },
  ops: {
    async metadata(bootstrap, topics) {
      return withAdmin(bootstrap, async (admin) => {
        const cluster = await admin.describeCluster();
        const md = await admin.fetchTopicMetadata({ topics });
        return {
          brokers: cluster.brokers.map((b: Any) => ({ nodeId: b.nodeId, host: b.host, port: b.port })),
          topics: md.topics.map((t: Any) => ({
            name: t.name,
            partitions: t.partitions.map((p: Any) => ({ partition: p.partitionId, leader: p.leader })),
          })),
        };
      });
    },
    async produce(bootstrap, spec) {
      if (spec.codec !== 'none' && spec.codec !== 'gzip') throw new NotSupportedError(kafkajsClient.unsupported[spec.codec] ?? spec.codec);
      const producer = kafka(bootstrap).producer(spec.idempotent === true ? { idempotent: true, maxInFlightRequests: 1 } : {});
      await producer.connect();
      try {
        await producer.send({ topic: spec.topic, messages: messages(spec.records), compression: CODEC[spec.codec], acks: spec.acks });
      } finally {
        await producer.disconnect();
      }
    },
    async consume(bootstrap, spec) {
      return readPartitions(bootstrap, spec.topic, spec.partitions, spec.timeoutMs);
    },
    async offsetForTime(bootstrap, topic, partition, timestamp) {
      return withAdmin(bootstrap, async (admin) => {
        const res = await admin.fetchTopicOffsetsByTimestamp(topic, timestamp);
        return Number(res.find((r: Any) => r.partition === partition).offset);
      });
    },
    createTopic: (b, topic, partitions) =>
      withAdmin(b, async (a) => {
        await a.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
      }),
    deleteTopic: (b, topic) =>
      withAdmin(b, async (a) => {
        await a.deleteTopics({ topics: [topic] });
      }),
    createPartitions: (b, topic, count) =>
      withAdmin(b, async (a) => {
        await a.createPartitions({ topicPartitions: [{ topic, count }] });
      }),
    describeConfigs: (b, topic, names) =>
      withAdmin(b, async (a) => {
        const res = await a.describeConfigs({
          resources: [{ type: kjs().ConfigResourceTypes.TOPIC, name: topic, configNames: names }],
          includeSynonyms: false,
        });
        return Object.fromEntries(res.resources[0].configEntries.map((e: Any) => [e.configName, e.configValue]));
      }),
    alterConfigs: (b, topic, entries) =>
      withAdmin(b, async (a) => {
        await a.alterConfigs({
          validateOnly: false,
          resources: [
            {
              type: kjs().ConfigResourceTypes.TOPIC,
              name: topic,
              configEntries: Object.entries(entries).map(([name, value]) => ({ name, value })),
            },
          ],
        });
      }),
    deleteRecords: (b, topic, partition, before) =>
      withAdmin(b, async (a) => {
        await a.fetchTopicMetadata({ topics: [topic] });
        await a.deleteTopicRecords({ topic, partitions: [{ partition, offset: String(before) }] });
        const offs = await a.fetchTopicOffsets(topic);
        return Number(offs.find((o: Any) => o.partition === partition).low);
      }),
    group: (b, spec) => withTimeout('kafkajs group', spec.timeoutMs * 4, group(b, spec)),
    regexGroup: (b, spec) => regexFlow(spec, () => regexMember(b, spec)),
    async transactions(bootstrap, spec) {
      const producer = kafka(bootstrap).producer({ transactionalId: spec.transactionalId, idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      try {
        const aborted = await producer.transaction();
        await aborted.send({ topic: spec.topic, messages: messages(spec.aborted), acks: -1 });
        await aborted.abort();
        const committed = await producer.transaction();
        await committed.send({ topic: spec.topic, messages: messages(spec.committed), acks: -1 });
        await committed.commit();
      } finally {
        await producer.disconnect();
      }
      return consumeCommitted(bootstrap, spec.topic, spec.committed[spec.committed.length - 1]?.value, 20000);
    },
  },
};
