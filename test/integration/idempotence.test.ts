/**
 * Idempotent producers under faults (issue 11): librdkafka 2.15 (enable.idempotence, acks=all) and
 * kafkajs 2.2.4 (idempotent, one request in flight) each produce 100,000 records to 3 partitions
 * (explicit partition, a per-partition sequence number in the value) while the broker drops the
 * connection AFTER a Produce was appended and answers NOT_LEADER_OR_FOLLOWER after appending, at
 * random. Every record must be read back (read_uncommitted, by assignment) exactly once and in order
 * at offsets 0..n-1 per partition, and every acknowledgement must carry the record's final offset
 * (a retried duplicate is answered with the original offsets). A control run without idempotence
 * shows the same faults do duplicate records, so the faults really hit after the append.
 * Fails (never skips) when @confluentinc/kafka-javascript is missing.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import type { FaultHandle } from '../../lib/network/faults.js';
import type { ProduceRequest } from '../../protocol/generated/produce.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { expectOffsets, expectSequence, readAllRdkafka } from '../helpers/eos.js';
import { RawClient, rawCreateTopics } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';
import { asError } from '../../lib/as-error.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

type Any = any;

const PARTITIONS = 3;
const COUNT = 100_000;
const NOT_LEADER_OR_FOLLOWER = 6;
/** Chance per Produce request of each fault; tuned for dozens of faults per run (see the report at the end of each test). */
const P_CLOSE = 0.1;
const P_ERROR = 0.1;

/** Record k of partition p: value `p:k`. */
const valueOf = (p: number, k: number) => `${p}:${k}`;
const expectedValues = (p: number, n: number) => Array.from({ length: n }, (_, k) => valueOf(p, k));

interface Faults {
  close: FaultHandle;
  error: FaultHandle;
}

/** Both faults, after the handler ran, on Produce requests to `topic` only. */
function addFaults(b: TestBroker, topic: string, pClose: number, pError: number): Faults {
  const match = (req: unknown) => (req as ProduceRequest).topicData.some((t) => t.name === topic);
  return {
    close: b.broker.faults.add({ apiKey: 0, action: 'close', when: 'after', probability: pClose, match }),
    error: b.broker.faults.add({
      apiKey: 0,
      action: 'error',
      errorCode: NOT_LEADER_OR_FOLLOWER,
      when: 'after',
      probability: pError,
      match,
    }),
  };
}

/** Reads the topic back (read_uncommitted) and checks every partition is exactly `p:0 .. p:n-1` at offsets 0..n-1. */
async function expectExactlyOnceInOrder(ck: Any, b: TestBroker, topic: string, perPartition: number[]): Promise<void> {
  const parts = await readAllRdkafka(ck, b.bootstrap, topic, PARTITIONS, 'read_uncommitted', 120_000);
  let total = 0;
  parts.forEach((recs, p) => {
    expectSequence(
      recs.map((r) => r.value),
      expectedValues(p, perPartition[p] ?? 0),
      `${topic}-${p}`,
    );
    expectOffsets(recs, `${topic}-${p}`, true);
    total += recs.length;
  });
  expect(total).to.equal(COUNT);
}

