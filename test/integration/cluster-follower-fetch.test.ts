/**
 * Fetch from the closest replica (KIP-392) in a cluster of three brokers in racks a, b and c (child
 * processes on a real etcd), with real clients: with replica.selector.class set, a consumer naming its
 * rack (librdkafka client.rack, kafkajs rackId) is sent by the leader to the follower in its rack and
 * reads every record there (each broker's request log tells who served its fetches); when that follower
 * is killed it goes back to the leader. Without a selector consumers read from leaders only. The last
 * part kills a follower with SIGKILL while it holds records the ISR does not, and shows that, restarted,
 * it serves consumers nothing past the high watermark it checkpointed (replication-offset-checkpoint).
 */
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { BatchField, LOG_OVERHEAD } from '../../protocol/records/index.js';
import { type LocalBroker, type LocalCluster, startLocalCluster } from '../../lib/cluster/local-cluster.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { asError } from '../../lib/as-error.js';
import { Cleanup } from '../helpers/cleanup.js';
import { metadata, running, until } from '../helpers/cluster.js';
import { RawClient, fetchBody } from '../helpers/raw-client.js';

const RACKS: Record<number, string> = { 1: 'a', 2: 'b', 3: 'c' };
const SELECTOR = 'org.apache.kafka.common.replica.RackAwareReplicaSelector';

interface RdMessage {
  value: Buffer | null;
  offset: number;
}
interface RdConsumer {
  connect(opts: object, cb: (e: unknown) => void): void;
  assign(a: { topic: string; partition: number; offset: number }[]): void;
  consume(n: number, cb: (e: unknown, messages: RdMessage[]) => void): void;
  disconnect(cb: () => void): void;
}

interface FetchPartition {
  errorCode: number;
  highWatermark: bigint;
  /** v11+ */
  preferredReadReplica?: number;
  records: Buffer | null;
}

/** The offset after the last whole v2 batch in `records` (`from` when there is none). */
function endOf(records: Buffer | null, from: bigint): bigint {
  let next = from;
  for (let p = 0; records !== null && p + LOG_OVERHEAD <= records.length;) {
    const size = LOG_OVERHEAD + records.readInt32BE(p + BatchField.BATCH_LENGTH);
    if (p + size > records.length) break;
    next = records.readBigInt64BE(p) + BigInt(records.readInt32BE(p + BatchField.LAST_OFFSET_DELTA)) + 1n;
    p += size;
  }
  return next;
}

/** A consumer Fetch of one partition at `version` (v11+: naming `rackId`) sent to `b`. */
async function fetchAt(b: LocalBroker, topic: string, offset: bigint, version: number, rackId = ''): Promise<FetchPartition> {
  const c = await RawClient.connect(b.bootstrap);
  try {
    const res = await c.request<{ responses: { partitions: FetchPartition[] }[] }>(ApiKey.Fetch, version, {
      ...fetchBody(topic, [{ partition: 0, fetchOffset: offset }]),
      rackId,
    });
    const p = res.responses[0]?.partitions[0];
    if (p === undefined) throw new Error('empty fetch response');
    return p;
  } finally {
    c.destroy();
  }
}

/** How many Fetch requests from client id `clientId` the broker's request log holds. */
async function fetchesFrom(b: LocalBroker, clientId: string): Promise<number> {
  const res = await fetch(`http://${b.admin}/v1/requests?api=Fetch&client=${encodeURIComponent(clientId)}`);
  const body = (await res.json()) as { requests: { clientId: string | null }[] };
  return body.requests.filter((r) => r.clientId === clientId).length;
}

async function startRackCluster(cleanup: Cleanup, overrides: Record<string, string>): Promise<LocalCluster> {
  const cluster = cleanup.add(
    await startLocalCluster({
      brokers: 3,
      overrides: {
        'broker.session.timeout.ms': '3000',
        'replica.lag.time.max.ms': '4000',
        'replica.fetch.backoff.ms': '200',
        'group.initial.rebalance.delay.ms': '0',
        'offsets.topic.num.partitions': '1',
        'offsets.topic.replication.factor': '3',
        'admin.requests.log.size': '20000',
        ...overrides,
      },
      brokerOverrides: (id) => ({ 'broker.rack': RACKS[id] ?? '' }),
    }),
    (c) => c.stop(),
  );
  await until(async () => ((await metadata(running(cluster).bootstrap, [])).brokers.length === 3 ? true : undefined), 15_000, '3 brokers');
  return cluster;
}

function kafkaOf(cluster: LocalCluster, clientId: string): Kafka {
  return new Kafka({
    clientId,
    brokers: cluster.bootstrap().split(','),
    logLevel: logLevel.NOTHING,
    retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 },
  });
}

