/**
 * Consume-transform-produce exactly once through real clients (issue 11): kafkajs 2.2.4 and librdkafka
 * 2.15 (the KafkaJS-style API of @confluentinc/kafka-javascript) each run three stages (source →
 * stage1 → stage2 → stage3). A stage is a consumer group member (read_committed, auto-commit off)
 * plus a transactional producer that writes the batch's transformation and commits the consumed
 * offsets in the same transaction (AddOffsetsToTxn + TxnOffsetCommit). Every 4th batch of a stage is
 * first sent with its offsets and aborted, then redone. Stage 2 "crashes" mid-stream inside an open
 * transaction (output and offsets sent, no commit) and is restarted with the same transactional.id
 * and group: the new producer fences the zombie (its transaction is aborted and its commit fails), the
 * new consumer resumes exactly at the offsets committed inside transactions. A read_committed reader
 * then sees every source record's transformation exactly once, in order per partition, and nothing
 * aborted, while the aborted and the zombie's records are in the logs (read_uncommitted).
 * Fails (never skips) when @confluentinc/kafka-javascript is missing.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import type { FaultHandle } from '../../lib/network/faults.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { expectSequence, observeRequests, rawOffsetFetch, readAllRdkafka, sleep, until } from '../helpers/eos.js';
import { RawClient, rawCreateTopics } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const kafkajs = require('kafkajs') as typeof import('kafkajs');

type Any = any;

const PARTITIONS = 3;
/** source records (half before the stage-2 crash, half after) */
const N = 3000;
const ABORT_EVERY = 4;
/** stage 2's first instance crashes on this batch (inside its transaction) */
const CRASH_AT = 7;
const UNSTABLE_OFFSET_COMMIT = 88;

interface Batch {
  partition: number;
  messages: { offset: string; value: string }[];
}
interface StageConsumer {
  raw: Any;
  disconnect(): Promise<void>;
}
interface StageTxn {
  send(topic: string, partition: number, values: string[]): Promise<void>;
  sendOffsets(consumer: StageConsumer, groupId: string, topic: string, partition: number, offset: string): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}
interface StageProducer {
  begin(): Promise<StageTxn>;
  disconnect(): Promise<void>;
}
/** One client library, seen through what a stage needs. */
interface PipelineClient {
  name: string;
  /** connected and initialised: an older instance with the same transactional id is fenced once this resolves */
  producer(transactionalId: string): Promise<StageProducer>;
  /** subscribed and running (read_committed, no auto-commit, from the beginning when nothing is committed) */
  consumer(groupId: string, topic: string, onBatch: (b: Batch) => Promise<void>): Promise<StageConsumer>;
  /** how the client reports that a fenced producer's commit failed */
  expectFenced(e: unknown): void;
  /** how the client fetched its committed offsets while a transaction held pending ones */
  expectOffsetFetches(f: { stable: number; plain: number }): void;
}

const kafkajsClient = (bootstrap: string): PipelineClient => {
  const kafka = new kafkajs.Kafka({ brokers: [bootstrap], clientId: 'ctp-kjs', logLevel: kafkajs.logLevel.NOTHING });
  return {
    name: 'kafkajs',
    async producer(transactionalId) {
      const p = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
      await p.connect();
      // kafkajs sends the transactional InitProducerId (which fences older instances) on its first transaction()
      await (await p.transaction()).abort();
      return {
        async begin() {
          const t = await p.transaction();
          return {
            send: async (topic, partition, values) => {
              await t.send({ topic, acks: -1, messages: values.map((value) => ({ value, partition })) });
            },
            sendOffsets: (_c, consumerGroupId, topic, partition, offset) =>
              t.sendOffsets({ consumerGroupId, topics: [{ topic, partitions: [{ partition, offset }] }] }),
            commit: () => t.commit(),
            abort: () => t.abort(),
          };
        },
        disconnect: () => p.disconnect(),
      };
    },
    async consumer(groupId, topic, onBatch) {
      const c = kafka.consumer({
        groupId,
        readUncommitted: false,
        maxBytesPerPartition: 1024,
        maxWaitTimeInMs: 100,
        heartbeatInterval: 500,
      });
      await c.connect();
      await c.subscribe({ topics: [topic], fromBeginning: true });
      await c.run({
        autoCommit: false,
        eachBatch: async ({ batch }) =>
          onBatch({ partition: batch.partition, messages: batch.messages.map((m) => ({ offset: m.offset, value: String(m.value) })) }),
      });
      return { raw: c, disconnect: () => c.disconnect() };
    },
    expectFenced(e) {
      expect((e as Any)?.type, String(e)).to.equal('INVALID_PRODUCER_EPOCH');
    },
    expectOffsetFetches(f) {
      // kafkajs sends OffsetFetch v1-v4 (no require_stable): it gets the stable offsets at once
      expect(f.stable, 'require_stable fetches').to.equal(0);
    },
  };
};

