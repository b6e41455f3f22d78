/**
 * Transactions in a cluster (issue 15): three brokers on a real etcd, topics with replication factor
 * 3 and min.insync.replicas 2, `__transaction_state` replicated three ways (min ISR 2). The
 * transaction coordinator is the leader of the transactional id's `__transaction_state` partition; the
 * partitions of a transaction are led by all three brokers, so most COMMIT/ABORT markers go to other
 * brokers (WriteTxnMarkers), and the partition leaders check transactional writes with the
 * coordinator (AddPartitionsToTxn verifyOnly). kafkajs and librdkafka transactional producers commit
 * some transactions and abort others: a read_committed reader sees exactly the committed records and
 * every partition's last stable offset reaches its high watermark. Consume-transform-produce with
 * sendOffsets where the group coordinator and the transaction coordinator are different brokers. The
 * coordinator's broker killed with SIGKILL between transactions and with transactions open: the
 * coordinator moves with the partition's leadership, the producers carry on (or re-initialise), and
 * nothing committed is lost, nothing aborted is visible, no transaction is left hanging.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { FindCoordinatorResponse } from '../../protocol/generated/find-coordinator.js';
import type { LocalBroker, LocalCluster } from '../../lib/cluster/local-cluster.js';
import { partitionFor } from '../../lib/group/records.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { clusterKafka, createRf3Topic, metadata, RF3_OVERRIDES, running, until, useCluster } from '../helpers/cluster.js';
import { readAllRdkafka, sleep } from '../helpers/eos.js';
import { RawClient } from '../helpers/raw-client.js';

type Any = any;
const SESSION_TIMEOUT_MS = 3000;
const STATE_PARTITIONS = 3;
const OFFSETS_PARTITIONS = 3;
const TXN_STATE = '__transaction_state';
const OFFSETS = '__consumer_offsets';

async function partitions(cluster: LocalCluster, topic: string) {
  const m = await metadata(running(cluster).bootstrap, [topic]);
  const t = m.topics[0];
  if (t === undefined || t.errorCode !== 0) throw new Error(`no ${topic} (${t?.errorCode})`);
  return [...t.partitions].sort((a, b) => a.partitionIndex - b.partitionIndex);
}

async function leaderOf(cluster: LocalCluster, topic: string, partition: number): Promise<number> {
  return (await partitions(cluster, topic)).find((p) => p.partitionIndex === partition)?.leaderId ?? -1;
}

/** ListOffsets at the partition's current leader: [last stable offset, high watermark]. */
async function lsoAndHw(cluster: LocalCluster, topic: string, partition: number): Promise<[bigint, bigint]> {
  const leaderId = await leaderOf(cluster, topic, partition);
  const leader = cluster.brokers.find((b) => b.running && b.nodeId === leaderId);
  if (leader === undefined) throw new Error(`${topic}-${partition}: no running leader`);
  const c = await RawClient.connect(leader.bootstrap);
  try {
    const ask = async (isolationLevel: number) => {
      const res = await c.request<{ topics: { partitions: { errorCode: number; offset: bigint }[] }[] }>(2, 5, {
        replicaId: -1,
        isolationLevel,
        topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: -1n }] }],
      });
      const p = res.topics[0]?.partitions[0];
      if (p === undefined || p.errorCode !== 0) throw new Error(`ListOffsets ${topic}-${partition}: error ${p?.errorCode}`);
      return p.offset;
    };
    return [await ask(1), await ask(0)];
  } finally {
    c.destroy();
  }
}

/** Every partition of `topic`: the last stable offset at the high watermark (no transaction left open). */
async function expectStable(cluster: LocalCluster, topic: string): Promise<void> {
  for (const p of await partitions(cluster, topic)) {
    const [lso, hw] = await until(
      async () => {
        const [l, h] = await lsoAndHw(cluster, topic, p.partitionIndex);
        return l === h ? [l, h] : undefined;
      },
      20_000,
      `${topic}-${p.partitionIndex}: last stable offset = high watermark`,
    );
    expect(lso, `${topic}-${p.partitionIndex}`).to.equal(hw);
    expect(hw > 0n, `${topic}-${p.partitionIndex} has records`).to.equal(true);
  }
}

/** A transactional id whose `__transaction_state` partition is `p`. */
function idOnStatePartition(prefix: string, p: number): string {
  for (let i = 0; ; i++) if (partitionFor(`${prefix}-${i}`, STATE_PARTITIONS) === p) return `${prefix}-${i}`;
}

interface Txn {
  send(topic: string, messages: { partition: number; value: string }[]): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}
