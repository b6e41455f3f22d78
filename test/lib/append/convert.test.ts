/**
 * lib/log/convert.ts: when an append needs the pipeline, recompression to every codec, format
 * conversion both ways, deep validation, commit-time rebasing, and down-conversion for old
 * fetchers (checked by kafka-python's own record readers with CRCs).
 */
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import {
  CompressionCodec,
  ControlRecordType,
  RecordBatch,
  TimestampType,
  buildEndTxnBatch,
  buildMessageSet,
  buildRecordBatch,
  decodeRecords,
  logEntries,
} from '../../../protocol/records/index.js';
import type { RecordInput } from '../../../protocol/records/index.js';
import { conversionTarget, convertForAppend, formatMagic, planAppend, rebaseConverted } from '../../../lib/log/convert.js';
import { downConvert } from '../../../lib/log/down-convert.js';
import { LogError } from '../../../lib/log/errors.js';
import { defaultLogConfig } from '../../../lib/log/log-config.js';
import type { LogConfig } from '../../../lib/log/log-config.js';
import { kafkaPythonUnavailable, pyRead } from '../../helpers/records-kafka-python.js';

const T0 = 1_700_000_000_000n;
const CODECS = [CompressionCodec.NONE, CompressionCodec.GZIP, CompressionCodec.SNAPPY, CompressionCodec.LZ4, CompressionCodec.ZSTD];
const NAME: Record<number, string> = { 0: 'uncompressed', 1: 'gzip', 2: 'snappy', 3: 'lz4', 4: 'zstd' };
const MAX = 1 << 26;

/** Skips the running test and puts the reason in its title, so the report says why. */
function skipBecause(ctx: Mocha.Context, why: string): never {
  if (ctx.test !== undefined) ctx.test.title += ` [skipped: ${why}]`;
  ctx.skip();
}

function recs(n: number, headers = false, tag = 'r'): RecordInput[] {
  return Array.from({ length: n }, (_, i) => ({
    key: i % 5 === 0 ? null : Buffer.from(`${tag}-key-${i}`),
    value: Buffer.from(`${tag}-value-${i}-${'x'.repeat(i % 40)}`),
    timestamp: T0 + BigInt(i * 3),
    ...(headers ? { headers: [{ key: 'h', value: Buffer.from(String(i)) }] } : {}),
  }));
}

function cfg(over: Partial<LogConfig> = {}): LogConfig {
  return defaultLogConfig({ messageFormatVersion: '3.0-IV1', ...over });
}

function decoded(buf: Buffer) {
  return decodeRecords(buf, { maxOutput: MAX }).records.map((r) => ({
    offset: r.offset,
    timestamp: r.timestamp,
    key: r.key?.toString() ?? null,
    value: r.value?.toString() ?? null,
    headers: r.headers.map((h) => [h.key, h.value?.toString() ?? null]),
  }));
}

function expected(input: RecordInput[], base: bigint, opts: { headers?: boolean; timestamps?: boolean } = {}) {
  return input.map((r, i) => ({
    offset: base + BigInt(i),
    timestamp: opts.timestamps === false ? -1n : r.timestamp,
    key: r.key?.toString() ?? null,
    value: r.value?.toString() ?? null,
    headers: opts.headers === false ? [] : (r.headers ?? []).map((h) => [h.key, h.value?.toString() ?? null]),
  }));
}

function expectError(fn: () => unknown, code: number): void {
  try {
    fn();
  } catch (e) {
    expect(e).to.be.instanceOf(LogError);
    expect((e as LogError).errorCode, (e as Error).message).to.equal(code);
    return;
  }
  expect.fail(`expected error ${code}`);
}

