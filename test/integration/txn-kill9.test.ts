/**
 * Exactly-once across kill -9 (child broker, five rounds under load). A kafkajs transactional
 * producer runs transaction after transaction (every third one aborted) over two partitions while a
 * librdkafka idempotent producer streams sequence-numbered records; the broker is killed five
 * times, at least three of them while a transaction is open, and restarted on the same port and
 * data dir. Afterwards: read_committed consumers of both clients see every committed transaction
 * whole and exactly once, no aborted record, and every transaction whose outcome the producer never
 * learned either whole or not at all; no transaction is left hanging; the idempotent stream has no
 * duplicate and is in order per partition (its retries straddled the restarts); producer ids handed
 * out in every round are new.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import kafkajs from 'kafkajs';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { logEntries } from '../../protocol/records/index.js';
import { type ChildBroker, startChildBroker, tempDir } from '../helpers/broker.js';
import { KafkajsPartitionReader } from '../helpers/kafkajs-reader.js';
import { RawClient } from '../helpers/raw-client.js';
import { fetchPartition, initProducerId } from '../helpers/txn-raw.js';
import { asError } from '../../lib/as-error.js';

type Any = any;

const TXN_TOPIC = 'eos-txn';
const IDEM_TOPIC = 'eos-idem';
const ROUNDS = 5;
const OVERRIDES = { 'transaction.abort.timed.out.transaction.cleanup.interval.ms': '500', 'group.initial.rebalance.delay.ms': '0' };
/**
 * A third of the produce responses are held back 300 ms after the append: a kill then always finds
 * appended batches whose producers have no answer, which they retry against the restarted broker.
 */
const FAULTS = { GREGOR_FAULTS: JSON.stringify([{ apiKey: 0, action: 'delay', when: 'after', delayMs: 300, probability: 0.33 }]) };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startOn(dir: string, port: number): Promise<ChildBroker> {
  for (let i = 0; ; i++) {
    try {
      return await startChildBroker(dir, port, OVERRIDES, FAULTS);
    } catch (e) {
      if (i > 20 || !String(e).includes('EADDRINUSE')) throw e;
      await sleep(250);
    }
  }
}

async function createTopics(bootstrap: string): Promise<void> {
  const raw = await RawClient.connect(bootstrap);
  try {
    const r = await raw.request<{ topics: { errorCode: number }[] }>(19, 1, {
      topics: [TXN_TOPIC, IDEM_TOPIC].map((name) => ({ name, numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] })),
      timeoutMs: 5000,
      validateOnly: false,
    });
    expect(r.topics.map((t) => t.errorCode)).to.deep.equal([ErrorCode.NONE, ErrorCode.NONE]);
  } finally {
    raw.destroy();
  }
}

type Outcome = 'committed' | 'aborted' | 'unknown';

/** kafkajs transactions in a loop; a transaction can be held open (for a kill) through `hold`. */
class TxnLoop {
  readonly outcomes = new Map<number, Outcome>();
  stopped = false;
  /** While set, the next transaction waits after its sends (open) until it resolves. */
  hold: Promise<void> | null = null;
  /** Resolves when a transaction is waiting on `hold`. */
  onHeld: (() => void) | null = null;
  recreated = 0;
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly bootstrap: string) {}

  private producer(): Any {
    const kafka = new kafkajs.Kafka({
      brokers: [this.bootstrap],
      clientId: 'eos-txn',
      logLevel: kafkajs.logLevel.NOTHING,
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
      connectionTimeout: 1000,
    });
    return kafka.producer({ transactionalId: 'eos-txn-producer', idempotent: true, maxInFlightRequests: 1, transactionTimeout: 4000 });
  }

  start(): void {
    this.done = this.run();
  }

  stop(): Promise<void> {
    this.stopped = true;
    return this.done;
  }

  private async run(): Promise<void> {
    let producer: Any = null;
    for (let k = 0; !this.stopped; k++) {
      try {
        if (producer === null) {
          producer = this.producer();
          await producer.connect();
        }
        const tx = await producer.transaction();
        await tx.send({ topic: TXN_TOPIC, messages: [0, 1, 2].map((i) => ({ partition: i % 2, value: `t${k}-${i}` })) });
        if (this.hold !== null) {
          this.onHeld?.();
          await this.hold;
        }
        if (k % 3 === 2) {
          await tx.abort();
          this.outcomes.set(k, 'aborted');
        } else {
          await tx.commit();
          this.outcomes.set(k, 'committed');
        }
      } catch {
        this.outcomes.set(k, 'unknown');
        await producer?.disconnect().catch(() => undefined);
        producer = null;
        this.recreated++;
        await sleep(200);
      }
    }
    await producer?.disconnect().catch(() => undefined);
  }
}

