/**
 * Topic compression.type against real clients: every producer codec of kafkajs (none, gzip: its
 * built-in codecs), librdkafka (@confluentinc/kafka-javascript), kcat and kafka-python (api_version
 * auto, Produce v7+) into a topic with compression.type=producer and topics forcing each codec
 * (uncompressed, gzip, snappy, lz4, zstd). Every record is read back with librdkafka (all codecs),
 * exactly: offsets 0.., keys, values, headers, timestamps; the stored batches are checked to carry
 * the topic's codec (or the producer's under `producer`). The broker recompresses on its append
 * worker pool (num.append.workers=2).
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { CompressionCodec, buildRecordBatch, logEntries } from '../../protocol/records/index.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawClient, rawCreateTopics, rawFetch, rawProduce } from '../helpers/raw-client.js';
import { runKcat } from '../helpers/kcat.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { Cleanup } from '../helpers/cleanup.js';
import { asError } from '../../lib/as-error.js';

type Any = any;
const require = createRequire(import.meta.url);
const { Kafka, CompressionTypes, logLevel } = require('kafkajs') as typeof import('kafkajs');
const ck: Any = loadConfluent();

const N = 150;
const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
type Codec = (typeof CODECS)[number];
const TOPIC_TYPES = ['producer', 'uncompressed', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
type TopicType = (typeof TOPIC_TYPES)[number];
const CODEC_ID: Record<Codec, number> = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 };
type Client = 'kafkajs' | 'librdkafka' | 'kcat' | 'kafka-python';
const CLIENT_CODECS: Record<Client, readonly Codec[]> = {
  kafkajs: ['none', 'gzip'],
  librdkafka: CODECS,
  kcat: CODECS,
  'kafka-python': CODECS,
};

interface Rec {
  key: string;
  value: string;
  headers: [string, string][];
  timestamp: number | null;
}
interface Combo {
  client: Client;
  codec: Codec;
  type: TopicType;
  topic: string;
  recs: Rec[];
}

function makeRecs(topic: string, client: Client, base: number): Rec[] {
  return Array.from({ length: N }, (_, i) => ({
    key: `key-${i}`,
    value: `${topic} value ${i} ünïcødé ${'x'.repeat(i % 60)}`,
    headers:
      client === 'kcat'
        ? [['src', 'kcat']]
        : [
            ['n', String(i)],
            ['client', client],
          ],
    timestamp: client === 'kcat' ? null : base + i,
  }));
}

function expectedCodecs(c: Combo): number[] {
  if (c.type === 'producer') return c.codec === 'none' ? [0] : [CODEC_ID[c.codec], 0]; // librdkafka may send small batches uncompressed
  return [c.type === 'uncompressed' ? 0 : CODEC_ID[c.type]];
}

async function produceKafkajs(bootstrap: string, c: Combo): Promise<void> {
  const kafka = new Kafka({ brokers: [bootstrap], clientId: 'compression-test', logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  try {
    for (let i = 0; i < N; i += 50) {
      await producer.send({
        topic: c.topic,
        compression: c.codec === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None,
        messages: c.recs.slice(i, i + 50).map((r) => ({
          key: r.key,
          value: r.value,
          headers: Object.fromEntries(r.headers),
          timestamp: String(r.timestamp),
          partition: 0,
        })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}

async function produceLibrdkafka(bootstrap: string, combos: Combo[]): Promise<void> {
  const codec = combos[0]?.codec ?? 'none';
  const kafka = new ck.KafkaJS.Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: ck.KafkaJS.logLevel.NOTHING } });
  const producer = kafka.producer({ 'linger.ms': 5, 'compression.codec': codec, 'batch.num.messages': 50 });
  await producer.connect();
  try {
    for (const c of combos) {
      await producer.send({
        topic: c.topic,
        messages: c.recs.map((r) => ({
          key: r.key,
          value: r.value,
          partition: 0,
          timestamp: String(r.timestamp),
          headers: Object.fromEntries(r.headers),
        })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}

async function produceKcat(bootstrap: string, c: Combo): Promise<void> {
  const input = c.recs.map((r) => `${r.key}\t${r.value}`).join('\n') + '\n';
  const res = await runKcat(
    ['-b', bootstrap, '-P', '-t', c.topic, '-p', '0', '-z', c.codec, '-K', '\t', '-H', 'src=kcat', '-X', 'batch.num.messages=50'],
    input,
  );
  if (res.code !== 0) throw new Error(`kcat failed: ${res.stderr}`);
}

const PY_PRODUCE = String.raw`
import json, sys
from kafka import KafkaProducer
args = json.load(sys.stdin)
for codec, runs in args['byCodec'].items():
    p = KafkaProducer(bootstrap_servers=args['bootstrap'], acks=1, compression_type=None if codec == 'none' else codec, linger_ms=5, batch_size=16384)
    fs = []
    for run in runs:
        for r in run['recs']:
            fs.append(p.send(run['topic'], key=r['key'].encode(), value=r['value'].encode(), partition=0, timestamp_ms=r['timestamp'],
                             headers=[(k, v.encode()) for k, v in r['headers']]))
    p.flush()
    for f in fs:
        f.get(timeout=30)
    p.close()
print('ok')
`;

function producePython(bootstrap: string, combos: Combo[]): Promise<void> {
  const byCodec: Record<string, { topic: string; recs: Rec[] }[]> = {};
  for (const c of combos) (byCodec[c.codec] ??= []).push({ topic: c.topic, recs: c.recs });
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', ['-c', PY_PRODUCE], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) =>
      code === 0 && out.includes('ok') ? resolve() : reject(new Error(`kafka-python producer failed (${code}): ${err}`)),
    );
    child.stdin.on('error', () => {}); // an early exit shows up in the exit code and stderr
    child.stdin.end(JSON.stringify({ bootstrap, byCodec }));
  });
}

interface Consumed {
  topic: string;
  offset: number;
  key: string | null;
  value: string | null;
  timestamp: number;
  headers: [string, string][];
}

/** Reads N records from partition 0 of every topic with one librdkafka consumer (assign, no group). */
async function readAllWithLibrdkafka(bootstrap: string, topics: string[]): Promise<Map<string, Consumed[]>> {
  const c = new ck.KafkaConsumer(
    { 'bootstrap.servers': bootstrap, 'group.id': 'compression-reader', 'enable.auto.commit': false, log_level: 0 },
    {},
  );
  await new Promise<void>((resolve, reject) => c.connect({ timeout: 10_000 }, (e: Any) => (e ? reject(asError(e)) : resolve())));
  const got = new Map<string, Consumed[]>(topics.map((t) => [t, []]));
  try {
    c.assign(topics.map((topic) => ({ topic, partition: 0, offset: 0 })));
    const deadline = Date.now() + 60_000;
    const missing = (): boolean => [...got.values()].some((l) => l.length < N);
    while (missing() && Date.now() < deadline) {
      const batch: Any[] = await new Promise((resolve, reject) =>
        c.consume(2000, (e: Any, m: Any[]) => (e ? reject(asError(e)) : resolve(m))),
      );
      for (const m of batch) {
        got.get(m.topic)?.push({
          topic: m.topic,
          offset: m.offset,
          key: m.key?.toString() ?? null,
          value: m.value?.toString() ?? null,
          timestamp: m.timestamp,
          headers: (m.headers ?? []).flatMap((h: Record<string, Buffer>) => Object.entries(h).map(([k, v]) => [k, v.toString()])),
        });
      }
    }
  } finally {
    await new Promise<void>((resolve) => c.disconnect(() => resolve()));
  }
  return got;
}

