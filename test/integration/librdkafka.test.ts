/**
 * librdkafka 2.15.1 (@confluentinc/kafka-javascript 1.10.1) against a real gregor: 10,000 keyed records
 * with headers per codec and acks setting, produced through the KafkaJS-style producer (and once
 * through the node-rdkafka-style Producer) and read back by partition assignment (node-rdkafka-style
 * KafkaConsumer, no group) exactly: keys, values, headers, timestamps, offsets, per-partition order.
 * Then against `broker.version.emulate=0.10.0`: Produce v2 / message format 1, plain and compressed,
 * CreateTime and LogAppendTime, with the stored bytes checked. Fails (never skips) when the native
 * module is missing.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CompressionCodec, LegacyMessage, RecordBatch, logEntries } from '../../protocol/records/index.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { CODEC_ID, CODECS, type Codec } from '../helpers/codecs.js';
import { Cleanup } from '../helpers/cleanup.js';
import { asError } from '../../lib/as-error.js';

type Any = any;

const PARTITIONS = 3;
const COUNT = 10_000;

/**
 * librdkafka enables lz4 only when the broker advertises FindCoordinator (its "LZ4" feature stands for
 * Kafka >= 0.8.2); otherwise it silently sends lz4 batches uncompressed.
 */
const LZ4_NOTE: Record<Codec, string> = {
  none: '',
  gzip: '',
  snappy: '',
  zstd: '',
  lz4: ' (librdkafka sends lz4 uncompressed unless the broker advertises FindCoordinator, key 10)',
};

/** One record as sent; headers as [name, value] in order (duplicate names kept). */
interface Rec {
  n: number;
  partition: number;
  key: string;
  value: Buffer;
  headers: [string, Buffer][];
  timestamp: number;
}

/** Record n: partition n % 3, a value with non-ASCII text, binary bytes and a varying length. */
function makeRecords(tag: string, base: number, withHeaders: boolean): Rec[] {
  return Array.from({ length: COUNT }, (_, n) => ({
    n,
    partition: n % PARTITIONS,
    key: `key-${n}`,
    value: Buffer.concat([Buffer.from(`${tag}-value-${n}-ünïcødé-`), Buffer.from([0, 255, n & 255]), Buffer.from('x'.repeat(n % 50))]),
    headers: withHeaders
      ? [
          ['n', Buffer.from(String(n))],
          ['tag', Buffer.from(tag)],
          ['dup', Buffer.from('first')],
          ['dup', Buffer.from([0, 1, n & 255])],
        ]
      : [],
    timestamp: base + n,
  }));
}

function byPartition(recs: Rec[]): Rec[][] {
  const out: Rec[][] = Array.from({ length: PARTITIONS }, () => []);
  for (const r of recs) out[r.partition]?.push(r);
  return out;
}

/** KafkaJS-style producer: one send() of every record, explicit partitions, config at the top level. */
async function produceKafkaJS(ck: Any, bootstrap: string, topic: string, recs: Rec[], config: Record<string, unknown>): Promise<Any[]> {
  const kafka = new ck.KafkaJS.Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: ck.KafkaJS.logLevel.NOTHING } });
  const producer = kafka.producer({ 'linger.ms': 5, ...config });
  await producer.connect();
  try {
    return await producer.send({
      topic,
      messages: recs.map((r) => {
        const headers: Record<string, (string | Buffer)[]> = {};
        for (const [k, v] of r.headers) (headers[k] ??= []).push(v);
        return { key: r.key, value: r.value, partition: r.partition, timestamp: String(r.timestamp), headers };
      }),
    });
  } finally {
    await producer.disconnect();
  }
}

/**
 * node-rdkafka-style Producer: produce() per record, then waits for every delivery report and checks
 * each one's partition and offset (offsets 0.. per partition in send order). Returns the reports
 * (opaque = record number).
 */
async function produceNative(ck: Any, bootstrap: string, topic: string, recs: Rec[], config: Record<string, unknown>): Promise<Any[]> {
  const producer = new ck.Producer({ 'bootstrap.servers': bootstrap, dr_cb: true, 'linger.ms': 5, log_level: 0, ...config });
  await new Promise<void>((resolve, reject) => producer.connect({}, (e: Any) => (e ? reject(asError(e)) : resolve())));
  const reports: Any[] = [];
  const delivered = new Promise<void>((resolve, reject) => {
    producer.on('delivery-report', (err: Any, report: Any) => {
      if (err) reject(asError(err));
      reports.push(report);
      if (reports.length === recs.length) resolve();
    });
  });
  producer.setPollInterval(10);
  try {
    for (const r of recs) {
      const headers = r.headers.length === 0 ? undefined : r.headers.map(([k, v]) => ({ [k]: v }));
      producer.produce(topic, r.partition, r.value, r.key, r.timestamp, r.n, headers);
    }
    await delivered;
  } finally {
    await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
  }
  const offsetOf = new Map(byPartition(recs).flatMap((w) => w.map((r, i) => [r.n, i] as const)));
  const seen = new Set<number>();
  for (const rep of reports) {
    expect(rep.topic).to.equal(topic);
    expect(rep.partition).to.equal((rep.opaque as number) % PARTITIONS);
    expect(rep.offset, `delivery report of record ${rep.opaque}`).to.equal(offsetOf.get(rep.opaque));
    seen.add(rep.opaque);
  }
  expect(seen.size).to.equal(recs.length);
  return reports;
}

