/**
 * Column "confluent-kjs": @confluentinc/kafka-javascript's KafkaJS-style API (`KafkaJS.Kafka`). Its
 * consumer always joins a group (no assign), so plain reads use the package's native consumer with
 * assign() (same librdkafka underneath); its group consumer is what the groups scenario and the
 * transactions read (readUncommitted: false) drive.
 */
import { cooperativeFlow, type FlowMember, regexFlow, staticFlow } from '../../lib/group-flows.js';
import { sleep } from '../../lib/records.js';
import type { Client, GroupObservation, GroupProtocol, GroupSpec, ReadRecord, TestRecord } from '../../lib/types.js';
import { type Any, ck, ckUnavailable, ckVersions, readByAssign } from './native.mjs';

const NO_CONFIGS = 'the KafkaJS-style admin of @confluentinc/kafka-javascript 1.10.1 has no describeConfigs/alterConfigs';

function kafka(bootstrap: string, kafkaJS: Record<string, unknown> = {}): Any {
  const { Kafka, logLevel } = ck().KafkaJS;
  return new Kafka({
    kafkaJS: { brokers: bootstrap.split(','), clientId: 'gregor-compat-confluent-kjs', logLevel: logLevel.NOTHING, ...kafkaJS },
  });
}

const messages = (records: TestRecord[]) =>
  records.map((r) => ({
    partition: r.partition,
    key: r.key,
    value: r.value,
    headers: Object.fromEntries(r.headers),
    timestamp: String(r.timestamp),
  }));

async function withAdmin<T>(bootstrap: string, fn: (a: Any) => Promise<T>): Promise<T> {
  const admin = kafka(bootstrap).admin();
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.disconnect();
  }
}

async function group(bootstrap: string, spec: GroupSpec): Promise<GroupObservation> {
  const all = Array.from({ length: spec.partitions }, (_, i) => i);
  const live: Any[] = [];
  const member = async () => {
    const c = kafka(bootstrap).consumer({
      kafkaJS: { groupId: spec.groupId, fromBeginning: true, autoCommit: false, sessionTimeout: 10000, heartbeatInterval: 500 },
    });
    const first = new Map<number, number>();
    const seen = new Map<number, number>();
    await c.connect();
    await c.subscribe({ topics: [spec.topic] });
    await c.run({
      eachMessage: ({ partition, message }: Any) => {
        if (!first.has(partition)) first.set(partition, Number(message.offset));
        seen.set(partition, Number(message.offset) + 1);
        return Promise.resolve();
      },
    });
    live.push(c);
    const assigned = (): number[] =>
      (c.assignment() as Any[])
        .filter((a) => a.topic === spec.topic)
        .flatMap((a) => a.partitions ?? [a.partition])
        .sort();
    return { c, first, seen, assigned };
  };
  const until = async (what: string, cond: () => boolean) => {
    const deadline = Date.now() + spec.timeoutMs;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`KafkaJS-style group: timed out waiting for ${what}`);
      await sleep(50);
    }
  };
  try {
    const a = await member();
    await until(
      'member A to get every partition and read them',
      () => a.assigned().length === spec.partitions && all.every((p) => (a.seen.get(p) ?? 0) >= spec.commitAt),
    );
    const firstAssignment = a.assigned();
    await a.c.commitOffsets(all.map((p) => ({ topic: spec.topic, partition: p, offset: String(spec.commitAt) })));
    const b = await member();
    await until(
      'the rebalance to split the partitions',
      () => a.assigned().length > 0 && b.assigned().length > 0 && a.assigned().length + b.assigned().length === spec.partitions,
    );
    const rebalanced = [a.assigned(), b.assigned()];
    await Promise.all(live.splice(0).map((c) => c.disconnect()));
    const c = await member();
    await until('a fresh member to resume every partition', () => all.every((p) => c.first.has(p)));
    return {
      firstAssignment,
      rebalanced,
      committed: Object.fromEntries(all.map((p) => [p, spec.commitAt])),
      resumed: Object.fromEntries(c.first),
    };
  } finally {
    await Promise.all(live.map((c) => c.disconnect().catch(() => undefined)));
  }
}

/**
 * Reads a topic with this API's own consumer (a fresh group, fromBeginning, readUncommitted: false →
 * isolation.level=read_committed) until the record with value `last` arrived, plus a short grace for
 * anything that would wrongly follow it.
 */
