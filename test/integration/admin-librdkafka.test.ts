/**
 * Admin APIs through librdkafka 2.15 (@confluentinc/kafka-javascript): its KafkaJS-style admin for
 * topics, metadata, offsets and record deletion, and its native AdminClient for CreatePartitions
 * (not exposed by the KafkaJS-style admin). The client exposes no config APIs, so those are covered
 * by admin.test.ts. Fails (never skips) when the native module is missing.
 */
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { type Broker, startBroker } from '../../lib/broker.js';
import { createLogger, silentLogger } from '../../lib/observability/logger.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';

type Any = any;


/** Kafka error codes as librdkafka reports them (same numbers). */
const Err = { UNKNOWN_TOPIC_OR_PARTITION: 3, OFFSET_OUT_OF_RANGE: 1, INVALID_PARTITIONS: 37, INVALID_REPLICATION_FACTOR: 38, INVALID_CONFIG: 40 } as const;

/** Broker logs stay quiet unless TEST_LOG names a level. */
const testLogger = () => (process.env['TEST_LOG'] !== undefined ? createLogger({ level: process.env['TEST_LOG'] }) : silentLogger());

describe('admin APIs through librdkafka (integration)', function () {
  let dataDir: string;
  let broker: Broker;
  let ck: Any;
  let kafka: Any;
  let admin: Any;
  let native: Any;

  before(async function () {
    ck = loadConfluent();
    dataDir = await mkdtemp(join(tmpdir(), 'gregor-admin-rd-'));
    broker = await startBroker({ port: 0, dataDir, logger: testLogger() });
    kafka = new ck.KafkaJS.Kafka({ kafkaJS: { brokers: [broker.bootstrapServers], logLevel: ck.KafkaJS.logLevel.NOTHING } });
    admin = kafka.admin();
    await admin.connect();
    native = ck.AdminClient.create({ 'bootstrap.servers': broker.bootstrapServers, 'log_level': 0 });
  });

  after(async function () {
    native?.disconnect();
    await admin?.disconnect();
    await broker?.stop();
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  });

  async function failure(fn: () => Promise<unknown>): Promise<Any> {
    try {
      await fn();
    } catch (e) {
      return e;
    }
    throw new Error('expected a failure');
  }

  /**
   * Whether a topic exists, through a Metadata request naming it. (listTopics is avoided: librdkafka's
   * all-topics Metadata v9+ request carries 3 stray bytes, which Kafka ignores and gregor refuses.)
   */
  async function exists(topic: string): Promise<boolean> {
    try {
      await admin.fetchTopicMetadata({ topics: [topic] });
      return true;
    } catch (e) {
      if ((e as Any).code === Err.UNKNOWN_TOPIC_OR_PARTITION) return false;
      throw e;
    }
  }

  function createPartitions(topic: string, total: number): Promise<void> {
    return new Promise((resolve, reject) => native.createPartitions(topic, total, 5000, (err: Any) => (err ? reject(err) : resolve())));
  }

  it('creates topics with configs and describes them', async function () {
    const created = await admin.createTopics({
      topics: [{ topic: 'rd-created', numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }],
    });
    expect(created).to.equal(true);
    const [md] = await admin.fetchTopicMetadata({ topics: ['rd-created'] });
    expect(md.name).to.equal('rd-created');
    expect(md.partitions.map((p: Any) => p.partitionId)).to.deep.equal([0, 1, 2]);
    expect(md.partitions[0].leader).to.equal(0);
    expect(md.topicId).to.exist;
    expect(await exists('rd-created')).to.equal(true);
    // An existing topic: the KafkaJS-style admin answers false instead of failing.
    expect(await admin.createTopics({ topics: [{ topic: 'rd-created', numPartitions: 1 }] })).to.equal(false);
  });

  it('reports broker-side creation errors per topic', async function () {
    let e = await failure(() => admin.createTopics({ topics: [{ topic: 'rd-rf3', numPartitions: 1, replicationFactor: 3 }] }));
    expect(e.errors?.[0]?.code).to.equal(Err.INVALID_REPLICATION_FACTOR);
    e = await failure(() => admin.createTopics({ topics: [{ topic: 'rd-badcfg', configEntries: [{ name: 'retention.ms', value: 'never' }] }] }));
    expect(e.errors?.[0]?.code).to.equal(Err.INVALID_CONFIG);
    e = await failure(() => admin.createTopics({ topics: [{ topic: 'rd-badkey', configEntries: [{ name: 'no.such.config', value: '1' }] }] }));
    expect(e.errors?.[0]?.code).to.equal(Err.INVALID_CONFIG);
    for (const t of ['rd-rf3', 'rd-badcfg', 'rd-badkey']) expect(await exists(t), t).to.equal(false);
  });

  it('deletes topics (DeleteTopics v4), and fails on an unknown one', async function () {
    await admin.createTopics({ topics: [{ topic: 'rd-doomed', numPartitions: 2 }] });
    await admin.deleteTopics({ topics: ['rd-doomed'] });
    expect(await exists('rd-doomed')).to.equal(false);
    const e = await failure(() => admin.deleteTopics({ topics: ['rd-never-existed'] }));
    expect(e.code).to.equal(Err.UNKNOWN_TOPIC_OR_PARTITION);
  });

  it('grows partitions (CreatePartitions v2) and refuses to shrink', async function () {
    await admin.createTopics({ topics: [{ topic: 'rd-grow', numPartitions: 1 }] });
    await createPartitions('rd-grow', 3);
    const [md] = await admin.fetchTopicMetadata({ topics: ['rd-grow'] });
    expect(md.partitions).to.have.length(3);
    const shrink = await failure(() => createPartitions('rd-grow', 2));
    expect(shrink.code).to.equal(Err.INVALID_PARTITIONS);
    const unknown = await failure(() => createPartitions('rd-missing', 2));
    expect(unknown.code).to.equal(Err.UNKNOWN_TOPIC_OR_PARTITION);
  });

  it('deleteTopicRecords (DeleteRecords v2) moves the low watermark', async function () {
    await admin.createTopics({ topics: [{ topic: 'rd-records', numPartitions: 2 }] });
    // Records come from kafkajs: librdkafka's producer sends the all-topics Metadata request noted above.
    const producer = new kafkajs.Kafka({ brokers: [broker.bootstrapServers], logLevel: kafkajs.logLevel.NOTHING }).producer();
    await producer.connect();
    for (let i = 0; i < 6; i++) await producer.send({ topic: 'rd-records', messages: [{ value: `v${i}`, partition: 0 }] });
    await producer.send({ topic: 'rd-records', messages: [{ value: 'p1', partition: 1 }] });
    await producer.disconnect();

    const results = await admin.deleteTopicRecords({ topic: 'rd-records', partitions: [{ partition: 0, offset: '3' }] });
    expect(results.map((r: Any) => [r.partition, Number(r.lowWatermark), r.error ?? null])).to.deep.equal([[0, 3, null]]);
    const offsets = await admin.fetchTopicOffsets('rd-records');
    const p0 = offsets.find((o: Any) => o.partition === 0);
    expect([p0.low, p0.high]).to.deep.equal(['3', '6']);
    expect(offsets.find((o: Any) => o.partition === 1)).to.include({ low: '0', high: '1' });

    // -1: everything up to the high watermark.
    const all = await admin.deleteTopicRecords({ topic: 'rd-records', partitions: [{ partition: 1, offset: '-1' }] });
    expect(Number(all[0].lowWatermark)).to.equal(1);

    const beyond = await failure(() => admin.deleteTopicRecords({ topic: 'rd-records', partitions: [{ partition: 0, offset: '100' }] }));
    expect(beyond.partitions?.[0]?.error?.code).to.equal(Err.OFFSET_OUT_OF_RANGE);
  });

  it('describes the cluster through metadata', async function () {
    // The KafkaJS-style admin has no describeCluster; the native one builds it from Metadata.
    const topics = await admin.fetchTopicMetadata({ topics: ['rd-created', 'rd-grow'] });
    expect(topics.map((t: Any) => t.name).sort()).to.deep.equal(['rd-created', 'rd-grow']);
    const missing = await failure(() => admin.fetchTopicMetadata({ topics: ['rd-no-such-topic'] }));
    expect(missing.code).to.equal(Err.UNKNOWN_TOPIC_OR_PARTITION);
  });
});