/** A librdkafka idempotent producer streaming `i<n>` to partition n % 2, with delivery reports. */
async function idempotentStream(ck: Any, bootstrap: string) {
  const delivered = new Set<number>();
  const failed = new Set<number>();
  const producer = new ck.Producer({
    'bootstrap.servers': bootstrap,
    'enable.idempotence': true,
    dr_cb: true,
    'linger.ms': 5,
    'message.timeout.ms': 120_000,
    'retry.backoff.ms': 100,
    log_level: 0,
  });
  producer.on('delivery-report', (err: Any, report: Any) => {
    const n = Number(report.opaque);
    if (err) failed.add(n);
    else delivered.add(n);
  });
  await new Promise<void>((resolve, reject) => producer.connect({}, (e: Any) => (e ? reject(asError(e)) : resolve())));
  producer.setPollInterval(10);
  let stopped = false;
  let sent = 0;
  // a named function, not an IIFE (TypeScript would follow an IIFE inline and take `stopped` for always false)
  const produce = async () => {
    while (!stopped) {
      for (let i = 0; i < 200; i++) {
        try {
          producer.produce(IDEM_TOPIC, sent % 2, Buffer.from(`i${sent}`), null, null, sent);
          sent++;
        } catch {
          break; // queue full while the broker is down: wait
        }
      }
      await sleep(20);
    }
  };
  const loop = produce();
  return {
    delivered,
    failed,
    get sent() {
      return sent;
    },
    async finish() {
      stopped = true;
      await loop;
      await new Promise<void>((resolve, reject) => producer.flush(120_000, (e: Any) => (e ? reject(asError(e)) : resolve())));
      // delivery reports reach JS on the poll interval, after flush returns
      const deadline = Date.now() + 30_000;
      while (delivered.size + failed.size < sent && Date.now() < deadline) await sleep(50);
      await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
    },
  };
}

/** Every value in a partition read with librdkafka (read_committed by default), to the end. */
async function readCommittedRdkafka(ck: Any, bootstrap: string, topic: string, partitions: number): Promise<string[][]> {
  const c = new ck.KafkaConsumer(
    {
      'bootstrap.servers': bootstrap,
      'group.id': `eos-check-${topic}`,
      'enable.auto.commit': false,
      'enable.partition.eof': true,
      'isolation.level': 'read_committed',
      log_level: 0,
    },
    {},
  );
  await new Promise<void>((resolve, reject) => c.connect({ timeout: 10_000 }, (e: Any) => (e ? reject(asError(e)) : resolve())));
  const out: string[][] = Array.from({ length: partitions }, () => []);
  const eof = new Set<number>();
  c.on('partition.eof', (e: Any) => eof.add(e.partition));
  try {
    c.assign(out.map((_, partition) => ({ topic, partition, offset: 0 })));
    const deadline = Date.now() + 60_000;
    while (eof.size < partitions && Date.now() < deadline) {
      const batch: Any[] = await new Promise((resolve, reject) =>
        c.consume(1000, (e: Any, m: Any[]) => (e ? reject(asError(e)) : resolve(m))),
      );
      for (const m of batch) out[m.partition]?.push(m.value.toString());
    }
    expect(eof.size, 'librdkafka reached the end of every partition').to.equal(partitions);
    return out;
  } finally {
    await new Promise<void>((resolve) => c.disconnect(() => resolve()));
  }
}