interface Consumed {
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  timestamp: number;
  headers: [string, Buffer][];
}

/**
 * Reads `counts[p]` records from each partition from offset 0 (node-rdkafka-style KafkaConsumer,
 * assign without a group), and the high watermarks, so extra records show up as a count mismatch.
 */
async function readBack(ck: Any, bootstrap: string, topic: string, counts: number[]): Promise<{ parts: Consumed[][]; high: number[] }> {
  const c = new ck.KafkaConsumer(
    {
      'bootstrap.servers': bootstrap,
      'group.id': `reader-${topic}`,
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      log_level: 0,
    },
    {},
  );
  await new Promise<void>((resolve, reject) => c.connect({ timeout: 10_000 }, (e: Any) => (e ? reject(asError(e)) : resolve())));
  try {
    c.assign(counts.map((_, partition) => ({ topic, partition, offset: 0 })));
    const parts: Consumed[][] = counts.map(() => []);
    const deadline = Date.now() + 60_000;
    while (parts.some((got, p) => got.length < (counts[p] ?? 0)) && Date.now() < deadline) {
      const batch: Any[] = await new Promise((resolve, reject) =>
        c.consume(5000, (e: Any, m: Any[]) => (e ? reject(asError(e)) : resolve(m))),
      );
      for (const m of batch) {
        parts[m.partition]?.push({
          partition: m.partition,
          offset: m.offset,
          key: m.key ?? null,
          value: m.value ?? null,
          timestamp: m.timestamp,
          headers: (m.headers ?? []).flatMap((h: Record<string, Buffer>) => Object.entries(h)),
        });
      }
    }
    const high: number[] = [];
    for (let p = 0; p < counts.length; p++) {
      const w: Any = await new Promise((resolve, reject) =>
        c.queryWatermarkOffsets(topic, p, 10_000, (e: Any, o: Any) => (e ? reject(asError(e)) : resolve(o))),
      );
      high.push(w.highOffset);
    }
    return { parts, high };
  } finally {
    await new Promise<void>((resolve) => c.disconnect(() => resolve()));
  }
}

/** Checks a read-back against what was sent: exact count, offsets 0.., order, key, value, headers, timestamp. */
function expectExact(
  got: { parts: Consumed[][]; high: number[] },
  sent: Rec[],
  timestampOf: (r: Rec) => number | null = (r) => r.timestamp,
): void {
  const want = byPartition(sent);
  expect(got.high).to.deep.equal(
    want.map((w) => w.length),
    'high watermarks',
  );
  let total = 0;
  want.forEach((w, p) => {
    const g = got.parts[p] ?? [];
    expect(g.length, `records read from partition ${p}`).to.equal(w.length);
    g.forEach((m, i) => {
      const r = w[i] as Rec;
      const where = `partition ${p} offset ${i} (record ${r.n})`;
      expect(m.offset, where).to.equal(i);
      expect(m.key?.toString(), where).to.equal(r.key);
      expect(m.value?.equals(r.value), `${where}: value ${m.value?.toString('hex')}`).to.equal(true);
      expect(
        m.headers.map(([k, v]) => [k, v.toString('hex')]),
        where,
      ).to.deep.equal(r.headers.map(([k, v]) => [k, v.toString('hex')]));
      const ts = timestampOf(r);
      if (ts !== null) expect(m.timestamp, where).to.equal(ts);
    });
    total += g.length;
  });
  expect(total).to.equal(COUNT);
}

/** The entries stored in a partition's log files (all segments, in order). */
function storedEntries(dataDir: string, topic: string, partition: number) {
  const dir = join(dataDir, `${topic}-${partition}`);
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .sort();
  const entries = [];
  for (const f of files) {
    for (const e of logEntries(readFileSync(join(dir, f)))) {
      if (e.kind === 'partial') throw new Error(`partial entry in ${dir}/${f} at ${e.start}`);
      entries.push(e);
    }
  }
  return entries;
}

/**
 * Every stored entry is a valid v2 batch and the batches cover offsets 0..count-1 without gaps. The
 * codec was really used: librdkafka sends a batch uncompressed when compressing does not make it
 * smaller, so each batch is `codec` or none, and at least 90% of the records sit in `codec` batches.
 */
