/**
 * Share groups (KIP-932) with librdkafka 2.15's share consumer (rd_kafka_share_*, a small C driver:
 * test/helpers/native/rdkafka-share.c) against a real gregor, records produced with kafkajs: three
 * members on one partition each accept a share of 30,000 records and every record is accepted exactly
 * once; a released record comes back with delivery count 2, a rejected one never; a member that
 * stalls or is killed with records acquired has them redelivered to the others (after the lock
 * duration, or at once when its connection goes). Fails (never skips) when librdkafka is not built.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { until } from '../helpers/eos.js';
import { librdkafkaMissing, ShareConsumer, shareMembersJoined } from '../helpers/share-consumer.js';
import type { ShareService } from '../../lib/share/index.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const LOCK_MS = 2000;

describe('share groups with librdkafka 2.15 share consumers', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let b: TestBroker;
  let kafka: import('kafkajs').Kafka;
  let producer: import('kafkajs').Producer;
  const consumers: ShareConsumer[] = [];
  const share = () => (b.broker as unknown as { services: { share: ShareService } }).services.share;

  before(async () => {
    const missing = librdkafkaMissing();
    if (missing !== null) throw new Error(missing);
    b = cleanup.add(
      await startTestBroker({
        'group.share.partition.max.record.locks': 100,
        'group.share.min.record.lock.duration.ms': 1000,
        'group.share.record.lock.duration.ms': LOCK_MS,
        'group.share.delivery.count.limit': 3,
      }),
      (t) => t.stop(),
    );
    kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'share-test', logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: ['work', 'acks', 'stall', 'killed'].map((topic) => ({ topic, numPartitions: 1 })) });
    await admin.disconnect();
    producer = cleanup.add(kafka.producer(), (p) => p.disconnect());
    await producer.connect();
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.kill()));
  });
  after(() => cleanup.run());

  function consumer(group: string, topic: string): ShareConsumer {
    const c = new ShareConsumer(b.bootstrap, group, topic);
    consumers.push(c);
    return c;
  }

  /** Waits until the share group has `n` members, each assigned the topic's partition. */
  const joined = (group: string, n: number): Promise<void> => shareMembersJoined(share, group, n);

  async function produce(topic: string, values: string[]): Promise<void> {
    for (let i = 0; i < values.length; i += 1000) {
      await producer.send({ topic, messages: values.slice(i, i + 1000).map((value) => ({ value })) });
    }
  }

  it('three members share one partition: 30,000 records each accepted exactly once, spread over all three', async () => {
    const members = [consumer('g-work', 'work'), consumer('g-work', 'work'), consumer('g-work', 'work')];
    await joined('g-work', 3);
    const N = 30_000;
    await produce(
      'work',
      Array.from({ length: N }, (_, i) => `v${i}`),
    );
    const accepted = () => members.reduce((n, m) => n + m.deliveries.filter((d) => d.ack === 'A').length, 0);
    await until(
      () => accepted() >= N,
      120_000,
      () => `${N} accepted records (have ${accepted()})`,
    );
    await Promise.all(members.map((m) => m.close()));
    const byOffset = new Map<number, number>();
    for (const m of members) for (const d of m.deliveries) if (d.ack === 'A') byOffset.set(d.offset, (byOffset.get(d.offset) ?? 0) + 1);
    expect(byOffset.size).to.equal(N);
    expect([...byOffset.values()].every((n) => n === 1)).to.equal(true);
    expect(Math.min(...byOffset.keys())).to.equal(0);
    expect(Math.max(...byOffset.keys())).to.equal(N - 1);
    // a small group.share.partition.max.record.locks keeps any one member from taking everything
    for (const m of members) expect(m.deliveries.length).to.be.greaterThan(N / 20);
    const sp = share().partitions.list('g-work')[0];
    expect(sp?.startOffset).to.equal(BigInt(N));
    for (const m of members) expect(m.errors).to.deep.equal([]);
  });

  it('a released record comes back with delivery count 2, a rejected one never, one released past the limit is archived', async () => {
    const c = consumer('g-acks', 'acks');
    await joined('g-acks', 1);
    await produce('acks', ['release-once-a', 'reject-b', 'plain-c', 'release-always-d', 'plain-e']);
    await until(
      () => c.deliveries.filter((d) => d.offset === 3).length >= 3 && c.deliveries.some((d) => d.offset === 4),
      30_000,
      () => JSON.stringify(c.deliveries),
    );
    // what happens next is nothing: wait for another full lock duration and see no more deliveries
    const before = c.deliveries.length;
    await new Promise((r) => setTimeout(r, LOCK_MS + 1000));
    expect(c.deliveries.length).to.equal(before);
    const of = (o: number) => c.deliveries.filter((d) => d.offset === o).map((d) => `${d.deliveryCount}${d.ack}`);
    expect(of(0)).to.deep.equal(['1R', '2A']);
    expect(of(1)).to.deep.equal(['1X']);
    expect(of(2)).to.deep.equal(['1A']);
    expect(of(3)).to.deep.equal(['1R', '2R', '3R']); // group.share.delivery.count.limit=3: archived after the third
    expect(of(4)).to.deep.equal(['1A']);
    expect(share().partitions.list('g-acks')[0]?.startOffset).to.equal(5n);
  });

  it('a member that stops acknowledging has its records redelivered to another after the lock duration', async () => {
    const stalled = consumer('g-stall', 'stall');
    await joined('g-stall', 1);
    await produce('stall', ['hold-0', 'x-1', 'x-2']);
    await until(
      () => stalled.deliveries.length >= 3,
      30_000,
      () => JSON.stringify(stalled.deliveries),
    );
    expect(stalled.deliveries.map((d) => d.ack)).to.deep.equal(['H', 'H', 'H']);
    const other = consumer('g-stall', 'stall');
    await joined('g-stall', 2);
    // the stalled member keeps its connection and its records stay acquired until their locks expire
    await until(
      () => other.deliveries.length >= 3,
      30_000,
      () => JSON.stringify(other.deliveries),
    );
    const counts = other.deliveries.map((d) => `${d.offset}:${d.deliveryCount}${d.ack}`);
    expect(counts).to.deep.equal(['0:2A', '1:2A', '2:2A']);
  });

  it('a member killed with records acquired: the others get them', async () => {
    const doomed = consumer('g-killed', 'killed');
    await joined('g-killed', 1);
    await produce('killed', ['hold-0', 'y-1']);
    await until(
      () => doomed.deliveries.length >= 2,
      30_000,
      () => JSON.stringify(doomed.deliveries),
    );
    await doomed.kill();
    const other = consumer('g-killed', 'killed');
    await until(
      () => other.deliveries.some((d) => d.offset === 1),
      30_000,
      () => JSON.stringify(other.deliveries),
    );
    expect(other.deliveries.find((d) => d.offset === 1)?.deliveryCount).to.equal(2);
  });
});
