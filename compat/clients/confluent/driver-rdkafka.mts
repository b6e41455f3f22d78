/** Column "confluent-rdkafka": @confluentinc/kafka-javascript's node-rdkafka-style API (Producer, KafkaConsumer, AdminClient). */
import { cooperativeFlow, regexFlow, staticFlow } from '../../lib/group-flows.js';
import { librdkafkaShareGroup } from '../../lib/share-flow.js';
import type { Client, ProduceSpec, TestRecord } from '../../lib/types.js';
import {
  type Any,
  cb,
  ck,
  ckUnavailable,
  ckVersions,
  groupConf,
  nativeConsumer,
  nativeFlowMember,
  nativeGroup,
  readByAssign,
  readCommitted,
  withNativeAdmin,
} from './native.mjs';

const NO_CONFIGS = 'neither API of @confluentinc/kafka-javascript 1.10.1 exposes DescribeConfigs/AlterConfigs';

/** A connected native producer; `produce` rejects on the first failed delivery report. */
async function nativeProducer(
  bootstrap: string,
  conf: Record<string, unknown>,
): Promise<{ p: Any; produce(topic: string, records: TestRecord[]): Promise<void> }> {
  const p = new (ck().Producer)({ 'bootstrap.servers': bootstrap, dr_cb: true, log_level: 0, 'linger.ms': 5, ...conf });
  await cb((d) => p.connect({ timeout: 10000 }, d));
  p.setPollInterval(20);
  return {
    p,
    async produce(topic, records) {
      let pending = records.length;
      // set by the delivery-report callback, hence an object: tsc does not see assignments made in callbacks
      const outcome: { failure: Error | null } = { failure: null };
      const done = new Promise<void>((resolve) => {
        const onReport = (err: Any) => {
          if (err && outcome.failure === null) outcome.failure = new Error(`delivery failed: ${err.message ?? err}`);
          if (--pending === 0) resolve();
        };
        p.on('delivery-report', onReport);
        for (const r of records)
          p.produce(
            topic,
            r.partition,
            Buffer.from(r.value),
            r.key === null ? null : Buffer.from(r.key),
            r.timestamp,
            null,
            r.headers.map(([k, v]) => ({ [k]: Buffer.from(v) })),
          );
      });
      await cb((d) => p.flush(15000, d));
      await Promise.race([done, new Promise((r) => setTimeout(r, 15000))]);
      p.removeAllListeners('delivery-report');
      if (outcome.failure !== null) throw outcome.failure;
      if (pending > 0) throw new Error(`${pending} delivery reports missing after 15 s`);
    },
  };
}

function produceConf(spec: ProduceSpec): Record<string, unknown> {
  return { 'compression.codec': spec.codec, acks: spec.acks, ...(spec.idempotent === true ? { 'enable.idempotence': true } : {}) };
}

