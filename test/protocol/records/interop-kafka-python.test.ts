import { expect } from 'chai';
import {
  CompressionCodec,
  ControlRecordType,
  RecordBatch,
  TimestampType,
  buildEndTxnBatch,
  buildMessageSet,
  buildRecordBatch,
  decodeRecords,
  scanBatches,
  scanMessageSet,
} from '../../../protocol/records/index.js';
import type { Record } from '../../../protocol/records/index.js';
import { kafkaPythonUnavailable, pyBuildDefault, pyBuildLegacy, pyRead } from '../../helpers/records-kafka-python.js';
import type { PyRecord } from '../../helpers/records-kafka-python.js';

const LIMIT = { maxOutput: 1 << 24 };
const NOW = 1_700_000_000_000;
const V2_CODECS = [0, 1, 2, 3, 4] as const;
const LEGACY_CODECS = [0, 1, 2, 3] as const;

const hex = (s: string): string => Buffer.from(s).toString('hex');

const PY_RECORDS: PyRecord[] = [
  {
    key: hex('k1'),
    value: hex('hello'),
    timestamp: NOW,
    headers: [
      ['h1', hex('v')],
      ['h2', null],
    ],
  },
  { key: null, value: hex('no key'), timestamp: NOW + 7 },
  { key: hex('tomb'), value: null, timestamp: NOW - 2, headers: [['ü', '']] },
  { key: '', value: Buffer.alloc(70_000, 0x62).toString('hex'), timestamp: NOW + 1 },
];

function asPy(r: Record, withHeaders: boolean): object {
  return {
    offset: Number(r.offset),
    timestamp: Number(r.timestamp),
    key: r.key === null ? null : r.key.toString('hex'),
    value: r.value === null ? null : r.value.toString('hex'),
    headers: withHeaders ? r.headers.map((h) => [h.key, h.value === null ? null : h.value.toString('hex')]) : [],
  };
}

function expectedPy(magic: number, base = 0): object[] {
  return PY_RECORDS.map((r, i) => ({
    offset: base + i,
    timestamp: magic === 0 ? -1 : r.timestamp,
    key: r.key,
    value: r.value,
    headers: magic === 2 ? (r.headers ?? []) : [],
  }));
}

/**
 * Skips the running test and puts the reason in its title, so the report says why. Used only when
 * kafka-python (the independent implementation these tests compare against) or one of its codec
 * modules is missing: without it there is nothing to compare with.
 */
function skipBecause(ctx: Mocha.Context, why: string): never {
  if (ctx.test !== undefined) ctx.test.title += ` [skipped: ${why}]`;
  ctx.skip();
}

/** kafka-python's magic 0 LZ4 (Kafka 0.8's frame with its wrong header checksum) needs xxhash on both sides. */
const MAGIC0_LZ4 = { magic: 0, codec: CompressionCodec.LZ4 } as const;
const isMagic0Lz4 = (c: { magic: number; codec: number }): boolean => c.magic === MAGIC0_LZ4.magic && c.codec === MAGIC0_LZ4.codec;
const LEGACY_CASES = ([0, 1] as const).flatMap((magic) => LEGACY_CODECS.map((codec) => ({ magic, codec })));