describe('idempotent producers under faults: every record exactly once, in order', function () {
  this.timeout(240_000);
  let ck: Any;
  let b: TestBroker;
  const cleanup = new Cleanup();
  before(async () => {
    ck = loadConfluent();
    b = cleanup.add(await startTestBroker({ 'num.partitions': PARTITIONS }), (t) => t.stop());
    const c = await RawClient.connect(b.bootstrap);
    await rawCreateTopics(
      c,
      ['idem-rdk', 'idem-kjs', 'idem-control'].map((name) => ({ name, partitions: PARTITIONS })),
    );
    c.destroy();
  });
  afterEach(() => b.broker.faults.clear());
  after(() => cleanup.run());

  it(`librdkafka enable.idempotence=true acks=all: ${COUNT.toLocaleString('en')} records, connections dropped and NOT_LEADER_OR_FOLLOWER after the append`, async () => {
    const topic = 'idem-rdk';
    const producer = new ck.Producer({
      'bootstrap.servers': b.bootstrap,
      'enable.idempotence': true,
      acks: 'all',
      dr_cb: true,
      'linger.ms': 2,
      'batch.num.messages': 250,
      'queue.buffering.max.messages': COUNT * 2,
      'retry.backoff.ms': 20,
      'retry.backoff.max.ms': 100,
      'reconnect.backoff.ms': 10,
      'reconnect.backoff.max.ms': 100,
      log_level: 0,
    });
    const errors: string[] = [];
    producer.on('event.error', (e: Any) => errors.push(`${e.code} ${e.message}`));
    await new Promise<void>((resolve, reject) => producer.connect({}, (e: Any) => (e ? reject(asError(e)) : resolve())));
    const faults = addFaults(b, topic, P_CLOSE, P_ERROR);
    const t0 = Date.now();
    const offsets: number[][] = Array.from({ length: PARTITIONS }, () => []);
    let reports = 0;
    const failures: string[] = [];
    const delivered = new Promise<void>((resolve) => {
      producer.on('delivery-report', (err: Any, r: Any) => {
        if (err) failures.push(`${err.code} ${err.message}`);
        else {
          const n = r.opaque as number;
          const p = n % PARTITIONS;
          if (r.partition !== p) failures.push(`record ${n} delivered to partition ${r.partition}`);
          offsets[p]![Math.floor(n / PARTITIONS)] = r.offset as number;
        }
        if (++reports === COUNT) resolve();
      });
    });
    producer.setPollInterval(10);
    const perPartition = Array<number>(PARTITIONS).fill(0);
    try {
      for (let n = 0; n < COUNT; n++) {
        const p = n % PARTITIONS;
        producer.produce(topic, p, Buffer.from(valueOf(p, perPartition[p]!++)), null, Date.now(), n);
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        delivered,
        new Promise(
          (_, reject) =>
            (timer = setTimeout(
              () => reject(new Error(`${reports} of ${COUNT} delivery reports after 150 s; errors: ${errors.slice(0, 5).join('; ')}`)),
              150_000,
            )),
        ),
      ]).finally(() => clearTimeout(timer));
    } finally {
      await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
    }
    const produceMs = Date.now() - t0;
    faults.close.remove();
    faults.error.remove();
    console.log(
      `      librdkafka: ${COUNT} records in ${produceMs} ms; ${faults.close.applied} connections dropped and ${faults.error.applied} NOT_LEADER_OR_FOLLOWER after the append`,
    );
    expect(failures, `failed deliveries (e.g. ${failures.slice(0, 3).join('; ')})`).to.have.length(0);
    expect(
      errors.filter((e) => /fatal|FATAL|OUT_OF_ORDER|-150/.test(e)),
      'fatal errors',
    ).to.have.length(0);
    expect(faults.close.applied, 'connections dropped after the append').to.be.at.least(10);
    expect(faults.error.applied, 'NOT_LEADER_OR_FOLLOWER after the append').to.be.at.least(10);
    // every delivery report carries the record's final offset (duplicates answered with the original ones)
    offsets.forEach((o, p) => {
      expect(o.length, `delivery reports of partition ${p}`).to.equal(perPartition[p]);
      const bad = o.findIndex((off, k) => off !== k);
      expect(bad, `partition ${p}: record ${bad} reported at offset ${o[bad]}`).to.equal(-1);
    });
    await expectExactlyOnceInOrder(ck, b, topic, perPartition);
  });

  it(`kafkajs idempotent (maxInFlightRequests 1): ${COUNT.toLocaleString('en')} records, connections dropped and NOT_LEADER_OR_FOLLOWER after the append`, async () => {
    const topic = 'idem-kjs';
    const kafka = new Kafka({
      brokers: [b.bootstrap],
      clientId: 'idem-kjs',
      logLevel: logLevel.NOTHING,
      retry: { initialRetryTime: 20, maxRetryTime: 200, retries: 15 },
    });
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { initialRetryTime: 20, maxRetryTime: 200, retries: 15 },
    });
    await producer.connect();
    const faults = addFaults(b, topic, P_CLOSE, P_ERROR);
    const t0 = Date.now();
    const perPartition = Array<number>(PARTITIONS).fill(0);
    const PER_SEND = 300;
    try {
      for (let sent = 0; sent < COUNT; sent += PER_SEND) {
        const before = perPartition.slice();
        const messages = Array.from({ length: Math.min(PER_SEND, COUNT - sent) }, (_, i) => {
          const p = (sent + i) % PARTITIONS;
          return { value: valueOf(p, perPartition[p]!++), partition: p };
        });
        const res = await producer.send({ topic, acks: -1, messages });
        // each partition's batch sits right after the previous ones: a retried duplicate is answered with its original offset
        for (const r of res) {
          expect(r.errorCode).to.equal(0);
          expect(r.baseOffset, `send at record ${sent}, partition ${r.partition}`).to.equal(String(before[r.partition]));
        }
        expect(res.map((r) => r.partition).sort()).to.deep.equal([0, 1, 2]);
      }
    } finally {
      await producer.disconnect();
    }
    const produceMs = Date.now() - t0;
    faults.close.remove();
    faults.error.remove();
    console.log(
      `      kafkajs: ${COUNT} records in ${produceMs} ms; ${faults.close.applied} connections dropped and ${faults.error.applied} NOT_LEADER_OR_FOLLOWER after the append`,
    );
    expect(faults.close.applied, 'connections dropped after the append').to.be.at.least(10);
    expect(faults.error.applied, 'NOT_LEADER_OR_FOLLOWER after the append').to.be.at.least(10);
    await expectExactlyOnceInOrder(ck, b, topic, perPartition);
  });

  it('control: without idempotence the same faults store duplicates (kafkajs, idempotent off)', async () => {
    const topic = 'idem-control';
    const kafka = new Kafka({
      brokers: [b.bootstrap],
      clientId: 'idem-control',
      logLevel: logLevel.NOTHING,
      retry: { initialRetryTime: 20, maxRetryTime: 200, retries: 15 },
    });
    const producer = kafka.producer({
      idempotent: false,
      maxInFlightRequests: 1,
      retry: { initialRetryTime: 20, maxRetryTime: 200, retries: 15 },
    });
    await producer.connect();
    const faults = addFaults(b, topic, 0.2, 0.2);
    const perPartition = Array<number>(PARTITIONS).fill(0);
    const N = 3000;
    try {
      for (let sent = 0; sent < N; sent += 150) {
        const messages = Array.from({ length: 150 }, (_, i) => {
          const p = (sent + i) % PARTITIONS;
          return { value: valueOf(p, perPartition[p]!++), partition: p };
        });
        await producer.send({ topic, acks: -1, messages });
      }
    } finally {
      await producer.disconnect();
    }
    faults.close.remove();
    faults.error.remove();
    const parts = await readAllRdkafka(ck, b.bootstrap, topic, PARTITIONS, 'read_uncommitted');
    const values = parts.flat().map((r) => r.value);
    const distinct = new Set(values);
    console.log(`      control: ${faults.close.applied + faults.error.applied} faults, ${values.length} records stored for ${N} sent`);
    expect(faults.close.applied + faults.error.applied).to.be.at.least(1);
    expect(distinct.size, 'every record stored at least once').to.equal(N);
    // each fault after the append made the client resend a request the broker had already written
    expect(values.length - N, 'duplicates stored').to.equal((faults.close.applied + faults.error.applied) * 150);
  });
});