describe('exactly-once across kill -9 (child broker, 5 rounds under load)', function () {
  this.timeout(300_000);
  let dir = '';
  let broker: ChildBroker | null = null;
  after(() => {
    if (broker !== null && broker.child.exitCode === null && broker.child.signalCode === null) broker.child.kill('SIGKILL');
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('committed transactions whole and once, aborted and half-done ones never visible, no hanging transaction, idempotent retries not duplicated, producer ids new', async () => {
    const ck = loadConfluent();
    dir = tempDir('gregor-eos-kill9-');
    broker = await startOn(dir, 0);
    const port = broker.port;
    const bootstrap = broker.bootstrap;
    await createTopics(bootstrap);
    const pids: bigint[] = [];
    const takePid = async () => {
      const raw = await RawClient.connect(bootstrap);
      try {
        const r = await initProducerId(raw, null);
        expect(r.errorCode).to.equal(ErrorCode.NONE);
        pids.push(r.producerId);
      } finally {
        raw.destroy();
      }
    };
    await takePid();
    const txns = new TxnLoop(bootstrap);
    txns.start();
    const idem = await idempotentStream(ck, bootstrap);
    let killedOpen = 0;
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(1500);
      const holdOpen = round % 2 === 0;
      let release: () => void = () => undefined;
      if (holdOpen) {
        const held = new Promise<void>((resolve) => (txns.onHeld = resolve));
        txns.hold = new Promise<void>((resolve) => (release = resolve));
        await held;
        killedOpen++;
      }
      broker.child.kill('SIGKILL');
      expect(await broker.exited).to.equal(null);
      broker = await startOn(dir, port);
      await takePid();
      txns.hold = null;
      release();
    }
    await sleep(1500);
    await txns.stop();
    await idem.finish();
    expect(killedOpen).to.equal(3);
    const outcomes = [...txns.outcomes.values()];
    expect(outcomes.filter((o) => o === 'committed').length, 'committed transactions').to.be.greaterThan(10);
    expect(outcomes.filter((o) => o === 'aborted').length, 'aborted transactions').to.be.greaterThan(3);

    // no transaction hangs: every partition's last stable offset reaches its high watermark
    const raw = await RawClient.connect(bootstrap);
    const dataPids = new Set<bigint>();
    try {
      for (const p of [0, 1]) {
        const deadline = Date.now() + 20_000;
        for (;;) {
          const f = await fetchPartition(raw, TXN_TOPIC, p, 0n, 0);
          if (f.lastStableOffset === f.highWatermark) break;
          if (Date.now() > deadline)
            expect.fail(`${TXN_TOPIC}-${p}: last stable offset ${f.lastStableOffset} stuck below ${f.highWatermark}`);
          await sleep(200);
        }
      }
      // producer ids in the data, to check none of the fresh ones collides with them
      for (const topic of [TXN_TOPIC, IDEM_TOPIC]) {
        for (const p of [0, 1]) {
          let offset = 0n;
          for (;;) {
            const r = await raw.request<{ responses: { partitions: { highWatermark: bigint; records: Buffer | null }[] }[] }>(1, 4, {
              replicaId: -1,
              maxWaitMs: 0,
              minBytes: 0,
              maxBytes: 1 << 22,
              isolationLevel: 0,
              topics: [{ topic, partitions: [{ partition: p, fetchOffset: offset, partitionMaxBytes: 1 << 22 }] }],
            });
            const part = r.responses[0]?.partitions[0];
            let next = offset;
            for (const e of logEntries(part?.records ?? Buffer.alloc(0))) {
              if (e.kind !== 'batch') continue;
              dataPids.add(e.batch.producerId);
              next = e.batch.nextOffset;
            }
            if (next === offset || next >= (part?.highWatermark ?? 0n)) break;
            offset = next;
          }
        }
      }
    } finally {
      raw.destroy();
    }
    expect(new Set(pids).size, 'fresh producer ids are all different').to.equal(pids.length);
    for (const pid of pids) expect(dataPids.has(pid), `fresh producer id ${pid} was used by a producer`).to.equal(false);

    // read_committed, twice: kafkajs (its own Fetch and aborted-transaction filter) and librdkafka
    const reader = new KafkajsPartitionReader([bootstrap]);
    await reader.connect(TXN_TOPIC);
    const viaKafkajs: string[][] = [];
    try {
      for (const p of [0, 1]) {
        const f = await fetchPartition(await RawClient.connect(bootstrap), TXN_TOPIC, p, 0n, 1);
        viaKafkajs.push((await reader.readCommitted(TXN_TOPIC, p, 0n, f.highWatermark)).map((m) => m.value?.toString() ?? ''));
      }
    } finally {
      await reader.disconnect();
    }
    const viaRdkafka = await readCommittedRdkafka(ck, bootstrap, TXN_TOPIC, 2);
    for (const [client, parts] of [
      ['kafkajs', viaKafkajs],
      ['librdkafka', viaRdkafka],
    ] as const) {
      const seen = new Map<string, number>();
      for (const v of parts.flat()) seen.set(v, (seen.get(v) ?? 0) + 1);
      for (const [v, n] of seen) expect(n, `${client}: ${v} read ${n} times`).to.equal(1);
      for (const [k, outcome] of txns.outcomes) {
        const present = [0, 1, 2].filter((i) => seen.has(`t${k}-${i}`)).length;
        if (outcome === 'committed') expect(present, `${client}: committed transaction ${k}`).to.equal(3);
        else if (outcome === 'aborted') expect(present, `${client}: aborted transaction ${k}`).to.equal(0);
        else expect([0, 3], `${client}: transaction ${k} of unknown outcome is half visible`).to.include(present);
      }
      // per partition in transaction order
      for (const part of parts) {
        const ks = part.map((v) => Number(v.slice(1, v.indexOf('-'))));
        expect(ks, `${client}: transaction order`).to.deep.equal([...ks].sort((a, b) => a - b));
      }
    }

    // the idempotent stream: every delivered record once, nothing twice, in order per partition
    expect(idem.failed.size, 'idempotent deliveries failed').to.equal(0);
    const stream = await readCommittedRdkafka(ck, bootstrap, IDEM_TOPIC, 2);
    const all = stream.flat();
    const stored = new Set(all);
    expect(stored.size, 'duplicates in the idempotent stream').to.equal(all.length);
    const missing = [...idem.delivered].filter((n) => !stored.has(`i${n}`));
    expect(missing, 'delivered records missing').to.deep.equal([]);
    for (const part of stream) {
      const ns = part.map((v) => Number(v.slice(1)));
      expect(ns).to.deep.equal([...ns].sort((a, b) => a - b));
    }
    expect(idem.delivered.size).to.equal(idem.sent);
  });
});
