/**
 * The log cleaner through real clients over TCP (issue 16): kafkajs and librdkafka write 1M updates
 * over 10k keys to a compacted topic with small segments while a kafkajs consumer reads along; after
 * cleaning, kafkajs and librdkafka readers see exactly one record per live key, its latest value at
 * the offset it was written at, and deleted keys gone after delete.retention.ms. compact,delete also
 * applies retention; keyless records are refused with INVALID_RECORD.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { readAllRdkafka, sleep, until, within } from '../helpers/eos.js';
import { KafkajsPartitionReader } from '../helpers/kafkajs-reader.js';

const { Kafka, logLevel } = kafkajs;
const KEYS = 10_000;
const PER_CLIENT = 500_000;
const DELETED = 100;
/** bound on one client call (a send, a disconnect): a hang fails naming the call, not at mocha's timeout */
const SEND_MS = 60_000;

interface Latest {
  offset: bigint;
  value: string | null;
}

/** Creates a one-partition topic with `configs`. */
async function createTopic(admin: kafkajs.Admin, topic: string, configs: Record<string, string>): Promise<void> {
  const configEntries = Object.entries(configs).map(([name, value]) => ({ name, value }));
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries }] });
}

/** key → its last record (offset, value) in what was read, in order. */
function lastPerKey(msgs: readonly { offset: string; key: Buffer | null; value: Buffer | null }[]): Map<string, Latest> {
  const m = new Map<string, Latest>();
  for (const x of msgs) m.set(String(x.key), { offset: BigInt(x.offset), value: x.value === null ? null : String(x.value) });
  return m;
}

