import { expect } from 'chai';
import fc from 'fast-check';
import zlib from 'node:zlib';
import { GregorErrorCode, ProtocolError } from '../../../protocol/codec/errors.js';
import {
  CompressionCodec,
  LegacyMessage,
  MessageField,
  NO_TIMESTAMP_TYPE,
  TimestampType,
  buildMessageSet,
  buildRecordBatch,
  decodeRecords,
  encodeMessage,
  logEntries,
  scanMessageSet,
} from '../../../protocol/records/index.js';
import type { LegacyRecordInput, Record } from '../../../protocol/records/index.js';

const CODECS = [CompressionCodec.NONE, CompressionCodec.GZIP, CompressionCodec.SNAPPY, CompressionCodec.LZ4];
const LIMIT = { maxOutput: 16 << 20 };

function expectProtocolError(fn: () => unknown, code?: string): void {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ProtocolError);
    if (code !== undefined) expect((err as ProtocolError).code).to.equal(code);
    return;
  }
  expect.fail('expected a ProtocolError');
}

const RECORDS: LegacyRecordInput[] = [
  { key: Buffer.from('k0'), value: Buffer.from('v0'), timestamp: 1000n },
  { key: null, value: Buffer.from('v1'), timestamp: 1003n },
  { key: Buffer.from('k2'), value: null, timestamp: 1001n },
  { key: Buffer.alloc(0), value: Buffer.alloc(2000, 3), timestamp: 1002n },
];

function plain(r: Record): object {
  return { offset: r.offset, timestamp: r.timestamp, key: r.key?.toString('hex') ?? null, value: r.value?.toString('hex') ?? null };
}

function expected(magic: 0 | 1, base: bigint): object[] {
  return RECORDS.map((r, i) => ({
    offset: base + BigInt(i),
    timestamp: magic === 0 ? -1n : (r.timestamp ?? -1n),
    key: r.key?.toString('hex') ?? null,
    value: r.value?.toString('hex') ?? null,
  }));
}

