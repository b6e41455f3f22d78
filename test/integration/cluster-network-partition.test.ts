/**
 * A network partition of a leader from the other brokers (issue 15), with real packets dropped: three
 * brokers, each in its own network namespace on a bridge (compat/lib/netns.ts), etcd and the test's
 * clients in the root namespace, replication factor 3 and min.insync.replicas 2. The cut is iptables
 * DROP rules in the leader's namespace only, so clients still reach it:
 * - cut from the other brokers only (it still reaches etcd): it shrinks the ISR to itself, and
 *   acks=all writes to it are refused (NOT_ENOUGH_REPLICAS), never acknowledged;
 * - cut from the brokers and etcd: its session expires, another replica is elected, acks=all writes
 *   to the isolated old leader time out (acks=1 ones are taken: they are what it must throw away);
 *   clients that ask the others for metadata write to the new leader and are acknowledged.
 * Healed, the old leader follows, truncates what it appended but never committed (OffsetForLeaderEpoch),
 * and rejoins the ISR. From the clients' side: every acknowledged record is read back once, at the
 * offset it was acknowledged at; the high watermark a consumer sees never goes back; and the three
 * replicas' logs end byte-identical.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { type LocalBroker, type LocalCluster, startLocalCluster } from '../../lib/cluster/local-cluster.js';
import { type BridgedNetwork, createBridgedNetwork, netnsUnavailable, type NetnsMember, type Peer } from '../../compat/lib/netns.js';
import { Cleanup } from '../helpers/cleanup.js';
import { logBytes, metadata, until } from '../helpers/cluster.js';
import { RawClient, rawListOffset, rawProduce } from '../helpers/raw-client.js';

const SESSION_TIMEOUT_MS = 3000;
const LAG_MAX_MS = 3000;

/** Partition 0 of `topic` as broker `from` reports it. */
async function stateAt(from: LocalBroker, topic: string) {
  const p = (await metadata(from.bootstrap, [topic])).topics[0]?.partitions.find((x) => x.partitionIndex === 0);
  if (p === undefined) throw new Error(`no ${topic}-0 at broker ${from.nodeId}`);
  return p;
}