function expectStoredV2(dataDir: string, topic: string, codec: Codec, counts: number[]): void {
  counts.forEach((count, p) => {
    let next = 0n;
    let compressed = 0n;
    for (const e of storedEntries(dataDir, topic, p)) {
      expect(e.kind, `${topic}-${p} entry at ${e.start}`).to.equal('batch');
      const batch = (e as { batch: RecordBatch }).batch;
      expect([CompressionCodec.NONE, CODEC_ID[codec]], `${topic}-${p} batch at offset ${batch.baseOffset}: codec`).to.include(
        batch.compression,
      );
      if (batch.compression === CODEC_ID[codec]) compressed += batch.nextOffset - batch.baseOffset;
      expect(batch.baseOffset).to.equal(next);
      batch.validate();
      next = batch.nextOffset;
    }
    expect(next).to.equal(BigInt(count));
    expect(Number(compressed) / count, `${topic}-${p}: share of records stored in ${codec} batches${LZ4_NOTE[codec]}`).to.be.at.least(0.9);
  });
}

describe('librdkafka 2.15 (@confluentinc/kafka-javascript): produce and read back', function () {
  this.timeout(120_000);
  let ck: Any;
  let b: TestBroker;
  const cleanup = new Cleanup();
  before(async () => {
    ck = loadConfluent();
    b = cleanup.add(await startTestBroker({ 'num.partitions': PARTITIONS }), (t) => t.stop());
  });
  after(() => cleanup.run());

  for (const codec of CODECS) {
    for (const acks of [1, -1]) {
      it(`KafkaJS-style producer, ${codec}, acks=${acks}: 10,000 keyed records with headers into 3 partitions, read back exactly`, async () => {
        const topic = `rd-${codec}-acks${acks === 1 ? '1' : 'all'}`;
        const sent = makeRecords(topic, Date.now() - 3_600_000, true);
        const res = await produceKafkaJS(ck, b.bootstrap, topic, sent, { 'compression.type': codec, acks });
        expect(res.map((r: Any) => [r.partition, r.errorCode, r.baseOffset]).sort()).to.deep.equal([
          [0, 0, '0'],
          [1, 0, '0'],
          [2, 0, '0'],
        ]);
        const counts = byPartition(sent).map((w) => w.length);
        expectExact(await readBack(ck, b.bootstrap, topic, counts), sent);
        expectStoredV2(b.dataDir, topic, codec, counts);
      });
    }
  }

  it('node-rdkafka-style Producer, zstd, acks=-1: every delivery report has its offset; read back exactly', async () => {
    const topic = 'rd-native-producer';
    const sent = makeRecords(topic, Date.now() - 7_200_000, true);
    const reports = await produceNative(ck, b.bootstrap, topic, sent, { 'compression.codec': 'zstd', acks: -1 });
    for (const rep of reports) expect(rep.timestamp, `record ${rep.opaque}`).to.equal((sent[rep.opaque as number] as Rec).timestamp);
    const counts = byPartition(sent).map((w) => w.length);
    expectExact(await readBack(ck, b.bootstrap, topic, counts), sent);
    expectStoredV2(b.dataDir, topic, 'zstd', counts);
  });
});

/**
 * A magic 1 partition as stored: every entry is a magic 1 message, of `codec` or uncompressed (at
 * least 90% of the records in `codec` wrappers, as for v2 batches); compressed wrappers
 * hold relative inner offsets 0..n-1 as librdkafka sent them and carry the absolute offset of their
 * last inner message; offsets run 0..count-1 without gaps. Returns the stored timestamps per offset
 * (the wrapper's for compressed entries under LogAppendTime) and the timestamp types seen.
 */
function expectStoredMagic1(
  dataDir: string,
  topic: string,
  codec: Codec,
  counts: number[],
): { tsTypes: Set<number>; wrapperTimestamps: bigint[] } {
  const tsTypes = new Set<number>();
  const wrapperTimestamps: bigint[] = [];
  counts.forEach((count, p) => {
    const raw = readFileSync(join(dataDir, `${topic}-${p}`, '00000000000000000000.log'));
    expect(raw.readInt8(16), `${topic}-${p}: magic byte of the first stored entry`).to.equal(1);
    let next = 0n;
    let compressed = 0n;
    for (const e of storedEntries(dataDir, topic, p)) {
      expect(e.kind, `${topic}-${p} entry at ${e.start}`).to.equal('message');
      const m = (e as { message: LegacyMessage }).message;
      expect(m.magic).to.equal(1);
      expect([CompressionCodec.NONE, CODEC_ID[codec]], `${topic}-${p} message at ${m.offset}: codec`).to.include(m.compression);
      m.validate();
      tsTypes.add(m.timestampType);
      if (m.isCompressed) {
        const inner = m.innerMessages({ maxOutput: 1 << 26, checkCrcs: true });
        expect(inner.map((x) => x.offset)).to.deep.equal(
          inner.map((_, i) => BigInt(i)),
          'inner offsets stay relative',
        );
        expect(m.offset, 'wrapper offset = absolute offset of its last inner message').to.equal(next + BigInt(inner.length - 1));
        next += BigInt(inner.length);
        compressed += BigInt(inner.length);
        wrapperTimestamps.push(m.timestamp);
      } else {
        expect(m.offset).to.equal(next);
        next += 1n;
      }
    }
    expect(next).to.equal(BigInt(count));
    if (codec !== 'none') {
      expect(Number(compressed) / count, `${topic}-${p}: share of records stored in ${codec} wrappers${LZ4_NOTE[codec]}`).to.be.at.least(
        0.9,
      );
    }
  });
  return { tsTypes, wrapperTimestamps };
}