async function consumeCommitted(bootstrap: string, topic: string, last: string | undefined, timeoutMs: number): Promise<ReadRecord[]> {
  const c = kafka(bootstrap).consumer({
    kafkaJS: {
      groupId: `${topic}-read-committed`,
      fromBeginning: true,
      autoCommit: false,
      readUncommitted: false,
      sessionTimeout: 10000,
      heartbeatInterval: 500,
    },
  });
  const out: ReadRecord[] = [];
  let seen!: () => void;
  const seenLast = new Promise<void>((resolve) => (seen = resolve));
  await c.connect();
  try {
    await c.subscribe({ topics: [topic] });
    await c.run({
      eachMessage: ({ partition, message }: Any) => {
        out.push({
          partition,
          offset: Number(message.offset),
          key: message.key == null ? null : String(message.key),
          value: message.value == null ? null : String(message.value),
          headers: kjsHeaders(message.headers),
          timestamp: Number(message.timestamp),
        });
        if (message.value != null && String(message.value) === last) seen();
        return Promise.resolve();
      },
    });
    await Promise.race([seenLast.then(() => sleep(300)), sleep(timeoutMs)]);
  } finally {
    await c.disconnect();
  }
  return out;
}

/**
 * A KafkaJS-style group member for the group flows (lib/group-flows.ts): consumer() with the classic
 * settings in the kafkaJS block (refused with group.protocol=consumer) and librdkafka properties beside
 * it; a user rebalance_cb records each callback (the package still applies the assignment itself).
 */
async function flowMember(
  bootstrap: string,
  protocol: GroupProtocol,
  groupId: string,
  topic: string | RegExp,
  rdkafka: Record<string, unknown>,
  classic: Record<string, unknown> = {},
): Promise<FlowMember> {
  const events: FlowMember['events'] = [];
  const records: FlowMember['records'] = [];
  const kafkaJS = {
    groupId,
    fromBeginning: true,
    autoCommit: false,
    ...(protocol === 'classic' ? { sessionTimeout: 10000, heartbeatInterval: 500, ...classic } : {}),
  };
  const c = kafka(bootstrap).consumer({
    kafkaJS,
    ...(protocol === 'consumer' ? { 'group.protocol': 'consumer' } : {}),
    'fetch.wait.max.ms': 100,
    ...rdkafka,
    rebalance_cb: (err: Any, assignment: Any[]) => {
      const kind = err?.code === -175 ? 'assign' : err?.code === -174 ? 'revoke' : null; // ERR__ASSIGN_PARTITIONS / ERR__REVOKE_PARTITIONS
      if (kind !== null) events.push({ kind, partitions: assignment.map((a) => ({ topic: a.topic, partition: a.partition })) });
    },
  });
  await c.connect();
  await c.subscribe({ topics: [topic] });
  await c.run({
    eachMessage: ({ topic: t, partition, message }: Any) => {
      records.push({
        topic: t,
        partition,
        offset: Number(message.offset),
        value: message.value == null ? null : String(message.value),
        at: Date.now(),
      });
      return Promise.resolve();
    },
  });
  return {
    assignment: () =>
      (c.assignment() as Any[]).flatMap((a) => (a.partitions ?? [a.partition]).map((p: number) => ({ topic: a.topic, partition: p }))),
    events,
    records,
    rebalanceProtocol: () => String(c.rebalanceProtocol()),
    stop: () => c.disconnect(),
  };
}

function kjsHeaders(h: Any): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(h ?? {})) for (const x of Array.isArray(v) ? v : [v]) out.push([k, String(x)]);
  return out;
}

