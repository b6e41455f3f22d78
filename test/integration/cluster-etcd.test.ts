/**
 * Cluster mode, first slice (issue 15): three brokers as child processes (`gregor start` with
 * metadata.store=etcd) around a real etcd from the Debian package, started by lib/cluster/local-cluster.ts
 * as `gregor cluster start` does. Partitions are placed across the brokers (one replica each: follower
 * replication is the next slice), clients find leaders and coordinators through Metadata and
 * FindCoordinator, a broker that does not lead a partition says NOT_LEADER_OR_FOLLOWER, and a broker
 * killed with SIGKILL loses its partitions' leadership (LEADER_NOT_AVAILABLE) until it is back, when the
 * controller elects it again with a higher leader epoch and nothing it acknowledged is gone.
 */
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { MetadataResponse } from '../../protocol/generated/metadata.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { type LocalCluster, startLocalCluster } from '../../lib/cluster/local-cluster.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { Cleanup } from '../helpers/cleanup.js';
import { runKcat } from '../helpers/kcat.js';
import { RawClient, rawProduce } from '../helpers/raw-client.js';

type Any = any;
const { KafkaJS } = loadConfluent();
const SESSION_TIMEOUT_MS = 3000;

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last !== undefined ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function metadata(bootstrap: string, topics: string[] | null): Promise<MetadataResponse> {
  const c = await RawClient.connect(bootstrap);
  try {
    return await c.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: topics === null ? null : topics.map((name) => ({ topicId: '0'.repeat(32), name })),
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
  } finally {
    c.destroy();
  }
}

