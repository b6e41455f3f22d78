/**
 * The broker-wide bound over the partition logs' recent-batches caches (gregor.log.recent.cache.bytes,
 * lib/log/recent-cache.ts), through kafkajs against a broker process: a producer sends every batch of
 * six partitions in one Produce request (so each partition's batch is a slice of a larger request) while
 * a consumer tails them; the caches stay within the bound as /metrics reports it, the tailing consumer
 * and a second one reading from the start (evicted ranges come from the segment files) get every value
 * in order, and with the bound at 0 the same reads come from the files alone.
 */
import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { rmSync } from 'node:fs';
import { startChildBroker, stopChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';

const { Kafka, logLevel } = kafkajs;
const PARTITIONS = 6;
const ROUNDS = 40;
const PER_BATCH = 20;
const LIMIT = 256 * 1024;

const valueOf = (p: number, i: number): string => `${p}:${i}:${'v'.repeat(480)}`;

async function metric(admin: string, name: string): Promise<number | undefined> {
  const text = await (await fetch(`http://${admin}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

/** Every value of `topic` by partition, read by a new group from the start until `total` arrived. */
async function readAll(
  kafka: kafkajs.Kafka,
  topic: string,
  group: string,
  total: number,
  during?: () => Promise<void>,
): Promise<string[][]> {
  const got: string[][] = Array.from({ length: PARTITIONS }, () => []);
  let n = 0;
  const consumer = kafka.consumer({ groupId: group, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    let done!: () => void;
    const all = new Promise<void>((r) => (done = r));
    await consumer.run({
      eachMessage: ({ partition, message }) => {
        got[partition]?.push(message.value?.toString() ?? '');
        if (++n === total) done();
        return Promise.resolve();
      },
    });
    if (during !== undefined) await during();
    await Promise.race([
      all,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`${group}: ${n} of ${total} records after 60 s`)), 60_000)),
    ]);
  } finally {
    await consumer.disconnect();
  }
  return got;
}

describe('recent-batches caches within gregor.log.recent.cache.bytes (kafkajs, broker process)', function () {
  this.timeout(180_000);
  const expected = Array.from({ length: PARTITIONS }, (_, p) => Array.from({ length: ROUNDS * PER_BATCH }, (_, i) => valueOf(p, i)));
  const total = PARTITIONS * ROUNDS * PER_BATCH;

  for (const limit of [LIMIT, 0]) {
    it(`limit ${limit}: multi-partition produce while a consumer tails, then a read from the start`, async () => {
      const dir = tempDir();
      let b: ChildBroker | undefined;
      try {
        b = await startChildBroker(dir, 0, { 'gregor.log.recent.cache.bytes': String(limit), 'admin.listener': '127.0.0.1:0' });
        const admin = b.admin;
        if (admin === null) throw new Error('no admin listener');
        const kafka = new Kafka({ clientId: 'recent-cache', brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
        const ka = kafka.admin();
        await ka.connect();
        await ka.createTopics({ topics: [{ topic: 'recent', numPartitions: PARTITIONS }] });
        await ka.disconnect();
        const producer = kafka.producer();
        await producer.connect();
        let peak = 0;
        const tailed = await readAll(kafka, 'recent', 'tail', total, async () => {
          for (let r = 0; r < ROUNDS; r++) {
            // one Produce request: a batch for every partition
            await producer.sendBatch({
              topicMessages: [
                {
                  topic: 'recent',
                  messages: Array.from({ length: PARTITIONS * PER_BATCH }, (_, k) => {
                    const p = k % PARTITIONS;
                    return { partition: p, value: valueOf(p, r * PER_BATCH + Math.floor(k / PARTITIONS)) };
                  }),
                },
              ],
            });
            if (r % 10 === 9) peak = Math.max(peak, (await metric(admin, 'gregor_log_recent_cache_bytes')) ?? Infinity);
          }
        });
        await producer.disconnect();
        expect(tailed).to.deep.equal(expected);
        const bytes = await metric(admin, 'gregor_log_recent_cache_bytes');
        const entries = await metric(admin, 'gregor_log_recent_cache_entries');
        // ~1.2 MB went through the caches
        if (limit > 0) {
          expect(peak).to.be.at.most(limit);
          expect(bytes)
            .to.be.above(limit / 2)
            .and.at.most(limit);
          expect(entries).to.be.above(0);
        } else {
          expect(bytes).to.equal(0);
          expect(entries).to.equal(0);
        }
        // evicted ranges (or, at 0, everything) come from the segment files
        expect(await readAll(kafka, 'recent', 'from-start', total)).to.deep.equal(expected);
      } finally {
        if (b !== undefined) await stopChildBroker(b);
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