const confluentClient = (bootstrap: string): PipelineClient => {
  const { KafkaJS } = loadConfluent();
  const kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: [bootstrap], clientId: 'ctp-rdk', logLevel: KafkaJS.logLevel.NOTHING } });
  return {
    name: 'librdkafka',
    async producer(transactionalId) {
      const p = kafka.producer({ 'transactional.id': transactionalId, 'linger.ms': 0 });
      await p.connect(); // init_transactions
      return {
        async begin() {
          const t = await p.transaction();
          return {
            send: async (topic, partition, values) => {
              await t.send({ topic, messages: values.map((value) => ({ value, partition })) });
            },
            sendOffsets: (c, _g, topic, partition, offset) =>
              t.sendOffsets({ consumer: c.raw, topics: [{ topic, partitions: [{ partition, offset }] }] }),
            commit: () => t.commit(),
            abort: () => t.abort(),
          };
        },
        disconnect: () => p.disconnect(),
      };
    },
    async consumer(groupId, topic, onBatch) {
      const c = kafka.consumer({
        kafkaJS: { groupId, fromBeginning: true, autoCommit: false },
        'isolation.level': 'read_committed',
        'js.consumer.max.batch.size': 40,
        'fetch.wait.max.ms': 100,
        'heartbeat.interval.ms': 500,
      });
      await c.connect();
      await c.subscribe({ topics: [topic] });
      await c.run({
        eachBatch: async ({ batch }: Any) =>
          onBatch({
            partition: batch.partition,
            messages: batch.messages.map((m: Any) => ({ offset: m.offset as string, value: String(m.value) })),
          }),
      });
      return { raw: c, disconnect: () => c.disconnect() };
    },
    expectFenced(e) {
      // librdkafka: the transactional producer was fenced (fatal), ERR__FENCED
      expect((e as Any)?.code, String(e)).to.equal(-144);
    },
    expectOffsetFetches(f) {
      // librdkafka (read_committed) sends require_stable and retries on UNSTABLE_OFFSET_COMMIT
      expect(f, 'OffsetFetch requests: one answered UNSTABLE_OFFSET_COMMIT, then retried').to.deep.include({ plain: 0 });
      expect(f.stable).to.be.at.least(2);
    },
  };
};

/** One running instance of a stage: consumer + transactional producer. */
class Stage {
  consumer: StageConsumer | null = null;
  producer: StageProducer | null = null;
  batches = 0;
  aborted = 0;
  commits = 0;
  committedRecords = 0;
  /** partition → offset committed (inside a transaction) by this instance's last commit */
  readonly committed = new Map<number, bigint>();
  /** partition → offset of the first record this instance got */
  readonly firstOffsets = new Map<number, bigint>();
  readonly errors: unknown[] = [];
  /** the open transaction this instance left when it crashed */
  zombie: StageTxn | null = null;
  crashedPartition = -1;

  constructor(
    readonly no: number,
    readonly input: string,
    readonly output: string,
    readonly groupId: string,
    readonly transactionalId: string,
    readonly crashAt: number | null = null,
  ) {}

  private producerReady: () => void = () => undefined;
  private readonly ready = new Promise<void>((resolve) => (this.producerReady = resolve));