describe('log cleaner through kafkajs and librdkafka', function () {
  this.timeout(240_000);
  let b: TestBroker;
  // where the time went, printed when a test fails (a timeout under load says which phase was slow)
  let phases: string[] = [];
  let t0 = Date.now();
  const phase = (what: string): void => {
    phases.push(`${((Date.now() - t0) / 1000).toFixed(1)}s ${what}`);
  };
  beforeEach(() => {
    phases = [];
    t0 = Date.now();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed')
      process.stderr.write(
        `log-cleaner phases (load ${os
          .loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')}):\n  ${phases.join('\n  ')}\n`,
      );
  });
  before(async () => {
    b = await startTestBroker({ 'log.cleaner.backoff.ms': 200, 'log.retention.check.interval.ms': 300 });
  });
  after(async () => {
    await b.stop();
  });

  it('after cleaning: one record per live key, the latest value at its original offset; deleted keys gone after delete.retention.ms; a concurrent consumer never goes back', async () => {
    const topic = 'compacted';
    const kafka = new Kafka({ clientId: 'cleaner-test', brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopic(admin, topic, {
      'cleanup.policy': 'compact',
      'segment.bytes': '65536',
      'segment.ms': '1000',
      'min.cleanable.dirty.ratio': '0.01',
      'delete.retention.ms': '3000',
    });
    // a consumer reading from the start while the producers write and the cleaner cleans
    const consumer = kafka.consumer({ groupId: 'cleaner-reader', maxWaitTimeInMs: 100 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seenOffsets = new Set<string>();
    const seqOf = new Map<string, number>();
    const problems: string[] = [];
    let lastOffset = -1n;
    let consumed = 0;
    await consumer.run({
      eachMessage: async ({ message }) => {
        const off = BigInt(message.offset);
        if (off <= lastOffset) problems.push(`offset ${off} after ${lastOffset}`);
        if (seenOffsets.has(message.offset)) problems.push(`offset ${off} twice`);
        seenOffsets.add(message.offset);
        lastOffset = off;
        consumed++;
        const key = String(message.key);
        if (message.value !== null && key !== 'end') {
          const seq = Number(String(message.value).split(':')[1]);
          const before = seqOf.get(key);
          if (before !== undefined && seq < before) problems.push(`key ${key}: value ${seq} after ${before}`);
          seqOf.set(key, seq);
        }
        await Promise.resolve();
      },
    });

    const keyOf = (seq: number): string => `key-${(seq * 7919) % KEYS}`;
    const producer = kafka.producer();
    await producer.connect();
    phase('kafkajs producer sending');
    let seq = 0;
    for (let s = 0; s < PER_CLIENT / 1000; s++) {
      const messages = Array.from({ length: 1000 }, () => {
        const n = seq++;
        return { key: keyOf(n), value: `${keyOf(n)}:${n}:${'x'.repeat(20)}` };
      });
      await within(producer.send({ topic, messages }), SEND_MS, `kafkajs send of batch ${s}`);
    }
    // librdkafka (gzip-compressed batches, which the cleaner rewrites with gzip) writes the second half
    const ck = loadConfluent();
    const rk = new ck.KafkaJS.Kafka({ kafkaJS: { brokers: [b.bootstrap], logLevel: ck.KafkaJS.logLevel.NOTHING } });
    const rp = rk.producer({ 'linger.ms': 5, 'compression.type': 'gzip' });
    await rp.connect();
    phase('librdkafka producer sending');
    try {
      for (let s = 0; s < PER_CLIENT / 1000; s++) {
        const messages = Array.from({ length: 1000 }, () => {
          const n = seq++;
          return { key: keyOf(n), value: `${keyOf(n)}:${n}:${'y'.repeat(20)}` };
        });
        await within(rp.send({ topic, messages }), SEND_MS, `librdkafka send of batch ${s}`);
      }
    } finally {
      phase('librdkafka producer disconnecting');
      await within(rp.disconnect(), SEND_MS, 'librdkafka producer disconnect');
    }
    phase('tombstones');
    // tombstones for the first DELETED keys, then (past segment.ms) one record that rolls the segment, so all the rest can be cleaned
    await producer.send({ topic, messages: Array.from({ length: DELETED }, (_, i) => ({ key: `key-${i}`, value: null })) });
    await sleep(1100);
    const [end] = await producer.send({ topic, messages: [{ key: 'end', value: 'end' }] });
    const endOffset = BigInt(end?.baseOffset ?? '-1');
    expect(endOffset).to.equal(BigInt(2 * PER_CLIENT + DELETED));

    const reader = new KafkajsPartitionReader([b.bootstrap]);
    await reader.connect(topic);
    try {
      phase('reading before cleaning');
      // the latest record of a key is never cleaned away: read now, it names each key's last write and its offset
      const want = lastPerKey(await reader.readAll(topic, 0, 0n, endOffset + 1n));
      expect(want.size).to.equal(KEYS + 1);
      const cleaner = b.broker.cleaner;
      if (cleaner === null) throw new Error('no cleaner');
      phase('waiting for the cleaner');
      await until(() => (cleaner.firstDirtyOffset(topic, 0) ?? 0n) >= endOffset, 60_000, 'the cleaner to reach the last segment');
      phase('reading after cleaning');
      let got = await reader.readAll(topic, 0, 0n, endOffset + 1n);
      const keys = got.map((m) => String(m.key));
      expect(new Set(keys).size, 'one record per key').to.equal(keys.length);
      expect(lastPerKey(got)).to.deep.equal(want);
      // tombstones stay for delete.retention.ms after the cleaning that reached them, then go
      phase('waiting for the tombstones to go');
      await until(
        async () => (await reader.readAll(topic, 0, 0n, endOffset + 1n)).length === KEYS - DELETED + 1,
        60_000,
        'the tombstones to be removed',
      );
      got = await reader.readAll(topic, 0, 0n, endOffset + 1n);
      const live = new Map([...want].filter(([, v]) => v.value !== null));
      expect(live.size).to.equal(KEYS - DELETED + 1);
      expect(lastPerKey(got)).to.deep.equal(live);
      // librdkafka reads the same
      phase('librdkafka reading');
      const [viaRdkafka] = await readAllRdkafka(ck, b.bootstrap, topic, 1, 'read_uncommitted');
      expect(new Map((viaRdkafka ?? []).map((r) => [r.key ?? '', { offset: BigInt(r.offset), value: r.value }]))).to.deep.equal(live);
    } finally {
      await reader.disconnect();
    }
    phase('kafkajs consumer catching up');
    await until(() => lastOffset >= endOffset, 30_000, 'the consumer to reach the end');
    phase('disconnecting');
    await within(consumer.disconnect(), SEND_MS, 'kafkajs consumer disconnect');
    expect(problems).to.deep.equal([]);
    expect(consumed).to.be.greaterThan(KEYS);
    await producer.disconnect();
    await admin.disconnect();
  });

  it('compact,delete also applies retention; keyless records are refused with INVALID_RECORD', async () => {
    const topic = 'compact-delete';
    const kafka = new Kafka({ clientId: 'cleaner-test-2', brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopic(admin, topic, { 'cleanup.policy': 'compact,delete', 'segment.bytes': '4096', 'retention.ms': '60000' });
    const producer = kafka.producer();
    await producer.connect();
    const old = String(Date.now() - 3_600_000);
    for (let s = 0; s < 20; s++) {
      await producer.send({
        topic,
        messages: Array.from({ length: 20 }, (_, i) => ({ key: `old-${s}-${i}`, value: 'v'.repeat(50), timestamp: old })),
      });
    }
    await producer.send({ topic, messages: [{ key: 'new', value: 'fresh' }] });
    // every old key is distinct, so only retention can remove them
    await until(async () => (await admin.fetchTopicOffsets(topic))[0]?.low !== '0', 30_000, 'retention to move the log start offset');
    const [p] = await admin.fetchTopicOffsets(topic);
    expect(Number(p?.low ?? '0')).to.be.greaterThan(0);
    let refused: unknown = null;
    try {
      await producer.send({ topic, acks: 1, messages: [{ key: null, value: 'no key' }] });
    } catch (err) {
      refused = err;
    }
    expect(String((refused as { type?: string } | null)?.type ?? refused)).to.contain('INVALID_RECORD');
    await producer.disconnect();
    await admin.disconnect();
  });
});

describe('log cleaner: a corrupt batch in a compacted log', function () {
  this.timeout(60_000);
  const dataDir = tempDir('gregor-clean-corrupt-');
  const config = { 'log.cleaner.backoff.ms': 100, 'admin.listener': '127.0.0.1:0' };
  let b: TestBroker | null = null;
  after(async () => {
    await b?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('the cleaner skips the log (uncleanable, in /metrics) and the broker keeps serving it', async () => {
    const topic = 'corrupt-compacted';
    b = await startTestBroker({ ...config, 'log.cleaner.enable': false }, { dataDir });
    const kafka = (bootstrap: string) => new Kafka({ clientId: 'corrupt', brokers: [bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka(b.bootstrap).admin();
    await admin.connect();
    await createTopic(admin, topic, { 'cleanup.policy': 'compact', 'segment.bytes': '4096', 'min.cleanable.dirty.ratio': '0.01' });
    let producer = kafka(b.bootstrap).producer();
    await producer.connect();
    for (let s = 0; s < 20; s++)
      await producer.send({ topic, messages: Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: `v${s}-${'x'.repeat(40)}` })) });
    await producer.disconnect();
    await admin.disconnect();
    await b.stop();
    // a flipped byte inside the first batch's records: its CRC no longer matches
    const seg = path.join(dataDir, `${topic}-0`, '00000000000000000000.log');
    const bytes = fs.readFileSync(seg);
    bytes[100] = (bytes[100] as number) ^ 0xff;
    fs.writeFileSync(seg, bytes);

    b = await startTestBroker(config, { dataDir });
    const cleaner = b.broker.cleaner;
    if (cleaner === null) throw new Error('no cleaner');
    const reader = new KafkajsPartitionReader([b.bootstrap]);
    await reader.connect(topic);
    try {
      // reading opens the log; the cleaner then finds the corrupt batch
      const before = await reader.readAll(topic, 0, 20n, 400n);
      expect(before.length).to.equal(380);
      await until(() => cleaner.isUncleanable(topic, 0), 30_000, 'the cleaner to give up on the log');
      const metrics = await (await fetch(`http://${b.broker.adminAddress ?? ''}/metrics`)).text();
      expect(metrics).to.match(/^kafka_log_logcleaner_uncleanable_partitions_count 1$/m);
      // still served: reads and writes
      producer = kafka(b.bootstrap).producer();
      await producer.connect();
      const [r] = await producer.send({ topic, messages: [{ key: 'after', value: 'corruption' }] });
      await producer.disconnect();
      expect(r?.baseOffset).to.equal('400');
      const after = await reader.readAll(topic, 0, 20n, 401n);
      expect(after.length).to.equal(381);
    } finally {
      await reader.disconnect();
    }
  });
});
