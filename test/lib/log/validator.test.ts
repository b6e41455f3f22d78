import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { BatchField, CompressionCodec, LegacyMessage, buildRecordBatch, compress, encodeMessage } from '../../../protocol/records/index.js';
import { crc32c } from '@node-rs/crc32';
import type { LogConfig } from '../../../lib/log/log-config.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { T0, expectLogError, legacy, openLog, rmDir, tmpDir, v2 } from './helpers.js';
import { Cleanup } from '../../helpers/cleanup.js';

const NOW = Number(T0);
const LIMIT = { maxOutput: 1 << 24 };

function flip(b: Buffer, i: number): void {
  b.writeUInt8((b.readUInt8(i) ^ 0xff) & 0xff, i);
}

function recrc(b: Buffer): Buffer {
  b.writeUInt32BE(crc32c(b.subarray(BatchField.ATTRIBUTES)) >>> 0, BatchField.CRC);
  return b;
}

describe('lib/log append validation', () => {
  let dir: string;
  let log: PartitionLog;
  const opened = new Cleanup();
  /** Opens `log` with these settings, closing the one opened before, if any. */
  const open = async (over: Partial<LogConfig> = {}): Promise<void> => {
    await opened.run();
    log = opened.add(await openLog(dir, over), (l) => l.close().catch(() => undefined));
  };
  beforeEach(async () => {
    dir = tmpDir('val');
    await open();
  });
  afterEach(async () => {
    await opened.run();
    rmDir(dir);
  });

  /** Expects the Kafka error and that nothing reached the log. */
  async function refused(records: Buffer, code: number, over: Partial<LogConfig> = {}): Promise<void> {
    await open(over);
    const before = log.logEndOffset;
    const file = path.join(log.dir, '00000000000000000000.log');
    const size = fs.statSync(file).size;
    expectLogError(() => log.append(records, { leaderEpoch: 0, now: NOW }), code);
    expect(log.logEndOffset).to.equal(before);
    await log.flush();
    expect(fs.statSync(file).size).to.equal(size);
    expect((await log.read(before, 1 << 20, { minOneMessage: true })).records).to.have.length(0);
  }

  it('MESSAGE_TOO_LARGE for an entry over max.message.bytes', async () => {
    const b = v2(10, { size: 200 });
    await refused(b, ErrorCode.MESSAGE_TOO_LARGE, { maxMessageBytes: b.length - 1 });
    await refused(legacy(1, { magic: 1 }), ErrorCode.MESSAGE_TOO_LARGE, { maxMessageBytes: 20 });
  });

  it('RECORD_LIST_TOO_LARGE when the records exceed segment.bytes', async () => {
    const b = v2(10, { size: 200 });
    await refused(Buffer.concat([b, v2(10, { size: 200 })]), ErrorCode.RECORD_LIST_TOO_LARGE, { segmentBytes: b.length + 10 });
  });

  it('CORRUPT_MESSAGE for CRC mismatches (CRC-32C v2, CRC-32 magic 0/1) and bad lengths', async () => {
    const b = v2(3);
    flip(b, b.length - 2);
    await refused(b, ErrorCode.CORRUPT_MESSAGE);
    for (const magic of [0, 1] as const) {
      const m = legacy(2, { magic });
      flip(m, m.length - 1);
      await refused(m, ErrorCode.CORRUPT_MESSAGE);
    }
    const short = v2(3);
    short.writeInt32BE(10, BatchField.BATCH_LENGTH);
    await refused(short, ErrorCode.CORRUPT_MESSAGE);
    await refused(v2(3).subarray(0, 70), ErrorCode.CORRUPT_MESSAGE);
    await refused(Buffer.concat([v2(2), Buffer.alloc(5)]), ErrorCode.CORRUPT_MESSAGE);
    const badMagic = v2(2);
    badMagic.writeInt8(7, BatchField.MAGIC);
    await refused(badMagic, ErrorCode.CORRUPT_MESSAGE);
  });

  it('INVALID_RECORD for count/offset mismatch, empty batches, control batches, missing sequences, mixed magic', async () => {
    await refused(v2(3, { lastOffsetDelta: 5 }), ErrorCode.INVALID_RECORD);
    await refused(buildRecordBatch([]), ErrorCode.INVALID_RECORD);
    await refused(v2(1, { isControl: true }), ErrorCode.INVALID_RECORD);
    await refused(v2(1, { producerId: 7n, producerEpoch: 0, baseSequence: -1 }), ErrorCode.INVALID_RECORD);
    await refused(Buffer.concat([v2(1), legacy(1, { magic: 1 })]), ErrorCode.INVALID_RECORD);
    // the good first batch of a failing request is not written either
    await refused(Buffer.concat([v2(2), v2(1, { isControl: true })]), ErrorCode.INVALID_RECORD);
  });

  it('UNSUPPORTED_COMPRESSION_TYPE for unknown codecs and zstd below magic 2', async () => {
    const b = v2(2);
    b.writeInt16BE(6, BatchField.ATTRIBUTES);
    await refused(recrc(b), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
    const inner = Buffer.concat([encodeMessage(0n, 1, 0, T0, null, Buffer.from('x'))]);
    const zstd = compress(CompressionCodec.ZSTD, inner);
    await refused(encodeMessage(0n, 1, CompressionCodec.ZSTD, T0, null, zstd), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
    await refused(encodeMessage(0n, 1, 5, T0, null, Buffer.from('??')), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE);
  });

  it('INVALID_TIMESTAMP outside message.timestamp.before/after.max.ms (CreateTime only)', async () => {
    const over = { timestampBeforeMaxMs: 1000, timestampAfterMaxMs: 1000 };
    await refused(v2(2, { ts: T0 - 5000n }), ErrorCode.INVALID_TIMESTAMP, over);
    await refused(v2(2, { ts: T0 + 5000n, compression: CompressionCodec.GZIP }), ErrorCode.INVALID_TIMESTAMP, over);
    await refused(legacy(2, { magic: 1, ts: T0 + 5000n }), ErrorCode.INVALID_TIMESTAMP, over);
    await refused(legacy(2, { magic: 1, ts: T0 - 5000n, compression: CompressionCodec.GZIP }), ErrorCode.INVALID_TIMESTAMP, over);
    await open(over);
    expect(log.append(v2(2, { ts: T0 - 500n }), { leaderEpoch: 0, now: NOW }).info.firstOffset).to.equal(0n);
    expect(log.append(legacy(2, { magic: 0 }), { leaderEpoch: 0, now: NOW }).info.firstOffset).to.equal(2n);
    // the bounds follow the clock: the same timestamp, 5 s later by the broker's clock, is refused
    expect(log.append(v2(1, { ts: T0 }), { leaderEpoch: 0, now: NOW }).info.firstOffset).to.equal(4n);
    expectLogError(() => log.append(v2(1, { ts: T0 }), { leaderEpoch: 0, now: NOW + 5000 }), ErrorCode.INVALID_TIMESTAMP);
    await open({ ...over, messageTimestampType: 'LogAppendTime' });
    expect(log.append(v2(2, { ts: T0 - 50000n }), { leaderEpoch: 0, now: NOW }).info.recordCount).to.equal(2);
  });

  it('header-level by default; validation.deep decodes every record', async () => {
    // a header that promises 4 records over 3: consistent CRC, wrong contents
    const lie = (): Buffer => {
      const b = v2(3, { compression: CompressionCodec.GZIP });
      b.writeInt32BE(3, BatchField.LAST_OFFSET_DELTA);
      b.writeInt32BE(4, BatchField.RECORD_COUNT);
      return recrc(b);
    };
    await open();
    expect(log.append(lie(), { leaderEpoch: 0 }).info.recordCount).to.equal(4);
    await refused(lie(), ErrorCode.INVALID_RECORD, { validationDeep: true });
    await open({ validationDeep: true });
    expect(log.append(v2(3, { compression: CompressionCodec.ZSTD }), { leaderEpoch: 0 }).info.recordCount).to.equal(3);
  });

  it('compacted topics refuse records without keys', async () => {
    const nokey = buildRecordBatch([{ key: null, value: Buffer.from('v'), timestamp: T0 }]);
    await refused(nokey, ErrorCode.INVALID_RECORD, { cleanupPolicy: ['compact'] });
    await open({ cleanupPolicy: ['compact'] });
    expect(log.append(v2(2), { leaderEpoch: 0 }).info.recordCount).to.equal(2);
  });

  it('magic 1 wrappers sent without 0..n-1 inner offsets are rebuilt with them', async () => {
    const inner = Buffer.concat([0, 5, 9].map((o, i) => encodeMessage(BigInt(o), 1, 0, T0 + BigInt(i), null, Buffer.from(`v${i}`))));
    const wrapper = encodeMessage(9n, 1, CompressionCodec.GZIP, T0 + 2n, null, compress(CompressionCodec.GZIP, inner, { magic: 1 }));
    const { info } = log.append(wrapper, { leaderEpoch: 0 });
    expect([info.firstOffset, info.lastOffset]).to.deep.equal([0n, 2n]);
    const [entry] = (await log.read(0n, 1 << 20, { minOneMessage: true })).records;
    const w = LegacyMessage.at(entry as Buffer);
    expect(w.isValid()).to.equal(true);
    expect(w.innerMessages(LIMIT).map((m) => m.offset)).to.deep.equal([0n, 1n, 2n]);
    expect(w.records(LIMIT).map((r) => r.value?.toString())).to.deep.equal(['v0', 'v1', 'v2']);
    // KIP-31: the wrapper carries the absolute offset of its last inner message
    expect(w.offset).to.equal(2n);
  });
});
