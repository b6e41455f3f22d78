/**
 * kafka-python 2.0.2 against a real gregor, auto-negotiated (it infers a recent broker and speaks
 * Produce v7 / magic 2, with headers) and forced to api_version=(0,10,0) (Produce v2 / magic 1, no
 * headers): 10,000 keyed records per codec into a 3-partition topic, read back through assign +
 * seek_to_beginning with check_crcs=True, checking keys, values, headers, timestamps, timestamp
 * types, offsets, per-partition order, the producer's RecordMetadata, and the stored format. One
 * python process per scenario (all codecs in it).
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { logEntries, type LogEntry } from '../../protocol/records/index.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { hex, runKafkaPython, type PyRecord, type PyResult, type PyRun } from '../helpers/kafka-python.js';
import { CODEC_ID } from '../helpers/codecs.js';
import { Cleanup } from '../helpers/cleanup.js';

const PARTITIONS = 3;
const COUNT = 10_000;
type Codec = PyRun['codec'];

/** Record n: partition n % 3, a value with non-ASCII text and binary bytes, headers when allowed. */
function makeRecords(topic: string, base: number, withHeaders: boolean): PyRecord[] {
  return Array.from({ length: COUNT }, (_, n) => {
    const r: PyRecord = {
      p: n % PARTITIONS,
      k: hex(`key-${n}`),
      v: hex(Buffer.concat([Buffer.from(`${topic} value ${n} ünïcødé `), Buffer.from([0, 255, n & 255]), Buffer.from('x'.repeat(n % 50))])),
      ts: base + n,
    };
    if (withHeaders) {
      r.h = [
        ['n', hex(String(n))],
        ['topic', hex(topic)],
        ['dup', hex('first')],
        ['dup', hex(Buffer.from([0, 1, n & 255]))],
      ];
    }
    return r;
  });
}

function storedEntries(dataDir: string, topic: string, partition: number): LogEntry[] {
  const dir = join(dataDir, `${topic}-${partition}`);
  const out: LogEntry[] = [];
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.log'))
    .sort()) {
    for (const e of logEntries(readFileSync(join(dir, f)))) {
      if (e.kind === 'partial') throw new Error(`${dir}/${f}: partial entry at ${e.start}`);
      out.push(e);
    }
  }
  return out;
}

/**
 * Stored entries of one partition: all of `magic`, valid CRCs, offsets 0..count-1 without gaps, and
 * every record in an entry of `codec` (for magic 2, kafka-python leaves a batch of a few records
 * uncompressed when the codec would not shrink it). For magic 1 wrappers,
 * inner offsets stay relative (0..n-1) and the wrapper carries the absolute offset of its last one.
 */
function expectStored(dataDir: string, topic: string, magic: 1 | 2, codec: Codec, count: number, p: number): void {
  let next = 0n;
  let compressed = 0;
  for (const e of storedEntries(dataDir, topic, p)) {
    const where = `${topic}-${p} entry at byte ${e.start}`;
    if (magic === 2) {
      expect(e.kind, where).to.equal('batch');
      if (e.kind !== 'batch') return;
      e.batch.validate();
      if (e.batch.compression === CODEC_ID[codec]) compressed++;
      else {
        // kafka-python sends a batch uncompressed when compressing it would not make it smaller
        // (default_records.py, _maybe_compress), which happens only for a batch of one or a few
        // of these records; any larger one must carry the codec
        expect(e.batch.compression, `${where}: codec`).to.equal(CODEC_ID.none);
        expect(e.batch.recordCount, `${where}: records in an uncompressed ${codec} batch`).to.be.at.most(3);
      }
      expect(e.batch.baseOffset, where).to.equal(next);
      next = e.batch.nextOffset;
    } else {
      expect(e.kind, where).to.equal('message');
      if (e.kind !== 'message') return;
      const m = e.message;
      expect(m.magic, where).to.equal(1);
      m.validate();
      expect(m.compression, `${where}: codec`).to.equal(CODEC_ID[codec]);
      expect(m.timestampType, `${where}: CreateTime`).to.equal(0);
      if (m.isCompressed) {
        const inner = m.innerMessages({ maxOutput: 1 << 26, checkCrcs: true });
        expect(
          inner.map((x) => x.offset),
          `${where}: inner offsets as sent (relative)`,
        ).to.deep.equal(inner.map((_, i) => BigInt(i)));
        expect(m.offset, `${where}: wrapper offset`).to.equal(next + BigInt(inner.length - 1));
        next += BigInt(inner.length);
      } else {
        expect(m.offset, where).to.equal(next);
        next += 1n;
      }
    }
  }
  expect(next, `${topic}-${p}: stored records`).to.equal(BigInt(count));
  if (magic === 2 && codec !== 'none') expect(compressed, `${topic}-${p}: batches stored with ${codec}`).to.be.above(0);
}