describe('librdkafka 2.15 against broker.version.emulate=0.10.0: Produce v2 with message format 1', function () {
  this.timeout(120_000);
  let ck: Any;
  let b: TestBroker;
  let appendTime: TestBroker;
  const cleanup = new Cleanup();
  before(async () => {
    ck = loadConfluent();
    b = cleanup.add(await startTestBroker({ 'num.partitions': PARTITIONS, 'broker.version.emulate': '0.10.0' }), (t) => t.stop());
    appendTime = cleanup.add(
      await startTestBroker({
        'num.partitions': PARTITIONS,
        'broker.version.emulate': '0.10.0',
        'log.message.timestamp.type': 'LogAppendTime',
      }),
      (t) => t.stop(),
    );
  });
  after(() => cleanup.run());

  for (const codec of ['none', 'gzip', 'snappy', 'lz4'] as const) {
    it(`${codec}, CreateTime: 10,000 keyed records stored as magic 1, read back with producer timestamps and offsets`, async () => {
      const topic = `rd010-${codec}`;
      const sent = makeRecords(topic, Date.now() - 3_600_000, false);
      const pool = (b.broker as unknown as { appendPool: { stats: { jobs: number } } }).appendPool;
      const jobsBefore = pool.stats.jobs;
      const res = await produceKafkaJS(ck, b.bootstrap, topic, sent, { 'compression.type': codec, acks: -1 });
      // compressed sets are decompressed to be validated on the append pool, never on the event loop;
      // uncompressed ones stay on the fast path
      if (codec === 'none') expect(pool.stats.jobs).to.equal(jobsBefore);
      else expect(pool.stats.jobs).to.be.greaterThan(jobsBefore);
      expect(res.map((r: Any) => [r.partition, r.errorCode, r.baseOffset, r.logAppendTime]).sort()).to.deep.equal([
        [0, 0, '0', '-1'],
        [1, 0, '0', '-1'],
        [2, 0, '0', '-1'],
      ]);
      const counts = byPartition(sent).map((w) => w.length);
      const stored = expectStoredMagic1(b.dataDir, topic, codec, counts);
      expect([...stored.tsTypes]).to.deep.equal([0], 'CreateTime');
      if (codec !== 'none') expect(stored.wrapperTimestamps.length).to.be.greaterThan(0);
      expectExact(await readBack(ck, b.bootstrap, topic, counts), sent);
    });
  }

  for (const codec of ['none', 'gzip', 'lz4'] as const) {
    it(`${codec}, LogAppendTime (broker log.message.timestamp.type): read-back timestamps are the broker's append time`, async () => {
      const topic = `rd010-lat-${codec}`;
      const sent = makeRecords(topic, Date.now() - 3_600_000, false);
      const before = Date.now();
      // the node-rdkafka-style producer: its delivery reports carry the produce response's log_append_time
      const reports = await produceNative(ck, appendTime.bootstrap, topic, sent, { 'compression.codec': codec, acks: 1 });
      const after = Date.now();
      for (const rep of reports) expect(rep.timestamp, `delivery report timestamp of record ${rep.opaque}`).to.be.within(before, after);
      const counts = byPartition(sent).map((w) => w.length);
      const stored = expectStoredMagic1(appendTime.dataDir, topic, codec, counts);
      expect([...stored.tsTypes]).to.deep.equal([1], 'LogAppendTime');
      for (const ts of stored.wrapperTimestamps) expect(Number(ts)).to.be.within(before, after);
      const got = await readBack(ck, appendTime.bootstrap, topic, counts);
      expectExact(got, sent, () => null);
      for (const part of got.parts) {
        for (const m of part) expect(m.timestamp, `offset ${m.offset}`).to.be.within(before, after);
        // append times never go backwards within a partition
        for (let i = 1; i < part.length; i++) expect((part[i] as Consumed).timestamp).to.be.at.least((part[i - 1] as Consumed).timestamp);
      }
    });
  }
});
