/**
 * kcat 1.7.1 (librdkafka 2.0.2) against a real gregor: `-P` with a key delimiter and headers, 10,000
 * records per codec into a 3-partition topic (one producer per partition, `-p`), read back with
 * `-C -e -o beginning -f` in a length-prefixed format: keys, values, headers, timestamps, offsets,
 * per-partition order, and the stored batches' codec (librdkafka 2.0.2 silently stops compressing
 * when the broker's advertised ranges do not suit it). Plus one run through kcat's own partitioner.
 */
import { crc32 } from '@node-rs/crc32';
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CompressionCodec, logEntries, type RecordBatch } from '../../protocol/records/index.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { KCAT_FORMAT, parseKcatOutput, runKcat, type KcatRecord } from '../helpers/kcat.js';
import { CODEC_ID, CODECS, type Codec } from '../helpers/codecs.js';
import { Cleanup } from '../helpers/cleanup.js';

const PARTITIONS = 3;
const COUNT = 10_000;

interface Line {
  n: number;
  key: string;
  value: string;
}

/** Record n: a key, and a value with spaces, separators and non-ASCII text (no tab, no newline). */
function line(topic: string, n: number): Line {
  return { n, key: `key-${n}`, value: `${topic} value ${n}, ünïcødé = ${'x'.repeat(n % 50)}` };
}

/** The stored v2 batches of one partition (all segments in order). */
function storedBatches(dataDir: string, topic: string, partition: number): RecordBatch[] {
  const dir = join(dataDir, `${topic}-${partition}`);
  const out: RecordBatch[] = [];
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.log'))
    .sort()) {
    for (const e of logEntries(readFileSync(join(dir, f)))) {
      if (e.kind !== 'batch') throw new Error(`${dir}/${f} at ${e.start}: ${e.kind}, not a v2 batch`);
      out.push(e.batch);
    }
  }
  return out;
}

/**
 * Every stored batch is valid, offsets run 0..count-1 without gaps, and the codec was really used:
 * librdkafka sends a batch uncompressed when compressing does not make it smaller (a batch of a
 * record or two), so each batch is `codec` or none, and at least 90% of the records sit in batches
 * of `codec`.
 */
function expectStored(dataDir: string, topic: string, codec: Codec, counts: number[]): void {
  const note = codec === 'lz4' ? ' (librdkafka sends lz4 uncompressed unless the broker advertises FindCoordinator v0)' : '';
  counts.forEach((count, p) => {
    let next = 0n;
    let compressed = 0n;
    for (const batch of storedBatches(dataDir, topic, p)) {
      batch.validate();
      expect(batch.baseOffset, `${topic}-${p}`).to.equal(next);
      expect([CompressionCodec.NONE, CODEC_ID[codec]], `${topic}-${p} batch at ${batch.baseOffset}: codec`).to.include(batch.compression);
      if (batch.compression === CODEC_ID[codec]) compressed += batch.nextOffset - batch.baseOffset;
      next = batch.nextOffset;
    }
    expect(next, `${topic}-${p} stored records`).to.equal(BigInt(count));
    expect(Number(compressed) / count, `${topic}-${p}: share of records stored in ${codec} batches${note}`).to.be.at.least(0.9);
  });
}

/** Reads the whole topic with kcat and groups the records by partition. */
async function consumeAll(bootstrap: string, topic: string): Promise<KcatRecord[][]> {
  const res = await runKcat(['-C', '-b', bootstrap, '-t', topic, '-e', '-o', 'beginning', '-q', '-f', KCAT_FORMAT]);
  expect(res.code, `kcat -C exit code; stderr:\n${res.stderr}`).to.equal(0);
  const parts: KcatRecord[][] = Array.from({ length: PARTITIONS }, () => []);
  for (const r of parseKcatOutput(res.stdout)) {
    expect(r.partition).to.be.within(0, PARTITIONS - 1);
    parts[r.partition]?.push(r);
  }
  return parts;
}