/** Codecs of the stored batches of partition 0 (Fetch v11: stored bytes as they are). */
async function storedCodecs(raw: RawClient, topic: string): Promise<Set<number>> {
  const out = new Set<number>();
  let offset = 0n;
  while (offset < BigInt(N)) {
    const p = await rawFetch(raw, topic, 0, offset, { maxBytes: 1 << 20 });
    if (p.errorCode !== 0 || p.records === null || p.records.length === 0)
      throw new Error(`fetch ${topic}@${offset}: error ${p.errorCode}`);
    for (const e of logEntries(p.records)) {
      if (e.kind !== 'batch') throw new Error(`${topic}: stored entry is not a v2 batch`);
      out.add(e.batch.compression);
      offset = e.batch.lastOffset + 1n;
    }
  }
  return out;
}

describe('compression.type × every codec × every client (broker recompression on the worker pool)', function () {
  this.timeout(180_000);
  let b: TestBroker;
  const combos: Combo[] = [];
  let consumed: Map<string, Consumed[]>;
  const produceErrors = new Map<string, string>();

  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker({ 'num.append.workers': 2, 'auto.create.topics.enable': false }), (t) => t.stop());
    const base = Date.now() - 60_000;
    for (const client of ['kafkajs', 'librdkafka', 'kcat', 'kafka-python'] as Client[]) {
      for (const codec of CLIENT_CODECS[client]) {
        for (const type of TOPIC_TYPES) {
          const topic = `cmp-${client}-${codec}-to-${type}`;
          combos.push({ client, codec, type, topic, recs: makeRecs(topic, client, base) });
        }
      }
    }
    const raw = await RawClient.connect(b.bootstrap);
    for (let i = 0; i < combos.length; i += 20) {
      await rawCreateTopics(
        raw,
        combos
          .slice(i, i + 20)
          .map((c) => ({ name: c.topic, partitions: 1, configs: c.type === 'producer' ? {} : { 'compression.type': c.type } })),
      );
    }
    raw.destroy();
    const run = async (what: string, f: () => Promise<void>): Promise<void> => {
      try {
        await f();
      } catch (e) {
        produceErrors.set(what, (e as Error).message);
      }
    };
    await Promise.all([
      run('kafkajs', async () => {
        for (const c of combos.filter((x) => x.client === 'kafkajs')) await produceKafkajs(b.bootstrap, c);
      }),
      run('librdkafka', async () => {
        for (const codec of CODECS)
          await produceLibrdkafka(
            b.bootstrap,
            combos.filter((x) => x.client === 'librdkafka' && x.codec === codec),
          );
      }),
      run('kcat', async () => {
        for (const c of combos.filter((x) => x.client === 'kcat')) await produceKcat(b.bootstrap, c);
      }),
      run('kafka-python', () =>
        producePython(
          b.bootstrap,
          combos.filter((x) => x.client === 'kafka-python'),
        ),
      ),
    ]);
    consumed = await readAllWithLibrdkafka(
      b.bootstrap,
      combos.map((c) => c.topic),
    );
  });
  after(() => cleanup.run());

  for (const client of ['kafkajs', 'librdkafka', 'kcat', 'kafka-python'] as Client[]) {
    for (const codec of CLIENT_CODECS[client]) {
      it(`${client} ${codec} → topics compression.type=${TOPIC_TYPES.join('|')}: records read back exactly, stored codec is the topic's`, async () => {
        expect(produceErrors.get(client), `${client} producer`).to.equal(undefined);
        const raw = await RawClient.connect(b.bootstrap);
        try {
          for (const c of combos.filter((x) => x.client === client && x.codec === codec)) {
            const got = consumed.get(c.topic) ?? [];
            expect(
              got.map((g) => g.offset),
              c.topic,
            ).to.deep.equal(Array.from({ length: N }, (_, i) => i));
            got.forEach((g, i) => {
              const want = c.recs[i] as Rec;
              expect([g.key, g.value], `${c.topic} #${i}`).to.deep.equal([want.key, want.value]);
              expect(g.headers, `${c.topic} #${i} headers`).to.deep.equal(want.headers);
              if (want.timestamp !== null) expect(g.timestamp, `${c.topic} #${i} timestamp`).to.equal(want.timestamp);
            });
            const codecs = await storedCodecs(raw, c.topic);
            const allowed = expectedCodecs(c);
            for (const s of codecs) expect(allowed, `${c.topic} stored codec ${s}`).to.include(s);
            if (c.type !== 'producer') expect([...codecs], c.topic).to.deep.equal(allowed);
          }
        } finally {
          raw.destroy();
        }
      });
    }
  }

  it('the pool did the recompression (forced-codec topics went through it; matching ones did not)', async () => {
    const pool = (b.broker as unknown as { appendPool: { stats: { jobs: number; inline: number }; threads: number } }).appendPool;
    expect(pool.threads).to.equal(2);
    // the clients' batches into forced-codec topics of another codec: at least one job per produced batch
    expect(pool.stats.jobs).to.be.greaterThan(50);
    expect(pool.stats.inline).to.equal(0);
    // and per routing decision, one batch at a time over a raw connection (nothing else runs now)
    const raw = await RawClient.connect(b.bootstrap);
    try {
      const topics = { producer: 'cmp-pool-producer', gzip: 'cmp-pool-gzip', zstd: 'cmp-pool-zstd' } as const;
      await rawCreateTopics(raw, [
        { name: topics.producer, partitions: 1 },
        { name: topics.gzip, partitions: 1, configs: { 'compression.type': 'gzip' } },
        { name: topics.zstd, partitions: 1, configs: { 'compression.type': 'zstd' } },
      ]);
      const records = Array.from({ length: 5 }, (_, i) => ({
        key: Buffer.from(`k${i}`),
        value: Buffer.from(`pool ${i}`),
        timestamp: BigInt(Date.now()),
      }));
      const jobsFor = async (topic: string, codec: number): Promise<number> => {
        const before = pool.stats.jobs;
        const [res] = await rawProduce(raw, topic, [[0, buildRecordBatch(records, { compression: codec })]]);
        expect(res?.errorCode, `produce to ${topic}`).to.equal(0);
        return pool.stats.jobs - before;
      };
      expect(await jobsFor(topics.producer, CompressionCodec.GZIP), 'gzip batch → compression.type=producer').to.equal(0);
      expect(await jobsFor(topics.gzip, CompressionCodec.GZIP), 'gzip batch → compression.type=gzip').to.equal(0);
      expect(await jobsFor(topics.zstd, CompressionCodec.GZIP), 'gzip batch → compression.type=zstd').to.equal(1);
      expect(await jobsFor(topics.gzip, CompressionCodec.NONE), 'uncompressed batch → compression.type=gzip').to.equal(1);
      // what the pool produced is what is stored
      const gz = await rawFetch(raw, topics.gzip, 0, 0n);
      expect([...logEntries(gz.records ?? Buffer.alloc(0))].map((e) => (e.kind === 'batch' ? e.batch.compression : -1))).to.deep.equal([
        CompressionCodec.GZIP,
        CompressionCodec.GZIP,
      ]);
      const zs = await rawFetch(raw, topics.zstd, 0, 0n);
      expect([...logEntries(zs.records ?? Buffer.alloc(0))].map((e) => (e.kind === 'batch' ? e.batch.compression : -1))).to.deep.equal([
        CompressionCodec.ZSTD,
      ]);
    } finally {
      raw.destroy();
    }
  });
});

export { CompressionCodec };