interface TxnProducer {
  begin(): Promise<Txn>;
  disconnect(): Promise<void>;
}
interface TxnClient {
  name: string;
  producer(transactionalId: string): Promise<TxnProducer>;
}

function kafkajsClient(cluster: LocalCluster): TxnClient {
  return {
    name: 'kafkajs',
    async producer(transactionalId) {
      const kafka = new Kafka({
        clientId: `ctx-${transactionalId}`,
        brokers: cluster.brokers.map((b) => b.bootstrap),
        logLevel: logLevel.NOTHING,
        connectionTimeout: 1000,
        retry: { retries: 15, initialRetryTime: 100, maxRetryTime: 1000 },
      });
      const p = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 60_000 });
      await p.connect();
      return {
        async begin() {
          const t = await p.transaction();
          return {
            send: async (topic, messages) => {
              const acked = new Set((await t.send({ topic, acks: -1, messages })).map((r) => r.partition));
              // kafkajs 2.2.4 (src/producer/sendMessages.js) keeps one send()'s responses by broker
              // across its retries: a partition whose leadership moved, during the send, to a broker
              // that had already answered for its other partitions is never sent again, and send()
              // resolves all the same (no AddPartitionsToTxn for it, no record). Its commit would then
              // be whole for the coordinator and miss that record: the transaction fails here instead
              // (the loop counts it unknown; the next instance's InitProducerId aborts it).
              const missing = messages.filter((m) => !acked.has(m.partition)).map((m) => m.partition);
              if (missing.length > 0)
                throw new Error(`kafkajs resolved send() without producing to ${topic} partitions ${missing.join(',')}`);
            },
            commit: () => t.commit(),
            abort: () => t.abort(),
          };
        },
        disconnect: () => p.disconnect(),
      };
    },
  };
}

function rdkafkaClient(cluster: LocalCluster): TxnClient {
  const { KafkaJS } = loadConfluent();
  return {
    name: 'librdkafka',
    async producer(transactionalId) {
      const kafka = new KafkaJS.Kafka({
        kafkaJS: {
          brokers: cluster.brokers.map((b) => b.bootstrap),
          clientId: `ctx-${transactionalId}`,
          logLevel: KafkaJS.logLevel.NOTHING,
        },
      });
      const p: Any = kafka.producer({ 'transactional.id': transactionalId, 'linger.ms': 0, 'transaction.timeout.ms': 60_000 });
      await p.connect(); // init_transactions
      return {
        async begin() {
          const t: Any = await p.transaction();
          return {
            send: async (topic, messages) => {
              await t.send({ topic, messages });
            },
            commit: () => t.commit() as Promise<void>,
            abort: () => t.abort() as Promise<void>,
          };
        },
        disconnect: () => p.disconnect() as Promise<void>,
      };
    },
  };
}

type Outcome = 'committed' | 'aborted' | 'unknown';

/** Transactions in a loop, one record per partition each, every third aborted; a failure re-creates the producer. */
class TxnLoop {
  readonly outcomes = new Map<number, Outcome>();
  /** Why the transactions of unknown outcome failed (diagnostics: GREGOR_TEST_VERBOSE=1 prints them). */
  readonly failures: string[] = [];
  stopped = false;
  /** While set, the next transaction waits after its sends (open) until it resolves. */
  hold: Promise<void> | null = null;
  held = false;
  recreated = 0;
  private done: Promise<void> = Promise.resolve();

  constructor(
    readonly client: TxnClient,
    readonly transactionalId: string,
    readonly topic: string,
    readonly numPartitions: number,
  ) {}

  value(k: number, p: number): string {
    return `${this.client.name}:${k}:${p}`;
  }

  committed(): number {
    return [...this.outcomes.values()].filter((o) => o === 'committed').length;
  }

  start(): void {
    this.done = this.run();
  }

  stop(): Promise<void> {
    this.stopped = true;
    return this.done;
  }

  private async run(): Promise<void> {
    let producer: TxnProducer | null = null;
    for (let k = 0; !this.stopped; k++) {
      try {
        producer ??= await this.client.producer(this.transactionalId);
        const tx = await producer.begin();
        await tx.send(
          this.topic,
          Array.from({ length: this.numPartitions }, (_, p) => ({ partition: p, value: this.value(k, p) })),
        );
        if (this.hold !== null) {
          this.held = true;
          await this.hold;
        }
        if (k % 3 === 2) {
          await tx.abort();
          this.outcomes.set(k, 'aborted');
        } else {
          await tx.commit();
          this.outcomes.set(k, 'committed');
        }
      } catch (e) {
        this.outcomes.set(k, 'unknown');
        this.failures.push(`${k}: ${e instanceof Error ? e.message : String(e)}`);
        await producer?.disconnect().catch(() => undefined);
        producer = null;
        this.recreated++;
        await sleep(300);
      }
    }
    await producer?.disconnect().catch(() => undefined);
  }
}