describe('records/message-set (magic 0 and 1)', () => {
  for (const magic of [0, 1] as const) {
    for (const codec of CODECS) {
      it(`builds and decodes magic ${magic} with codec ${codec}`, () => {
        const buf = buildMessageSet(RECORDS, { magic, compression: codec, baseOffset: 500n });
        const { messages, partial } = scanMessageSet(buf);
        expect(partial).to.equal(null);
        expect(messages.length).to.equal(codec === CompressionCodec.NONE ? 4 : 1);
        for (const m of messages) {
          m.validate();
          expect(m.magic).to.equal(magic);
          expect(m.compression).to.equal(codec);
        }
        const records = messages.flatMap((m) => m.records(LIMIT));
        expect(records.map(plain)).to.deep.equal(expected(magic, 500n));
        if (codec !== CompressionCodec.NONE) {
          const wrapper = messages[0] as LegacyMessage;
          expect(wrapper.offset).to.equal(503n);
          expect(wrapper.key).to.equal(null);
          const inner = wrapper.innerMessages(LIMIT).map((m) => m.offset);
          expect(inner).to.deep.equal(magic === 1 ? [0n, 1n, 2n, 3n] : [500n, 501n, 502n, 503n]);
          if (magic === 1) expect(wrapper.timestamp).to.equal(1003n);
        }
        expect(decodeRecords(buf, LIMIT).records.map(plain)).to.deep.equal(expected(magic, 500n));
      });
    }
  }

  it('refuses zstd for the old formats', () => {
    expectProtocolError(
      () => buildMessageSet(RECORDS, { magic: 1, compression: CompressionCodec.ZSTD }),
      GregorErrorCode.UNSUPPORTED_COMPRESSION,
    );
  });

  it('exposes the timestamp type per magic', () => {
    const [m0] = scanMessageSet(buildMessageSet(RECORDS, { magic: 0 })).messages;
    expect(m0?.timestampType).to.equal(NO_TIMESTAMP_TYPE);
    expect(m0?.timestamp).to.equal(-1n);
    const [m1] = scanMessageSet(
      buildMessageSet(RECORDS, { magic: 1, timestampType: TimestampType.LOG_APPEND_TIME, logAppendTime: 77n }),
    ).messages;
    expect(m1?.timestampType).to.equal(TimestampType.LOG_APPEND_TIME);
    expect(m1?.timestamp).to.equal(77n);
    m1?.validate();
  });

  it('rewrites a magic 1 wrapper offset and LogAppendTime in place (relative inner offsets, KIP-31)', () => {
    const buf = buildMessageSet(RECORDS, { magic: 1, compression: CompressionCodec.GZIP });
    const wrapper = LegacyMessage.at(buf);
    const crc = wrapper.crc;
    wrapper.setOffset(10_003n);
    expect(wrapper.crc).to.equal(crc);
    wrapper.setLogAppendTime(5555n);
    expect(wrapper.crc).to.not.equal(crc);
    wrapper.validate();
    const records = wrapper.records(LIMIT);
    expect(records.map((r) => r.offset)).to.deep.equal([10_000n, 10_001n, 10_002n, 10_003n]);
    expect(records.map((r) => r.timestamp)).to.deep.equal([5555n, 5555n, 5555n, 5555n]);
    expectProtocolError(
      () => LegacyMessage.at(buildMessageSet(RECORDS, { magic: 0 })).setLogAppendTime(1n),
      GregorErrorCode.UNSUPPORTED_MAGIC,
    );
  });

  it('detects flipped bytes with CRC-32 (outer and inner)', () => {
    const buf = buildMessageSet(RECORDS, { magic: 1 });
    for (let i = MessageField.MAGIC + 1; i < LegacyMessage.at(buf).end; i++) {
      const bad = Buffer.from(buf);
      bad[i] = (bad[i] ?? 0) ^ 0x01;
      let m: LegacyMessage;
      try {
        m = LegacyMessage.at(bad);
      } catch (err) {
        expect(err).to.be.instanceOf(ProtocolError);
        continue;
      }
      expect(m.isValid()).to.equal(false);
      expectProtocolError(() => m.validate(), GregorErrorCode.CORRUPT_RECORD);
    }
    // a wrapper whose inner message has a bad CRC
    const inner = encodeMessage(0n, 1, 0, 1n, null, Buffer.from('x'));
    inner[inner.length - 1] = (inner[inner.length - 1] ?? 0) ^ 0xff;
    const wrapper = encodeMessage(0n, 1, CompressionCodec.GZIP, 1n, null, buildGzip(inner));
    expectProtocolError(() => LegacyMessage.at(wrapper).records(LIMIT), GregorErrorCode.CORRUPT_RECORD);
    expect(LegacyMessage.at(wrapper).records({ ...LIMIT, checkCrcs: false }).length).to.equal(1);
  });

  it('refuses nested compression and magic mismatches inside a wrapper', () => {
    const nested = buildMessageSet(RECORDS, { magic: 1, compression: CompressionCodec.GZIP });
    const outer = encodeMessage(0n, 1, CompressionCodec.GZIP, 0n, null, buildGzip(nested));
    expectProtocolError(() => LegacyMessage.at(outer).records(LIMIT), GregorErrorCode.INVALID_RECORD);
    const v0inner = buildMessageSet(RECORDS, { magic: 0 });
    const mixed = encodeMessage(0n, 1, CompressionCodec.GZIP, 0n, null, buildGzip(v0inner));
    expectProtocolError(() => LegacyMessage.at(mixed).records(LIMIT), GregorErrorCode.INVALID_RECORD);
    const nullValue = encodeMessage(0n, 1, CompressionCodec.GZIP, 0n, null, null);
    expectProtocolError(() => LegacyMessage.at(nullValue).records(LIMIT), GregorErrorCode.INVALID_RECORD);
  });

  it('reports a partial trailing message and refuses bad sizes', () => {
    const buf = buildMessageSet(RECORDS, { magic: 1 });
    const first = LegacyMessage.at(buf).sizeInBytes;
    const second = LegacyMessage.at(buf, first).sizeInBytes;
    for (let cut = first + 1; cut < first + second; cut++) {
      const { messages, partial } = scanMessageSet(buf.subarray(0, cut));
      expect(messages.length).to.equal(1);
      expect(partial?.start).to.equal(first);
    }
    const small = Buffer.from(buf);
    small.writeInt32BE(5, MessageField.MESSAGE_SIZE);
    expectProtocolError(() => scanMessageSet(small), GregorErrorCode.CORRUPT_RECORD);
    const keyTooLong = Buffer.from(buf);
    keyTooLong.writeInt32BE(1000, MessageField.TIMESTAMP + 8);
    expectProtocolError(() => scanMessageSet(keyTooLong), GregorErrorCode.CORRUPT_RECORD);
    const magic = Buffer.from(buf);
    magic[MessageField.MAGIC] = 2;
    expectProtocolError(() => scanMessageSet(magic), GregorErrorCode.UNSUPPORTED_MAGIC);
  });

  it('walks a log holding message sets followed by v2 batches', () => {
    const old = buildMessageSet(RECORDS, { magic: 1, compression: CompressionCodec.SNAPPY, baseOffset: 0n });
    const v2 = buildRecordBatch(
      RECORDS.map((r) => ({ key: r.key, value: r.value, timestamp: r.timestamp ?? 0n })),
      { baseOffset: 4n },
    );
    const kinds = [...logEntries(Buffer.concat([old, v2, v2.subarray(0, 20)]))].map((e) => e.kind);
    expect(kinds).to.deep.equal(['message', 'batch', 'partial']);
    const { records, partial } = decodeRecords(Buffer.concat([old, v2]), LIMIT);
    expect(partial).to.equal(null);
    expect(records.map((r) => r.offset)).to.deep.equal([0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n]);
  });

  it('never throws anything but ProtocolError on garbage (property)', () => {
    const valid = [buildMessageSet(RECORDS, { magic: 1, compression: CompressionCodec.LZ4 }), buildMessageSet(RECORDS, { magic: 0 })];
    const decodeAll = (bytes: Buffer): void => {
      try {
        const { messages } = scanMessageSet(bytes);
        for (const m of messages) {
          m.isValid();
          m.records({ maxOutput: 1 << 20 });
        }
      } catch (err) {
        if (!(err instanceof ProtocolError)) throw err;
      }
    };
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => decodeAll(Buffer.from(bytes))),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.nat(1), fc.array(fc.tuple(fc.nat(3000), fc.nat(255)), { minLength: 1, maxLength: 4 }), (which, edits) => {
        const buf = Buffer.from(valid[which] ?? Buffer.alloc(0));
        for (const [pos, v] of edits) if (pos < buf.length) buf[pos] = v;
        decodeAll(buf);
      }),
      { numRuns: 1000 },
    );
  });
});

function buildGzip(data: Buffer): Buffer {
  return zlib.gzipSync(data);
}
