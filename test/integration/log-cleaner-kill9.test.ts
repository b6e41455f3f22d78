/**
 * kill -9 during cleaning (issue 16), 10 rounds at random points: a child broker cleans a compacted
 * topic (throttled by log.cleaner.io.max.bytes.per.second so a cleaning lasts a few seconds) while
 * it is killed; restarted (cleaner off, so the files hold still), every key's latest value is there
 * and the partition's files pass a full integrity scan; then it stops cleanly for the next round.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { type ChildBroker, startChildBroker, tempDir } from '../helpers/broker.js';
import { sleep, until } from '../helpers/eos.js';
import { KafkajsPartitionReader } from '../helpers/kafkajs-reader.js';
import { scanPartitionDir } from '../helpers/log-scan.js';

const { Kafka, logLevel } = kafkajs;
const TOPIC = 'kill9-compacted';
const KEYS = 500;
const ROUNDS = 10;

describe('log cleaner: kill -9 during cleaning (child broker, 10 rounds)', function () {
  this.timeout(300_000);
  const dir = tempDir('gregor-clean-kill9-');
  const partitionDir = path.join(dir, `${TOPIC}-0`);
  let broker: ChildBroker | null = null;
  after(() => {
    if (broker !== null && broker.child.exitCode === null && broker.child.signalCode === null) broker.child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const start = (port: number, cleaner: boolean): Promise<ChildBroker> =>
    startChildBroker(dir, port, {
      'log.cleaner.enable': String(cleaner),
      'log.cleaner.backoff.ms': '100',
      'log.cleaner.io.max.bytes.per.second': '300000',
    });

  it('every live key keeps its latest value and the log passes an integrity scan after each kill', async () => {
    broker = await start(0, true);
    const port = broker.port;
    const admin = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        {
          topic: TOPIC,
          numPartitions: 1,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'segment.bytes', value: '32768' },
            { name: 'min.cleanable.dirty.ratio', value: '0.01' },
          ],
        },
      ],
    });
    await admin.disconnect();
    const latest = new Map<string, string>();
    let seq = 0;
    /** Rounds whose kill left a cleaning's output behind (killed while it rewrote segments; a kill while it maps keys leaves none). */
    let midClean = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 10 } });
      const producer = kafka.producer();
      await producer.connect();
      for (let s = 0; s < 25; s++) {
        const messages = Array.from({ length: 200 }, () => {
          const n = seq++;
          const key = `key-${(n * 7919) % KEYS}`;
          const value = `${key}:${n}:${'z'.repeat(60)}`;
          latest.set(key, value);
          return { key, value };
        });
        await producer.send({ topic: TOPIC, acks: -1, messages });
      }
      await producer.disconnect();
      // the cleaner is at work (throttled): odd rounds kill it at a random point, even rounds as soon
      // as it writes .cleaned files (polled every 5 ms, plus up to 30 ms: a rewrite of this log can end
      // within a few hundred ms, so a longer delay often missed it), so that both the mapping and the
      // rewrite are hit
      if (round % 2 === 1) await sleep(Math.floor(Math.random() * 3000));
      else {
        await until(() => fs.readdirSync(partitionDir).some((n) => n.endsWith('.cleaned')), 30_000, 'a cleaning to write', 5);
        await sleep(Math.floor(Math.random() * 30));
      }
      broker.child.kill('SIGKILL');
      expect(await broker.exited).to.equal(null);
      if (fs.readdirSync(partitionDir).some((n) => n.endsWith('.cleaned') || n.endsWith('.swap'))) midClean++;
      broker = await start(port, false);
      const reader = new KafkajsPartitionReader([broker.bootstrap]);
      await reader.connect(TOPIC);
      try {
        const admin2 = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
        await admin2.connect();
        const [p] = await admin2.fetchTopicOffsets(TOPIC);
        await admin2.disconnect();
        const got = new Map<string, string>();
        for (const m of await reader.readAll(TOPIC, 0, 0n, BigInt(p?.high ?? '0'))) got.set(String(m.key), String(m.value));
        expect(got.size, `round ${round}`).to.equal(KEYS);
        for (const [k, v] of latest) expect(got.get(k), `round ${round}: ${k}`).to.equal(v);
      } finally {
        await reader.disconnect();
      }
      const scan = scanPartitionDir(partitionDir);
      expect(scan.problems, `round ${round}`).to.deep.equal([]);
      broker.child.kill('SIGTERM');
      expect(await broker.exited).to.equal(0);
      broker = await start(port, true);
    }
    console.log(`      ${midClean} of ${ROUNDS} kills hit a cleaning while it wrote .cleaned files`);
    // the even rounds aim at the rewrite (a quiet machine hits all 5); one may still find it just finished
    expect(midClean).to.be.at.least(ROUNDS / 2 - 1);
  });
});
