// Capture driver: @confluentinc/kafka-javascript 1.10.1 (librdkafka 2.15.x), installed in
// compat/clients/confluent by scripts/setup-test-deps.sh. Uses its KafkaJS-compatible API.
// Env: CAPTURE_BOOTSTRAP=127.0.0.1:PORT, CAPTURE_PLAN=<plan.json> (see capture-all.mjs).
// One producer per plan batch (compression is a producer-level setting in librdkafka), then a
// consumer with a group reading everything back.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../../../compat/clients/confluent/package.json'));
const ckjs = require('@confluentinc/kafka-javascript');
const { Kafka, CompressionTypes, logLevel } = ckjs.KafkaJS;

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
    console.error('confluent driver: deadline reached');
    process.exit(3);
  },
  Number(process.env.CAPTURE_DRIVER_TIMEOUT_MS ?? 18000),
);
console.error(`confluent driver: librdkafka ${ckjs.librdkafkaVersion}`);

const codecs = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.SNAPPY,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
};
const kafka = new Kafka({
  kafkaJS: { clientId: 'gregor-capture-confluent', brokers: [bootstrap], logLevel: logLevel.ERROR },
});

for (const batch of plan.batches) {
  const producer = kafka.producer({
    kafkaJS: { compression: codecs[batch.codec], acks: batch.acks },
    'linger.ms': 50,
  });
  await producer.connect();
  await producer.send({
    topic: plan.topic,
    messages: batch.records.map((r) => ({
      partition: batch.partition,
      key: r.key,
      value: r.value,
      headers: headerObject(r.headers),
    })),
  });
  await producer.disconnect();
}

// No admin client here: its fetchTopicMetadata/fetchTopicOffsets (DescribeTopics / ListOffsets
// admin ops) time out against the 2.0.2 mock (Metadata max v2). The consumer below still sends
// Metadata and ListOffsets (offset reset to earliest).

const expected = plan.batches.reduce((n, b) => n + b.records.length, 0);
const consumer = kafka.consumer({
  kafkaJS: { groupId: plan.groupId, fromBeginning: true, autoCommit: true, autoCommitInterval: 300 },
  'heartbeat.interval.ms': 500,
  'session.timeout.ms': 10000,
  'fetch.wait.max.ms': 200,
});
await consumer.connect();
await consumer.subscribe({ topics: [plan.topic] });
let got = 0;
await new Promise((resolve) => {
  consumer.run({
    eachMessage: async () => {
      got++;
      if (got >= expected) resolve();
    },
  });
});
await new Promise((r) => setTimeout(r, 1200));
await consumer.disconnect();
clearTimeout(deadline);
console.error(`confluent driver: consumed ${got}/${expected}`);