export const confluentRdkafkaClient: Client = {
  id: 'confluent-rdkafka',
  title: 'confluent (rdkafka API)',
  description:
    '@confluentinc/kafka-javascript 1.10.1, librdkafka 2.15.1, node-rdkafka-style API: Producer, KafkaConsumer (assign or subscribe), AdminClient',
  caps: {
    codecs: ['none', 'gzip', 'snappy', 'lz4', 'zstd'],
    timestamps: true,
    headers: 'per-record',
    idempotence: true,
    consumerProtocol: true,
  },
  unsupported: { describeConfigs: NO_CONFIGS, alterConfigs: NO_CONFIGS },
  unavailable: ckUnavailable,
  versions: ckVersions,
  ops: {
    // librdkafka 2.15's share consumer is C-only: the package does not wrap it, so the members are a C program on the same librdkafka
    shareGroup: librdkafkaShareGroup,
    async metadata(bootstrap, topics) {
      const c = await nativeConsumer(bootstrap);
      try {
        const out = {
          brokers: [] as { nodeId: number; host: string; port: number }[],
          topics: [] as { name: string; partitions: { partition: number; leader: number }[] }[],
        };
        for (const topic of topics) {
          const md: Any = await cb((d) => c.getMetadata({ topic, timeout: 10000 }, d));
          out.brokers = md.brokers.map((b: Any) => ({ nodeId: b.id, host: b.host, port: b.port }));
          for (const t of md.topics)
            if (t.name === topic)
              out.topics.push({ name: t.name, partitions: t.partitions.map((p: Any) => ({ partition: p.id, leader: p.leader })) });
        }
        return out;
      } finally {
        await cb((d) => c.disconnect(d)).catch(() => undefined);
      }
    },
    async produce(bootstrap, spec) {
      const np = await nativeProducer(bootstrap, produceConf(spec));
      try {
        await np.produce(spec.topic, spec.records);
      } finally {
        await cb((d) => np.p.disconnect(5000, d)).catch(() => undefined);
      }
    },
    consume: (bootstrap, spec) => readByAssign(bootstrap, spec),
    async offsetForTime(bootstrap, topic, partition, timestamp) {
      const c = await nativeConsumer(bootstrap);
      try {
        const res: Any[] = await cb((d) => c.offsetsForTimes([{ topic, partition, offset: timestamp }], 10000, d));
        return Number(res[0].offset);
      } finally {
        await cb((d) => c.disconnect(d)).catch(() => undefined);
      }
    },
    createTopic: (b, topic, partitions) =>
      withNativeAdmin(b, (a) => cb((d) => a.createTopic({ topic, num_partitions: partitions, replication_factor: 1 }, 10000, d))),
    deleteTopic: (b, topic) => withNativeAdmin(b, (a) => cb((d) => a.deleteTopic(topic, 10000, d))),
    createPartitions: (b, topic, total) => withNativeAdmin(b, (a) => cb((d) => a.createPartitions(topic, total, 10000, d))),
    deleteRecords: (b, topic, partition, before) =>
      withNativeAdmin(b, async (a) => {
        const res: Any[] = await cb((d) => a.deleteRecords([{ topic, partition, offset: before }], { timeout: 10000 }, d));
        const r = res[0];
        if (r.error) throw new Error(`deleteRecords: ${r.error.message ?? r.error}`);
        return Number(r.lowWatermark);
      }),
    group: (b, spec) => nativeGroup(b, spec),
    async transactions(bootstrap, spec) {
      const np = await nativeProducer(bootstrap, { 'transactional.id': spec.transactionalId, 'enable.idempotence': true, acks: -1 });
      try {
        await cb((d) => np.p.initTransactions(10000, d));
        await cb((d) => np.p.beginTransaction(d));
        await np.produce(spec.topic, spec.aborted);
        await cb((d) => np.p.abortTransaction(10000, d));
        await cb((d) => np.p.beginTransaction(d));
        await np.produce(spec.topic, spec.committed);
        await cb((d) => np.p.commitTransaction(10000, d));
      } finally {
        await cb((d) => np.p.disconnect(5000, d)).catch(() => undefined);
      }
      return readCommitted(bootstrap, spec.topic, [...new Set([...spec.aborted, ...spec.committed].map((r) => r.partition))]);
    },
    // librdkafka treats a subscribed name starting with ^ as a regex: matched by the client (classic) or sent to the broker (consumer).
    regexGroup: (b, spec) =>
      regexFlow(spec, () =>
        nativeFlowMember(
          b,
          spec.groupId,
          [spec.pattern],
          groupConf(spec.protocol, {}, { 'topic.metadata.refresh.interval.ms': spec.metadataRefreshMs }),
        ),
      ),
    staticGroup: (b, spec) =>
      staticFlow(spec, (id) =>
        nativeFlowMember(
          b,
          spec.groupId,
          [spec.topic],
          groupConf(
            spec.protocol,
            { 'session.timeout.ms': spec.sessionTimeoutMs, 'partition.assignment.strategy': 'range' },
            { 'group.instance.id': `${spec.groupId}-${id}` },
          ),
        ),
      ),
    cooperativeGroup: (b, spec) =>
      cooperativeFlow(spec, () =>
        nativeFlowMember(
          b,
          spec.groupId,
          [spec.topic],
          groupConf(spec.protocol, { 'partition.assignment.strategy': 'cooperative-sticky' }),
        ),
      ),
  },
};
