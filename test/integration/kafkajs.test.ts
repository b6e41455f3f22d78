/** kafkajs 2.2.4 against a real gregor: 10,000 keyed records with headers, read back exactly. */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { KafkajsPartitionReader } from '../helpers/kafkajs-reader.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const { Kafka, CompressionTypes, logLevel } = require('kafkajs') as typeof import('kafkajs');

interface Sent {
  key: string;
  value: string;
  headers: Record<string, string>;
  timestamp: string;
}

describe('kafkajs 2.2.4: produce and read back', function () {
  this.timeout(120_000);
  let b: TestBroker;
  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker({ 'num.partitions': 3 }), (t) => t.stop());
  });
  after(() => cleanup.run());

  for (const [codecName, codec] of [
    ['none', CompressionTypes.None],
    ['gzip', CompressionTypes.GZIP],
  ] as const) {
    it(`10,000 keyed records with headers, ${codecName}, 3 partitions: keys, values, headers, timestamps, offsets`, async () => {
      const topic = `kjs-${codecName}`;
      const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'gregor-test', logLevel: logLevel.NOTHING });
      const producer = kafka.producer({ allowAutoTopicCreation: true });
      await producer.connect();
      const sent = new Map<number, Sent[]>();
      const base = Date.now() - 60_000;
      for (let batch = 0; batch < 20; batch++) {
        const messages = Array.from({ length: 500 }, (_, i) => {
          const n = batch * 500 + i;
          return {
            key: `key-${n}`,
            value: `value-${n}-${'x'.repeat(n % 50)}`,
            headers: { n: String(n), codec: codecName },
            timestamp: String(base + n),
            partition: n % 3,
          };
        });
        const res = await producer.send({ topic, messages, compression: codec, acks: batch % 2 === 0 ? -1 : 1 });
        for (const r of res) expect(r.errorCode).to.equal(0);
        for (const m of messages) {
          const list = sent.get(m.partition) ?? [];
          list.push({ key: m.key, value: m.value, headers: m.headers, timestamp: m.timestamp });
          sent.set(m.partition, list);
        }
      }
      await producer.disconnect();

      const admin = kafka.admin();
      await admin.connect();
      const offsets = await admin.fetchTopicOffsets(topic);
      await admin.disconnect();
      expect(offsets.map((o) => [o.partition, o.high, o.low]).sort()).to.deep.equal(
        [0, 1, 2].map((p) => [p, String(sent.get(p)?.length), '0']),
      );

      const reader = new KafkajsPartitionReader([b.bootstrap]);
      await reader.connect(topic);
      let total = 0;
      for (let p = 0; p < 3; p++) {
        const want = sent.get(p) ?? [];
        const got = await reader.readAll(topic, p, 0n, BigInt(want.length));
        expect(got.length).to.equal(want.length);
        got.forEach((m, i) => {
          const w = want[i];
          expect(m.offset).to.equal(String(i));
          expect(m.key?.toString()).to.equal(w?.key);
          expect(m.value?.toString()).to.equal(w?.value);
          expect(m.timestamp).to.equal(w?.timestamp);
          expect(Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, String(v)]))).to.deep.equal(w?.headers);
        });
        total += got.length;
      }
      await reader.disconnect();
      expect(total).to.equal(10_000);
    });
  }
});
