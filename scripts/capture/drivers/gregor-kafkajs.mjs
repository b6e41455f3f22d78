// Capture driver against gregor: kafkajs 2.2.4 (repo root devDependency), admin API included.
// Env: CAPTURE_BOOTSTRAP=127.0.0.1:PORT, CAPTURE_PLAN=<plan.json> (see capture-gregor.mjs).
// Admin: createTopics (with configs), createPartitions, describeConfigs (topic + broker),
// alterConfigs, producer (plan batches), deleteTopicRecords, fetchTopicOffsets(+ByTimestamp), group
// consumer, describeGroups, listGroups, fetchOffsets, deleteGroups, deleteTopics.
import { readFileSync } from 'node:fs';
import kafkajs from 'kafkajs';
const { Kafka, CompressionTypes, logLevel, ConfigResourceTypes } = kafkajs;

function headerObject(list) {
  const out = {};
  for (const { key, value } of list) {
    if (!(key in out)) out[key] = value;
    else out[key] = [].concat(out[key], value);
  }
  return out;
}

const bootstrap = process.env.CAPTURE_BOOTSTRAP;
const plan = JSON.parse(readFileSync(process.env.CAPTURE_PLAN, 'utf8'));
const deadline = setTimeout(
  () => {
    console.error('gregor-kafkajs driver: deadline reached');
    process.exit(3);
  },
  Number(process.env.CAPTURE_DRIVER_TIMEOUT_MS ?? 40000),
);
const step = async (label, fn) => {
  try {
    return await fn();
  } catch (e) {
    console.error(`gregor-kafkajs driver: ${label} failed: ${e.message}`);
    process.exitCode = 1;
    return undefined;
  }
};

const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP };
const kafka = new Kafka({
  clientId: 'gregor-capture-kafkajs',
  brokers: [bootstrap],
  logLevel: logLevel.ERROR,
  retry: { retries: 3, initialRetryTime: 100 },
});
const scratch = `${plan.topic}-scratch`;

const admin = kafka.admin();
await admin.connect();
await step('createTopics', () =>
  admin.createTopics({
    waitForLeaders: true,
    topics: [
      { topic: plan.topic, numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '86400000' }] },
      {
        topic: scratch,
        numPartitions: 1,
        replicationFactor: 1,
        configEntries: [
          { name: 'cleanup.policy', value: 'delete' },
          { name: 'max.message.bytes', value: '200000' },
        ],
      },
    ],
  }),
);
await step('createPartitions', () => admin.createPartitions({ topicPartitions: [{ topic: scratch, count: 2 }] }));
const cluster = await step('describeCluster', () => admin.describeCluster());
const brokerId = String(cluster?.brokers?.[0]?.nodeId ?? 1);
await step('describeConfigs', () =>
  admin.describeConfigs({
    includeSynonyms: false,
    resources: [
      { type: ConfigResourceTypes.TOPIC, name: plan.topic },
      { type: ConfigResourceTypes.BROKER, name: brokerId, configNames: ['log.retention.hours', 'num.partitions'] },
    ],
  }),
);
await step('alterConfigs', () =>
  admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: scratch, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
  }),
);
await step('fetchTopicMetadata', () => admin.fetchTopicMetadata({ topics: [plan.topic, scratch] }));

const producer = kafka.producer({ allowAutoTopicCreation: false });
await producer.connect();
for (const batch of plan.batches) {
  await step(`produce ${batch.codec}`, () =>
    producer.send({
      topic: plan.topic,
      acks: batch.acks,
      compression: codecs[batch.codec],
      messages: batch.records.map((r) => ({ partition: batch.partition, key: r.key, value: r.value, headers: headerObject(r.headers) })),
    }),
  );
}
await step('produce scratch', () =>
  producer.send({
    topic: scratch,
    messages: [
      { partition: 0, value: 'a' },
      { partition: 0, value: 'b' },
      { partition: 0, value: 'c' },
    ],
  }),
);
await producer.disconnect();

await step('deleteTopicRecords', () => admin.deleteTopicRecords({ topic: scratch, partitions: [{ partition: 0, offset: '1' }] }));
await step('fetchTopicOffsets', () => admin.fetchTopicOffsets(plan.topic));
await step('fetchTopicOffsetsByTimestamp', () => admin.fetchTopicOffsetsByTimestamp(plan.topic, Date.now() - 60_000));

const expected = plan.batches.reduce((n, b) => n + b.records.length, 0);
const consumer = kafka.consumer({
  groupId: plan.groupId,
  sessionTimeout: 10000,
  rebalanceTimeout: 10000,
  heartbeatInterval: 500,
  maxWaitTimeInMs: 200,
});
await consumer.connect();
await consumer.subscribe({ topic: plan.topic, fromBeginning: true });
let got = 0;
await new Promise((resolve) => {
  consumer.run({
    autoCommitInterval: 200,
    eachMessage: async () => {
      if (++got >= expected) resolve();
    },
  });
});
await new Promise((r) => setTimeout(r, 1200));
await step('describeGroups (live)', () => admin.describeGroups([plan.groupId]));
await consumer.disconnect();

await step('describeGroups', () => admin.describeGroups([plan.groupId, 'no-such-group']));
await step('listGroups', () => admin.listGroups());
await step('fetchOffsets', () => admin.fetchOffsets({ groupId: plan.groupId, topics: [plan.topic] }));
await step('deleteGroups', () => admin.deleteGroups([plan.groupId]));
await step('deleteTopics', () => admin.deleteTopics({ topics: [scratch] }));
await admin.disconnect();
clearTimeout(deadline);
console.error(`gregor-kafkajs driver: consumed ${got}/${expected}`);