/** Creates `topic` (1 partition on brokers 1, 2, 3: broker 1 leads, in rack a) and produces `n` records acks=all; resolves once the ISR is all three. */
async function topicWith(cluster: LocalCluster, topic: string, n: number, prefix = 'r'): Promise<void> {
  const kafka = kafkaOf(cluster, 'setup');
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, replicaAssignment: [{ partition: 0, replicas: [1, 2, 3] }] }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
  await produce(cluster, topic, 0, n, prefix);
  await until(
    async () => {
      const p = (await metadata(running(cluster).bootstrap, [topic])).topics[0]?.partitions[0];
      return p?.leaderId === 1 && p.isrNodes.length === 3 ? true : undefined;
    },
    20_000,
    `${topic}: broker 1 leads, ISR of three`,
  );
}

async function produce(cluster: LocalCluster, topic: string, from: number, n: number, prefix = 'r', acks = -1): Promise<void> {
  const producer = kafkaOf(cluster, 'producer').producer();
  await producer.connect();
  try {
    for (let i = from; i < from + n; i += 50) {
      const count = Math.min(50, from + n - i);
      await producer.send({
        topic,
        acks,
        messages: Array.from({ length: count }, (_, j) => ({ value: `${prefix}${i + j}`, partition: 0 })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}

/** A librdkafka consumer of partition 0 of `topic` from offset 0, in `rack`. */
async function rdConsumer(cluster: LocalCluster, clientId: string, topic: string, rack: string): Promise<RdConsumer> {
  const ck = loadConfluent() as unknown as { KafkaConsumer: new (conf: object, topicConf: object) => RdConsumer };
  const c = new ck.KafkaConsumer(
    {
      'bootstrap.servers': cluster.bootstrap(),
      'client.id': clientId,
      'client.rack': rack,
      'group.id': clientId,
      'enable.auto.commit': false,
      'fetch.wait.max.ms': 300,
      'topic.metadata.refresh.interval.ms': 1000,
      log_level: 0,
    },
    {},
  );
  await new Promise<void>((resolve, reject) => c.connect({ timeout: 10_000 }, (e: unknown) => (e ? reject(asError(e)) : resolve())));
  c.assign([{ topic, partition: 0, offset: 0 }]);
  return c;
}

/** Consumes until `want` values arrived (in order, from offset 0) or `ms` passed; a consume error fails. */
async function consumeUntil(c: RdConsumer, got: string[], want: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (got.length < want && Date.now() < deadline) {
    const batch = await new Promise<RdMessage[]>((resolve, reject) => c.consume(100, (e, m) => (e ? reject(asError(e)) : resolve(m))));
    for (const m of batch) {
      expect(m.offset, 'offsets in order, none skipped or repeated').to.equal(got.length);
      got.push(m.value?.toString() ?? '');
    }
  }
}

const expected = (n: number, prefix = 'r') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const broker = (cluster: LocalCluster, id: number): LocalBroker => cluster.brokers.find((b) => b.nodeId === id) as LocalBroker;

describe('cluster: fetch from the closest replica (KIP-392)', function () {
  this.timeout(300_000);

  describe('replica.selector.class = RackAwareReplicaSelector, brokers in racks a, b, c', () => {
    let cluster: LocalCluster;
    const cleanup = new Cleanup();
    before(async function () {
      this.timeout(60_000);
      cluster = await startRackCluster(cleanup, { 'replica.selector.class': SELECTOR });
    });
    after(() => cleanup.run());

    it('the wire: the leader sends a v11+ consumer naming a rack to the follower there (no records); followers serve v11+ up to their high watermark, v10 gets NOT_LEADER_OR_FOLLOWER', async () => {
      await topicWith(cluster, 'wire', 30);
      const [leader, b, c] = [broker(cluster, 1), broker(cluster, 2), broker(cluster, 3)];
      const toB = await fetchAt(leader, 'wire', 0n, 11, 'b');
      expect([toB.errorCode, toB.preferredReadReplica, toB.highWatermark, toB.records?.length ?? 0]).to.deep.equal([
        ErrorCode.NONE,
        2,
        30n,
        0,
      ]);
      expect((await fetchAt(leader, 'wire', 0n, 12, 'c')).preferredReadReplica).to.equal(3);
      // the leader's own rack, an unknown rack, no rack, or a version without rack_id: read at the leader
      for (const [version, rack] of [
        [11, 'a'],
        [11, 'z'],
        [11, ''],
        [10, ''],
      ] as const) {
        const r = await fetchAt(leader, 'wire', 0n, version, rack);
        expect([r.errorCode, r.preferredReadReplica ?? -1, endOf(r.records, 0n)], `v${version} rack '${rack}'`).to.deep.equal([
          ErrorCode.NONE,
          -1,
          30n,
        ]);
      }
      // at the followers: v11+ reads (up to the high watermark the leader sent them), v10 may not
      for (const f of [b, c]) {
        const r = await until(
          async () => {
            const x = await fetchAt(f, 'wire', 0n, 12);
            return x.highWatermark === 30n ? x : undefined;
          },
          10_000,
          `broker ${f.nodeId} knows the high watermark`,
        );
        expect([r.errorCode, r.preferredReadReplica, endOf(r.records, 0n)]).to.deep.equal([ErrorCode.NONE, -1, 30n]);
        expect((await fetchAt(f, 'wire', 0n, 10)).errorCode).to.equal(ErrorCode.NOT_LEADER_OR_FOLLOWER);
        expect((await fetchAt(f, 'wire', 31n, 12)).errorCode).to.equal(ErrorCode.OFFSET_OUT_OF_RANGE);
      }
    });

    // kafkajs 2.2.4 follows preferred_read_replica (consumerGroup.js keeps it until metadataMaxAge). Its
    // fall-back when that replica dies is not asserted here: it checks the partition's offline replicas
    // for the leader's id, not the replica's, and in a trial run it took 33 s (request timeouts, a
    // rebalance) and redelivered a record before it read on from the leader.
    it('kafkajs (rackId): fetches go to the follower in its rack, and every record arrives', async () => {
      await topicWith(cluster, 'kjs', 200);
      const clientId = 'rack-kafkajs';
      const consumer = kafkaOf(cluster, clientId).consumer({ groupId: 'rack-kafkajs', rackId: 'c', maxWaitTimeInMs: 300 });
      const got: string[] = [];
      await consumer.connect();
      try {
        await consumer.subscribe({ topic: 'kjs', fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ message }) => {
            got.push(message.value?.toString() ?? '');
            return Promise.resolve();
          },
        });
        await until(() => Promise.resolve(got.length >= 200 ? true : undefined), 30_000, 'kafkajs has 200 records');
        // a while longer: later fetches (caught up) go where the earlier ones went
        await new Promise((r) => setTimeout(r, 1500));
      } finally {
        await consumer.disconnect();
      }
      expect(got).to.deep.equal(expected(200));
      const [atLeader, atB, atC] = await Promise.all([1, 2, 3].map((id) => fetchesFrom(broker(cluster, id), clientId)));
      expect(atC, 'fetches served by broker 3 (rack c)').to.be.greaterThan(2);
      expect(atB, 'fetches served by broker 2 (rack b)').to.equal(0);
      expect(atC, 'the follower in its rack served most').to.be.greaterThan(atLeader ?? 0);
    });

    it('librdkafka (client.rack): fetches go to the follower in its rack; killed, the consumer goes back to the leader and misses nothing', async () => {
      await topicWith(cluster, 'rdk', 200);
      const clientId = 'rack-rdk';
      const c = await rdConsumer(cluster, clientId, 'rdk', 'b');
      const got: string[] = [];
      const [leader, b, third] = [broker(cluster, 1), broker(cluster, 2), broker(cluster, 3)];
      try {
        await consumeUntil(c, got, 200, 30_000);
        await consumeUntil(c, got, 201, 1500); // caught up: a few idle long polls
        expect(got).to.deep.equal(expected(200));
        const before = await Promise.all([leader, b, third].map((x) => fetchesFrom(x, clientId)));
        expect(before[1], 'fetches served by broker 2 (rack b)').to.be.greaterThan(2);
        expect(before[2], 'fetches served by broker 3 (rack c)').to.equal(0);
        expect(before[1], 'the follower in its rack served most').to.be.greaterThan(before[0] ?? 0);
        // the follower dies: the consumer reads on from the leader, and gets what is produced meanwhile
        await b.kill('SIGKILL');
        await produce(cluster, 'rdk', 200, 100);
        await consumeUntil(c, got, 300, 60_000);
        expect(got).to.deep.equal(expected(300));
        const after = await Promise.all([leader, third].map((x) => fetchesFrom(x, clientId)));
        expect(after[0], 'fetches served by the leader after the kill').to.be.greaterThan(before[0] ?? 0);
        expect(after[1], 'fetches served by broker 3 (rack c)').to.equal(0);
      } finally {
        await new Promise<void>((resolve) => c.disconnect(() => resolve()));
        if (!b.running) await b.start();
      }
    });
  });

  describe('replication-offset-checkpoint: a follower killed with SIGKILL', () => {
    let cluster: LocalCluster;
    const cleanup = new Cleanup();
    before(async function () {
      this.timeout(60_000);
      // sessions and the ISR lag time long enough that a stopped broker stays in the ISR throughout
      cluster = await startRackCluster(cleanup, {
        'replica.selector.class': 'rack-aware',
        'broker.session.timeout.ms': '40000',
        'replica.lag.time.max.ms': '40000',
        'replica.high.watermark.checkpoint.interval.ms': '200',
      });
    });
    after(() => cleanup.run());

    it('restarted, serves a consumer reading from it nothing past the high watermark it checkpointed', async () => {
      await topicWith(cluster, 'hw', 20);
      const [leader, follower, stalled] = [broker(cluster, 1), broker(cluster, 2), broker(cluster, 3)];
      const hwAt = async (b: LocalBroker) => (await fetchAt(b, 'hw', 0n, 12)).highWatermark;
      await until(async () => ((await hwAt(follower)) === 20n ? true : undefined), 10_000, 'the follower knows the high watermark 20');
      // broker 3 stops fetching but stays in the ISR: records produced now reach broker 2 and are not committed
      process.kill(stalled.pid ?? 0, 'SIGSTOP');
      const resume = () => process.kill(stalled.pid ?? 0, 'SIGCONT');
      let c: RdConsumer | undefined;
      try {
        await produce(cluster, 'hw', 20, 10, 'u', 1);
        await until(
          async () => ((await fetchAt(follower, 'hw', 30n, 12)).errorCode === ErrorCode.NONE ? true : undefined),
          10_000,
          'broker 2 holds offsets 20..29',
        );
        expect([await hwAt(leader), await hwAt(follower)], 'high watermarks (leader, broker 2)').to.deep.equal([20n, 20n]);
        await new Promise((r) => setTimeout(r, 600)); // a checkpoint or two
        await follower.kill('SIGKILL');
        await follower.start();
        // restarted: its high watermark is the checkpointed 20, not its log end 30, before and after it hears from the leader
        const first = await until(
          async () => {
            const r = await fetchAt(follower, 'hw', 0n, 12);
            return r.errorCode === ErrorCode.NONE ? r : undefined;
          },
          20_000,
          'broker 2 serves consumers again',
        );
        expect([first.highWatermark, endOf(first.records, 0n)], 'broker 2 after the restart: high watermark, records up to').to.deep.equal([
          20n,
          20n,
        ]);
        // a consumer in rack b reads at broker 2: the 20 committed records, and nothing more while broker 3 is stopped
        const clientId = 'hw-rdk';
        c = await rdConsumer(cluster, clientId, 'hw', 'b');
        const got: string[] = [];
        await consumeUntil(c, got, 20, 30_000);
        await consumeUntil(c, got, 21, 3000);
        expect(got).to.deep.equal(expected(20));
        expect(await fetchesFrom(follower, clientId), 'fetches served by broker 2').to.be.greaterThan(0);
        // broker 3 returns and catches up: the records are committed, and the consumer gets them
        resume();
        await consumeUntil(c, got, 30, 40_000);
        expect(got).to.deep.equal([...expected(20), ...expected(30, 'u').slice(20)]);
      } finally {
        resume();
        if (c !== undefined) {
          const done = c;
          await new Promise<void>((resolve) => done.disconnect(() => resolve()));
        }
      }
    });
  });

  describe('replica.selector.class unset (the default)', () => {
    let cluster: LocalCluster;
    const cleanup = new Cleanup();
    before(async function () {
      this.timeout(60_000);
      cluster = await startRackCluster(cleanup, {});
    });
    after(() => cleanup.run());

    it('a librdkafka consumer with client.rack fetches from the leader only', async () => {
      await topicWith(cluster, 'leader-only', 200);
      const clientId = 'leader-only-rdk';
      const c = await rdConsumer(cluster, clientId, 'leader-only', 'b');
      const got: string[] = [];
      try {
        await consumeUntil(c, got, 200, 30_000);
        await consumeUntil(c, got, 201, 1500);
      } finally {
        await new Promise<void>((resolve) => c.disconnect(() => resolve()));
      }
      expect(got).to.deep.equal(expected(200));
      const counts = await Promise.all([1, 2, 3].map((id) => fetchesFrom(broker(cluster, id), clientId)));
      expect(counts[0], 'fetches served by the leader').to.be.greaterThan(2);
      expect([counts[1], counts[2]], 'fetches served by the followers').to.deep.equal([0, 0]);
      expect((await fetchAt(broker(cluster, 1), 'leader-only', 0n, 12, 'b')).preferredReadReplica).to.equal(-1);
    });
  });
});
