/**
 * Follower replication in a cluster (issue 15): three brokers (child processes on a real etcd), topics
 * with replication factor 3 and min.insync.replicas 2. Followers fetch from leaders and hold
 * byte-identical logs; acks=all completes once the ISR has the records; a leader killed with SIGKILL
 * is replaced from the ISR, and, restarted, truncates to the new leader and rejoins the ISR. The last
 * case kills the leader five times in a row under running acks=all producers and checks, from what the
 * clients saw, that no acknowledged record is lost, no offset holds two different records, and the
 * high watermark never goes back (Jepsen's Kafka checks, in small).
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { FetchRequest, FetchResponse } from '../../protocol/generated/fetch.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { partitionFor } from '../../lib/group/records.js';
import {
  clusterKafka,
  createRf3Topic,
  followerFetches,
  logBytes,
  metadata,
  partitionOf,
  RF3_OVERRIDES,
  running,
  until,
  useCluster,
} from '../helpers/cluster.js';
import { RawClient, rawProduce } from '../helpers/raw-client.js';

type Any = any;
const { KafkaJS } = loadConfluent();
const SESSION_TIMEOUT_MS = 3000;

describe('cluster replication: replication factor 3, min.insync.replicas 2', function () {
  this.timeout(300_000);
  const cluster = useCluster({
    'broker.session.timeout.ms': String(SESSION_TIMEOUT_MS),
    'group.initial.rebalance.delay.ms': '0',
    'offsets.topic.num.partitions': '3',
    'offsets.topic.replication.factor': '3',
    ...RF3_OVERRIDES,
  });

  const kafka = () => clusterKafka(cluster(), 'replication');
  const createTopic = (topic: string, numPartitions: number) => createRf3Topic(kafka(), topic, numPartitions);

  it('acks=all: every replica holds byte-identical logs, and the ISR is all three', async () => {
    await createTopic('replicated', 3);
    const producer = kafka().producer();
    await producer.connect();
    try {
      for (let i = 0; i < 10; i++) {
        await producer.send({
          topic: 'replicated',
          acks: -1,
          messages: Array.from({ length: 30 }, (_, j) => ({ value: `m${i}-${j}`, partition: j % 3 })),
        });
      }
    } finally {
      await producer.disconnect();
    }
    for (let p = 0; p < 3; p++) {
      const state = await partitionOf(cluster(), 'replicated', p);
      expect([...state.replicaNodes].sort()).to.deep.equal([1, 2, 3]);
      expect([...state.isrNodes].sort()).to.deep.equal([1, 2, 3]);
      const leader = cluster().brokers.find((b) => b.nodeId === state.leaderId);
      if (leader === undefined) throw new Error('no leader');
      const expected = logBytes(leader, 'replicated', p);
      expect(expected.length).to.be.greaterThan(0);
      // followers catch up within a fetch or two: every copy the same bytes
      await until(
        () => Promise.resolve(cluster().brokers.every((b) => logBytes(b, 'replicated', p).equals(expected)) ? true : undefined),
        10_000,
        `replicated-${p} on every broker`,
      );
    }
    // the followers fetch in sessions (KIP-227): one full Fetch per leader they follow, incremental after it
    const fetches = await until(
      async () => {
        const f = await followerFetches(cluster());
        return f.incremental > 3 * f.full ? f : undefined;
      },
      15_000,
      'incremental follower fetches',
    );
    expect(fetches.sessionless, 'follower Fetches without a session').to.equal(0);
    expect(fetches.full).to.be.greaterThan(0);
    expect(fetches.sessions).to.be.within(1, 6); // at most one per (follower, leader) pair of the three brokers
  });

  it("a consumer's incremental fetch session on a leader long-polls until the high watermark moves past an acks=all write", async () => {
    await createTopic('session-consumer', 2);
    const state = await partitionOf(cluster(), 'session-consumer', 1);
    const leader = cluster().brokers.find((b) => b.nodeId === state.leaderId);
    if (leader === undefined) throw new Error('no leader');
    const c = await RawClient.connect(leader.bootstrap);
    try {
      type Fetched = FetchResponse & { correlationId: number };
      const fetchV12 = (body: Partial<FetchRequest>, timeoutMs = 5000) =>
        c.request<Fetched>(
          ApiKey.Fetch,
          12,
          {
            replicaId: -1,
            maxWaitMs: 0,
            minBytes: 0,
            maxBytes: 1 << 20,
            isolationLevel: 0,
            topics: [],
            forgottenTopicsData: [],
            rackId: '',
            ...body,
          },
          timeoutMs,
        );
      // a session of partition 1 alone (partition 0 may be led elsewhere: its error would answer at once)
      const partitions = [{ partition: 1, fetchOffset: 0n, partitionMaxBytes: 1 << 20, logStartOffset: -1n, currentLeaderEpoch: -1 }];
      const full = await fetchV12({ sessionId: 0, sessionEpoch: 0, topics: [{ topic: 'session-consumer', partitions }] });
      const id = full.sessionId ?? 0;
      expect([full.errorCode, id === 0]).to.deep.equal([ErrorCode.NONE, false]);
      const maxWaitMs = 30_000;
      const sentAt = performance.now();
      const waiting = fetchV12({ sessionId: id, sessionEpoch: 1, maxWaitMs, minBytes: 1 }, maxWaitMs + 10_000);
      const producer = kafka().producer();
      await producer.connect();
      try {
        await producer.send({ topic: 'session-consumer', acks: -1, messages: [{ partition: 1, value: 'past the high watermark' }] });
      } finally {
        await producer.disconnect();
      }
      const res = await waiting;
      const got = res.responses.flatMap((t) => t.partitions);
      expect(got.map((p) => [p.partitionIndex, p.highWatermark])).to.deep.equal([[1, 1n]]);
      expect(got[0]?.records?.length ?? 0).to.be.greaterThan(0);
      // woken when the followers' fetches moved the high watermark, not by max_wait_ms
      expect(performance.now() - sentAt).to.be.below(maxWaitMs / 2);
    } finally {
      c.destroy();
    }
  });

  it('a follower answers NOT_LEADER_OR_FOLLOWER; with two brokers down acks=all gets NOT_ENOUGH_REPLICAS, and works again once they return', async () => {
    await createTopic('min-isr', 1);
    const state = await partitionOf(cluster(), 'min-isr', 0);
    const leader = cluster().brokers.find((b) => b.nodeId === state.leaderId);
    const followers = cluster().brokers.filter((b) => b.nodeId !== state.leaderId);
    if (leader === undefined || followers.length !== 2) throw new Error('unexpected placement');
    const batch = () => buildRecordBatch([{ key: null, value: Buffer.from('x'), timestamp: BigInt(Date.now()) }]);
    const atFollower = await RawClient.connect(followers[0]?.bootstrap ?? '');
    try {
      expect((await rawProduce(atFollower, 'min-isr', [[0, batch()]], -1))[0]?.errorCode).to.equal(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    } finally {
      atFollower.destroy();
    }
    await Promise.all(followers.map((f) => f.kill('SIGKILL')));
    // the controller drops dead brokers from the ISR once their sessions expire
    await until(
      async () => ((await partitionOf(cluster(), 'min-isr', 0)).isrNodes.length === 1 ? true : undefined),
      SESSION_TIMEOUT_MS * 5,
      'ISR of one',
    );
    const c = await RawClient.connect(leader.bootstrap);
    try {
      const refused = (await rawProduce(c, 'min-isr', [[0, batch()]], -1))[0];
      expect(refused?.errorCode).to.equal(ErrorCode.NOT_ENOUGH_REPLICAS);
      expect((await rawProduce(c, 'min-isr', [[0, batch()]], 1))[0]?.errorCode, 'acks=1 does not need the ISR').to.equal(ErrorCode.NONE);
      await Promise.all(followers.map((f) => f.start()));
      await until(
        async () => ((await partitionOf(cluster(), 'min-isr', 0)).isrNodes.length === 3 ? true : undefined),
        20_000,
        'the ISR back to three',
      );
      const ok = (await rawProduce(c, 'min-isr', [[0, batch()]], -1))[0];
      expect(ok?.errorCode).to.equal(ErrorCode.NONE);
      expect(ok?.baseOffset).to.equal(1n);
    } finally {
      c.destroy();
    }
  });

  it('SIGTERM: controlled shutdown hands leadership to the other in-sync replicas before the broker goes', async () => {
    await createTopic('controlled', 3);
    const before = await metadata(running(cluster()).bootstrap, ['controlled']);
    const victim = cluster().brokers.find((b) => b.nodeId === before.topics[0]?.partitions[0]?.leaderId);
    if (victim === undefined) throw new Error('no leader');
    const led = (before.topics[0]?.partitions ?? []).filter((p) => p.leaderId === victim.nodeId);
    expect(await victim.kill('SIGTERM')).to.equal(0);
    const log = readFileSync(victim.logFile, 'utf8');
    const line = log.split('\n').find((l) => l.includes('controlled shutdown: leadership moved'));
    expect(line, 'the controlled shutdown line').to.not.equal(undefined);
    expect((JSON.parse(line ?? '{}') as { partitions?: number }).partitions).to.be.at.least(led.length);
    const after = await metadata(running(cluster()).bootstrap, ['controlled']);
    for (const l of led) {
      const p = after.topics[0]?.partitions.find((x) => x.partitionIndex === l.partitionIndex);
      expect(p?.leaderId).to.not.equal(victim.nodeId);
      expect(p?.leaderId).to.be.at.least(0);
      expect(p?.isrNodes).to.not.include(victim.nodeId);
      expect(p?.leaderEpoch).to.equal((l.leaderEpoch ?? 0) + 1);
    }
    await victim.start();
    await until(
      async () => {
        const m = await metadata(running(cluster()).bootstrap, ['controlled']);
        return (m.topics[0]?.partitions ?? []).every((p) => p.isrNodes.length === 3) ? true : undefined;
      },
      20_000,
      'the restarted broker back in every ISR',
    );
  });

  it('kill -9 of a group coordinator: the group and its committed offsets move to the new leader of its offsets partition', async () => {
    await createTopic('grouped', 3);
    const groupId = 'failover-group';
    const client = kafka();
    const producer = client.producer();
    await producer.connect();
    await producer.send({
      topic: 'grouped',
      acks: -1,
      messages: Array.from({ length: 60 }, (_, i) => ({ value: `g${i}`, partition: i % 3 })),
    });
    await producer.disconnect();
    const consumer = client.consumer({ groupId, sessionTimeout: 10_000 });
    await consumer.connect();
    let seen = 0;
    await consumer.subscribe({ topic: 'grouped', fromBeginning: true });
    await consumer.run({
      eachMessage: () => {
        seen++;
        return Promise.resolve();
      },
    });
    const admin = client.admin();
    await admin.connect();
    try {
      await until(() => Promise.resolve(seen >= 60 ? true : undefined), 30_000, '60 records');
      await consumer.disconnect(); // commits what it consumed
      const committed = async () =>
        (await admin.fetchOffsets({ groupId, topics: ['grouped'] }))[0]?.partitions.reduce((n, p) => n + Number(p.offset), 0);
      expect(await committed()).to.equal(60);
      // the coordinator: the leader of the group's __consumer_offsets partition (3 partitions here)
      const p = partitionFor(groupId, 3);
      const coordinatorId = (await partitionOf(cluster(), '__consumer_offsets', p)).leaderId;
      const coordinator = cluster().brokers.find((b) => b.nodeId === coordinatorId);
      if (coordinator === undefined) throw new Error('no coordinator');
      await coordinator.kill('SIGKILL');
      await until(
        async () => {
          const q = await partitionOf(cluster(), '__consumer_offsets', p);
          return q.leaderId >= 0 && q.leaderId !== coordinatorId ? true : undefined;
        },
        SESSION_TIMEOUT_MS * 5,
        'a new coordinator',
      );
      expect(
        await until(async () => ((await committed()) === 60 ? 60 : undefined), 20_000, 'the offsets from the new coordinator'),
      ).to.equal(60);
      await coordinator.start();
    } finally {
      await admin.disconnect();
    }
  });

  it('kill -9 of the leader five times under acks=all producers (kafkajs and librdkafka, idempotent): nothing acknowledged is lost, no offset changes its record, the high watermark never goes back', async () => {
    await createTopic('jepsen', 1);
    const acked = new Map<string, bigint>(); // value -> offset the producer was told
    const hwSeen: bigint[] = [];
    const run = { stop: false };
    // two idempotent acks=all writers: kafkajs and librdkafka
    const rdk: Any = new KafkaJS.Kafka({
      kafkaJS: { brokers: cluster().bootstrap().split(','), clientId: 'jepsen-rdk', logLevel: KafkaJS.logLevel.NOTHING },
    });
    const writers: { send(value: string): Promise<bigint>; disconnect(): Promise<void> }[] = [];
    const kjs = kafka().producer({ idempotent: true, maxInFlightRequests: 1 });
    await kjs.connect();
    writers.push({
      send: async (value) => {
        const res = await kjs.send({ topic: 'jepsen', acks: -1, timeout: 5000, messages: [{ value }] });
        return BigInt(res[0]?.baseOffset ?? '-1');
      },
      disconnect: () => kjs.disconnect(),
    });
    const rdkProducer: Any = rdk.producer({ kafkaJS: { idempotent: true, acks: -1 } });
    await rdkProducer.connect();
    writers.push({
      send: async (value) => {
        const res: Any[] = await rdkProducer.send({ topic: 'jepsen', messages: [{ value }] });
        return BigInt(String(res[0]?.baseOffset ?? '-1'));
      },
      disconnect: () => rdkProducer.disconnect() as Promise<void>,
    });
    const loops = writers.map(async (writer, w) => {
      for (let i = 0; !run.stop; i++) {
        const value = `w${w}-${i}`;
        try {
          acked.set(value, await writer.send(value));
        } catch {
          // not acknowledged: it may or may not be in the log; only acknowledged ones must be
        }
      }
    });
    const admin = kafka().admin();
    await admin.connect();
    try {
      for (let round = 0; round < 5; round++) {
        await until(() => Promise.resolve(acked.size >= (round + 1) * 20 ? true : undefined), 30_000, `round ${round}: progress`);
        const before = await partitionOf(cluster(), 'jepsen', 0);
        const victim = cluster().brokers.find((b) => b.nodeId === before.leaderId);
        if (victim === undefined) throw new Error('no leader');
        await victim.kill('SIGKILL');
        await until(
          async () => {
            const p = await partitionOf(cluster(), 'jepsen', 0);
            return p.leaderId >= 0 && p.leaderId !== victim.nodeId ? true : undefined;
          },
          SESSION_TIMEOUT_MS * 5,
          `round ${round}: a new leader`,
        );
        const high = await admin.fetchTopicOffsets('jepsen').then(
          (o) => BigInt(o[0]?.high ?? '-1'),
          () => undefined,
        );
        if (high !== undefined) hwSeen.push(high);
        await victim.start();
        await until(
          async () => ((await partitionOf(cluster(), 'jepsen', 0)).isrNodes.length === 3 ? true : undefined),
          30_000,
          `round ${round}: ISR back to three`,
        );
        const after = await admin.fetchTopicOffsets('jepsen').then(
          (o) => BigInt(o[0]?.high ?? '-1'),
          () => undefined,
        );
        if (after !== undefined) hwSeen.push(after);
      }
    } finally {
      run.stop = true;
      await Promise.all(loops);
      await Promise.all(writers.map((p) => p.disconnect()));
      await admin.disconnect();
    }
    for (let i = 1; i < hwSeen.length; i++) {
      const [before, after] = [hwSeen[i - 1] ?? 0n, hwSeen[i] ?? 0n];
      expect(after >= before, `the high watermark went back from ${before} to ${after}`).to.equal(true);
    }
    // read the whole partition: each acknowledged value at the offset it was acknowledged at, exactly once
    const consumer = kafka().consumer({ groupId: 'jepsen-check' });
    await consumer.connect();
    const byOffset = new Map<bigint, string>();
    const seen = new Map<string, number>();
    try {
      await consumer.subscribe({ topic: 'jepsen', fromBeginning: true });
      const end = BigInt(
        await (async () => {
          const a = kafka().admin();
          await a.connect();
          try {
            return (await a.fetchTopicOffsets('jepsen'))[0]?.high ?? '0';
          } finally {
            await a.disconnect();
          }
        })(),
      );
      await consumer.run({
        eachMessage: ({ message }) => {
          const offset = BigInt(message.offset);
          const value = message.value?.toString() ?? '';
          const prior = byOffset.get(offset);
          if (prior !== undefined && prior !== value) throw new Error(`offset ${offset} holds ${prior} and ${value}`);
          byOffset.set(offset, value);
          seen.set(value, (seen.get(value) ?? 0) + 1);
          return Promise.resolve();
        },
      });
      await until(() => Promise.resolve(byOffset.size >= Number(end) ? true : undefined), 60_000, `all ${end} records`);
    } finally {
      await consumer.disconnect();
    }
    const lost = [...acked.keys()].filter((v) => !seen.has(v));
    expect(lost, 'acknowledged records lost').to.deep.equal([]);
    for (const [value, offset] of acked) expect(byOffset.get(offset), `offset ${offset}`).to.equal(value);
    const duplicated = [...seen].filter(([, n]) => n > 1);
    expect(duplicated, 'records stored twice (idempotent producers)').to.deep.equal([]);
    expect(acked.size).to.be.greaterThan(100);
  });
});