  /**
   * Producer, then consumer; or (`consumerFirstMs`) the consumer first and the producer that long
   * after, so the consumer asks for its committed offsets while an older instance's transaction
   * still holds pending ones (its batches wait for the producer).
   */
  async start(client: PipelineClient, consumerFirstMs?: number): Promise<void> {
    if (consumerFirstMs === undefined) this.producer = await client.producer(this.transactionalId);
    this.consumer = await client.consumer(this.groupId, this.input, (b) => this.onBatch(b));
    if (consumerFirstMs !== undefined) {
      await sleep(consumerFirstMs);
      this.producer = await client.producer(this.transactionalId);
    }
    this.producerReady();
  }

  private async onBatch(b: Batch): Promise<void> {
    if (this.zombie !== null || this.errors.length > 0 || b.messages.length === 0) return;
    await this.ready;
    const p = b.partition;
    if (!this.firstOffsets.has(p)) this.firstOffsets.set(p, BigInt(b.messages[0]!.offset));
    const next = (BigInt(b.messages[b.messages.length - 1]!.offset) + 1n).toString();
    const n = ++this.batches;
    const attempt = async (tag: string): Promise<StageTxn> => {
      const txn = await this.producer!.begin();
      await txn.send(
        this.output,
        p,
        b.messages.map((m) => `${m.value}>${this.no}${tag}`),
      );
      await txn.sendOffsets(this.consumer!, this.groupId, this.input, p, next);
      return txn;
    };
    try {
      if (n === this.crashAt) {
        this.zombie = await attempt('C'); // crash: output and offsets sent, never committed
        this.crashedPartition = p;
        return;
      }
      if (n % ABORT_EVERY === 0) {
        await (await attempt('A')).abort();
        this.aborted++;
      }
      await (await attempt('')).commit();
      this.committed.set(p, BigInt(next));
      this.commits++;
      this.committedRecords += b.messages.length;
    } catch (e) {
      this.errors.push(e);
    }
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
    await this.producer?.disconnect();
  }
}