export const confluentKjsClient: Client = {
  id: 'confluent-kjs',
  title: 'confluent (KafkaJS API)',
  description:
    '@confluentinc/kafka-javascript 1.10.1, librdkafka 2.15.1, KafkaJS-compatible API (KafkaJS.Kafka producer/consumer/admin); reads by partition via the native consumer',
  caps: {
    codecs: ['none', 'gzip', 'snappy', 'lz4', 'zstd'],
    timestamps: true,
    headers: 'per-record',
    idempotence: true,
    consumerProtocol: true,
  },
  unsupported: {
    describeConfigs: NO_CONFIGS,
    alterConfigs: NO_CONFIGS,
    createPartitions: 'the KafkaJS-style admin of @confluentinc/kafka-javascript 1.10.1 has no createPartitions',
    shareGroup:
      'the KafkaJS-style API of @confluentinc/kafka-javascript 1.10.1 has no share consumer (librdkafka has it in C only: see the confluent-rdkafka column)',
  },
  unavailable: ckUnavailable,
  versions: ckVersions,
  ops: {
    metadata: (bootstrap, topics) =>
      withAdmin(bootstrap, async (a) => {
        const md: Any[] = await a.fetchTopicMetadata({ topics });
        const brokers = new Map<number, { nodeId: number; host: string; port: number }>();
        for (const t of md)
          for (const p of t.partitions)
            if (p.leaderNode) brokers.set(p.leaderNode.id, { nodeId: p.leaderNode.id, host: p.leaderNode.host, port: p.leaderNode.port });
        return {
          brokers: [...brokers.values()],
          topics: md.map((t) => ({
            name: t.name,
            partitions: t.partitions.map((p: Any) => ({ partition: p.partitionId, leader: p.leader })),
          })),
        };
      }),
    async produce(bootstrap, spec) {
      // this package spells kafkajs's CompressionTypes.Snappy as SNAPPY
      const { CompressionTypes } = ck().KafkaJS;
      const compression = {
        none: CompressionTypes.None,
        gzip: CompressionTypes.GZIP,
        snappy: CompressionTypes.SNAPPY,
        lz4: CompressionTypes.LZ4,
        zstd: CompressionTypes.ZSTD,
      }[spec.codec];
      const producer = kafka(bootstrap).producer({
        kafkaJS: { acks: spec.acks, compression, ...(spec.idempotent === true ? { idempotent: true } : {}) },
      });
      await producer.connect();
      try {
        await producer.send({ topic: spec.topic, messages: messages(spec.records) });
      } finally {
        await producer.disconnect();
      }
    },
    consume: (bootstrap, spec) => readByAssign(bootstrap, spec),
    offsetForTime: (bootstrap, topic, partition, timestamp) =>
      withAdmin(bootstrap, async (a) => {
        const res: Any[] = await a.fetchTopicOffsetsByTimestamp(topic, timestamp);
        return Number(res.find((r) => r.partition === partition).offset);
      }),
    createTopic: (b, topic, partitions) =>
      withAdmin(b, async (a) => {
        await a.createTopics({ topics: [{ topic, numPartitions: partitions }] });
      }),
    deleteTopic: (b, topic) =>
      withAdmin(b, async (a) => {
        await a.deleteTopics({ topics: [topic] });
      }),
    deleteRecords: (b, topic, partition, before) =>
      withAdmin(b, async (a) => {
        await a.fetchTopicMetadata({ topics: [topic] });
        const res: Any[] = await a.deleteTopicRecords({ topic, partitions: [{ partition, offset: String(before) }] });
        return Number(res[0].lowWatermark);
      }),
    group,
    async transactions(bootstrap, spec) {
      const producer = kafka(bootstrap).producer({
        kafkaJS: { transactionalId: spec.transactionalId, idempotent: true, acks: -1, maxInFlightRequests: 1 },
      });
      await producer.connect();
      try {
        const aborted = await producer.transaction();
        await aborted.send({ topic: spec.topic, messages: messages(spec.aborted) });
        await aborted.abort();
        const committed = await producer.transaction();
        await committed.send({ topic: spec.topic, messages: messages(spec.committed) });
        await committed.commit();
      } finally {
        await producer.disconnect();
      }
      return consumeCommitted(bootstrap, spec.topic, spec.committed[spec.committed.length - 1]?.value, 20000);
    },
    // A RegExp must start with ^ here (the package hands its source to librdkafka, which reads a leading ^ as "regex").
    regexGroup: (b, spec) =>
      regexFlow(spec, () =>
        flowMember(b, spec.protocol, spec.groupId, new RegExp(spec.pattern), {
          'topic.metadata.refresh.interval.ms': spec.metadataRefreshMs,
        }),
      ),
    staticGroup: (b, spec) =>
      staticFlow(spec, (id) =>
        flowMember(
          b,
          spec.protocol,
          spec.groupId,
          spec.topic,
          { 'group.instance.id': `${spec.groupId}-${id}` },
          { sessionTimeout: spec.sessionTimeoutMs, partitionAssigners: ['range'] },
        ),
      ),
    cooperativeGroup: (b, spec) =>
      cooperativeFlow(spec, () =>
        flowMember(b, spec.protocol, spec.groupId, spec.topic, {}, { partitionAssigners: ['cooperative-sticky'] }),
      ),
  },
};
