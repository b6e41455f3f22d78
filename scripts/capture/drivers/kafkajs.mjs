// Capture driver: kafkajs 2.2.4 (repo root devDependency).
// Env: CAPTURE_BOOTSTRAP=127.0.0.1:PORT, CAPTURE_PLAN=<plan.json> (see capture-all.mjs).
// Admin (metadata, listOffsets), producer (plan batches: none/gzip, acks 1/-1), consumer with a
// group reading everything back, committing, and leaving.
import { readFileSync } from 'node:fs';
import { Kafka, CompressionTypes, logLevel } from 'kafkajs';

// Plan headers ([{key, value}], duplicate keys allowed and adjacent) -> KafkaJS header object,
// using an array value for a repeated key (both clients then write one header per value, in order).
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
    console.error('kafkajs driver: deadline reached');
    process.exit(3);
  },
  Number(process.env.CAPTURE_DRIVER_TIMEOUT_MS ?? 18000),
);

const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP };
const kafka = new Kafka({
  clientId: 'gregor-capture-kafkajs',
  brokers: [bootstrap],
  logLevel: logLevel.ERROR,
  retry: { retries: 2, initialRetryTime: 100 },
});

// --- admin: metadata + listOffsets
const admin = kafka.admin();
await admin.connect();
await admin.fetchTopicMetadata({ topics: [plan.topic] });
await admin.fetchTopicOffsets(plan.topic);

// --- producer
const producer = kafka.producer({ allowAutoTopicCreation: false });
await producer.connect();
for (const batch of plan.batches) {
  await producer.send({
    topic: plan.topic,
    acks: batch.acks,
    compression: codecs[batch.codec],
    messages: batch.records.map((r) => ({
      partition: batch.partition,
      key: r.key,
      value: r.value,
      headers: headerObject(r.headers),
    })),
  });
}
await producer.disconnect();

// listOffsets again, now that there is data (earliest + latest)
await admin.fetchTopicOffsets(plan.topic);
await admin.fetchTopicOffsetsByTimestamp(plan.topic, Date.now() - 60_000).catch(() => {});
await admin.disconnect();

// --- consumer with a group
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
      got++;
      if (got >= expected) resolve();
    },
  });
});
// let a heartbeat and an auto-commit happen
await new Promise((r) => setTimeout(r, 1200));
await consumer.disconnect();
clearTimeout(deadline);
console.error(`kafkajs driver: consumed ${got}/${expected}`);