describe('cluster mode on etcd: three brokers, partitions placed across them', function () {
  this.timeout(180_000);
  let cluster: LocalCluster;
  const cleanup = new Cleanup();
  before(async function () {
    this.timeout(60_000);
    cluster = cleanup.add(
      await startLocalCluster({
        brokers: 3,
        overrides: {
          'broker.session.timeout.ms': String(SESSION_TIMEOUT_MS),
          'group.initial.rebalance.delay.ms': '0',
          'offsets.topic.num.partitions': '6',
        },
      }),
      (c) => c.stop(),
    );
  });
  after(() => cleanup.run());

  it('every broker lists the three brokers and one controller', async () => {
    const views = await until(
      async () => {
        const all = await Promise.all(cluster.brokers.map((b) => metadata(b.bootstrap, [])));
        return all.every((m) => m.brokers.length === 3) ? all : undefined;
      },
      15_000,
      'three registered brokers',
    );
    const controllers = new Set(views.map((m) => m.controllerId));
    expect(controllers.size).to.equal(1);
    expect([1, 2, 3]).to.include([...controllers][0]);
    for (const m of views) {
      expect(m.clusterId).to.equal(cluster.clusterId);
      expect(m.brokers.map((b) => b.nodeId).sort()).to.deep.equal([1, 2, 3]);
      expect(m.brokers.map((b) => `${b.host}:${b.port}`).sort()).to.deep.equal(cluster.brokers.map((b) => b.bootstrap).sort());
    }
  });

  it('a topic created through one broker is placed on all three, seen alike by every broker and by kcat', async () => {
    const kafka = new Kafka({ clientId: 'cluster-admin', brokers: [cluster.brokers[1]?.bootstrap ?? ''], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect(await admin.createTopics({ topics: [{ topic: 'spread', numPartitions: 6 }], waitForLeaders: true })).to.equal(true);
    } finally {
      await admin.disconnect();
    }
    const views = await until(
      async () => {
        const all = await Promise.all(cluster.brokers.map((b) => metadata(b.bootstrap, ['spread'])));
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
    const kcat = await runKcat(['-b', cluster.bootstrap(), '-L', '-J', '-t', 'spread']);
    expect(kcat.code, kcat.stderr).to.equal(0);
    const listed = JSON.parse(kcat.stdout.toString()) as {
      brokers: { id: number }[];
      topics: { partitions: { partition: number; leader: number }[] }[];
    };
    expect(listed.brokers.map((b) => b.id).sort()).to.deep.equal([1, 2, 3]);
    expect(listed.topics[0]?.partitions.map((p) => p.leader)).to.deep.equal(leaders);
  });

  it('a broker that does not lead a partition answers NOT_LEADER_OR_FOLLOWER; its leader takes the write', async () => {
    const m = await metadata(cluster.bootstrap(), ['spread']);
    const p0 = m.topics[0]?.partitions.find((p) => p.partitionIndex === 0);
    const leader = cluster.brokers.find((b) => b.nodeId === p0?.leaderId);
    const other = cluster.brokers.find((b) => b.nodeId !== p0?.leaderId);
    if (leader === undefined || other === undefined) throw new Error('no leader for spread-0');
    const batch = buildRecordBatch([{ key: null, value: Buffer.from('direct'), timestamp: BigInt(Date.now()) }]);
    const wrong = await RawClient.connect(other.bootstrap);
    const right = await RawClient.connect(leader.bootstrap);
    try {
      expect((await rawProduce(wrong, 'spread', [[0, batch]], -1))[0]?.errorCode).to.equal(ErrorCode.NOT_LEADER_OR_FOLLOWER);
      const ok = (await rawProduce(right, 'spread', [[0, batch]], -1))[0];
      expect(ok?.errorCode).to.equal(ErrorCode.NONE);
      expect(ok?.baseOffset).to.equal(0n);
    } finally {
      wrong.destroy();
      right.destroy();
    }
  });

  it('kafkajs: produce to every partition and consume them in a group whose coordinator is wherever its partition leads', async () => {
    const kafka = new Kafka({ clientId: 'cluster-kafkajs', brokers: cluster.bootstrap().split(','), logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    const COUNT = 600;
    try {
      await producer.send({
        topic: 'spread',
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
      await consumer.subscribe({ topic: 'spread', fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value?.toString() ?? '');
        },
      });
      await until(async () => (seen.length >= COUNT + 1 ? true : undefined), 60_000, `${COUNT + 1} records`);
    } finally {
      await consumer.disconnect();
    }
    expect(seen.filter((v) => v.startsWith('v')).sort()).to.deep.equal(Array.from({ length: COUNT }, (_, i) => `v${i}`).sort());
    expect(seen).to.include('direct');
    // the committed offsets are kept by the coordinator of the group, on whichever broker that is
    const admin = kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchOffsets({ groupId: 'cluster-group', topics: ['spread'] });
      const total = (offsets[0]?.partitions ?? []).reduce((n, p) => n + Number(p.offset), 0);
      expect(total).to.equal(COUNT + 1);
    } finally {
      await admin.disconnect();
    }
  });

  it('librdkafka: a producer and a consumer group follow the leaders across the three brokers', async () => {
    const kafka = new KafkaJS.Kafka({
      kafkaJS: { brokers: cluster.bootstrap().split(','), clientId: 'cluster-rdk', logLevel: KafkaJS.logLevel.NOTHING },
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
        eachMessage: async ({ message }: Any) => {
          seen.add(String(message.value));
        },
      });
      await until(async () => (seen.size >= 300 ? true : undefined), 60_000, '300 records through librdkafka');
    } finally {
      await consumer.disconnect();
    }
    expect(seen.size).to.equal(300);
  });

  it('kill -9 of a broker: its partitions lose their leader until it is back, then it leads them at a higher epoch with its data', async () => {
    const before = await metadata(cluster.bootstrap(), ['spread']);
    const victim = cluster.brokers.find((b) => b.nodeId === before.controllerId) ?? cluster.brokers[0];
    if (victim === undefined) throw new Error('no broker');
    const led = (before.topics[0]?.partitions ?? []).filter((p) => p.leaderId === victim.nodeId);
    expect(led.length).to.be.greaterThan(0);
    await victim.kill('SIGKILL');
    const survivor = cluster.brokers.find((b) => b.running);
    if (survivor === undefined) throw new Error('no survivor');
    // once its lease expires: gone from the broker list, its partitions without a leader, a new controller
    const during = await until(
      async () => {
        const m = await metadata(survivor.bootstrap, ['spread']);
        const parts = m.topics[0]?.partitions ?? [];
        const leaderless = led.every((l) => parts.find((p) => p.partitionIndex === l.partitionIndex)?.leaderId === -1);
        return m.brokers.length === 2 && leaderless && (m.controllerId ?? -1) !== victim.nodeId && (m.controllerId ?? -1) >= 0 ? m : undefined;
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
        const m = await metadata(victim.bootstrap, ['spread']);
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
    // everything acknowledged before the kill is still there
    const kafka = new Kafka({ clientId: 'cluster-after', brokers: cluster.bootstrap().split(','), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets('spread');
      expect(offsets.reduce((n, p) => n + Number(p.high), 0)).to.equal(601);
    } finally {
      await admin.disconnect();
    }
  });
});
