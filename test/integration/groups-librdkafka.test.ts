/**
 * librdkafka 2.15.1 (@confluentinc/kafka-javascript) consumer groups against a real gregor: range and
 * cooperative-sticky (classic protocol) and `group.protocol=consumer` (KIP-848), each with a second member
 * joining mid-stream and every record consumed once (twice only after its commit was refused mid-rebalance); static membership (a member restarting with
 * the same group.instance.id gets its partitions back without a rebalance); the admin views.
 */
import { expect } from 'chai';
import type { GroupCoordinator } from '../../lib/group/coordinator.js';
import type { ClassicGroup } from '../../lib/group/classic-group.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { Cleanup } from '../helpers/cleanup.js';

type Any = any;
const { KafkaJS } = loadConfluent();

async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const coordinatorOf = (b: TestBroker) => (b.broker as unknown as { services: { groups: GroupCoordinator } }).services.groups;

describe('librdkafka 2.15 consumer groups', function () {
  this.timeout(120_000);
  let b: TestBroker;
  let kafka: Any;
  let admin: Any;
  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker(), (t) => t.stop());
    kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: [b.bootstrap], clientId: 'groups-rdk', logLevel: KafkaJS.logLevel.NOTHING } });
    admin = cleanup.add(kafka.admin(), (a) => a.disconnect());
    await admin.connect();
  });
  after(() => cleanup.run());

  async function produce(topic: string, from: number, n: number, partitions: number): Promise<void> {
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic,
      messages: Array.from({ length: n }, (_, i) => ({ value: `r${from + i}`, partition: (from + i) % partitions })),
    });
    await producer.disconnect();
  }

  for (const mode of ['range', 'cooperative-sticky', 'consumer'] as const) {
    it(`${mode === 'consumer' ? 'group.protocol=consumer (KIP-848)' : `partition.assignment.strategy=${mode}`}: a second member joins mid-stream, every record once (again only after a refused commit)`, async () => {
      const topic = `rdk-group-${mode}`;
      const groupId = `rdk-${mode}`;
      const PARTS = 4;
      const COUNT = 2000;
      await admin.createTopics({ topics: [{ topic, numPartitions: PARTS }] });
      const seen = new Map<string, number>();
      const owners = new Set<string>();
      const refused = new Set<string>();
      const cfg =
        mode === 'consumer' ? { 'group.protocol': 'consumer' } : { 'partition.assignment.strategy': mode, 'heartbeat.interval.ms': 500 };
      const start = async (name: string) => {
        const c = kafka.consumer({ kafkaJS: { groupId, fromBeginning: true, autoCommit: false }, ...cfg });
        await c.connect();
        await c.subscribe({ topics: [topic] });
        await c.run({
          eachMessage: async ({ partition, message }: Any) => {
            const v = message.value.toString();
            seen.set(v, (seen.get(v) ?? 0) + 1);
            owners.add(name);
            // The binding's commitOffsets resolves once librdkafka has queued the commit (commitAsync),
            // so a commit the broker refuses mid-rebalance (ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS)
            // goes unseen. Each commit carries this member's name as metadata and is read back until
            // the broker holds it; one that never shows counts as refused and fails eachMessage, and
            // the record is delivered again (or read again by the partition's next owner).
            const next = String(BigInt(message.offset) + 1n);
            await c.commitOffsets([{ topic, partition, offset: next, metadata: name }]);
            const deadline = Date.now() + 3000;
            for (;;) {
              const got: Any[] = await c.committed([{ topic, partition }]).catch(() => []);
              if (got[0]?.offset === next && got[0]?.metadata === name) break;
              if (Date.now() > deadline) {
                refused.add(v);
                throw new Error(`the commit after ${v} was not stored`);
              }
              await new Promise((r) => setTimeout(r, 20));
            }
          },
        });
        return c;
      };
      const c1 = await start('c1');
      let c2: Any;
      try {
        await produce(topic, 0, COUNT / 2, PARTS);
        await until(() => seen.size >= COUNT / 4, 30_000, 'first records');
        c2 = await start('c2');
        await until(
          async () => {
            const d = (await admin.describeGroups([groupId])).groups[0];
            return d?.members?.length === 2 && d.members.every((m: Any) => (m.assignment?.topicPartitions?.length ?? 0) > 0);
          },
          40_000,
          'both members assigned',
        );
        await produce(topic, COUNT / 2, COUNT / 2, PARTS);
        await until(() => seen.size === COUNT, 40_000, `all records (have ${seen.size})`);
        // at-least-once, as on Kafka: a record is delivered twice only when the broker did not take
        // the commit that followed it, which happens at most once per partition handed over
        const dups = [...seen].filter(([v, n]) => n > 1 && !refused.has(v));
        expect(dups, `duplicates after a stored commit ${dups.slice(0, 5).join(' ')}`).to.have.length(0);
        expect(refused.size, `commits not stored: ${[...refused].join(' ')}`).to.be.at.most(PARTS);
        expect([...owners].sort()).to.deep.equal(['c1', 'c2']);
        let committed: string[] = [];
        await until(
          async () => {
            committed = (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions.map((p: Any) => p.offset);
            return committed.every((o) => o === String(COUNT / PARTS));
          },
          15_000,
          'commits at the log end',
        ).catch(() => expect(committed).to.deep.equal(Array(PARTS).fill(String(COUNT / PARTS))));
        const g = coordinatorOf(b).groups.get(groupId);
        expect(g?.type).to.equal(mode === 'consumer' ? 'consumer' : 'classic');
      } finally {
        await Promise.all([c1.disconnect(), c2?.disconnect()]);
      }
    });
  }

  it('static membership: a member restarting with its group.instance.id gets its partitions back without a rebalance', async () => {
    const topic = 'rdk-static';
    const groupId = 'rdk-static';
    await admin.createTopics({ topics: [{ topic, numPartitions: 4 }] });
    const assigned = new Map<string, number[]>();
    const rebalances = new Map<string, number>();
    const start = async (instance: string) => {
      const c = kafka.consumer({
        kafkaJS: {
          groupId,
          fromBeginning: true,
        },
        rebalance_cb: (err: Any, tps: Any[]) => {
          if (err.code !== KafkaJS.ErrorCodes?.ERR__ASSIGN_PARTITIONS && err.code !== -175) return;
          assigned.set(instance, tps.map((tp) => tp.partition).sort());
          rebalances.set(instance, (rebalances.get(instance) ?? 0) + 1);
        },
        'group.instance.id': instance,
        'session.timeout.ms': 10_000,
        'heartbeat.interval.ms': 500,
      });
      await c.connect();
      await c.subscribe({ topics: [topic] });
      await c.run({ eachMessage: async () => {} });
      return c;
    };
    const live: Any[] = [];
    try {
      const a = await start('ia');
      live.push(a);
      const bb = await start('ib');
      live.push(bb);
      const found = () => coordinatorOf(b).groups.get(groupId) as ClassicGroup | undefined;
      const group = () => found() ?? expect.fail(`group ${groupId} is gone`);
      await until(
        () =>
          found()?.state === 'Stable' && found()?.size === 2 && (assigned.get('ia')?.length ?? 0) + (assigned.get('ib')?.length ?? 0) === 4,
        40_000,
        'Stable with 2 static members',
      );
      await new Promise((r) => setTimeout(r, 1000));
      const generation = group().generationId;
      const before = { ia: assigned.get('ia'), ibRebalances: rebalances.get('ib') };
      await a.disconnect(); // a static member sends no LeaveGroup
      live.shift();
      expect(group().size).to.equal(2);
      assigned.delete('ia');
      const a2 = await start('ia');
      live.push(a2);
      await until(() => assigned.has('ia'), 20_000, 'restarted member assigned');
      await new Promise((r) => setTimeout(r, 1500));
      expect(assigned.get('ia')).to.deep.equal(before.ia);
      expect(group().generationId).to.equal(generation);
      expect(group().state).to.equal('Stable');
      expect(rebalances.get('ib')).to.equal(before.ibRebalances);
    } finally {
      await Promise.all(live.map((c) => c.disconnect()));
    }
  });

  it('admin views through librdkafka: describeGroups, listGroups, fetchOffsets and lag', async () => {
    const topic = 'rdk-admin';
    const groupId = 'rdk-admin';
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    await produce(topic, 0, 100, 2);
    const c = kafka.consumer({ kafkaJS: { groupId, fromBeginning: true, autoCommit: false }, 'heartbeat.interval.ms': 500 });
    await c.connect();
    await c.subscribe({ topics: [topic] });
    let n = 0;
    await c.run({
      eachMessage: async ({ partition, message }: Any) => {
        n++;
        if (Number(message.offset) < 25) await c.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }]);
      },
    });
    await until(() => n === 100, 30_000, 'consumed');
    await until(
      async () => (await admin.describeGroups([groupId])).groups[0]?.state === KafkaJS.ConsumerGroupStates.STABLE,
      20_000,
      'Stable',
    );
    const d = (await admin.describeGroups([groupId])).groups[0];
    expect(d).to.include({ groupId, protocolType: 'consumer', isSimpleConsumerGroup: false });
    expect(d.members).to.have.length(1);
    expect(d.members[0].assignment.topicPartitions.map((tp: Any) => tp.partition).sort()).to.deep.equal([0, 1]);
    const listed = await admin.listGroups();
    expect(listed.groups.map((g: Any) => g.groupId)).to.include(groupId);
    const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
    const ends = await admin.fetchTopicOffsets(topic);
    const lag = committed[0].partitions.map((p: Any) => Number(ends.find((e: Any) => e.partition === p.partition).high) - Number(p.offset));
    expect(lag).to.deep.equal([25, 25]);
    await c.disconnect();
    await until(
      async () => (await admin.describeGroups([groupId])).groups[0]?.state === KafkaJS.ConsumerGroupStates.EMPTY,
      20_000,
      'Empty',
    );
  });
});