describe('lib/log/convert: planning, recompression, format conversion, down-conversion', () => {
  it('formatMagic maps message.format.version to the stored magic', () => {
    expect(formatMagic('0.8.2')).to.equal(0);
    expect(formatMagic('0.9.0')).to.equal(0);
    expect(formatMagic('0.10.0')).to.equal(1);
    expect(formatMagic('0.10.2-IV0')).to.equal(1);
    expect(formatMagic('0.11.0')).to.equal(2);
    expect(formatMagic('2.8')).to.equal(2);
    expect(formatMagic('3.0-IV1')).to.equal(2);
    expect(formatMagic(undefined)).to.equal(null);
  });

  it('conversionTarget: one target per config object, worked out again when the config is edited in place', () => {
    const c = cfg({ compressionType: 'GZIP', messageFormatVersion: '0.10.2' });
    const first = conversionTarget(c);
    expect(first).to.deep.equal({ magic: 1, codec: CompressionCodec.GZIP, deep: false });
    expect(conversionTarget(c)).to.equal(first, 'asked again: the kept target');
    const gz = buildRecordBatch(recs(3), { compression: CompressionCodec.GZIP });
    expect(planAppend(gz, c)).to.deep.equal({ count: 3 }, 'magic 2 into a 0.10 topic converts');
    c.messageFormatVersion = '3.0-IV1';
    expect(planAppend(gz, c)).to.equal(null, 'after the edit: stored as it came');
    c.compressionType = 'lz4';
    expect(conversionTarget(c)).to.deep.equal({ magic: 2, codec: CompressionCodec.LZ4, deep: false });
    c.validationDeep = true;
    expect(conversionTarget(c).deep).to.equal(true);
    expect(conversionTarget(cfg())).to.deep.equal({ magic: 2, codec: 'producer', deep: false }, 'another config object');
  });

  it('planAppend: the fast path for matching codec and magic, the pipeline otherwise', () => {
    const gz = buildRecordBatch(recs(7), { compression: CompressionCodec.GZIP });
    expect(planAppend(gz, cfg())).to.equal(null);
    expect(planAppend(gz, cfg({ compressionType: 'gzip' }))).to.equal(null);
    expect(planAppend(gz, cfg({ compressionType: 'lz4' }))).to.deep.equal({ count: 7 });
    expect(planAppend(gz, cfg({ compressionType: 'uncompressed' }))).to.deep.equal({ count: 7 });
    expect(planAppend(gz, cfg({ validationDeep: true }))).to.deep.equal({ count: 7 });
    expect(planAppend(gz, cfg({ messageFormatVersion: '0.10.2' }))).to.deep.equal({ count: 7 });
    const m1 = buildMessageSet(recs(4), { magic: 1, compression: CompressionCodec.SNAPPY });
    // a compressed magic 0/1 wrapper is decompressed to be validated and counted: pipeline work,
    // whether or not it is then converted (the wrapper offset gives the count)
    expect(planAppend(m1, cfg({ messageFormatVersion: '0.10.0' }))).to.deep.equal({ count: 4 });
    expect(planAppend(m1, cfg())).to.deep.equal({ count: 4 }); // up-conversion
    expect(planAppend(m1, defaultLogConfig())).to.deep.equal({ count: 4 }); // no format policy
    const m1plain = buildMessageSet(recs(4), { magic: 1 });
    expect(planAppend(m1plain, cfg({ messageFormatVersion: '0.10.0' }))).to.equal(null);
    // a broken payload goes to the fast path, whose validation reports it
    expect(planAppend(gz.subarray(0, 30), cfg({ compressionType: 'lz4' }))).to.equal(null);
  });

  for (const from of CODECS) {
    for (const to of CODECS) {
      if (from === to) continue;
      it(`recompresses a v2 batch ${NAME[from]} → ${NAME[to]} keeping records, headers, producer fields`, () => {
        const input = recs(50, true, `${from}${to}`);
        const batch = buildRecordBatch(input, { compression: from, producerId: 77n, producerEpoch: 2, baseSequence: 10 });
        const c = convertForAppend(batch, cfg({ compressionType: NAME[to] as string }), 1000n, Number(T0));
        expect(c.converted).to.equal(true);
        expect(c.recordCount).to.equal(50);
        expect(c.entries).to.have.length(1);
        const b = RecordBatch.at(c.buf);
        b.validate();
        expect(b.compression).to.equal(to);
        expect([b.baseOffset, b.lastOffset, b.producerId, b.producerEpoch, b.baseSequence]).to.deep.equal([1000n, 1049n, 77n, 2, 10]);
        expect(decoded(c.buf)).to.deep.equal(expected(input, 1000n));
      });
    }
  }

  it('compression.gzip.level and compression.zstd.level are used', () => {
    const input = recs(300);
    const batch = buildRecordBatch(input);
    const size = (type: string, levels: { gzip: number; lz4: number; zstd: number }) =>
      convertForAppend(Buffer.from(batch), cfg({ compressionType: type, compressionLevels: levels }), 0n, Number(T0)).buf.length;
    expect(size('gzip', { gzip: 1, lz4: 9, zstd: 3 })).to.not.equal(size('gzip', { gzip: 9, lz4: 9, zstd: 3 }));
    expect(size('zstd', { gzip: 1, lz4: 9, zstd: 1 })).to.not.equal(size('zstd', { gzip: 1, lz4: 9, zstd: 19 }));
  });

  it('LogAppendTime topics stamp the converted batch', () => {
    const c = convertForAppend(
      buildRecordBatch(recs(3)),
      cfg({ compressionType: 'gzip', messageTimestampType: 'LogAppendTime' }),
      0n,
      1234,
    );
    const b = RecordBatch.at(c.buf);
    expect(b.timestampType).to.equal(TimestampType.LOG_APPEND_TIME);
    expect(decoded(c.buf).map((r) => r.timestamp)).to.deep.equal([1234n, 1234n, 1234n]);
  });

  for (const magic of [0, 1] as const) {
    for (const codec of [CompressionCodec.NONE, CompressionCodec.GZIP, CompressionCodec.LZ4]) {
      it(`up-converts magic ${magic} ${NAME[codec]} into one v2 batch of a format-2 topic`, () => {
        const input = recs(20, false, `m${magic}`);
        const set = buildMessageSet(input, { magic, compression: codec });
        const c = convertForAppend(set, cfg(), 500n, Number(T0));
        expect(c.entries).to.have.length(1);
        const b = RecordBatch.at(c.buf);
        expect(b.compression).to.equal(codec);
        expect(decoded(c.buf)).to.deep.equal(expected(input, 500n, { timestamps: magic === 1 }));
      });
    }
  }

  for (const codec of [CompressionCodec.NONE, CompressionCodec.GZIP, CompressionCodec.SNAPPY]) {
    it(`stores a v2 ${NAME[codec]} batch as magic 1 in a topic at message.format.version=0.10.2`, () => {
      const input = recs(12, false, 'dn');
      const c = convertForAppend(buildRecordBatch(input, { compression: codec }), cfg({ messageFormatVersion: '0.10.2' }), 40n, Number(T0));
      const entries = [...logEntries(c.buf)];
      expect(entries.every((e) => e.kind === 'message' && e.message.magic === 1)).to.equal(true);
      expect(entries).to.have.length(codec === CompressionCodec.NONE ? 12 : 1);
      expect(decoded(c.buf)).to.deep.equal(expected(input, 40n));
      expect(c.entries[c.entries.length - 1]?.lastOffset).to.equal(51n);
    });
  }

  it('format 1 topics refuse headers, idempotent batches and zstd with Kafka error codes', () => {
    const c = cfg({ messageFormatVersion: '0.10.0' });
    expectError(() => convertForAppend(buildRecordBatch(recs(2, true)), c, 0n, Number(T0)), ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT);
    expectError(
      () => convertForAppend(buildRecordBatch(recs(2), { producerId: 5n, producerEpoch: 0, baseSequence: 0 }), c, 0n, Number(T0)),
      ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
    );
    expectError(
      () => convertForAppend(buildRecordBatch(recs(2), { compression: CompressionCodec.ZSTD }), c, 0n, Number(T0)),
      ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    );
  });

  it('validation.deep finds what the CRC cannot: a record count that lies, out-of-range record timestamps', () => {
    // a batch whose header claims 3 records (CRC recomputed) but holds 2
    const two = buildRecordBatch(recs(2), { lastOffsetDelta: 2 });
    two.writeInt32BE(3, 57);
    RecordBatch.at(two).setMaxTimestamp(TimestampType.LOG_APPEND_TIME, 1n);
    RecordBatch.at(two).setMaxTimestamp(TimestampType.CREATE_TIME, T0 + 3n);
    expect(planAppend(two, cfg())).to.equal(null); // header-level: looks fine
    expectError(() => convertForAppend(Buffer.from(two), cfg({ validationDeep: true }), 0n, Number(T0)), ErrorCode.INVALID_RECORD);
    // the middle record's timestamp is far outside the allowed window; base and max are not
    const input = recs(3);
    (input[1] as RecordInput).timestamp = T0 - 10_000_000n;
    const b = buildRecordBatch(input, { baseTimestamp: T0 });
    RecordBatch.at(b).setMaxTimestamp(TimestampType.CREATE_TIME, T0 + 6n);
    const strict = { timestampBeforeMaxMs: 1_000_000, timestampAfterMaxMs: 1_000_000 };
    expectError(
      () => convertForAppend(Buffer.from(b), cfg({ ...strict, validationDeep: true }), 0n, Number(T0)),
      ErrorCode.INVALID_TIMESTAMP,
    );
    expectError(
      () => convertForAppend(Buffer.from(b), cfg({ ...strict, compressionType: 'gzip' }), 0n, Number(T0)),
      ErrorCode.INVALID_TIMESTAMP,
    );
    // deep alone stores the bytes as sent
    const ok = buildRecordBatch(recs(4), { compression: CompressionCodec.SNAPPY });
    const c = convertForAppend(Buffer.from(ok), cfg({ validationDeep: true }), 9n, Number(T0));
    expect(c.converted).to.equal(false);
    expect(c.buf.subarray(17).equals(ok.subarray(17))).to.equal(true);
    expect(RecordBatch.at(c.buf).baseOffset).to.equal(9n);
    // a compressed magic-1 wrapper into a format-1 topic: validated in the pipeline, stored as sent
    // with the wrapper's offset set to the last absolute offset (outside its CRC)
    const w = buildMessageSet(recs(4), { magic: 1, compression: CompressionCodec.SNAPPY });
    const cw = convertForAppend(Buffer.from(w), cfg({ messageFormatVersion: '0.10.0' }), 9n, Number(T0));
    expect(cw.converted).to.equal(false);
    expect(cw.recordCount).to.equal(4);
    expect(cw.buf.subarray(8).equals(w.subarray(8))).to.equal(true);
    expect(cw.buf.readBigInt64BE(0)).to.equal(12n);
  });

  it('corrupt compressed data fails with CORRUPT_MESSAGE when it must be recompressed', () => {
    const b = buildRecordBatch(recs(30), { compression: CompressionCodec.GZIP });
    b.fill(0x55, 80, 120);
    // fix the CRC so only decompression can tell
    b.writeUInt32BE(RecordBatch.at(b).computeCrc(), 17);
    let err: unknown;
    try {
      convertForAppend(b, cfg({ compressionType: 'lz4' }), 0n, Number(T0));
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(LogError);
    expect([ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD]).to.include((err as LogError).errorCode);
  });

  it('rebaseConverted moves offsets at commit (v2 and magic 1 in place, magic-0 wrappers rebuilt) and sets the leader epoch', () => {
    const input = recs(6);
    for (const [fmt, codec] of [
      ['3.0', 'gzip'],
      ['0.10.0', 'gzip'],
      ['0.10.0', 'uncompressed'],
      ['0.9.0', 'gzip'],
      ['0.9.0', 'uncompressed'],
    ] as const) {
      const c = convertForAppend(buildRecordBatch(input), cfg({ messageFormatVersion: fmt, compressionType: codec }), 100n, Number(T0));
      const entries = rebaseConverted(c, 90n, 4, cfg());
      expect(entries[0]?.firstOffset, `${fmt} ${codec}`).to.equal(90n);
      expect(entries[entries.length - 1]?.lastOffset).to.equal(95n);
      const stored = Buffer.concat(entries.map((e) => e.buf));
      expect(
        decoded(stored).map((r) => r.offset),
        `${fmt} ${codec}`,
      ).to.deep.equal([90n, 91n, 92n, 93n, 94n, 95n]);
      if (fmt === '3.0') expect(RecordBatch.at(stored).partitionLeaderEpoch).to.equal(4);
    }
  });

  describe('downConvert (Fetch v0-3)', () => {
    const input = recs(10, true, 'dc');
    const stored = (codec: number, base: bigint, over: Partial<Parameters<typeof buildRecordBatch>[1]> = {}) =>
      buildRecordBatch(input, { compression: codec, baseOffset: base, ...over });

    it('v2 batches become magic 1 / magic 0 with offsets and timestamps kept, headers and control batches dropped', () => {
      const ctl = buildEndTxnBatch({
        type: ControlRecordType.COMMIT,
        baseOffset: 20n,
        producerId: 3n,
        producerEpoch: 0,
        coordinatorEpoch: 0,
        timestamp: T0,
      });
      const data = Buffer.concat([stored(CompressionCodec.NONE, 10n), ctl, stored(CompressionCodec.GZIP, 21n)]);
      for (const magic of [1, 0] as const) {
        const out = downConvert(data, magic, 10n, MAX);
        const entries = [...logEntries(out)];
        expect(entries.every((e) => e.kind === 'message' && e.message.magic === magic)).to.equal(true);
        const want = [
          ...expected(input, 10n, { headers: false, timestamps: magic === 1 }),
          ...expected(input, 21n, { headers: false, timestamps: magic === 1 }),
        ];
        expect(decoded(out)).to.deep.equal(want);
      }
    });

    it('trims records below the fetch offset in uncompressed batches only (as Kafka)', () => {
      const plain = downConvert(stored(CompressionCodec.NONE, 100n), 1, 104n, MAX);
      expect(decoded(plain).map((r) => r.offset)).to.deep.equal([104n, 105n, 106n, 107n, 108n, 109n]);
      const packed = downConvert(stored(CompressionCodec.SNAPPY, 100n), 1, 104n, MAX);
      expect(decoded(packed).map((r) => r.offset)[0]).to.equal(100n);
    });

    it('keeps LogAppendTime and refuses zstd', () => {
      const lat = stored(CompressionCodec.LZ4, 0n, { timestampType: TimestampType.LOG_APPEND_TIME, logAppendTime: T0 + 999n });
      expect(decoded(downConvert(lat, 1, 0n, MAX)).every((r) => r.timestamp === T0 + 999n)).to.equal(true);
      expectError(() => downConvert(stored(CompressionCodec.ZSTD, 0n), 1, 0n, MAX), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
    });

    it('magic 1 entries pass unchanged to magic-1 readers and become magic 0 for v0-1 readers', () => {
      const m1 = buildMessageSet(input, { magic: 1, compression: CompressionCodec.GZIP, baseOffset: 5n });
      expect(downConvert(m1, 1, 5n, MAX).equals(m1)).to.equal(true);
      const m0 = downConvert(m1, 0, 5n, MAX);
      expect([...logEntries(m0)].every((e) => e.kind === 'message' && e.message.magic === 0)).to.equal(true);
      expect(decoded(m0)).to.deep.equal(expected(input, 5n, { headers: false, timestamps: false }));
    });

    /** Down-converts a stored batch of each case and checks kafka-python reads it back exactly. */
    function pyReadsDownConverted(cases: { codec: number; magic: 0 | 1 }[]): void {
      const bufs = cases.map(({ codec, magic }) => downConvert(stored(codec, 1000n), magic, 1000n, MAX));
      const read = pyRead(bufs);
      expect(read).to.have.length(cases.length);
      read.forEach((batches, i) => {
        const { codec, magic } = cases[i]!;
        const what = `${NAME[codec]} → magic ${magic}`;
        expect(batches.length, what).to.be.greaterThan(0);
        expect(
          batches.every((b) => b.crcValid && b.magic === magic),
          what,
        ).to.equal(true);
        const got = batches.flatMap((b) =>
          b.records.map((r) => [r.offset, r.timestamp, r.value === null ? null : Buffer.from(r.value, 'hex').toString()]),
        );
        expect(got, what).to.deep.equal(input.map((r, j) => [1000 + j, magic === 0 ? null : Number(r.timestamp), r.value?.toString()]));
      });
    }
    const PY_CASES = [CompressionCodec.NONE, CompressionCodec.GZIP, CompressionCodec.SNAPPY, CompressionCodec.LZ4].flatMap((codec) =>
      ([0, 1] as const).map((magic) => ({ codec, magic })),
    );
    const isMagic0Lz4 = (c: { codec: number; magic: number }): boolean => c.codec === CompressionCodec.LZ4 && c.magic === 0;

    it('kafka-python reads what down-conversion produces (every codec but magic 0 LZ4), CRCs valid, offsets and timestamps intact', function () {
      // kafka-python is the independent reader here; without it (or its snappy/lz4 modules) there is
      // nothing to check against: skip, and say what is missing in the title
      const why = kafkaPythonUnavailable(['snappy', 'lz4']);
      if (why !== null) skipBecause(this, why);
      pyReadsDownConverted(PY_CASES.filter((c) => !isMagic0Lz4(c)));
    });

    it('kafka-python reads magic 0 LZ4 from down-conversion (Kafka 0.8 frame checksum)', function () {
      // kafka-python decodes Kafka 0.8's LZ4 frame (its wrong header checksum) only with xxhash
      const why = kafkaPythonUnavailable(['lz4', 'xxhash']);
      if (why !== null) skipBecause(this, why);
      pyReadsDownConverted(PY_CASES.filter(isMagic0Lz4));
    });
  });
});
