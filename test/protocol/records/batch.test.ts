import { expect } from 'chai';
import fc from 'fast-check';
import { GregorErrorCode, ProtocolError } from '../../../protocol/codec/errors.js';
import {
  BatchField,
  CompressionCodec,
  ControlRecordType,
  RecordBatch,
  TimestampType,
  buildEndTxnBatch,
  buildRecordBatch,
  decodeRecords,
  logEntries,
  readControlRecordKey,
  readEndTxnMarker,
  scanBatches,
} from '../../../protocol/records/index.js';
import type { Record, RecordInput } from '../../../protocol/records/index.js';

const CODECS = [CompressionCodec.NONE, CompressionCodec.GZIP, CompressionCodec.SNAPPY, CompressionCodec.LZ4, CompressionCodec.ZSTD];
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

const RECORDS: RecordInput[] = [
  { key: Buffer.from('key-1'), value: Buffer.from('value-1'), timestamp: 1_700_000_000_000n },
  { key: null, value: Buffer.from('no key'), timestamp: 1_700_000_000_005n, headers: [{ key: 'h1', value: Buffer.from('x') }] },
  {
    key: Buffer.from('tombstone'),
    value: null,
    timestamp: 1_699_999_999_000n,
    headers: [
      { key: 'null', value: null },
      { key: 'ünïcode', value: Buffer.alloc(0) },
    ],
  },
  { key: Buffer.alloc(0), value: Buffer.alloc(300, 7), timestamp: 1_700_000_000_001n },
];

function plain(r: Record): object {
  return {
    offset: r.offset,
    timestamp: r.timestamp,
    key: r.key === null ? null : r.key.toString('hex'),
    value: r.value === null ? null : r.value.toString('hex'),
    headers: r.headers.map((h) => [h.key, h.value === null ? null : h.value.toString('hex')]),
  };
}

function expected(records: readonly RecordInput[], baseOffset: bigint): object[] {
  return records.map((r, i) =>
    plain({ offset: baseOffset + BigInt(i), timestamp: r.timestamp, key: r.key, value: r.value, headers: [...(r.headers ?? [])] }),
  );
}