describe('records interop with kafka-python (Debian, /usr/bin/python3)', function () {
  this.timeout(120_000);
  // why kafka-python with the snappy, lz4 and zstandard codecs cannot be used, or null
  const missing = kafkaPythonUnavailable(['snappy', 'lz4', 'zstandard']);
  // why the magic 0 LZ4 cases cannot run (xxhash missing), or null
  const missingXxhash = missing ?? kafkaPythonUnavailable(['xxhash']);

  it('decodes v2 batches built by DefaultRecordBatchBuilder with every codec', function () {
    if (missing !== null) skipBecause(this, missing);
    const bufs = pyBuildDefault(
      V2_CODECS.map((codec) => ({
        codec,
        records: PY_RECORDS,
        transactional: codec === 3,
        producerId: 99,
        producerEpoch: 4,
        baseSequence: 17,
      })),
    );
    expect(bufs).to.have.length(V2_CODECS.length);
    bufs.forEach((buf, i) => {
      const codec = V2_CODECS[i];
      const { batches, partial } = scanBatches(buf);
      expect(partial).to.equal(null);
      expect(batches.length).to.equal(1);
      const batch = batches[0] as RecordBatch;
      batch.validate();
      expect(batch.compression).to.equal(codec);
      expect(batch.isTransactional).to.equal(codec === 3);
      expect(batch.producerId).to.equal(99n);
      expect(batch.producerEpoch).to.equal(4);
      expect(batch.baseSequence).to.equal(17);
      expect(batch.records(LIMIT).map((r) => asPy(r, true))).to.deep.equal(expectedPy(2));
    });
  });

  function decodesPyLegacy(cases: { magic: 0 | 1; codec: number }[]): void {
    const bufs = pyBuildLegacy(cases.map((c) => ({ ...c, records: PY_RECORDS })));
    expect(bufs).to.have.length(cases.length);
    bufs.forEach((buf, i) => {
      const { magic, codec } = cases[i] as { magic: 0 | 1; codec: number };
      const { messages, partial } = scanMessageSet(buf);
      expect(partial).to.equal(null);
      for (const m of messages) {
        m.validate();
        expect(m.magic).to.equal(magic);
        expect(m.compression).to.equal(codec);
        // the producer leaves the wrapper offset to the broker, which sets it to the last inner offset
        if (m.isCompressed) m.setOffset(BigInt(PY_RECORDS.length - 1));
      }
      const records = messages.flatMap((m) => m.records({ ...LIMIT }));
      expect(
        records.map((r) => asPy(r, false)),
        `magic ${magic} codec ${codec}`,
      ).to.deep.equal(expectedPy(magic));
    });
  }

  it('decodes magic 0 and 1 message sets built by LegacyRecordBatchBuilder with every codec (but magic 0 LZ4)', function () {
    if (missing !== null) skipBecause(this, missing);
    decodesPyLegacy(LEGACY_CASES.filter((c) => !isMagic0Lz4(c)));
  });

  it('decodes magic 0 LZ4 message sets built by LegacyRecordBatchBuilder', function () {
    if (missingXxhash !== null) skipBecause(this, missingXxhash);
    decodesPyLegacy([MAGIC0_LZ4]);
  });

  it('kafka-python reads our v2 batches (every codec, control and LogAppendTime) with valid CRCs', function () {
    if (missing !== null) skipBecause(this, missing);
    const input = PY_RECORDS.map((r) => ({
      key: r.key === null ? null : Buffer.from(r.key, 'hex'),
      value: r.value === null ? null : Buffer.from(r.value, 'hex'),
      timestamp: BigInt(r.timestamp),
      headers: (r.headers ?? []).map(([key, v]) => ({ key, value: v === null ? null : Buffer.from(v, 'hex') })),
    }));
    const bufs = V2_CODECS.map((codec) =>
      buildRecordBatch(input, {
        compression: codec,
        baseOffset: 100n,
        isTransactional: codec === 4,
        producerId: 3n,
        producerEpoch: 0,
        baseSequence: 0,
      }),
    );
    const appendTime = RecordBatch.at(buildRecordBatch(input, { compression: CompressionCodec.LZ4, baseOffset: 100n }).subarray());
    appendTime.setLogAppendTime(BigInt(NOW + 1000));
    const control = buildEndTxnBatch({
      type: ControlRecordType.ABORT,
      producerId: 3n,
      producerEpoch: 0,
      coordinatorEpoch: 5,
      timestamp: BigInt(NOW),
      baseOffset: 104n,
    });
    const results = pyRead([...bufs, appendTime.bytes, Buffer.concat([bufs[0] as Buffer, control])]);
    V2_CODECS.forEach((codec, i) => {
      const [batch] = results[i] ?? [];
      expect(batch?.crcValid, `codec ${codec}`).to.equal(true);
      expect(batch?.compression).to.equal(codec);
      expect(batch?.isTransactional).to.equal(codec === 4);
      expect(batch?.records).to.deep.equal(expectedPy(2, 100));
    });
    const [lat] = results[V2_CODECS.length] ?? [];
    expect(lat?.crcValid).to.equal(true);
    expect(lat?.timestampType).to.equal(TimestampType.LOG_APPEND_TIME);
    expect(lat?.records.map((r) => r.timestamp)).to.deep.equal([NOW + 1000, NOW + 1000, NOW + 1000, NOW + 1000]);
    const mixed = results[V2_CODECS.length + 1] ?? [];
    expect(mixed.length).to.equal(2);
    expect(mixed[1]?.crcValid).to.equal(true);
    expect(mixed[1]?.isControl).to.equal(true);
  });

  function pyReadsOurLegacy(cases: { magic: 0 | 1; codec: number }[]): void {
    const input = PY_RECORDS.map((r) => ({
      key: r.key === null ? null : Buffer.from(r.key, 'hex'),
      value: r.value === null ? null : Buffer.from(r.value, 'hex'),
      timestamp: BigInt(r.timestamp),
    }));
    const bufs = cases.map(({ magic, codec }) => buildMessageSet(input, { magic, compression: codec, baseOffset: 50n }));
    const results = pyRead(bufs);
    expect(results).to.have.length(cases.length);
    cases.forEach(({ magic, codec }, i) => {
      const batches = results[i] ?? [];
      expect(batches.length, `magic ${magic} codec ${codec}`).to.be.greaterThan(0);
      expect(
        batches.every((b) => b.crcValid),
        `magic ${magic} codec ${codec}`,
      ).to.equal(true);
      const records = batches.flatMap((b) => b.records).map((r) => ({ ...r, timestamp: r.timestamp ?? -1 }));
      expect(records, `magic ${magic} codec ${codec}`).to.deep.equal(expectedPy(magic, 50));
      // and we agree with ourselves on the same bytes
      expect(decodeRecords(bufs[i] as Buffer, LIMIT).records.map((r) => asPy(r, false))).to.deep.equal(expectedPy(magic, 50));
    });
  }

  it('kafka-python reads our magic 0 and 1 message sets (every codec but magic 0 LZ4) with valid CRCs', function () {
    if (missing !== null) skipBecause(this, missing);
    pyReadsOurLegacy(LEGACY_CASES.filter((c) => !isMagic0Lz4(c)));
  });

  it('kafka-python reads our magic 0 LZ4 message sets with valid CRCs', function () {
    if (missingXxhash !== null) skipBecause(this, missingXxhash);
    pyReadsOurLegacy([MAGIC0_LZ4]);
  });
});