async function runPipeline(b: TestBroker, client: PipelineClient): Promise<void> {
  const ck = loadConfluent();
  const pre = `ctp-${client.name}`;
  const [src, s1, s2, s3] = ['src', 's1', 's2', 's3'].map((t) => `${pre}-${t}`) as [string, string, string, string];
  const raw = await RawClient.connect(b.bootstrap);
  const watches: FaultHandle[] = [];
  const stages: Stage[] = [];
  let zombieProducer: StageProducer | null = null;
  try {
    await rawCreateTopics(
      raw,
      [src, s1, s2, s3].map((name) => ({ name, partitions: PARTITIONS })),
    );
    const groups = new Set([1, 2, 3].map((i) => `${pre}-g${i}`));
    const seen = { endTxnCommit: 0, endTxnAbort: 0, txnOffsetCommit: 0, offsetCommit: 0 };
    watches.push(
      observeRequests(b, 26, (r) => {
        if (r.committed) seen.endTxnCommit++;
        else seen.endTxnAbort++;
      }),
    );
    watches.push(
      observeRequests(b, 28, (r) => {
        if (groups.has(r.groupId)) seen.txnOffsetCommit++;
      }),
    );
    watches.push(
      observeRequests(b, 8, (r) => {
        if (groups.has(r.groupId)) seen.offsetCommit++;
      }),
    );

    const mk = (no: number, input: string, output: string, crashAt: number | null = null) =>
      new Stage(no, input, output, `${pre}-g${no}`, `${pre}-txn${no}`, crashAt);
    stages.push(mk(1, src, s1), mk(2, s1, s2, CRASH_AT), mk(3, s2, s3));
    for (const s of stages) await s.start(client);
    const failed = () => stages.flatMap((s) => s.errors);
    const check = () => {
      const errors = failed();
      if (errors.length > 0) throw errors[0];
    };

    // the source: record k of partition p is `s<p>-<k>`, sent plainly (not in a transaction)
    const source = new kafkajs.Kafka({ brokers: [b.bootstrap], clientId: 'ctp-source', logLevel: kafkajs.logLevel.NOTHING }).producer();
    await source.connect();
    const perPartition = Array<number>(PARTITIONS).fill(0);
    const produceSource = async (count: number) => {
      for (let i = 0; i < count; i += 30) {
        const messages = Array.from({ length: 30 }, (_, j) => {
          const p = (i + j) % PARTITIONS;
          return { value: `s${p}-${perPartition[p]!++}`, partition: p };
        });
        await source.send({ topic: src, acks: -1, messages });
      }
    };
    const t0 = Date.now();
    await produceSource(N / 2);

    // stage 2 crashes inside a transaction: its output and offsets are sent, not committed
    const old = stages[1]!;
    await until(() => (check(), old.zombie !== null), 60_000, `stage 2's crash (batch ${CRASH_AT}; at ${old.batches})`);
    const crashed = old.crashedPartition;
    expect(old.aborted, 'stage 2 aborted a transaction before its crash').to.be.at.least(1);
    // the group's committed offsets are those of the last committed transaction; the crashed one is pending
    const stable = await rawOffsetFetch(raw, `${pre}-g2`, s1, [0, 1, 2], false);
    const committedAtCrash = new Map(stable.partitions.map((p) => [p.partitionIndex, p.committedOffset]));
    for (const [p, o] of committedAtCrash) expect(o, `group 2 committed offset of ${s1}-${p}`).to.equal(old.committed.get(p) ?? -1n);
    expect(
      [...committedAtCrash.values()].some((o) => o > 0n),
      `crashed mid-stream (committed offsets ${[...committedAtCrash.values()].join(', ')})`,
    ).to.equal(true);
    const pending = await rawOffsetFetch(raw, `${pre}-g2`, s1, [crashed], true);
    expect(pending.partitions[0]?.errorCode, 'require_stable while the crashed transaction is open').to.equal(UNSTABLE_OFFSET_COMMIT);

    // restart stage 2: the zombie's consumer leaves; a new consumer joins the group and fetches its
    // offsets while the zombie's transaction is still open (require_stable: UNSTABLE_OFFSET_COMMIT,
    // retried; without: the stable offsets); 1 s later a new producer with the same transactional id
    // fences the zombie's producer, which aborts its transaction
    await old.consumer!.disconnect();
    zombieProducer = old.producer;
    const restarted = mk(2, s1, s2);
    stages[1] = restarted;
    const fetches = { stable: 0, plain: 0 };
    const g2 = `${pre}-g2`;
    const fetchWatch = observeRequests(b, 9, (r) => {
      if (r.groupId === g2 || (r.groups ?? []).some((g: Any) => g.groupId === g2)) {
        if (r.requireStable === true) fetches.stable++;
        else fetches.plain++;
      }
    });
    watches.push(fetchWatch);
    await restarted.start(client, 1000);
    fetchWatch.remove();
    expect(
      fetches.stable + fetches.plain,
      "the restarted consumer's OffsetFetch requests while the zombie's transaction was open",
    ).to.be.at.least(1);
    client.expectOffsetFetches(fetches);
    let zombieError: unknown = null;
    await old.zombie!.commit().catch((e: unknown) => (zombieError = e));
    expect(zombieError, 'the zombie commit fails').to.not.equal(null);
    client.expectFenced(zombieError);
    await zombieProducer!.disconnect().catch(() => undefined);
    zombieProducer = null;

    await produceSource(N / 2);
    await source.disconnect();
    // until stage 3 has committed every record, or nothing moved for 15 s (then the checks below say what is missing)
    let last = -1;
    let lastMove = Date.now();
    await until(
      () => {
        check();
        const done = stages.reduce((a, s) => a + s.committedRecords, 0);
        if (done !== last) [last, lastMove] = [done, Date.now()];
        return stages[2]!.committedRecords >= N || Date.now() - lastMove > 15_000;
      },
      180_000,
      () => `stage 3 to commit ${N} records (has ${stages[2]!.committedRecords})`,
    );
    const ms = Date.now() - t0;
    check();

    // the restarted stage resumed exactly at the offsets committed inside transactions: its first
    // record is the first committed record at or after the group's offset (offsets in between hold
    // markers or aborted records)
    const committedInput = await readAllRdkafka(ck, b.bootstrap, s1, PARTITIONS, 'read_committed');
    for (let p = 0; p < PARTITIONS; p++) {
      const from = committedAtCrash.get(p)! < 0n ? 0n : committedAtCrash.get(p)!;
      const expected = committedInput[p]!.find((r) => BigInt(r.offset) >= from);
      expect(restarted.firstOffsets.get(p), `restarted stage 2's first offset on ${s1}-${p} (group offset ${from})`).to.equal(
        BigInt(expected?.offset ?? -1),
      );
    }
    // read_committed: every source record's transformation exactly once, in order, nothing aborted
    const want = (p: number, suffix: string) => Array.from({ length: perPartition[p]! }, (_, k) => `s${p}-${k}${suffix}`);
    for (const [topic, suffix] of [
      [s1, '>1'],
      [s2, '>1>2'],
      [s3, '>1>2>3'],
    ] as const) {
      const parts = topic === s1 ? committedInput : await readAllRdkafka(ck, b.bootstrap, topic, PARTITIONS, 'read_committed');
      parts.forEach((recs, p) =>
        expectSequence(
          recs.map((r) => r.value),
          want(p, suffix),
          `${topic}-${p} read_committed`,
        ),
      );
    }
    expect(stages[2]!.committedRecords, 'stage 3 output').to.equal(N);
    for (const s of stages) expect(s.aborted, `stage ${s.no} aborted transactions`).to.be.at.least(1);
    // read_uncommitted: the aborted attempts and the zombie's records are in the logs
    const tags = new Map<string, number>();
    for (const topic of [s1, s2, s3]) {
      for (const r of (await readAllRdkafka(ck, b.bootstrap, topic, PARTITIONS, 'read_uncommitted')).flat()) {
        const m = /([AC])$/.exec(r.value);
        if (m !== null) tags.set(`${topic}:${m[1]}`, (tags.get(`${topic}:${m[1]}`) ?? 0) + 1);
      }
    }
    for (const topic of [s1, s2, s3]) expect(tags.get(`${topic}:A`) ?? 0, `aborted records in ${topic}`).to.be.greaterThan(0);
    expect(tags.get(`${s2}:C`) ?? 0, `the zombie's records in ${s2}`).to.be.greaterThan(0);

    expect(seen.offsetCommit, 'plain OffsetCommits from the stages').to.equal(0);
    const aborts = stages.reduce((a, s) => a + s.aborted, old.aborted);
    const commits = stages.reduce((a, s) => a + s.commits, old.commits);
    expect(seen.endTxnAbort, 'EndTxn(abort) requests').to.be.at.least(aborts);
    expect(seen.endTxnCommit, 'EndTxn(commit) requests (the zombie sent one more)').to.be.at.least(commits + 1);
    // one TxnOffsetCommit in every transaction: committed, aborted and the crashed one
    expect(seen.txnOffsetCommit, 'TxnOffsetCommit requests').to.be.at.least(commits + aborts + 1);
    console.log(
      `      ${client.name}: ${N} records through 3 stages in ${ms} ms; ${commits} transactions committed, ${aborts} aborted on purpose, ` +
        `${seen.txnOffsetCommit} TxnOffsetCommits; stage 2 crashed on ${s1}-${crashed} at offset ${committedAtCrash.get(crashed)} ` +
        `(restart: ${fetches.stable} require_stable and ${fetches.plain} plain OffsetFetches before the fence)`,
    );
  } finally {
    for (const w of watches) w.remove();
    for (const s of stages) await s.stop().catch(() => undefined);
    await zombieProducer?.disconnect().catch(() => undefined);
    raw.destroy();
  }
}

describe('consume-transform-produce exactly once (3 transactional stages, aborts, a stage restarted mid-stream)', function () {
  this.timeout(240_000);
  let b: TestBroker;
  const cleanup = new Cleanup();
  before(async () => {
    loadConfluent();
    b = cleanup.add(await startTestBroker({ 'num.partitions': PARTITIONS }), (t) => t.stop());
  });
  after(() => cleanup.run());

  it('kafkajs 2.2.4: sendOffsets({ consumerGroupId }) inside each transaction', async () => {
    await runPipeline(b, kafkajsClient(b.bootstrap));
  });

  it('librdkafka 2.15 (KafkaJS-style API): sendOffsets({ consumer }) inside each transaction', async () => {
    await runPipeline(b, confluentClient(b.bootstrap));
  });
});
