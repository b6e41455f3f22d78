// Capture driver against gregor: @confluentinc/kafka-javascript 1.10.1 (librdkafka 2.15.x), from
// compat/clients/confluent. Env: CAPTURE_BOOTSTRAP, CAPTURE_PLAN (see capture-gregor.mjs).
// KafkaJS-style admin (createTopics, fetchTopicOffsets(+ByTimestamp), fetchTopicMetadata, listTopics, deleteTopicRecords, describeGroups,
// listGroups, fetchOffsets, deleteGroups, deleteTopics), node-rdkafka-style AdminClient
// createPartitions, one producer per plan batch (codec), a classic group consumer, and a second
// consumer with group.protocol=consumer (KIP-848).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../../../compat/clients/confluent/package.json'));
const ckjs = require('@confluentinc/kafka-javascript');
const { Kafka, CompressionTypes, logLevel } = ckjs.KafkaJS;

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
    console.error('gregor-confluent driver: deadline reached');
    process.exit(3);
  },
  Number(process.env.CAPTURE_DRIVER_TIMEOUT_MS ?? 40000),
);
const step = async (label, fn) => {
  try {
    return await fn();
  } catch (e) {
    console.error(`gregor-confluent driver: ${label} failed: ${e.message}`);
    process.exitCode = 1;
    return undefined;
  }
};
console.error(`gregor-confluent driver: librdkafka ${ckjs.librdkafkaVersion}`);

const codecs = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.SNAPPY,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
};
const kafka = new Kafka({ kafkaJS: { clientId: 'gregor-capture-confluent', brokers: [bootstrap], logLevel: logLevel.ERROR } });
const scratch = `${plan.topic}-scratch`;
const group848 = `${plan.groupId}-848`;

const admin = kafka.admin();
await admin.connect();
await step('createTopics', () =>
  admin.createTopics({
    topics: [
      { topic: plan.topic, numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '86400000' }] },
      { topic: scratch, numPartitions: 1, replicationFactor: 1, configEntries: [{ name: 'cleanup.policy', value: 'delete' }] },
    ],
  }),
);

// node-rdkafka-style AdminClient: createPartitions
await step(
  'AdminClient.createPartitions',
  () =>
    new Promise((resolve, reject) => {
      const ac = ckjs.AdminClient.create({ 'bootstrap.servers': bootstrap, 'client.id': 'gregor-capture-confluent-admin' });
      ac.createPartitions(scratch, 2, 5000, (err) => {
        ac.disconnect();
        if (err) reject(err);
        else resolve();
      });
    }),
);

for (const batch of plan.batches) {
  const producer = kafka.producer({ kafkaJS: { compression: codecs[batch.codec], acks: batch.acks }, 'linger.ms': 50 });
  await producer.connect();
  await step(`produce ${batch.codec}`, () =>
    producer.send({
      topic: plan.topic,
      messages: batch.records.map((r) => ({ partition: batch.partition, key: r.key, value: r.value, headers: headerObject(r.headers) })),
    }),
  );
  if (batch.codec === 'none')
    await step('produce scratch', () =>
      producer.send({ topic: scratch, messages: ['a', 'b', 'c'].map((value) => ({ partition: 0, value })) }),
    );
  await producer.disconnect();
}

await step('fetchTopicOffsets', () => admin.fetchTopicOffsets(plan.topic));
await step('fetchTopicOffsetsByTimestamp', () => admin.fetchTopicOffsetsByTimestamp(plan.topic, Date.now() - 60_000));
await step('fetchTopicMetadata', () => admin.fetchTopicMetadata({ topics: [plan.topic] }));
await step('listTopics', () => admin.listTopics());
await step('deleteTopicRecords', () => admin.deleteTopicRecords({ topic: scratch, partitions: [{ partition: 0, offset: '1' }] }));

const expected = plan.batches.reduce((n, b) => n + b.records.length, 0);
async function consume(groupId, extra) {
  const consumer = kafka.consumer({
    kafkaJS: { groupId, fromBeginning: true, autoCommit: true, autoCommitInterval: 300 },
    'fetch.wait.max.ms': 200,
    ...extra,
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [plan.topic] });
  let got = 0;
  await new Promise((resolve) => {
    consumer.run({
      eachMessage: async () => {
        if (++got >= expected) resolve();
      },
    });
  });
  await new Promise((r) => setTimeout(r, 1200));
  await consumer.disconnect();
  return got;
}
const classic = await step('classic consumer', () => consume(plan.groupId, { 'heartbeat.interval.ms': 500, 'session.timeout.ms': 10000 }));
const kip848 = await step('KIP-848 consumer', () => consume(group848, { 'group.protocol': 'consumer' }));

await step('describeGroups', () => admin.describeGroups([plan.groupId, group848]));
await step('listGroups', () => admin.listGroups());
await step('fetchOffsets', () => admin.fetchOffsets({ groupId: plan.groupId, topics: [plan.topic] }));
await step('deleteGroups', () => admin.deleteGroups([plan.groupId, group848]));
await step('deleteTopics', () => admin.deleteTopics({ topics: [scratch] }));
await admin.disconnect();
clearTimeout(deadline);
console.error(`gregor-confluent driver: consumed classic ${classic}/${expected}, KIP-848 ${kip848}/${expected}`);