/** Checks one partition's records against the lines sent to it, in order. */
function expectPartition(
  got: KcatRecord[],
  want: Line[],
  p: number,
  headers: (l: Line) => [string, string][],
  window: [number, number],
): void {
  expect(got.length, `records in partition ${p}`).to.equal(want.length);
  let prevTs = 0;
  got.forEach((r, i) => {
    const l = want[i] as Line;
    const where = `partition ${p} offset ${i} (record ${l.n})`;
    expect(r.offset, where).to.equal(i);
    expect(r.key?.toString(), where).to.equal(l.key);
    expect(r.value?.toString(), where).to.equal(l.value);
    expect(r.headers, where).to.deep.equal(headers(l));
    // CreateTime stamped by librdkafka when kcat produced the record
    expect(r.timestamp, where).to.be.within(window[0], window[1]);
    expect(r.timestamp, where).to.be.at.least(prevTs);
    prevTs = r.timestamp;
  });
}

describe('kcat 1.7.1 (librdkafka 2.0.2): produce and read back', function () {
  this.timeout(120_000);
  let b: TestBroker;
  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker({ 'num.partitions': PARTITIONS }), (t) => t.stop());
  });
  after(() => cleanup.run());

  for (const codec of CODECS) {
    it(`-P -K -H -p, ${codec}: 10,000 keyed records with headers into 3 partitions, read back with -C -f exactly`, async () => {
      const topic = `kcat-${codec}`;
      const want: Line[][] = Array.from({ length: PARTITIONS }, () => []);
      for (let n = 0; n < COUNT; n++) want[n % PARTITIONS]?.push(line(topic, n));
      const headers = (p: number): [string, string][] => [
        ['codec', codec],
        ['partition', String(p)],
        ['dup', 'first'],
        ['dup', 'second'],
      ];
      const start = Date.now();
      const produced = await Promise.all(
        want.map((lines, p) =>
          runKcat(
            [
              '-P',
              '-b',
              b.bootstrap,
              '-t',
              topic,
              '-p',
              String(p),
              '-K',
              '\\t',
              '-q',
              ...headers(p).flatMap(([k, v]) => ['-H', `${k}=${v}`]),
              '-X',
              `compression.codec=${codec}`,
            ],
            lines.map((l) => `${l.key}\t${l.value}\n`).join(''),
          ),
        ),
      );
      const end = Date.now();
      produced.forEach((r, p) => expect(r.code, `kcat -P -p ${p} exit code; stderr:\n${r.stderr}`).to.equal(0));

      const parts = await consumeAll(b.bootstrap, topic);
      want.forEach((lines, p) => expectPartition(parts[p] ?? [], lines, p, () => headers(p), [start, end]));
      expect(parts.flat().length).to.equal(COUNT);
      expectStored(
        b.dataDir,
        topic,
        codec,
        want.map((w) => w.length),
      );
    });
  }

  it("-P -K without -p, snappy: kcat's partitioner (CRC32 of the key) spreads 10,000 records, read back exactly", async () => {
    const topic = 'kcat-hashed';
    const lines = Array.from({ length: COUNT }, (_, n) => line(topic, n));
    const start = Date.now();
    const res = await runKcat(
      ['-P', '-b', b.bootstrap, '-t', topic, '-K', '\\t', '-q', '-H', 'via=partitioner', '-X', 'compression.codec=snappy'],
      lines.map((l) => `${l.key}\t${l.value}\n`).join(''),
    );
    const end = Date.now();
    expect(res.code, `kcat -P exit code; stderr:\n${res.stderr}`).to.equal(0);
    // librdkafka's default partitioner (consistent_random): crc32(key) % partition count
    const want: Line[][] = Array.from({ length: PARTITIONS }, () => []);
    for (const l of lines) want[(crc32(l.key) >>> 0) % PARTITIONS]?.push(l);
    for (const w of want) expect(w.length).to.be.greaterThan(COUNT / 5);
    const parts = await consumeAll(b.bootstrap, topic);
    want.forEach((w, p) => expectPartition(parts[p] ?? [], w, p, () => [['via', 'partitioner']], [start, end]));
    expectStored(
      b.dataDir,
      topic,
      'snappy',
      want.map((w) => w.length),
    );
  });
});
