/**
 * Cluster mode, first slice (issue 15): three brokers as child processes (`gregor start` with
 * metadata.store=etcd) around a real etcd from the Debian package, started by lib/cluster/local-cluster.ts
 * as `gregor cluster start` does. Partitions are placed across the brokers (one replica each here:
 * replication is cluster-replication.test.ts's), clients find leaders and coordinators through Metadata and
 * FindCoordinator, a broker that does not lead a partition says NOT_LEADER_OR_FOLLOWER, and a broker
 * killed with SIGKILL loses its partitions' leadership (LEADER_NOT_AVAILABLE) until it is back, when the
 * controller elects it again with a higher leader epoch and nothing it acknowledged is gone.
 */
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import type { LocalCluster } from '../../lib/cluster/local-cluster.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { metadata, running, until, useCluster } from '../helpers/cluster.js';
import { runKcat } from '../helpers/kcat.js';
import { RawClient, rawProduce } from '../helpers/raw-client.js';

type Any = any;
const { KafkaJS } = loadConfluent();
// long enough that a broker restarted at once (the immediate-restart case) is back before its old session ends
const SESSION_TIMEOUT_MS = 8000;

/** Creates `topic` through kafkajs and waits until every broker has its leaders. */
async function createTopic(cluster: LocalCluster, topic: string, numPartitions: number): Promise<void> {
  const kafka = new Kafka({ clientId: 'cluster-admin', brokers: cluster.bootstrap().split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    expect(await admin.createTopics({ topics: [{ topic, numPartitions }], waitForLeaders: true })).to.equal(true);
  } finally {
    await admin.disconnect();
  }
  await until(
    async () => {
      const all = await Promise.all(cluster.brokers.map((b) => metadata(b.bootstrap, [topic])));
      return all.every((m) => m.topics[0]?.partitions.length === numPartitions && m.topics[0].partitions.every((p) => p.leaderId >= 0))
        ? true
        : undefined;
    },
    10_000,
    `${topic} on every broker`,
  );
}

describe('cluster mode on etcd: three brokers, partitions placed across them', function () {
  this.timeout(180_000);
  const cluster = useCluster(
    {
      'broker.session.timeout.ms': String(SESSION_TIMEOUT_MS),
      'group.initial.rebalance.delay.ms': '0',
      'offsets.topic.num.partitions': '6',
    },
    // the first test checks that every broker registers
    { waitForBrokers: false },
  );

  it('every broker lists the three brokers and one controller', async () => {
    const views = await until(
      async () => {
        const all = await Promise.all(cluster().brokers.map((b) => metadata(b.bootstrap, [])));
        return all.every((m) => m.brokers.length === 3) ? all : undefined;
      },
      15_000,
      'three registered brokers',
    );
    const controllers = new Set(views.map((m) => m.controllerId));
    expect(controllers.size).to.equal(1);
    expect([1, 2, 3]).to.include([...controllers][0]);
    for (const m of views) {
      expect(m.clusterId).to.equal(cluster().clusterId);
      expect(m.brokers.map((b) => b.nodeId).sort()).to.deep.equal([1, 2, 3]);
      expect(m.brokers.map((b) => `${b.host}:${b.port}`).sort()).to.deep.equal(
        cluster()
          .brokers.map((b) => b.bootstrap)
          .sort(),
      );
    }
  });

  it('a topic created through one broker is placed on all three, seen alike by every broker and by kcat', async () => {
    const kafka = new Kafka({ clientId: 'cluster-admin', brokers: [cluster().brokers[1]?.bootstrap ?? ''], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect(await admin.createTopics({ topics: [{ topic: 'spread', numPartitions: 6 }], waitForLeaders: true })).to.equal(true);
    } finally {
      await admin.disconnect();
    }
    const views = await until(
      async () => {
        const all = await Promise.all(cluster().brokers.map((b) => metadata(b.bootstrap, ['spread'])));
        return all.every((m) => m.topics[0]?.partitions.length === 6) ? all : undefined;
      },
      10_000,
      'the topic on every broker',
    );
    const leaders = views[0]?.topics[0]?.partitions.map((p) => p.leaderId) ?? [];
    expect(new Set(leaders)).to.deep.equal(new Set([1, 2, 3]), 'six partitions over three brokers: each leads two');
    for (const m of views) {
      const t = m.topics[0];
      expect(t?.errorCode).to.equal(ErrorCode.NONE);
      expect(t?.partitions.map((p) => p.leaderId)).to.deep.equal(leaders);
      for (const p of t?.partitions ?? []) {
        expect(p.replicaNodes).to.deep.equal([p.leaderId]);
        expect(p.isrNodes).to.deep.equal([p.leaderId]);
        expect(p.leaderEpoch).to.equal(0);
      }
    }
    const kcat = await runKcat(['-b', cluster().bootstrap(), '-L', '-J', '-t', 'spread']);
    expect(kcat.code, kcat.stderr).to.equal(0);
    const listed = JSON.parse(kcat.stdout.toString()) as {
      brokers: { id: number }[];
      topics: { partitions: { partition: number; leader: number }[] }[];
    };
    expect(listed.brokers.map((b) => b.id).sort()).to.deep.equal([1, 2, 3]);
    expect(listed.topics[0]?.partitions.map((p) => p.leader)).to.deep.equal(leaders);
  });

  it('a broker that does not lead a partition answers NOT_LEADER_OR_FOLLOWER; its leader takes the write', async () => {
    await createTopic(cluster(), 'direct', 3);
    const m = await metadata(running(cluster()).bootstrap, ['direct']);
    const p0 = m.topics[0]?.partitions.find((p) => p.partitionIndex === 0);
    const leader = cluster().brokers.find((b) => b.nodeId === p0?.leaderId);
    const other = cluster().brokers.find((b) => b.nodeId !== p0?.leaderId);
    if (leader === undefined || other === undefined) throw new Error('no leader for direct-0');
    const batch = buildRecordBatch([{ key: null, value: Buffer.from('direct'), timestamp: BigInt(Date.now()) }]);
    const wrong = await RawClient.connect(other.bootstrap);
    const right = await RawClient.connect(leader.bootstrap);
    try {
      expect((await rawProduce(wrong, 'direct', [[0, batch]], -1))[0]?.errorCode).to.equal(ErrorCode.NOT_LEADER_OR_FOLLOWER);
      const ok = (await rawProduce(right, 'direct', [[0, batch]], -1))[0];
      expect(ok?.errorCode).to.equal(ErrorCode.NONE);
      expect(ok?.baseOffset).to.equal(0n);
    } finally {
      wrong.destroy();
      right.destroy();
    }
  });

  it('kafkajs: produce to every partition and consume them in a group whose coordinator is wherever its partition leads', async () => {
    await createTopic(cluster(), 'kjs-spread', 6);
    const kafka = new Kafka({ clientId: 'cluster-kafkajs', brokers: cluster().bootstrap().split(','), logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    const COUNT = 600;
    try {
      await producer.send({
        topic: 'kjs-spread',
        acks: -1,
        messages: Array.from({ length: COUNT }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition: i % 6 })),
      });
    } finally {
      await producer.disconnect();
    }
    const consumer = kafka.consumer({ groupId: 'cluster-group', sessionTimeout: 10_000 });
    await consumer.connect();
    const seen: string[] = [];
    try {
      await consumer.subscribe({ topic: 'kjs-spread', fromBeginning: true });
      await consumer.run({
        eachMessage: ({ message }) => {
          seen.push(message.value?.toString() ?? '');
          return Promise.resolve();
        },
      });
      await until(() => Promise.resolve(seen.length >= COUNT ? true : undefined), 60_000, `${COUNT} records`);
    } finally {
      await consumer.disconnect();
    }
    expect([...seen].sort()).to.deep.equal(Array.from({ length: COUNT }, (_, i) => `v${i}`).sort());
    // the committed offsets are kept by the coordinator of the group, on whichever broker that is
    const admin = kafka.admin();
    await admin.connect();
    try {
      const total = await until(
        async () => {
          const offsets = await admin.fetchOffsets({ groupId: 'cluster-group', topics: ['kjs-spread'] });
          const n = (offsets[0]?.partitions ?? []).reduce((sum, p) => sum + Number(p.offset), 0);
          return n === COUNT ? n : undefined;
        },
        10_000,
        'the committed offsets',
      );
      expect(total).to.equal(COUNT);
    } finally {
      await admin.disconnect();
    }
  });

  it('librdkafka: a producer and a consumer group follow the leaders across the three brokers', async () => {
    const kafka = new KafkaJS.Kafka({
      kafkaJS: { brokers: cluster().bootstrap().split(','), clientId: 'cluster-rdk', logLevel: KafkaJS.logLevel.NOTHING },
    });
    const admin: Any = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'rdk-spread', numPartitions: 3 }] });
    await admin.disconnect();
    const producer: Any = kafka.producer({ kafkaJS: { acks: -1 } });
    await producer.connect();
    await producer.send({ topic: 'rdk-spread', messages: Array.from({ length: 300 }, (_, i) => ({ value: `r${i}`, partition: i % 3 })) });
    await producer.disconnect();
    const consumer: Any = kafka.consumer({ kafkaJS: { groupId: 'cluster-rdk-group', fromBeginning: true } });
    await consumer.connect();
    const seen = new Set<string>();
    try {
      await consumer.subscribe({ topics: ['rdk-spread'] });
      await consumer.run({
        eachMessage: ({ message }: Any) => {
          seen.add(String(message.value));
          return Promise.resolve();
        },
      });
      await until(() => Promise.resolve(seen.size >= 300 ? true : undefined), 60_000, '300 records through librdkafka');
    } finally {
      await consumer.disconnect();
    }
    expect(seen.size).to.equal(300);
  });

  it('kill -9 of a broker: its partitions lose their leader until it is back, then it leads them at a higher epoch with its data', async () => {
    await createTopic(cluster(), 'survive', 6);
    const kafka = new Kafka({ clientId: 'cluster-kill', brokers: cluster().bootstrap().split(','), logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    try {
      await producer.send({
        topic: 'survive',
        acks: -1,
        messages: Array.from({ length: 120 }, (_, i) => ({ value: `s${i}`, partition: i % 6 })),
      });
    } finally {
      await producer.disconnect();
    }
    const before = await metadata(running(cluster()).bootstrap, ['survive']);
    const victim = cluster().brokers.find((b) => b.nodeId === before.controllerId) ?? cluster().brokers[0];
    if (victim === undefined) throw new Error('no broker');
    const led = (before.topics[0]?.partitions ?? []).filter((p) => p.leaderId === victim.nodeId);
    expect(led.length).to.be.greaterThan(0);
    await victim.kill('SIGKILL');
    const survivor = cluster().brokers.find((b) => b.running);
    if (survivor === undefined) throw new Error('no survivor');
    // once its lease expires: gone from the broker list, its partitions without a leader, a new controller
    const during = await until(
      async () => {
        const m = await metadata(survivor.bootstrap, ['survive']);
        const parts = m.topics[0]?.partitions ?? [];
        const leaderless = led.every((l) => parts.find((p) => p.partitionIndex === l.partitionIndex)?.leaderId === -1);
        return m.brokers.length === 2 && leaderless && (m.controllerId ?? -1) !== victim.nodeId && (m.controllerId ?? -1) >= 0
          ? m
          : undefined;
      },
      SESSION_TIMEOUT_MS * 5,
      'the dead broker to lose its partitions',
    );
    for (const l of led) {
      const p = during.topics[0]?.partitions.find((x) => x.partitionIndex === l.partitionIndex);
      expect(p?.errorCode).to.equal(ErrorCode.LEADER_NOT_AVAILABLE);
      expect(p?.offlineReplicas).to.deep.equal([victim.nodeId]);
    }
    await victim.start();
    const after = await until(
      async () => {
        const m = await metadata(victim.bootstrap, ['survive']);
        const parts = m.topics[0]?.partitions ?? [];
        return led.every((l) => parts.find((p) => p.partitionIndex === l.partitionIndex)?.leaderId === victim.nodeId) ? m : undefined;
      },
      20_000,
      'the restarted broker to lead its partitions again',
    );
    for (const l of led) {
      const p = after.topics[0]?.partitions.find((x) => x.partitionIndex === l.partitionIndex);
      expect(p?.leaderEpoch).to.be.greaterThan(l.leaderEpoch ?? 0);
    }
    // everything acknowledged before the kill is still there, and the restarted broker takes writes again
    const admin = kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets('survive');
      expect(offsets.map((p) => Number(p.high))).to.deep.equal([20, 20, 20, 20, 20, 20]);
    } finally {
      await admin.disconnect();
    }
    const again = kafka.producer();
    await again.connect();
    try {
      const res = await again.send({ topic: 'survive', acks: -1, messages: [{ value: 'after', partition: led[0]?.partitionIndex ?? 0 }] });
      expect(res[0]?.baseOffset).to.equal('20');
    } finally {
      await again.disconnect();
    }
  });

  it('kill -9 and an immediate restart (within the session): the broker registers again at once (not NODE_ID_IN_USE) and leads its partitions again', async () => {
    await createTopic(cluster(), 'quick', 3);
    const m = await metadata(running(cluster()).bootstrap, ['quick']);
    const leaderId = m.topics[0]?.partitions[0]?.leaderId;
    const victim = cluster().brokers.find((b) => b.nodeId === leaderId);
    if (victim === undefined) throw new Error('no leader for quick-0');
    await victim.kill('SIGKILL');
    // with the old registration alive, a start refused as NODE_ID_IN_USE would reject here
    await victim.start();
    // the restart revokes the old session, so the controller may first take the partition from it
    // (leader -1) and then give it back: until it does, a produce gets a retriable error
    const batch = buildRecordBatch([{ key: null, value: Buffer.from('again'), timestamp: BigInt(Date.now()) }]);
    const retriable: number[] = [ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER];
    const code = await until(
      async () => {
        const after = await metadata(victim.bootstrap, ['quick']);
        if (after.brokers.length !== 3 || after.topics[0]?.partitions[0]?.leaderId !== victim.nodeId) return undefined;
        const c = await RawClient.connect(victim.bootstrap);
        try {
          const answered = (await rawProduce(c, 'quick', [[0, batch]], -1))[0]?.errorCode ?? -1;
          return retriable.includes(answered) ? undefined : answered;
        } finally {
          c.destroy();
        }
      },
      20_000,
      'the restarted broker to lead quick-0 again and answer a write',
    );
    expect(code).to.equal(ErrorCode.NONE);
  });
});