/** acks=all sends of `prefix-<i>` in a loop, no retries: what was acknowledged, at which offset, and when. */
class Writer {
  readonly acked = new Map<string, { offset: bigint; at: number }>();
  failures = 0;
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly producer: Producer,
    private readonly topic: string,
    private readonly prefix: string,
  ) {}

  async start(): Promise<this> {
    await this.producer.connect();
    this.loop = (async () => {
      for (let i = 0; !this.stopped; i++) {
        const value = `${this.prefix}-${i}`;
        try {
          const res = await this.producer.send({ topic: this.topic, acks: -1, timeout: 2000, messages: [{ value, partition: 0 }] });
          this.acked.set(value, { offset: BigInt(res[0]?.baseOffset ?? '-1'), at: Date.now() });
        } catch {
          this.failures++; // not acknowledged: it may or may not be in the log
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    })();
    return this;
  }

  /** Acknowledgements that arrived in [from, to). */
  ackedBetween(from: number, to: number): string[] {
    return [...this.acked].filter(([, a]) => a.at >= from && a.at < to).map(([v]) => v);
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.stopping ??= this.loop.then(() => this.producer.disconnect());
    return this.stopping;
  }
}

describe('cluster network partition: a leader cut from the other brokers (network namespaces)', function () {
  this.timeout(120_000);
  let net: BridgedNetwork;
  let cluster: LocalCluster;
  const cleanup = new Cleanup();

  before(async function () {
    const why = netnsUnavailable();
    if (why !== null) {
      // the partition is made of network namespaces and iptables rules: root and `ip netns` are needed
      console.log(`      skipped: ${why}`);
      this.skip();
      return;
    }
    this.timeout(60_000);
    net = cleanup.add(createBridgedNetwork({ prefix: 'gregor-np', tag: 'gnp', members: 3 }), (n) => n.teardown());
    cluster = cleanup.add(
      await startLocalCluster({
        brokers: 3,
        etcdHost: net.hostAddress,
        placement: (id) => ({ host: member(id).address, netns: member(id).name }),
        overrides: {
          'broker.session.timeout.ms': String(SESSION_TIMEOUT_MS),
          'default.replication.factor': '3',
          'min.insync.replicas': '2',
          'offsets.topic.replication.factor': '3',
          'offsets.topic.num.partitions': '1',
          'replica.lag.time.max.ms': String(LAG_MAX_MS),
          'replica.fetch.backoff.ms': '200',
          'replica.socket.timeout.ms': '3000',
        },
      }),
      (c) => c.stop(),
    );
    await until(async () => ((await metadata(broker(1).bootstrap, [])).brokers.length === 3 ? true : undefined), 15_000, '3 brokers');
  });
  after(() => cleanup.run());

  const member = (nodeId: number): NetnsMember => {
    const m = net.members[nodeId - 1];
    if (m === undefined) throw new Error(`no namespace for node ${nodeId}`);
    return m;
  };
  const broker = (nodeId: number): LocalBroker => {
    const b = cluster.brokers.find((x) => x.nodeId === nodeId);
    if (b === undefined) throw new Error(`no broker ${nodeId}`);
    return b;
  };
  const kafka = (brokers: readonly LocalBroker[], clientId: string) =>
    new Kafka({
      clientId,
      brokers: brokers.map((b) => b.bootstrap),
      logLevel: logLevel.NOTHING,
      requestTimeout: 5000,
      retry: { retries: 0 },
    });
  /** A Writer started (and stopped by the suite's cleanup if the case does not). */
  const writer = (brokers: readonly LocalBroker[], topic: string, prefix: string) =>
    cleanup.add(new Writer(kafka(brokers, prefix).producer({ allowAutoTopicCreation: false }), topic, prefix), (w) => w.stop()).start();

  /** Cuts `nodeId` from `peers`, runs `body`, and heals, whatever happens: `body`'s result and when the cut began and ended. */
  async function whileCut<T>(
    nodeId: number,
    peers: readonly Peer[],
    body: () => Promise<T>,
  ): Promise<{ result: T; cutAt: number; healedAt: number }> {
    const cutAt = Date.now();
    net.cut(member(nodeId), peers);
    try {
      const result = await body();
      return { result, cutAt, healedAt: Date.now() };
    } finally {
      net.heal(member(nodeId));
    }
  }

  /** Creates the topic (one partition, three replicas) and returns its leader and the other two. */
  async function topicWithLeader(topic: string): Promise<{ leader: LocalBroker; others: LocalBroker[] }> {
    const admin = kafka(cluster.brokers, 'admin').admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 3 }], waitForLeaders: true });
    } finally {
      await admin.disconnect();
    }
    const s = await until(
      async () => {
        const p = await stateAt(broker(1), topic);
        return p.leaderId > 0 && p.isrNodes.length === 3 ? p : undefined;
      },
      15_000,
      `${topic}: a leader and an ISR of three`,
    );
    return { leader: broker(s.leaderId), others: cluster.brokers.filter((b) => b.nodeId !== s.leaderId) };
  }

  /** A consumer reading the partition from the start for the whole case: the high watermarks its fetches saw, and offset → value. */
  async function watch(topic: string) {
    const consumer = kafka(cluster.brokers, `${topic}-watch`).consumer({ groupId: `${topic}-watch`, maxWaitTimeInMs: 500 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const highWatermarks: bigint[] = [];
    const byOffset = new Map<bigint, string>();
    const conflicts: string[] = [];
    await consumer.run({
      eachBatch: ({ batch }) => {
        highWatermarks.push(BigInt(batch.highWatermark));
        for (const m of batch.messages) {
          const value = m.value?.toString() ?? '';
          const prior = byOffset.get(BigInt(m.offset));
          if (prior !== undefined && prior !== value) conflicts.push(`offset ${m.offset}: ${prior} then ${value}`);
          byOffset.set(BigInt(m.offset), value);
        }
        return Promise.resolve();
      },
    });
    return { consumer, highWatermarks, byOffset, conflicts };
  }

  /**
   * A client looking up the partition's end offset (ListOffsets latest) every 20 ms at the leader
   * `via`'s metadata names, until stopped: the offsets answered, in order (errors, such as
   * OFFSET_NOT_AVAILABLE from a new leader, give none).
   */
  function endOffsetLookups(topic: string, via: LocalBroker): { stop(): Promise<bigint[]> } {
    const ends: bigint[] = [];
    const run = { stopped: false };
    const loop = (async () => {
      while (!run.stopped) {
        try {
          const leader = broker((await stateAt(via, topic)).leaderId);
          const c = await RawClient.connect(leader.bootstrap);
          try {
            ends.push(await rawListOffset(c, topic, 0));
          } finally {
            c.destroy();
          }
        } catch {
          // no leader, or no answer: nothing seen
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    return {
      stop: async () => {
        run.stopped = true;
        await loop;
        return ends;
      },
    };
  }

  /**
   * After the heal: the ISR is three again, the replicas' logs are byte-identical, and the partition
   * read from the start holds every acknowledged record once, at the offset it was acknowledged at.
   */
  async function checkHealed(
    topic: string,
    writers: readonly Writer[],
    watcher: Awaited<ReturnType<typeof watch>>,
  ): Promise<Map<bigint, string>> {
    await until(async () => ((await stateAt(broker(1), topic)).isrNodes.length === 3 ? true : undefined), 30_000, `${topic}: ISR of three`);
    await until(
      () => {
        const [first, ...rest] = cluster.brokers.map((b) => logBytes(b, topic, 0));
        return Promise.resolve(first !== undefined && rest.every((x) => x.equals(first)) ? true : undefined);
      },
      15_000,
      `${topic}: byte-identical replicas`,
    );
    const admin = kafka(cluster.brokers, 'check').admin();
    await admin.connect();
    const end = BigInt((await admin.fetchTopicOffsets(topic))[0]?.high ?? '0');
    await admin.disconnect();
    await until(
      () => Promise.resolve(watcher.byOffset.size >= Number(end) ? true : undefined),
      20_000,
      `${topic}: all ${end} records read`,
    );
    await watcher.consumer.disconnect();
    expect(watcher.conflicts, 'an offset read with two values').to.deep.equal([]);
    for (let i = 1; i < watcher.highWatermarks.length; i++) {
      const [before, after] = [watcher.highWatermarks[i - 1] ?? 0n, watcher.highWatermarks[i] ?? 0n];
      expect(after >= before, `the consumer's high watermark went back from ${before} to ${after}`).to.equal(true);
    }
    const read = new Map<string, bigint[]>();
    for (const [offset, value] of watcher.byOffset) read.set(value, [...(read.get(value) ?? []), offset]);
    let acked = 0;
    for (const w of writers) {
      for (const [value, a] of w.acked) {
        acked++;
        expect(read.get(value), `acknowledged ${value}`).to.deep.equal([a.offset]);
      }
    }
    expect(acked).to.be.greaterThan(20);
    return watcher.byOffset;
  }

  it('cut from the other brokers, still reaching etcd: the ISR shrinks to the leader, acks=all to it is refused until the heal, then it catches the followers up', async () => {
    const topic = 'cut-from-brokers';
    const { leader, others } = await topicWithLeader(topic);
    const watcher = await watch(topic);
    const steady = await writer(cluster.brokers, topic, 'steady');
    await until(() => Promise.resolve(steady.acked.size >= 20 ? true : undefined), 20_000, 'acks before the cut');
    await steady.stop();

    const brokersOnly = others.map((b) => ({ address: member(b.nodeId).address }));
    const {
      result: isolated,
      cutAt,
      healedAt,
    } = await whileCut(leader.nodeId, brokersOnly, async () => {
      const isolated = await writer([leader], topic, 'isolated');
      // the leader finds its followers lagging and drops them from the ISR through etcd (which it reaches)
      await until(
        async () => ((await stateAt(others[0] ?? leader, topic)).isrNodes.join() === String(leader.nodeId) ? true : undefined),
        LAG_MAX_MS * 5,
        'the ISR shrunk to the leader',
      );
      expect((await stateAt(leader, topic)).leaderId).to.equal(leader.nodeId);
      const c = await RawClient.connect(leader.bootstrap);
      try {
        const batch = buildRecordBatch([{ key: null, value: Buffer.from('raw-acks-all'), timestamp: BigInt(Date.now()) }]);
        expect((await rawProduce(c, topic, [[0, batch]], -1))[0]?.errorCode).to.equal(ErrorCode.NOT_ENOUGH_REPLICAS);
      } finally {
        c.destroy();
      }
      await until(() => Promise.resolve(isolated.failures >= 3 ? true : undefined), 20_000, 'acks=all sends tried while cut');
      return isolated;
    });
    expect(isolated.ackedBetween(cutAt, healedAt), 'acks=all acknowledged while the leader was cut off').to.deep.equal([]);

    // healed: the followers fetch again, rejoin the ISR, and acks=all works
    await until(() => Promise.resolve(isolated.acked.size >= 10 ? true : undefined), 30_000, 'acks after the heal');
    await isolated.stop();
    expect((await stateAt(broker(1), topic)).leaderId).to.equal(leader.nodeId);
    await checkHealed(topic, [steady, isolated], watcher);
  });

  it('cut from the other brokers and etcd: a new leader is elected, the old one acknowledges no acks=all write, and healed it truncates what it took and follows', async () => {
    const topic = 'cut-from-all';
    const { leader, others } = await topicWithLeader(topic);
    const [n1, n2] = others;
    if (n1 === undefined || n2 === undefined) throw new Error('unexpected placement');
    const before = await stateAt(n1, topic);
    const watcher = await watch(topic);
    const steady = await writer(cluster.brokers, topic, 'steady');
    await until(() => Promise.resolve(steady.acked.size >= 20 ? true : undefined), 20_000, 'acks before the cut');
    // the steady writer goes on through the cut, so the new leader is likely to know a high watermark
    // one write behind the old leader's: the end offsets a client looks up must not go back meanwhile
    const lookups = endOffsetLookups(topic, n1);

    const etcdPort = Number(new URL(cluster.etcd.endpoints).port);
    const brokersAndEtcd = [...others.map((b) => ({ address: member(b.nodeId).address })), { address: net.hostAddress, port: etcdPort }];
    const { result, cutAt, healedAt } = await whileCut(leader.nodeId, brokersAndEtcd, async () => {
      const isolated = await writer([leader], topic, 'isolated');
      const [raw, rawAll] = await Promise.all([RawClient.connect(leader.bootstrap), RawClient.connect(leader.bootstrap)]);
      try {
        // acks=1 is taken by the old leader (it still believes it leads): records the others never get
        const one = (value: string) => buildRecordBatch([{ key: null, value: Buffer.from(value), timestamp: BigInt(Date.now()) }]);
        const taken = [];
        for (const v of ['divergent-0', 'divergent-1', 'divergent-2']) taken.push(await rawProduce(raw, topic, [[0, one(v)]], 1));
        expect(taken.map((r) => r[0]?.errorCode)).to.deep.equal([ErrorCode.NONE, ErrorCode.NONE, ErrorCode.NONE]);
        // acks=all is not: the followers never fetch it and the ISR cannot change without etcd
        const refused = rawProduce(rawAll, topic, [[0, one('raw-acks-all')]], -1, 3000);

        // the others elect a new leader once the old one's session expires
        const elected = await until(
          async () => {
            const p = await stateAt(n1, topic);
            return p.leaderId > 0 && p.leaderId !== leader.nodeId ? p : undefined;
          },
          SESSION_TIMEOUT_MS * 6,
          'a new leader among the others',
        );
        expect(elected.leaderEpoch).to.be.greaterThan(before.leaderEpoch ?? 0);
        expect(elected.isrNodes).to.not.include(leader.nodeId);
        // a client that asks the others for metadata writes to the new leader, and is acknowledged
        const moved = await writer([n1, n2], topic, 'moved');
        await until(() => Promise.resolve(moved.acked.size >= 10 ? true : undefined), 20_000, 'acks from the new leader');
        expect([ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER]).to.include((await refused)[0]?.errorCode);
        await until(() => Promise.resolve(isolated.failures >= 3 ? true : undefined), 20_000, 'acks=all sends to the old leader tried');
        return { isolated, moved, divergent: taken.map((r) => r[0]?.baseOffset ?? -1n) };
      } finally {
        raw.destroy();
        rawAll.destroy();
      }
    });
    const { isolated, moved, divergent } = result;
    expect(isolated.ackedBetween(cutAt, healedAt), 'acks=all acknowledged by the isolated old leader').to.deep.equal([]);
    expect(moved.ackedBetween(cutAt, healedAt).length, 'acks from the new leader while the old one was cut off').to.be.at.least(10);

    await until(() => Promise.resolve(isolated.acked.size >= 5 ? true : undefined), 30_000, 'acks after the heal');
    await Promise.all([isolated.stop(), moved.stop(), steady.stop()]);
    const ends = await lookups.stop();
    expect(ends.length).to.be.greaterThan(10);
    for (let i = 1; i < ends.length; i++) {
      const [was, now] = [ends[i - 1] ?? 0n, ends[i] ?? 0n];
      expect(now >= was, `the end offset looked up went back from ${was} to ${now}`).to.equal(true);
    }
    const byOffset = await checkHealed(topic, [steady, isolated, moved], watcher);
    // what the old leader took alone is gone: the offsets it gave those records hold the new leader's
    for (const o of divergent)
      expect(byOffset.get(o), `offset ${o}`)
        .to.be.a('string')
        .and.not.match(/^divergent-/);
    const values = new Set(byOffset.values());
    for (const v of ['divergent-0', 'divergent-1', 'divergent-2', 'raw-acks-all']) expect(values.has(v), `${v} survived`).to.equal(false);
    const log = readFileSync(leader.logFile, 'utf8');
    expect(log, 'the old leader truncated through OffsetForLeaderEpoch').to.match(/truncated the log to where it agrees with the leader/);
  });
});
