/**
 * __consumer_offsets is compacted (issue 16): a kafkajs consumer committing every 10 ms keeps its
 * partition under a bound, and after a restart the group resumes at its last commit (the group
 * coordinator reloads from the cleaned log).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { sleep, until } from '../helpers/eos.js';

const { Kafka, logLevel } = kafkajs;
const SEGMENT = 16384;
/** The bound: four segments of offsets.topic.segment.bytes (the active one, and cleaned or not-yet-cleaned ones). */
const BOUND = 4 * SEGMENT;

/** Bytes of the live segments (`.log` files; segments swapped out wait as `.deleted` for file.delete.delay.ms). */
function offsetsLogBytes(dataDir: string): number {
  const dir = path.join(dataDir, '__consumer_offsets-0');
  let n = 0;
  for (const f of fs.readdirSync(dir)) if (f.endsWith('.log')) n += fs.statSync(path.join(dir, f)).size;
  return n;
}

describe('log cleaner: __consumer_offsets stays bounded', function () {
  this.timeout(120_000);
  const dataDir = tempDir('gregor-offsets-clean-');
  const config = {
    'offsets.topic.num.partitions': 1,
    'offsets.topic.segment.bytes': SEGMENT,
    'log.cleaner.backoff.ms': 200,
  };
  let b: TestBroker | null = null;
  after(async () => {
    await b?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it(`a consumer committing every 10 ms for 12 s keeps __consumer_offsets under ${BOUND} bytes; the group resumes at its last commit after a restart`, async () => {
    b = await startTestBroker(config, { dataDir });
    const kafka = new Kafka({ clientId: 'offsets-clean', brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'events', numPartitions: 2 }] });
    const consumer = kafka.consumer({ groupId: 'committer' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'events', fromBeginning: true });
    await consumer.run({ autoCommit: false, eachMessage: async () => Promise.resolve() });
    await until(async () => (await admin.describeGroups(['committer'])).groups[0]?.state === 'Stable', 30_000, 'the group to be stable');
    const started = Date.now();
    let commits = 0;
    let maxBytes = 0;
    while (Date.now() - started < 12_000) {
      commits++;
      await consumer.commitOffsets([
        { topic: 'events', partition: 0, offset: String(commits) },
        { topic: 'events', partition: 1, offset: String(2 * commits) },
      ]);
      maxBytes = Math.max(maxBytes, offsetsLogBytes(dataDir));
      await sleep(10);
    }
    const [written] = await admin.fetchTopicOffsets('__consumer_offsets');
    await consumer.disconnect();
    // what was written would not fit the bound uncleaned; what is on disk did all along
    expect(Number(written?.high) * 100, `${commits} commits`).to.be.greaterThan(2 * BOUND);
    expect(maxBytes).to.be.lessThan(BOUND);
    const cleaned = b.broker.cleaner?.stats.cleanings ?? 0;
    expect(cleaned).to.be.greaterThan(0);
    await admin.disconnect();
    await b.stop();

    b = await startTestBroker(config, { dataDir });
    const admin2 = new Kafka({ clientId: 'offsets-clean-2', brokers: [b.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin2.connect();
    const [fetched] = await admin2.fetchOffsets({ groupId: 'committer', topics: ['events'] });
    const byPartition = new Map((fetched?.partitions ?? []).map((p) => [p.partition, p.offset]));
    expect(byPartition.get(0)).to.equal(String(commits));
    expect(byPartition.get(1)).to.equal(String(2 * commits));
    await admin2.disconnect();
  });
});

describe('log cleaner: __transaction_state is compacted', function () {
  this.timeout(120_000);
  const dataDir = tempDir('gregor-txn-clean-');
  const config = {
    'transaction.state.log.num.partitions': 1,
    'transaction.state.log.segment.bytes': SEGMENT,
    'log.cleaner.backoff.ms': 200,
  };
  let b: TestBroker | null = null;
  after(async () => {
    await b?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('300 transactions of one transactional id: the state log is cleaned, and after a restart the id commits again and its data reads back', async () => {
    b = await startTestBroker(config, { dataDir });
    let kafka = new Kafka({ clientId: 'txn-clean', brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'txn-data', numPartitions: 1 }] });
    let producer = kafka.producer({ transactionalId: 'cleaned-txn', maxInFlightRequests: 1, idempotent: true });
    await producer.connect();
    for (let i = 0; i < 300; i++) {
      const t = await producer.transaction();
      await t.send({ topic: 'txn-data', messages: [{ key: 'k', value: `v${i}` }] });
      await t.commit();
    }
    await producer.disconnect();
    const dir = path.join(dataDir, '__transaction_state-0');
    const liveBytes = (): number => {
      let n = 0;
      for (const f of fs.readdirSync(dir)) if (f.endsWith('.log')) n += fs.statSync(path.join(dir, f)).size;
      return n;
    };
    // what was written would not fit the bound uncleaned; the cleaner brings the live segments under it
    const [written] = await admin.fetchTopicOffsets('__transaction_state');
    expect(Number(written?.high) * 100).to.be.greaterThan(BOUND);
    await until(
      () => liveBytes() < BOUND,
      30_000,
      () => `__transaction_state under ${BOUND} bytes (${liveBytes()})`,
    );
    await admin.disconnect();
    await b.stop();

    b = await startTestBroker(config, { dataDir });
    kafka = new Kafka({ clientId: 'txn-clean-2', brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
    producer = kafka.producer({ transactionalId: 'cleaned-txn', maxInFlightRequests: 1, idempotent: true });
    await producer.connect();
    const t = await producer.transaction();
    await t.send({ topic: 'txn-data', messages: [{ key: 'k', value: 'after-restart' }] });
    await t.commit();
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: 'txn-clean-reader' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'txn-data', fromBeginning: true });
    const values: string[] = [];
    await consumer.run({
      eachMessage: ({ message }) => {
        values.push(String(message.value));
        return Promise.resolve();
      },
    });
    await until(() => values.length >= 301, 30_000, 'the committed records');
    await consumer.disconnect();
    expect(values[0]).to.equal('v0');
    expect(values[values.length - 1]).to.equal('after-restart');
  });
});