describe('cluster transactions: markers and verification across brokers, coordinator failover', function () {
  this.timeout(300_000);
  const cluster = useCluster(
    {
      'broker.session.timeout.ms': String(SESSION_TIMEOUT_MS),
      'group.initial.rebalance.delay.ms': '0',
      'offsets.topic.num.partitions': String(OFFSETS_PARTITIONS),
      'offsets.topic.replication.factor': '3',
      'transaction.state.log.num.partitions': String(STATE_PARTITIONS),
      'transaction.state.log.replication.factor': '3',
      'transaction.state.log.min.isr': '2',
      'transaction.abort.timed.out.transaction.cleanup.interval.ms': '1000',
      ...RF3_OVERRIDES,
    },
    process.env['GREGOR_TEST_CLUSTER_DIR'] !== undefined ? { dir: process.env['GREGOR_TEST_CLUSTER_DIR'] } : {},
  );

  const kafka = () => clusterKafka(cluster(), 'cluster-txn');

  async function createTopic(topic: string, numPartitions: number): Promise<void> {
    await createRf3Topic(kafka(), topic, numPartitions);
    const leaders = new Set((await partitions(cluster(), topic)).map((p) => p.leaderId));
    expect([...leaders].sort(), `${topic} is led by every broker`).to.deep.equal([1, 2, 3]);
  }

  /** read_committed (librdkafka) of every partition to its end: the values by partition. */
  async function readCommitted(topic: string, numPartitions: number): Promise<string[][]> {
    const parts = await readAllRdkafka(loadConfluent(), cluster().bootstrap(), topic, numPartitions, 'read_committed', 60_000);
    return parts.map((p) => p.map((r) => r.value));
  }

  /** Checks what a read_committed reader sees against the loops' outcomes: committed whole and once, aborted never, unknown all or nothing. */
  function checkOutcomes(loops: TxnLoop[], seen: string[][]): void {
    const count = new Map<string, number>();
    for (const p of seen) for (const v of p) count.set(v, (count.get(v) ?? 0) + 1);
    const dup = [...count].filter(([, n]) => n > 1);
    expect(dup, 'records seen twice').to.deep.equal([]);
    for (const loop of loops) {
      for (const [k, outcome] of loop.outcomes) {
        const present = Array.from({ length: loop.numPartitions }, (_, p) => count.has(loop.value(k, p)));
        const n = present.filter(Boolean).length;
        const where = `${loop.client.name} transaction ${k} (${outcome})`;
        if (outcome === 'committed') expect(n, where).to.equal(loop.numPartitions);
        else if (outcome === 'aborted') expect(n, where).to.equal(0);
        else expect([0, loop.numPartitions], where).to.include(n);
      }
    }
    const known = new Set(
      loops.flatMap((l) => [...l.outcomes.keys()].flatMap((k) => Array.from({ length: l.numPartitions }, (_, p) => l.value(k, p)))),
    );
    const stray = [...count.keys()].filter((v) => !known.has(v));
    expect(stray, 'records of no transaction the producers ran').to.deep.equal([]);
  }

  it('__transaction_state and __consumer_offsets made on first use by all three brokers at once: every broker answers a coordinator and opens its replicas of them', async () => {
    // FindCoordinator at every broker in the same instant: one creation of each topic wins, the
    // others are refused TOPIC_ALREADY_EXISTS by the store; those brokers take the winner's topic (no
    // COORDINATOR_NOT_AVAILABLE for their requests) and must still replicate it
    const clients = await Promise.all(cluster().brokers.flatMap((b) => [0, 1].map(() => RawClient.connect(b.bootstrap))));
    try {
      const found = await Promise.all(
        clients.map((c, i) =>
          c.request<FindCoordinatorResponse>(ApiKey.FindCoordinator, 4, { keyType: i % 2, coordinatorKeys: ['first-use'] }, 15_000),
        ),
      );
      expect(found.map((f) => f.coordinators?.[0]?.errorCode)).to.deep.equal(found.map(() => 0));
    } finally {
      for (const c of clients) c.destroy();
    }
    const missing = () =>
      cluster().brokers.flatMap((b) =>
        [
          ...Array.from({ length: STATE_PARTITIONS }, (_, p) => `${TXN_STATE}-${p}`),
          ...Array.from({ length: OFFSETS_PARTITIONS }, (_, p) => `${OFFSETS}-${p}`),
        ]
          .filter((d) => !existsSync(join(cluster().dir, `broker-${b.nodeId}`, d)))
          .map((d) => `broker-${b.nodeId}/${d}`),
      );
    await until(() => Promise.resolve(missing().length === 0 ? true : undefined), 10_000, 'every replica of the internal topics').catch(
      () => expect(missing(), 'replicas of the internal topics not opened').to.deep.equal([]),
    );
  });

  it('kafkajs and librdkafka: commits and aborts over partitions led by all three brokers; read_committed sees exactly the committed records, every LSO reaches the high watermark', async () => {
    const topic = 'txn-spread';
    await createTopic(topic, 6);
    const loops: TxnLoop[] = [];
    for (const client of [kafkajsClient(cluster()), rdkafkaClient(cluster())]) {
      const loop = new TxnLoop(client, `spread-${client.name}`, topic, 6);
      const producer = await client.producer(loop.transactionalId);
      try {
        for (let k = 0; k < 9; k++) {
          const tx = await producer.begin();
          await tx.send(
            topic,
            Array.from({ length: 6 }, (_, p) => ({ partition: p, value: loop.value(k, p) })),
          );
          if (k % 3 === 2) {
            await tx.abort();
            loop.outcomes.set(k, 'aborted');
          } else {
            await tx.commit();
            loop.outcomes.set(k, 'committed');
          }
        }
      } finally {
        await producer.disconnect();
      }
      loops.push(loop);
    }
    // the coordinators are brokers of the cluster, most of each transaction's partitions led by others
    const coordinators = await Promise.all(
      loops.map((l) => leaderOf(cluster(), TXN_STATE, partitionFor(l.transactionalId, STATE_PARTITIONS))),
    );
    for (const c of coordinators) expect([1, 2, 3]).to.include(c);
    await expectStable(cluster(), topic);
    const seen = await readCommitted(topic, 6);
    checkOutcomes(loops, seen);
    expect(seen.flat()).to.have.length(2 * 6 * 6);
  });

  it('consume-transform-produce with sendOffsets, the group coordinator and the transaction coordinator on different brokers', async () => {
    const src = 'ctp-src';
    const out = 'ctp-out';
    await createTopic(src, 3);
    await createTopic(out, 3);
    const N = 300;
    const plain = kafka().producer({ idempotent: true });
    await plain.connect();
    await plain.send({ topic: src, acks: -1, messages: Array.from({ length: N }, (_, i) => ({ partition: i % 3, value: `v${i}` })) });
    await plain.disconnect();
    // make __consumer_offsets, then pick a group and a transactional id with coordinators on two brokers
    const admin = kafka().admin();
    await admin.connect();
    await admin.fetchOffsets({ groupId: 'warm-up', topics: [src] });
    const offsetsLeaders = (await partitions(cluster(), OFFSETS)).map((p) => p.leaderId);
    const stateLeaders = (await partitions(cluster(), TXN_STATE)).map((p) => p.leaderId);
    const transactionalId = 'ctp-txn';
    const txnCoordinator = stateLeaders[partitionFor(transactionalId, STATE_PARTITIONS)];
    let groupId = '';
    for (let i = 0; groupId === ''; i++)
      if (offsetsLeaders[partitionFor(`ctp-group-${i}`, OFFSETS_PARTITIONS)] !== txnCoordinator) groupId = `ctp-group-${i}`;

    const k = kafka();
    const producer = k.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const consumer = k.consumer({
      groupId,
      readUncommitted: false,
      maxBytesPerPartition: 512,
      maxWaitTimeInMs: 100,
      heartbeatInterval: 500,
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [src], fromBeginning: true });
    let batches = 0;
    let processed = 0;
    const errors: unknown[] = [];
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.messages.length === 0 || errors.length > 0) return;
        const next = (BigInt(batch.messages[batch.messages.length - 1]!.offset) + 1n).toString();
        const attempt = async (tag: string) => {
          const t = await producer.transaction();
          await t.send({
            topic: out,
            acks: -1,
            messages: batch.messages.map((m) => ({ partition: batch.partition, value: `${String(m.value)}>${tag}` })),
          });
          await t.sendOffsets({
            consumerGroupId: groupId,
            topics: [{ topic: src, partitions: [{ partition: batch.partition, offset: next }] }],
          });
          return t;
        };
        try {
          if (++batches % 2 === 1) await (await attempt('A')).abort();
          await (await attempt('ok')).commit();
          processed += batch.messages.length;
        } catch (e) {
          errors.push(e);
        }
      },
    });
    try {
      await until(() => Promise.resolve(processed >= N || errors.length > 0 ? true : undefined), 60_000, `${N} records processed`);
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }
    expect(errors.map(String)).to.deep.equal([]);
    expect(batches, 'batches (each first aborted once, every other one)').to.be.at.least(2);
    const offsets = await admin.fetchOffsets({ groupId, topics: [src] });
    await admin.disconnect();
    expect(offsets[0]?.partitions.map((p) => p.offset).sort()).to.deep.equal(['100', '100', '100']);
    await expectStable(cluster(), out);
    const seen = (await readCommitted(out, 3)).flat();
    expect(
      seen.filter((v) => v.endsWith('>A')),
      'aborted records',
    ).to.deep.equal([]);
    expect(new Set(seen).size, 'no duplicates').to.equal(seen.length);
    expect(seen.map((v) => v.replace(/>ok$/, '')).sort()).to.deep.equal(Array.from({ length: N }, (_, i) => `v${i}`).sort());
  });

  it("SIGKILL of the coordinator's broker between transactions and with transactions open: the coordinator moves, nothing committed is lost, nothing aborted is visible", async () => {
    const topic = 'txn-kill';
    await createTopic(topic, 6);
    // both producers' ids on one __transaction_state partition: one broker coordinates both
    const statePartition = partitionFor('kill-kafkajs-0', STATE_PARTITIONS);
    const loops = [
      new TxnLoop(kafkajsClient(cluster()), idOnStatePartition('kill-kafkajs', statePartition), topic, 6),
      new TxnLoop(rdkafkaClient(cluster()), idOnStatePartition('kill-librdkafka', statePartition), topic, 6),
    ];
    const progress = async (atLeast: number, what: string) =>
      until(() => Promise.resolve(loops.every((l) => l.committed() >= atLeast) ? true : undefined), 90_000, what);
    const allInSync = async () =>
      until(
        async () => {
          const m = await metadata(running(cluster()).bootstrap, [topic, TXN_STATE, OFFSETS]);
          const lagging = m.topics.filter((t) => t.errorCode === 0).some((t) => t.partitions.some((p) => p.isrNodes.length !== 3));
          return lagging ? undefined : true;
        },
        60_000,
        'every ISR back to three',
      );
    const killCoordinator = async (): Promise<LocalBroker> => {
      const before = await leaderOf(cluster(), TXN_STATE, statePartition);
      const victim = cluster().brokers.find((b) => b.nodeId === before);
      if (victim === undefined) throw new Error('no coordinator');
      await victim.kill('SIGKILL');
      await until(
        async () => {
          const l = await leaderOf(cluster(), TXN_STATE, statePartition);
          return l >= 0 && l !== victim.nodeId ? true : undefined;
        },
        SESSION_TIMEOUT_MS * 5,
        'a new transaction coordinator',
      );
      return victim;
    };
    for (const l of loops) l.start();
    try {
      await progress(3, 'transactions before the first kill');
      // 1. between transactions (or wherever the loops are)
      const first = await killCoordinator();
      const base = Math.max(...loops.map((l) => l.committed()));
      await progress(base + 3, 'transactions after the first kill');
      await first.start();
      await allInSync();
      // 2. with a transaction of each producer open
      let release: () => void = () => undefined;
      const hold = new Promise<void>((r) => (release = r));
      for (const l of loops) {
        l.held = false;
        l.hold = hold;
      }
      await until(() => Promise.resolve(loops.every((l) => l.held) ? true : undefined), 60_000, 'transactions held open');
      const second = await killCoordinator();
      for (const l of loops) l.hold = null;
      release();
      const base2 = Math.max(...loops.map((l) => l.committed()));
      await progress(base2 + 3, 'transactions after the second kill');
      await second.start();
      await allInSync();
    } finally {
      await Promise.all(loops.map((l) => l.stop()));
      if (process.env['GREGOR_TEST_VERBOSE'] === '1')
        for (const l of loops) for (const f of l.failures) console.log(`      ${l.client.name} transaction ${f}`);
    }
    await expectStable(cluster(), topic);
    const seen = await readCommitted(topic, 6);
    checkOutcomes(loops, seen);
    for (const l of loops) expect(l.committed(), `${l.client.name} committed`).to.be.at.least(9);
  });
});
