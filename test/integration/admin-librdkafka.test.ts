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
import { type Broker, startBroker } from '../../lib/broker.js';
import { createLogger, silentLogger } from '../../lib/observability/logger.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { RawClient } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';
import { asError } from '../../lib/as-error.js';

type Any = any;

/** Kafka error codes as librdkafka reports them (same numbers). */
const Err = {
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  OFFSET_OUT_OF_RANGE: 1,
  INVALID_PARTITIONS: 37,
  INVALID_REPLICATION_FACTOR: 38,
  INVALID_CONFIG: 40,
} as const;

/** Broker logs stay quiet unless TEST_LOG names a level. */
const testLogger = () => (process.env['TEST_LOG'] !== undefined ? createLogger({ level: process.env['TEST_LOG'] }) : silentLogger());

describe('admin APIs through librdkafka (integration)', function () {
  let dataDir: string;
  let broker: Broker;
  let ck: Any;
  let kafka: Any;
  let admin: Any;
  let native: Any;

  const cleanup = new Cleanup();

  before(async function () {
    ck = loadConfluent();
    dataDir = cleanup.add(await mkdtemp(join(tmpdir(), 'gregor-admin-rd-')), (d) => rm(d, { recursive: true, force: true }));
    broker = cleanup.add(await startBroker({ port: 0, dataDir, logger: testLogger() }), (b) => b.stop());
    kafka = new ck.KafkaJS.Kafka({ kafkaJS: { brokers: [broker.bootstrapServers], logLevel: ck.KafkaJS.logLevel.NOTHING } });
    admin = cleanup.add(kafka.admin(), (a) => a.disconnect());
    await admin.connect();
    native = cleanup.add(ck.AdminClient.create({ 'bootstrap.servers': broker.bootstrapServers, log_level: 0 }), (n) => n.disconnect());
  });

  after(() => cleanup.run());

  async function failure(fn: () => Promise<unknown>): Promise<Any> {
    try {
      await fn();
    } catch (e) {
      return e;
    }
    throw new Error('expected a failure');
  }

  /** Whether a topic exists, through a Metadata request naming it (the all-topics path has its own test). */
  async function exists(topic: string): Promise<boolean> {
    try {
      await admin.fetchTopicMetadata({ topics: [topic] });
      return true;
    } catch (e) {
      if ((e as Any).code === Err.UNKNOWN_TOPIC_OR_PARTITION) return false;
      throw e;
    }
  }

  /** The topic id the broker itself reports (Metadata v12 over a raw connection), as 32 hex digits. */
  async function brokerTopicId(topic: string): Promise<string> {
    const raw = await RawClient.connect(broker.bootstrapServers);
    try {
      const md = await raw.request<{ topics: { name: string; errorCode: number; topicId: string }[] }>(3, 12, {
        topics: [{ topicId: '00000000000000000000000000000000', name: topic }],
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false,
      });
      const t = md.topics.find((x) => x.name === topic);
      expect(t?.errorCode, `Metadata ${topic}`).to.equal(0);
      return t!.topicId;
    } finally {
      raw.destroy();
    }
  }

  /** librdkafka's topic id ({ mostSignificantBits, leastSignificantBits, base64 }) as 32 hex digits. */
  function rdTopicId(id: Any): string {
    return Buffer.from(String(id.base64), 'base64').toString('hex');
  }

  function createPartitions(topic: string, total: number): Promise<void> {
    return new Promise((resolve, reject) =>
      native.createPartitions(topic, total, 5000, (err: Any) => (err ? reject(asError(err)) : resolve())),
    );
  }

  it('creates topics with configs and describes them', async function () {
    const created = await admin.createTopics({
      topics: [
        { topic: 'rd-created', numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
      ],
    });
    expect(created).to.equal(true);
    const [md] = await admin.fetchTopicMetadata({ topics: ['rd-created'] });
    expect(md.name).to.equal('rd-created');
    expect(md.partitions.map((p: Any) => p.partitionId)).to.deep.equal([0, 1, 2]);
    expect(md.partitions[0].leader).to.equal(0);
    const id = await brokerTopicId('rd-created');
    expect(id).to.match(/^[0-9a-f]{32}$/);
    expect(id).to.not.equal('00000000000000000000000000000000');
    expect(rdTopicId(md.topicId)).to.equal(id);
    expect(BigInt.asUintN(64, BigInt(md.topicId.mostSignificantBits)).toString(16).padStart(16, '0')).to.equal(id.slice(0, 16));
    expect(BigInt.asUintN(64, BigInt(md.topicId.leastSignificantBits)).toString(16).padStart(16, '0')).to.equal(id.slice(16));
    expect(await exists('rd-created')).to.equal(true);
    // An existing topic: the KafkaJS-style admin answers false instead of failing.
    expect(await admin.createTopics({ topics: [{ topic: 'rd-created', numPartitions: 1 }] })).to.equal(false);
  });

  it('lists every topic through the all-topics Metadata request (listTopics, fetchTopicMetadata without topics)', async function () {
    await admin.createTopics({
      topics: [
        { topic: 'rd-list-a', numPartitions: 2 },
        { topic: 'rd-list-b', numPartitions: 1 },
      ],
    });
    const names: string[] = await admin.listTopics();
    expect(names).to.include.members(['rd-list-a', 'rd-list-b']);
    // listTopics leaves internal topics out, as Kafka's admin does
    expect(names.filter((n) => n.startsWith('__'))).to.deep.equal([]);
    const all: Any[] = await admin.fetchTopicMetadata();
    const byName = new Map(all.map((t: Any) => [t.name, t]));
    expect(byName.get('rd-list-a')?.partitions.map((p: Any) => p.partitionId)).to.deep.equal([0, 1]);
    expect(byName.get('rd-list-b')?.partitions.map((p: Any) => p.partitionId)).to.deep.equal([0]);
    expect(rdTopicId(byName.get('rd-list-a').topicId)).to.equal(await brokerTopicId('rd-list-a'));
    // a topic deleted since is gone from the list
    await admin.deleteTopics({ topics: ['rd-list-b'] });
    expect(await admin.listTopics()).to.not.include('rd-list-b');
  });

  it('reports broker-side creation errors per topic', async function () {
    let e = await failure(() => admin.createTopics({ topics: [{ topic: 'rd-rf3', numPartitions: 1, replicationFactor: 3 }] }));
    expect(e.errors?.[0]?.code).to.equal(Err.INVALID_REPLICATION_FACTOR);
    e = await failure(() =>
      admin.createTopics({ topics: [{ topic: 'rd-badcfg', configEntries: [{ name: 'retention.ms', value: 'never' }] }] }),
    );
    expect(e.errors?.[0]?.code).to.equal(Err.INVALID_CONFIG);
    e = await failure(() =>
      admin.createTopics({ topics: [{ topic: 'rd-badkey', configEntries: [{ name: 'no.such.config', value: '1' }] }] }),
    );
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
    const producer = kafka.producer();
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