describe('records/batch (v2)', () => {
  for (const codec of CODECS) {
    it(`builds and decodes a batch with codec ${codec}`, () => {
      const buf = buildRecordBatch(RECORDS, { compression: codec, baseOffset: 42n, partitionLeaderEpoch: 3 });
      const batch = RecordBatch.at(buf);
      batch.validate();
      expect(batch.sizeInBytes).to.equal(buf.length);
      expect(batch.magic).to.equal(2);
      expect(batch.compression).to.equal(codec);
      expect(batch.baseOffset).to.equal(42n);
      expect(batch.lastOffsetDelta).to.equal(3);
      expect(batch.lastOffset).to.equal(45n);
      expect(batch.recordCount).to.equal(4);
      expect(batch.partitionLeaderEpoch).to.equal(3);
      expect(batch.baseTimestamp).to.equal(1_700_000_000_000n);
      expect(batch.maxTimestamp).to.equal(1_700_000_000_005n);
      expect(batch.producerId).to.equal(-1n);
      expect(batch.producerEpoch).to.equal(-1);
      expect(batch.baseSequence).to.equal(-1);
      expect(batch.timestampType).to.equal(TimestampType.CREATE_TIME);
      expect(batch.isTransactional).to.equal(false);
      expect(batch.isControl).to.equal(false);
      expect(batch.records(LIMIT).map(plain)).to.deep.equal(expected(RECORDS, 42n));
    });
  }

  it('carries producer fields and the transactional flag', () => {
    const buf = buildRecordBatch(RECORDS, {
      compression: CompressionCodec.LZ4,
      isTransactional: true,
      producerId: 9_000_000_000n,
      producerEpoch: 7,
      baseSequence: 2_147_483_646,
    });
    const batch = RecordBatch.at(buf);
    batch.validate();
    expect(batch.isTransactional).to.equal(true);
    expect(batch.producerId).to.equal(9_000_000_000n);
    expect(batch.producerEpoch).to.equal(7);
    expect(batch.baseSequence).to.equal(2_147_483_646);
    expect(batch.lastSequence).to.equal(1); // wraps past int32 max
  });

  it('builds and reads transaction markers (control batches)', () => {
    for (const type of [ControlRecordType.COMMIT, ControlRecordType.ABORT]) {
      const buf = buildEndTxnBatch({ type, producerId: 77n, producerEpoch: 3, coordinatorEpoch: 12, timestamp: 1234n, baseOffset: 100n });
      const batch = RecordBatch.at(buf);
      batch.validate();
      expect(batch.isControl).to.equal(true);
      expect(batch.isTransactional).to.equal(true);
      expect(batch.baseSequence).to.equal(-1);
      const [rec] = batch.records(LIMIT);
      expect(rec?.offset).to.equal(100n);
      expect(readControlRecordKey(rec?.key ?? null)).to.deep.equal({ version: 0, type });
      expect(readEndTxnMarker(rec?.value ?? null)).to.deep.equal({ version: 0, coordinatorEpoch: 12 });
    }
    expectProtocolError(() => readControlRecordKey(Buffer.alloc(3)), GregorErrorCode.INVALID_RECORD);
    expectProtocolError(() => readEndTxnMarker(null), GregorErrorCode.INVALID_RECORD);
  });

  it('detects a flipped byte anywhere in the CRC-covered bytes', () => {
    const buf = buildRecordBatch(RECORDS, { compression: CompressionCodec.GZIP });
    for (let i = BatchField.ATTRIBUTES; i < buf.length; i += 7) {
      const bad = Buffer.from(buf);
      bad[i] = (bad[i] ?? 0) ^ 0x10;
      expect(RecordBatch.at(bad).isValid()).to.equal(false);
      expectProtocolError(() => RecordBatch.at(bad).validate(), GregorErrorCode.CORRUPT_RECORD);
    }
  });

  it('rewrites baseOffset and partitionLeaderEpoch in place without touching the CRC', () => {
    const buf = buildRecordBatch(RECORDS, { compression: CompressionCodec.SNAPPY });
    const batch = RecordBatch.at(buf);
    const crc = batch.crc;
    batch.setBaseOffset(1_000_000_000_000n);
    batch.setPartitionLeaderEpoch(17);
    expect(batch.crc).to.equal(crc);
    batch.validate();
    expect(batch.records(LIMIT).map((r) => r.offset)).to.deep.equal([
      1_000_000_000_000n,
      1_000_000_000_001n,
      1_000_000_000_002n,
      1_000_000_000_003n,
    ]);
    expect(batch.partitionLeaderEpoch).to.equal(17);
  });

  it('sets LogAppendTime in place, recomputing the CRC', () => {
    const buf = buildRecordBatch(RECORDS, { compression: CompressionCodec.ZSTD });
    const batch = RecordBatch.at(buf);
    batch.setLogAppendTime(1_800_000_000_000n);
    batch.validate();
    expect(batch.timestampType).to.equal(TimestampType.LOG_APPEND_TIME);
    expect(batch.maxTimestamp).to.equal(1_800_000_000_000n);
    expect(batch.records(LIMIT).every((r) => r.timestamp === 1_800_000_000_000n)).to.equal(true);
    batch.setMaxTimestamp(TimestampType.CREATE_TIME, 5n);
    batch.validate();
    expect(batch.timestampType).to.equal(TimestampType.CREATE_TIME);
  });

  it('builds LogAppendTime batches directly', () => {
    const batch = RecordBatch.at(buildRecordBatch(RECORDS, { timestampType: TimestampType.LOG_APPEND_TIME, logAppendTime: 99n }));
    batch.validate();
    expect(batch.maxTimestamp).to.equal(99n);
    expect(batch.records(LIMIT).map((r) => r.timestamp)).to.deep.equal([99n, 99n, 99n, 99n]);
  });

  it('keeps explicit offset deltas (compacted batches)', () => {
    const batch = RecordBatch.at(buildRecordBatch(RECORDS.slice(0, 2), { offsetDeltas: [0, 5], baseOffset: 10n }));
    expect(batch.lastOffsetDelta).to.equal(5);
    expect(batch.records(LIMIT).map((r) => r.offset)).to.deep.equal([10n, 15n]);
  });

  it('encodes an empty batch', () => {
    const batch = RecordBatch.at(buildRecordBatch([], { lastOffsetDelta: 4, baseSequence: 3, producerId: 5n, producerEpoch: 0 }));
    batch.validate();
    expect(batch.recordCount).to.equal(0);
    expect(batch.records(LIMIT)).to.deep.equal([]);
  });

  it('scans a sequence of batches and reports a partial trailing batch', () => {
    const a = buildRecordBatch(RECORDS, { baseOffset: 0n, compression: CompressionCodec.LZ4 });
    const b = buildRecordBatch(RECORDS, { baseOffset: 4n });
    const all = Buffer.concat([a, b]);
    for (let cut = a.length + 1; cut < all.length; cut++) {
      const { batches, partial } = scanBatches(all.subarray(0, cut));
      expect(batches.length).to.equal(1);
      expect(partial?.start).to.equal(a.length);
      expect(partial?.available).to.equal(cut - a.length);
      expect(partial?.declaredSize).to.equal(cut - a.length >= 12 ? b.length : null);
    }
    const { batches, partial } = scanBatches(all);
    expect(partial).to.equal(null);
    expect(batches.map((x) => x.baseOffset)).to.deep.equal([0n, 4n]);
    expect(decodeRecords(all.subarray(0, all.length - 1), LIMIT).records.length).to.equal(4);
  });

  it('refuses a batch length below the header size, and a wrong magic', () => {
    const buf = buildRecordBatch(RECORDS);
    const short = Buffer.from(buf);
    short.writeInt32BE(10, BatchField.BATCH_LENGTH);
    expectProtocolError(() => scanBatches(short), GregorErrorCode.CORRUPT_RECORD);
    const magic = Buffer.from(buf);
    magic[BatchField.MAGIC] = 3;
    expectProtocolError(() => scanBatches(magic), GregorErrorCode.UNSUPPORTED_MAGIC);
    expectProtocolError(() => RecordBatch.at(buf.subarray(0, 40)), GregorErrorCode.TRUNCATED);
  });

  it('refuses records that disagree with the header', () => {
    const buf = buildRecordBatch(RECORDS);
    const more = Buffer.from(buf);
    more.writeInt32BE(5, BatchField.RECORD_COUNT);
    expectProtocolError(() => RecordBatch.at(more).records(LIMIT), GregorErrorCode.INVALID_RECORD);
    const fewer = Buffer.from(buf);
    fewer.writeInt32BE(3, BatchField.RECORD_COUNT);
    expectProtocolError(() => RecordBatch.at(fewer).records(LIMIT), GregorErrorCode.INVALID_RECORD);
    const huge = Buffer.from(buf);
    huge.writeInt32BE(0x7fffffff, BatchField.RECORD_COUNT);
    expectProtocolError(() => RecordBatch.at(huge).records(LIMIT), GregorErrorCode.INVALID_RECORD);
  });

  it('honours maxOutput when decompressing records', () => {
    const big = [{ key: null, value: Buffer.alloc(100_000), timestamp: 0n }];
    for (const codec of CODECS.slice(1)) {
      const batch = RecordBatch.at(buildRecordBatch(big, { compression: codec }));
      expectProtocolError(() => batch.records({ maxOutput: 50_000 }), GregorErrorCode.COMPRESSION_FAILED);
      expect(batch.records({ maxOutput: 200_000 }).length).to.equal(1);
    }
  });

  it('never throws anything but ProtocolError on garbage (property)', () => {
    const valid = [buildRecordBatch(RECORDS), buildRecordBatch(RECORDS, { compression: CompressionCodec.LZ4 })];
    const decodeAll = (bytes: Buffer): void => {
      try {
        for (const e of logEntries(bytes)) {
          if (e.kind === 'batch') {
            e.batch.isValid();
            e.batch.records({ maxOutput: 1 << 20 });
          } else if (e.kind === 'message') {
            e.message.records({ maxOutput: 1 << 20, checkCrcs: false });
          }
        }
        scanBatches(bytes).batches.forEach((b) => b.records({ maxOutput: 1 << 20 }));
      } catch (err) {
        if (!(err instanceof ProtocolError)) throw err;
      }
    };
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => decodeAll(Buffer.from(bytes))),
      { numRuns: 500 },
    );
    // mutations of valid batches reach deeper into the record decoder
    fc.assert(
      fc.property(fc.nat(1), fc.array(fc.tuple(fc.nat(2000), fc.nat(255)), { minLength: 1, maxLength: 4 }), (which, edits) => {
        const buf = Buffer.from(valid[which] ?? Buffer.alloc(0));
        for (const [pos, v] of edits) if (pos < buf.length) buf[pos] = v;
        decodeAll(buf);
      }),
      { numRuns: 1000 },
    );
  });
});
