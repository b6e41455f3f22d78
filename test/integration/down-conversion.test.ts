/**
 * Down-conversion on fetch and message-format conversion on produce, with real clients:
 * - records written by kafkajs (v2 batches, headers, none and gzip) and librdkafka (lz4, snappy, with
 *   a transaction-free idempotent-off producer) are read by kafka-python api_version=(0,10,0) (Fetch
 *   v2 → magic 1) with check_crcs on: offsets, timestamps, keys and values intact, headers dropped;
 * - a raw Fetch v0/v1 gets magic 0, v2/v3 magic 1, v4+ the stored v2 bytes; a read from the middle
 *   of an uncompressed batch is trimmed to the fetch offset (Kafka's rule);
 * - a topic at message.format.version=0.10.2 stores magic 1 and kafkajs reads it back;
 * - message.downconversion.enable=false answers UNSUPPORTED_VERSION to Fetch v0-3; a zstd topic
 *   answers UNSUPPORTED_COMPRESSION_TYPE below Fetch v10.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { CompressionCodec, decodeRecords, logEntries } from '../../protocol/records/index.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { KafkajsPartitionReader } from '../helpers/kafkajs-reader.js';
import { RawClient, rawCreateTopics, rawFetch } from '../helpers/raw-client.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { Cleanup } from '../helpers/cleanup.js';

type Any = any;
const require = createRequire(import.meta.url);
const { Kafka, CompressionTypes, logLevel } = require('kafkajs') as typeof import('kafkajs');
const ck: Any = loadConfluent();

const N = 400;

interface Sent {
  key: string;
  value: string;
  timestamp: number;
}

function recs(topic: string, base: number): Sent[] {
  return Array.from({ length: N }, (_, i) => ({ key: `k${i}`, value: `${topic}-v${i}-${'y'.repeat(i % 70)}`, timestamp: base + i * 7 }));
}

const PY_READ = String.raw`
import json, sys, time
from kafka import KafkaConsumer, TopicPartition
args = json.load(sys.stdin)
c = KafkaConsumer(bootstrap_servers=args['bootstrap'], api_version=(0, 10, 0), group_id=None, enable_auto_commit=False,
                  check_crcs=True, fetch_max_wait_ms=100, max_partition_fetch_bytes=65536)
out = {}
for t in args['topics']:
    tp = TopicPartition(t, 0)
    c.assign([tp])
    c.seek(tp, args.get('from', 0))
    got = []
    deadline = time.time() + 30
    while len(got) < args['count'] and time.time() < deadline:
        for _, msgs in c.poll(timeout_ms=500).items():
            for m in msgs:
                got.append([m.offset, m.timestamp, m.timestamp_type, m.key.decode() if m.key else None, m.value.decode(), len(m.headers or [])])
    out[t] = got
c.close()
print(json.dumps(out))
`;

function pyRead(
  bootstrap: string,
  topics: string[],
  count: number,
  from = 0,
): Promise<Record<string, [number, number, number, string | null, string, number][]>> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', ['-c', PY_READ], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`kafka-python reader failed (${code}): ${err}`)),
    );
    child.stdin.on('error', () => {}); // an early exit shows up in the exit code and stderr
    child.stdin.end(JSON.stringify({ bootstrap, topics, count, from }));
  });
}

function fetchBodyV(topic: string, fetchOffset: bigint, maxBytes = 1 << 20) {
  return {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes,
    isolationLevel: 0,
    topics: [
      { topic, partitions: [{ partition: 0, fetchOffset, partitionMaxBytes: maxBytes, currentLeaderEpoch: -1, logStartOffset: -1n }] },
    ],
    sessionId: 0,
    sessionEpoch: -1,
    forgottenTopicsData: [],
    rackId: '',
  };
}

async function fetchV(raw: RawClient, version: number, topic: string, offset: bigint): Promise<{ errorCode: number; records: Buffer }> {
  const res = await raw.request<{ responses: { partitions: { errorCode: number; records: Buffer | null }[] }[] }>(
    1,
    version,
    fetchBodyV(topic, offset),
  );
  const p = res.responses[0]?.partitions[0];
  if (p === undefined) throw new Error('empty fetch');
  return { errorCode: p.errorCode, records: p.records ?? Buffer.alloc(0) };
}

describe('down-conversion on fetch and message-format conversion on produce', function () {
  this.timeout(120_000);
  let b: TestBroker;
  const base = Date.now() - 120_000;
  const sent = new Map<string, Sent[]>();

  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker({ 'num.append.workers': 2 }), (t) => t.stop());
    const raw = await RawClient.connect(b.bootstrap);
    await rawCreateTopics(raw, [
      { name: 'dc-kjs-none', partitions: 1 },
      { name: 'dc-kjs-gzip', partitions: 1 },
      { name: 'dc-rd-lz4', partitions: 1 },
      { name: 'dc-rd-snappy', partitions: 1 },
      { name: 'dc-fmt1', partitions: 1, configs: { 'message.format.version': '0.10.2' } },
      { name: 'dc-disabled', partitions: 1, configs: { 'message.downconversion.enable': 'false' } },
      { name: 'dc-zstd', partitions: 1, configs: { 'compression.type': 'zstd' } },
    ]);
    raw.destroy();
    const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'dc-test', logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    for (const [topic, codec, headers] of [
      ['dc-kjs-none', CompressionTypes.None, true],
      ['dc-kjs-gzip', CompressionTypes.GZIP, true],
      ['dc-fmt1', CompressionTypes.GZIP, false],
      ['dc-disabled', CompressionTypes.None, true],
      ['dc-zstd', CompressionTypes.None, true],
    ] as const) {
      const r = recs(topic, base);
      sent.set(topic, r);
      for (let i = 0; i < N; i += 100) {
        await producer.send({
          topic,
          compression: codec,
          messages: r.slice(i, i + 100).map((m) => ({
            key: m.key,
            value: m.value,
            timestamp: String(m.timestamp),
            partition: 0,
            ...(headers ? { headers: { h: 'x' } } : {}),
          })),
        });
      }
    }
    await producer.disconnect();
    for (const [topic, codec] of [
      ['dc-rd-lz4', 'lz4'],
      ['dc-rd-snappy', 'snappy'],
    ] as const) {
      const r = recs(topic, base);
      sent.set(topic, r);
      const k = new ck.KafkaJS.Kafka({ kafkaJS: { brokers: [b.bootstrap], logLevel: ck.KafkaJS.logLevel.NOTHING } });
      const p = k.producer({ 'compression.codec': codec, 'linger.ms': 5, 'batch.num.messages': 64 });
      await p.connect();
      await p.send({
        topic,
        messages: r.map((m) => ({ key: m.key, value: m.value, timestamp: String(m.timestamp), partition: 0, headers: { h: 'y' } })),
      });
      await p.disconnect();
    }
  });
  after(() => cleanup.run());

  it('kafka-python api_version=(0,10,0), check_crcs on, reads kafkajs and librdkafka data: offsets, timestamps, keys, values', async () => {
    const topics = ['dc-kjs-none', 'dc-kjs-gzip', 'dc-rd-lz4', 'dc-rd-snappy'];
    const got = await pyRead(b.bootstrap, topics, N);
    for (const t of topics) {
      const want = (sent.get(t) ?? []).map((m, i) => [i, m.timestamp, 0, m.key, m.value, 0]);
      expect(got[t], t).to.deep.equal(want);
    }
  });

  it('kafka-python (0,10,0) from the middle of a batch gets the records from there on', async () => {
    const got = await pyRead(b.bootstrap, ['dc-kjs-none', 'dc-kjs-gzip'], N - 137, 137);
    for (const t of ['dc-kjs-none', 'dc-kjs-gzip']) {
      expect(
        got[t]?.map((r) => r[0]),
        t,
      ).to.deep.equal(Array.from({ length: N - 137 }, (_, i) => 137 + i));
    }
  });

  it('Fetch v0-1 get magic 0, v2-3 magic 1, v4+ the stored v2 batches; uncompressed batches are trimmed to the fetch offset', async () => {
    const raw = await RawClient.connect(b.bootstrap);
    try {
      for (const topic of ['dc-kjs-none', 'dc-kjs-gzip']) {
        for (const [version, magic] of [
          [0, 0],
          [1, 0],
          [2, 1],
          [3, 1],
          [4, 2],
          [11, 2],
        ] as const) {
          const { errorCode, records } = await fetchV(raw, version, topic, 150n);
          expect(errorCode).to.equal(ErrorCode.NONE);
          const entries = [...logEntries(records)].filter((e) => e.kind !== 'partial');
          expect(entries.length).to.be.greaterThan(0);
          for (const e of entries) expect(e.kind === 'batch' ? 2 : e.message.magic, `${topic} v${version}`).to.equal(magic);
          const decoded = decodeRecords(records, { maxOutput: 1 << 26 }).records;
          const first = decoded[0]?.offset;
          // kafkajs sends 100-record batches: v4+ and compressed sets start at the batch (100); uncompressed down-converted ones at 150
          expect(first, `${topic} v${version}`).to.equal(magic < 2 && topic === 'dc-kjs-none' ? 150n : 100n);
          const s = sent.get(topic) ?? [];
          for (const r of decoded) {
            const m = s[Number(r.offset)] as Sent;
            expect(r.value?.toString()).to.equal(m.value);
            expect(r.timestamp).to.equal(magic === 0 ? -1n : BigInt(m.timestamp));
            if (magic < 2) expect(r.headers).to.deep.equal([]);
          }
        }
      }
    } finally {
      raw.destroy();
    }
  });

  it('a topic at message.format.version=0.10.2 stores magic 1 (kafkajs v2 batches converted) and kafkajs reads it back', async () => {
    const raw = await RawClient.connect(b.bootstrap);
    const p = await rawFetch(raw, 'dc-fmt1', 0, 0n);
    raw.destroy();
    expect(p.errorCode).to.equal(ErrorCode.NONE);
    const entries = [...logEntries(p.records ?? Buffer.alloc(0))].filter((e) => e.kind !== 'partial');
    expect(entries.length, 'stored entries of dc-fmt1').to.be.greaterThan(0);
    expect(entries.every((e) => e.kind === 'message' && e.message.magic === 1 && e.message.compression === CompressionCodec.GZIP)).to.equal(
      true,
    );
    const reader = new KafkajsPartitionReader([b.bootstrap]);
    await reader.connect('dc-fmt1');
    try {
      const got = await reader.readAll('dc-fmt1', 0, 0n, BigInt(N));
      expect(got.map((m) => [m.offset, m.key?.toString(), m.value?.toString(), m.timestamp])).to.deep.equal(
        (sent.get('dc-fmt1') ?? []).map((m, i) => [String(i), m.key, m.value, String(m.timestamp)]),
      );
    } finally {
      await reader.disconnect();
    }
  });

  it('message.downconversion.enable=false → UNSUPPORTED_VERSION for Fetch v0-3; compression.type=zstd → UNSUPPORTED_COMPRESSION_TYPE below v10', async () => {
    const raw = await RawClient.connect(b.bootstrap);
    try {
      expect((await fetchV(raw, 2, 'dc-disabled', 0n)).errorCode).to.equal(ErrorCode.UNSUPPORTED_VERSION);
      expect((await fetchV(raw, 0, 'dc-disabled', 0n)).errorCode).to.equal(ErrorCode.UNSUPPORTED_VERSION);
      expect((await fetchV(raw, 4, 'dc-disabled', 0n)).errorCode).to.equal(ErrorCode.NONE);
      expect((await fetchV(raw, 9, 'dc-zstd', 0n)).errorCode).to.equal(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
      const ok = await fetchV(raw, 10, 'dc-zstd', 0n);
      expect(ok.errorCode).to.equal(ErrorCode.NONE);
      const first = [...logEntries(ok.records)][0];
      expect(first?.kind === 'batch' && first.batch.compression).to.equal(CompressionCodec.ZSTD);
    } finally {
      raw.destroy();
    }
  });
});