/** Checks what kafka-python reported sending and what it read back against the records sent. */
function expectExact(res: PyResult | undefined, sent: PyRecord[], withHeaders: boolean): number[] {
  expect(res, 'no output from kafka-python for this topic').to.not.equal(undefined);
  const { sent: meta, read } = res as PyResult;
  const want: PyRecord[][] = Array.from({ length: PARTITIONS }, () => []);
  // the producer's RecordMetadata: partition as asked, offsets 0.. per partition in send order, timestamp as sent
  expect(meta.length).to.equal(sent.length);
  sent.forEach((r, n) => {
    const w = want[r.p] as PyRecord[];
    expect(meta[n], `RecordMetadata of record ${n}`).to.deep.equal([r.p, w.length, r.ts]);
    w.push(r);
  });
  const got: PyResult['read'][] = Array.from({ length: PARTITIONS }, () => []);
  for (const m of read) got[m[0]]?.push(m);
  want.forEach((w, p) => {
    const g = got[p] ?? [];
    expect(g.length, `records read from partition ${p}`).to.equal(w.length);
    g.forEach(([, offset, ts, tsType, key, value, headers], i) => {
      const r = w[i] as PyRecord;
      const where = `partition ${p} offset ${i}`;
      expect(offset, where).to.equal(i);
      expect(key, where).to.equal(r.k);
      expect(value, where).to.equal(r.v);
      expect(ts, where).to.equal(r.ts);
      expect(tsType, `${where}: timestamp type`).to.equal(0);
      expect(headers, where).to.deep.equal(withHeaders ? r.h : []);
    });
  });
  expect(read.length).to.equal(COUNT);
  return want.map((w) => w.length);
}

describe('kafka-python 2.0.2: produce and read back', function () {
  this.timeout(180_000);
  let b: TestBroker;
  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker({ 'num.partitions': PARTITIONS }), (t) => t.stop());
  });
  after(() => cleanup.run());

  const scenarios = [
    {
      name: 'auto-negotiated (magic 2 record batches, headers)',
      prefix: 'py-auto',
      apiVersion: null,
      acks: -1,
      magic: 2 as const,
      headers: true,
      codecs: ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as Codec[],
    },
    {
      name: 'api_version=(0,10,0) (Produce v2, magic 1, no headers)',
      prefix: 'py-010',
      apiVersion: [0, 10, 0],
      acks: 1,
      // as Kafka 3.x (message.format.version 3.0): magic-1 sets are up-converted to v2 batches with
      // the producer's codec on append, and down-converted back to magic 1 for its Fetch v2 reads
      magic: 2 as const,
      headers: false,
      codecs: ['none', 'gzip', 'snappy', 'lz4'] as Codec[],
    },
  ];

  for (const s of scenarios) {
    describe(s.name, () => {
      const runs: PyRun[] = [];
      let results: Map<string, PyResult>;
      before(async () => {
        for (const codec of s.codecs) {
          const topic = `${s.prefix}-${codec}`;
          runs.push({ topic, codec, records: makeRecords(topic, Date.now() - 3_600_000, s.headers) });
        }
        results = await runKafkaPython({ bootstrap: b.bootstrap, api_version: s.apiVersion, acks: s.acks, runs });
      });

      for (const codec of s.codecs) {
        it(`${codec}: 10,000 keyed records${s.headers ? ' with headers' : ''} into 3 partitions, read back exactly with check_crcs, stored as magic ${s.magic}`, () => {
          const run = runs.find((r) => r.codec === codec) as PyRun;
          const counts = expectExact(results.get(run.topic), run.records, s.headers);
          counts.forEach((count, p) => expectStored(b.dataDir, run.topic, s.magic, codec, count, p));
        });
      }
    });
  }
});
