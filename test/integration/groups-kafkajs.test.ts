/**
 * kafkajs 2.2.4 consumer groups against a real gregor: three consumers share a 6-partition topic while
 * 30,000 records are produced; one leaves and another joins mid-stream; every record is consumed exactly
 * once and the committed offsets end at the log end. Then the admin views (DescribeGroups, ListGroups,
 * OffsetFetch + ListOffsets = lag), and the time from the last of three members joining to Stable.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');
type Consumer = import('kafkajs').Consumer;

const PARTITIONS = 6;
const COUNT = 30_000;

async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('kafkajs 2.2.4 consumer groups', function () {
  this.timeout(120_000);
  let b: TestBroker;
  let kafka: import('kafkajs').Kafka;
  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker(), (t) => t.stop());
    kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'groups-kjs', logLevel: logLevel.NOTHING });
  });
  after(() => cleanup.run());

  it('3 consumers, 6 partitions, 30,000 records: exactly once across a leave and a join mid-stream', async () => {
    const topic = 'kjs-group-eo';
    const groupId = 'kjs-eo';
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }] });
    const seen = new Map<string, number>();
    const byConsumer = new Map<string, number>();
    const start = async (name: string): Promise<Consumer> => {
      const c = kafka.consumer({ groupId, heartbeatInterval: 500, maxWaitTimeInMs: 200 });
      await c.connect();
      await c.subscribe({ topic, fromBeginning: true });
      await c.run({
        eachMessage: ({ message }) => {
          const v = message.value?.toString() ?? '';
          seen.set(v, (seen.get(v) ?? 0) + 1);
          byConsumer.set(name, (byConsumer.get(name) ?? 0) + 1);
          return Promise.resolve();
        },
      });
      return c;
    };
    const c1 = await start('c1');
    const c2 = await start('c2');
    const c3 = await start('c3');
    const producer = kafka.producer();
    await producer.connect();
    let produced = 0;
    const produce = async (n: number) => {
      for (let i = 0; i < n; i += 1000) {
        await producer.send({
          topic,
          messages: Array.from({ length: 1000 }, (_, k) => ({ value: `r${produced + k}`, partition: (produced + k) % PARTITIONS })),
        });
        produced += 1000;
      }
    };
    await produce(COUNT / 2);
    await until(() => seen.size >= COUNT / 4, 30_000, 'a quarter of the records');
    // Mid-stream: one member leaves, another joins.
    await c2.disconnect();
    const c4 = await start('c4');
    await produce(COUNT / 2);
    await until(() => seen.size === COUNT, 60_000, `all ${COUNT} records (have ${seen.size})`);
    await new Promise((r) => setTimeout(r, 500));
    const dups = [...seen].filter(([, n]) => n > 1);
    expect(dups, `duplicates: ${dups.slice(0, 5).join(' ')}`).to.have.length(0);
    expect(seen.size).to.equal(COUNT);
    expect(byConsumer.get('c4') ?? 0).to.be.greaterThan(0);
    // Committed progress is the log end of every partition.
    await until(
      async () => {
        const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
        return offsets[0]?.partitions.every((p) => p.offset === String(COUNT / PARTITIONS)) ?? false;
      },
      20_000,
      'commits at the log end',
    );
    await Promise.all([c1.disconnect(), c3.disconnect(), c4.disconnect(), producer.disconnect()]);
    const described = await admin.describeGroups([groupId]);
    expect(described.groups[0]).to.include({ groupId, state: 'Empty', protocolType: 'consumer' });
    await admin.disconnect();
  });

  it('admin views: DescribeGroups, ListGroups, OffsetFetch + ListOffsets lag; DeleteGroups', async () => {
    const topic = 'kjs-group-admin';
    const groupId = 'kjs-admin';
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 100 }, (_, i) => ({ value: `v${i}`, partition: i % 2 })) });
    // Commit 10 and 20 (kafkajs's setOffsets joins the group briefly, then commits).
    await admin.setOffsets({
      groupId,
      topic,
      partitions: [
        { partition: 0, offset: '10' },
        { partition: 1, offset: '20' },
      ],
    });
    const consumer = kafka.consumer({ groupId: 'kjs-admin-live', heartbeatInterval: 500, maxWaitTimeInMs: 200 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let n = 0;
    await consumer.run({
      eachMessage: () => {
        n++;
        return Promise.resolve();
      },
    });
    await until(() => n === 100, 20_000, 'live consumer');
    await until(async () => (await admin.describeGroups(['kjs-admin-live'])).groups[0]?.state === 'Stable', 20_000, 'Stable');
    const d = (await admin.describeGroups(['kjs-admin-live', 'no-such-group'])).groups;
    expect(d[0]).to.include({ state: 'Stable', protocolType: 'consumer', protocol: 'RoundRobinAssigner' });
    expect(d[0]?.members).to.have.length(1);
    expect(d[0]?.members[0]?.clientId).to.equal('groups-kjs');
    expect(d[1]).to.include({ groupId: 'no-such-group', state: 'Dead' });
    const listed = (await admin.listGroups()).groups.map((g) => `${g.groupId}:${g.protocolType}`);
    expect(listed).to.include.members([`${groupId}:consumer`, 'kjs-admin-live:consumer']);
    const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
    const ends = await admin.fetchTopicOffsets(topic);
    const lag = committed[0]?.partitions.map((p) => Number(ends.find((e) => e.partition === p.partition)?.high) - Number(p.offset)).sort();
    expect(lag).to.deep.equal([30, 40]);
    const refused = await admin.deleteGroups(['kjs-admin-live']).then(
      () => null,
      (e: unknown) => e as { name?: string; groups?: { errorCode?: number }[] },
    );
    expect(refused?.groups?.[0]?.errorCode).to.equal(68); // NON_EMPTY_GROUP
    await consumer.disconnect();
    await admin.deleteGroups([groupId, 'kjs-admin-live']);
    expect((await admin.listGroups()).groups.map((g) => g.groupId)).to.not.include.members([groupId, 'kjs-admin-live']);
    const after = await admin.fetchOffsets({ groupId, topics: [topic] });
    expect(after[0]?.partitions.map((p) => p.offset)).to.deep.equal(['-1', '-1']);
    await producer.disconnect();
    await admin.disconnect();
  });

  it('measures the time from the last of 3 members joining to all Stable (group.initial.rebalance.delay.ms=0)', async () => {
    const topic = 'kjs-group-timing';
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }] });
    const generations = new Map<number, number>();
    const consumers: Consumer[] = [];
    let lastJoinAt = 0;
    for (let i = 0; i < 3; i++) {
      const c = kafka.consumer({ groupId: 'kjs-timing', heartbeatInterval: 100, maxWaitTimeInMs: 100 });
      c.on(c.events.GROUP_JOIN, (e) => generations.set(i, e.payload.groupId === 'kjs-timing' ? Date.now() : 0));
      await c.connect();
      await c.subscribe({ topic });
      lastJoinAt = Date.now();
      await c.run({ eachMessage: async () => {} });
      consumers.push(c);
    }
    await until(
      async () => {
        const g = (await admin.describeGroups(['kjs-timing'])).groups[0];
        return g?.state === 'Stable' && g.members.length === 3 && [...generations.values()].filter((t) => t >= lastJoinAt).length === 3;
      },
      30_000,
      '3 members Stable',
    );
    const ms = Math.max(...generations.values()) - lastJoinAt;
    console.log(`      [groups] last of 3 kafkajs members joining -> all Stable: ${ms} ms (heartbeatInterval 100, maxWaitTimeInMs 100)`);
    expect(ms).to.be.lessThan(10_000);
    await Promise.all(consumers.map((c) => c.disconnect()));
    await admin.disconnect();
  });
});
