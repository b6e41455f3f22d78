import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { GregorErrorCode, ProtocolError } from '../../protocol/codec/errors.js';
import { int64At } from '../../protocol/codec/int64.js';
import { Reader } from '../../protocol/codec/reader.js';
import { Writer, sizeUvarint, sizeVarint, sizeVarlong } from '../../protocol/codec/writer.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, peekRequestHeader } from '../../protocol/frame.js';
import { ApiKey, requestHeaderVersion, responseHeaderVersion } from '../../protocol/generated/api-keys.js';
import {
  readApiVersionsResponse,
  writeApiVersionsResponse,
  sizeApiVersionsResponse,
  type ApiVersionsResponse,
} from '../../protocol/generated/api-versions.js';
import { ErrorCode, isRetriable } from '../../protocol/generated/error-codes.js';
import type { ProduceRequest } from '../../protocol/generated/produce.js';
import { readFetchRequest, sizeFetchRequest, writeFetchRequest, defaultFetchRequest } from '../../protocol/generated/fetch.js';
import { sizeMetadataRequest, writeMetadataRequest } from '../../protocol/generated/metadata.js';
import {
  readConsumerGroupHeartbeatResponse,
  sizeConsumerGroupHeartbeatResponse,
  writeConsumerGroupHeartbeatResponse,
  type ConsumerGroupHeartbeatResponse,
} from '../../protocol/generated/consumer-group-heartbeat.js';

function expectProtocolError(fn: () => unknown, code: string): void {
  try {
    fn();
  } catch (e) {
    expect(e).to.be.instanceOf(ProtocolError);
    expect((e as ProtocolError).code).to.equal(code);
    return;
  }
  expect.fail(`expected ProtocolError ${code}`);
}

describe('codec primitives', () => {
  it('unsigned varints round-trip and size exactly, up to 32 bits', () => {
    for (const v of [0, 1, 127, 128, 16383, 16384, 2 ** 21, 2 ** 28 - 1, 2 ** 28, 2 ** 32 - 1]) {
      const w = Writer.alloc(sizeUvarint(v));
      w.uvarint(v);
      const r = new Reader(w.done());
      expect(r.uvarint()).to.equal(v);
      r.finish(true);
    }
  });

  it('zigzag varints and varlongs round-trip', () => {
    for (const v of [0, -1, 1, -64, 63, -65, 2 ** 30, -(2 ** 31), 2 ** 31 - 1]) {
      const w = Writer.alloc(sizeVarint(v));
      w.varint(v);
      expect(new Reader(w.done()).varint()).to.equal(v);
    }
    for (const v of [0n, -1n, 1n, 9223372036854775807n, -9223372036854775808n, 1234567890123n]) {
      const w = Writer.alloc(sizeVarlong(v));
      w.varlong(v);
      expect(new Reader(w.done()).varlong()).to.equal(v);
    }
  });

  it('UUIDs read and write through their caches as without them: repeated, colliding and many ids', () => {
    const hex = (): string => randomBytes(16).toString('hex');
    // 2,000 distinct ids over the reader's 256 slots collide; each is read three times, in turns
    const ids = Array.from({ length: 2000 }, () => hex());
    ids.push('00000000000000000000000000000000', 'ffffffffffffffffffffffffffffffff', ids[0] as string);
    // ids that differ only in one word's top byte, which the reader's slot hash leaves out: same slot
    const base = '112233445566778899aabbccddeeff00';
    for (let word = 0; word < 4; word++) ids.push(base, `${base.slice(0, word * 8)}7f${base.slice(word * 8 + 2)}`);
    for (let pass = 0; pass < 3; pass++) {
      const w = Writer.alloc(16 * ids.length);
      for (const id of ids) w.uuid(id);
      const buf = w.done();
      expect(buf.toString('hex')).to.equal(ids.join(''), `pass ${pass}: written bytes`);
      const r = new Reader(buf);
      for (const [i, id] of ids.entries()) expect(r.uuid(), `pass ${pass}, id ${i}`).to.equal(id);
      r.finish(true);
    }
    // an id given in capitals writes the same bytes and reads back in lowercase
    const upper = (ids[5] as string).toUpperCase();
    const w = Writer.alloc(16);
    w.uuid(upper);
    expect(new Reader(w.done()).uuid()).to.equal(ids[5]);
    // a malformed id is refused every time, not cached
    for (let i = 0; i < 2; i++) {
      expect(() => Writer.alloc(16).uuid('xyz'.padEnd(32, '0'))).to.throw(TypeError, /32 hex digits/);
      expect(() => Writer.alloc(16).uuid('abcd')).to.throw(TypeError, /32 hex digits/);
    }
    // a truncated id is the reader's sticky error
    const short = new Reader(Buffer.alloc(15));
    expect(short.uuid()).to.equal('00000000000000000000000000000000');
    expect(short.error?.code).to.equal(GregorErrorCode.TRUNCATED);
  });

  it('compact strings encode length+1 and 0 for null', () => {
    const w = Writer.alloc(1 + 1 + 4);
    w.compactString(null);
    w.compactString('');
    w.compactString('abc');
    const buf = w.done();
    expect([...buf]).to.deep.equal([0, 1, 4, 0x61, 0x62, 0x63]);
    const r = new Reader(buf);
    expect(r.compactNullableString()).to.equal(null);
    expect(r.compactString()).to.equal('');
    expect(r.compactString()).to.equal('abc');
  });

  it('short strings read from the string table equal the decoder on every pass (repeats, same lengths, collisions, non-UTF-8)', () => {
    const strs = ['topic-a', 'topic-b', 'topic-a', 'b-topic', 'ü-topic', '', 'x'.repeat(64), 'x'.repeat(65), 'y'.repeat(64)];
    // 600 distinct names of one length: more than the table's 256 slots, so slots are replaced
    for (let i = 0; i < 600; i++) strs.push(`t${String(i).padStart(5, '0')}`);
    for (let pass = 0; pass < 3; pass++) {
      const w = Writer.alloc(strs.reduce((n, s) => n + 2 + Buffer.byteLength(s), 0));
      for (const s of strs) w.string(s);
      const r = new Reader(w.done());
      for (const [i, s] of strs.entries()) expect(r.string(), `pass ${pass}, string ${i}`).to.equal(s);
      r.finish(true);
    }
    // bytes that are not UTF-8 decode as the decoder does (replacement characters), the second time too
    const bad = Buffer.from([0, 4, 0x61, 0xff, 0xfe, 0x62]);
    for (let i = 0; i < 2; i++) expect(new Reader(bad).string()).to.equal(Buffer.from([0x61, 0xff, 0xfe, 0x62]).toString('utf8'));
    // a string of the same length and hash slot as a cached one but other bytes is not taken for it
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; pair === undefined && i < 100000; i++) {
      const s = `c${String(i).padStart(6, '0')}`;
      const b = Buffer.from(s);
      let h = b.length;
      for (const x of b) h = Math.imul(h ^ x, 0x01000193);
      const slot = (h ^ (h >>> 15)) & 255;
      const other = seen.get(slot);
      if (other !== undefined) pair = [other, s];
      else seen.set(slot, s);
    }
    expect(pair).to.not.equal(undefined);
    const [first, second] = pair as [string, string];
    for (const s of [first, second, first, second]) {
      const w = Writer.alloc(2 + s.length);
      w.string(s);
      expect(new Reader(w.done()).string()).to.equal(s);
    }
  });

  it('readers over slices of one ArrayBuffer read their own bytes (one shared view, each at its byteOffset)', () => {
    const pool = Buffer.alloc(4096);
    const slices: Buffer[] = [];
    for (let i = 0; i < 50; i++) {
      const b = pool.subarray(i * 48 + (i % 7), i * 48 + (i % 7) + 38);
      b.writeInt16BE(-i - 1, 0);
      b.writeUInt16BE(60000 + i, 2);
      b.writeInt32BE(-100000 * (i + 1), 4);
      b.writeUInt32BE(4000000000 + i, 8);
      b.writeBigInt64BE(BigInt(i) * 10000000000n - 3n, 12);
      b.writeDoubleBE(i + 0.5, 20);
      b.writeBigInt64BE(-(2n ** 62n) - BigInt(i), 28);
      slices.push(b);
    }
    // read in an order that alternates with a reader over another ArrayBuffer (the shared view changes)
    for (const [i, b] of slices.entries()) {
      const other = new Reader(Buffer.from([0, 0, 0, 7]));
      expect(other.int32()).to.equal(7);
      const r = new Reader(b);
      expect([r.int16(), r.uint16(), r.int32(), r.uint32()], `slice ${i}`).to.deep.equal([
        -i - 1,
        60000 + i,
        -100000 * (i + 1),
        4000000000 + i,
      ]);
      expect(r.int64()).to.equal(BigInt(i) * 10000000000n - 3n);
      expect(r.float64()).to.equal(i + 0.5);
      expect(r.int64()).to.equal(-(2n ** 62n) - BigInt(i));
      expect(r.remaining).to.equal(2);
      // the bytes past the slice's end (the next slice's) are not read: a truncated int32 fails
      expect(r.int32()).to.equal(0);
      expect(r.error?.code).to.equal(GregorErrorCode.TRUNCATED);
    }
    // an end given past the buffer is the buffer's end: the pool's next bytes are not read
    const tail = pool.subarray(0, 6);
    const past = new Reader(tail, 0, 10);
    expect(past.end).to.equal(6);
    past.int32();
    expect(past.int32()).to.equal(0);
    expect(past.error?.code).to.equal(GregorErrorCode.TRUNCATED);
    // a reader over a large buffer (not kept as the shared view) reads from its byteOffset too
    const big = Buffer.alloc(128 * 1024);
    big.writeInt32BE(123456, 100001);
    expect(new Reader(big.subarray(100001)).int32()).to.equal(123456);
  });

  it('int64 reads every range exactly, in the Reader and in int64At (small values take a fast path, the rest the general one)', () => {
    const values = [0n, 1n, -1n, -2n, 0xffffffffn, 0x100000000n, -0x100000000n, -0xffffffffn, 123456789012345n, -123456789012345n];
    values.push(
      2n ** 53n - 1n,
      2n ** 53n,
      -(2n ** 53n),
      -(2n ** 53n) - 1n,
      2n ** 63n - 1n,
      -(2n ** 63n),
      0x1fffffn << 32n,
      (0x1fffffn << 32n) - 1n,
      -0x200000n << 32n,
    );
    for (let i = 0; i < 200; i++) values.push(randomBytes(8).readBigInt64BE(0));
    for (const v of values) {
      const w = Writer.alloc(8);
      w.int64(v);
      const buf = w.done();
      const r = new Reader(buf);
      expect(r.int64()).to.equal(v);
      r.finish(true);
      // int64At at an odd offset of a larger buffer, against Node's own reader
      const at = Buffer.alloc(13);
      buf.copy(at, 3);
      expect(int64At(at, 3)).to.equal(v);
      expect(int64At(at, 3)).to.equal(at.readBigInt64BE(3));
    }
    // past the end: a RangeError, as readBigInt64BE gives
    expect(() => int64At(Buffer.alloc(12), 5)).to.throw(RangeError);
    // unaligned, after other fields
    const w = Writer.alloc(1 + 8 + 8);
    w.int8(7);
    w.int64(-5n);
    w.int64(2n ** 62n);
    const r = new Reader(w.done());
    expect([r.int8(), r.int64(), r.int64()]).to.deep.equal([7, -5n, 2n ** 62n]);
  });

  it('int64 writes the whole signed range and refuses anything outside it', () => {
    const edges = [-(2n ** 63n), -(2n ** 63n) + 1n, -1n, 0n, 1n, 2n ** 53n + 1n, 2n ** 63n - 1n];
    const w = Writer.alloc(8 * edges.length);
    for (const v of edges) w.int64(v);
    const r = new Reader(w.done());
    expect(edges.map(() => r.int64())).to.deep.equal(edges);
    for (const bad of [2n ** 63n, -(2n ** 63n) - 1n, 2n ** 64n - 1n, 2n ** 64n]) {
      expect(() => Writer.alloc(8).int64(bad)).to.throw(RangeError, /out of range for int64/);
    }
  });

  it('a one-byte uvarint still refuses to write past the end', () => {
    const w = Writer.alloc(1);
    w.uvarint(0x7f);
    expect(() => w.uvarint(0)).to.throw(RangeError, /past the end/);
    expect([...w.done()]).to.deep.equal([0x7f]);
  });

  it('writes fixed-width fields at the right place in a buffer that is a view into a larger one', () => {
    const backing = Buffer.alloc(32, 0xee);
    const w = new Writer(backing.subarray(8, 8 + 14));
    w.int16(-2);
    w.int32(0x01020304);
    w.int64(-3n);
    expect(w.done().toString('hex')).to.equal('fffe01020304fffffffffffffffd');
    expect(backing.subarray(0, 8).every((b) => b === 0xee) && backing.subarray(22).every((b) => b === 0xee)).to.equal(true);
  });

  it('sizes an array of structs as the sum of its items, as written (generated per-struct size loops)', () => {
    const req = {
      ...defaultFetchRequest(),
      topics: [0, 1, 2].map((t) => ({
        topic: `t${t}`,
        topicId: '0'.repeat(31) + String(t + 1),
        partitions: Array.from({ length: t * 3 }, (_, i) => ({ partition: i, fetchOffset: BigInt(i) * 1000n, partitionMaxBytes: 1 << 20 })),
      })),
    };
    for (const v of [0, 4, 11, 12, 13, 16]) {
      const w = Writer.alloc(sizeFetchRequest(req, v));
      writeFetchRequest(w, req, v); // done() throws if the size pass and the write pass disagree
      const back = readFetchRequest(new Reader(w.done()), v);
      expect(back.topics.map((t) => t.partitions.length)).to.deep.equal([0, 3, 6]);
    }
  });

  it('writes empty raw bytes without touching the buffer', () => {
    const w = Writer.alloc(4);
    w.bytes(Buffer.alloc(0));
    expect([...w.done()]).to.deep.equal([0, 0, 0, 0]);
  });

  it('a truncated read is a sticky ProtocolError, never a RangeError', () => {
    const r = new Reader(Buffer.from([0, 0, 0]));
    expect(r.int32()).to.equal(0);
    expect(r.int64()).to.equal(0n);
    expect(r.error).to.be.instanceOf(ProtocolError);
    expect(r.error?.code).to.equal(GregorErrorCode.TRUNCATED);
    expect(() => r.finish()).to.throw(ProtocolError);
  });

  it('refuses a declared length larger than the frame before allocating', () => {
    const huge = Buffer.from([0x7f, 0xff, 0xff, 0xff, 1, 2, 3]);
    const r = new Reader(huge);
    const b = r.bytes();
    expect(b.length).to.equal(0);
    expect(r.error?.code).to.equal(GregorErrorCode.LENGTH_EXCEEDS_FRAME);
    const arr = new Reader(huge);
    expect(arr.arrayLength()).to.equal(0);
    expect(arr.error?.code).to.equal(GregorErrorCode.LENGTH_EXCEEDS_FRAME);
  });
});

describe('generated message semantics', () => {
  it('reads a non-nullable null string as NULL_NOT_ALLOWED', () => {
    const r = new Reader(Buffer.from([0xff, 0xff]));
    r.string();
    expect(r.error?.code).to.equal(GregorErrorCode.NULL_NOT_ALLOWED);
  });

  it('keeps records as a view into the frame (no copy)', () => {
    const records = Buffer.from('0123456789abcdef');
    const frame = encodeRequest({ apiKey: ApiKey.Produce, apiVersion: 7, correlationId: 9, clientId: 'c' }, {
      transactionalId: null,
      acks: 1,
      timeoutMs: 1000,
      topicData: [{ name: 't', partitionData: [{ index: 0, records }] }],
    } satisfies ProduceRequest);
    const { body } = decodeRequest(frame);
    const got = (body as ProduceRequest).topicData[0]?.partitionData[0]?.records;
    expect(got?.equals(records)).to.equal(true);
    expect(got?.buffer).to.equal(frame.buffer);
  });

  it('int64 fields are bigints', () => {
    const m = defaultFetchRequest();
    m.topics = [{ topic: 't', topicId: '0'.repeat(32), partitions: [{ partition: 0, fetchOffset: 2n ** 62n, partitionMaxBytes: 1 }] }];
    const w = Writer.alloc(sizeFetchRequest(m, 11));
    writeFetchRequest(w, m, 11);
    const back = readFetchRequest(new Reader(w.done()), 11);
    expect(back.topics[0]?.partitions[0]?.fetchOffset).to.equal(2n ** 62n);
  });

  it('writing a non-default value in a version without the field throws, unless the field is ignorable', () => {
    // allowAutoTopicCreation (v4+) is not ignorable: false at v3 cannot be expressed.
    const m = { topics: null, allowAutoTopicCreation: false };
    expectProtocolError(() => writeMetadataRequest(Writer.alloc(sizeMetadataRequest(m, 3)), m, 3), GregorErrorCode.FIELD_NOT_IN_VERSION);
    // Its default (true) is fine.
    const ok = { topics: null, allowAutoTopicCreation: true };
    writeMetadataRequest(Writer.alloc(sizeMetadataRequest(ok, 3)), ok, 3);
    // isolationLevel (Fetch v4+) is ignorable: dropped silently at v3.
    const f = defaultFetchRequest();
    f.isolationLevel = 1;
    const w = Writer.alloc(sizeFetchRequest(f, 3));
    writeFetchRequest(w, f, 3);
    expect(readFetchRequest(new Reader(w.done()), 3).isolationLevel).to.equal(0);
  });

  it('reads tagged fields in any order, keeps unknown ones, writes ascending', () => {
    const base: ApiVersionsResponse = { errorCode: 0, apiKeys: [{ apiKey: 0, minVersion: 0, maxVersion: 11 }], throttleTimeMs: 0 };
    const plain = Writer.alloc(sizeApiVersionsResponse(base, 3));
    writeApiVersionsResponse(plain, base, 3);
    const body = plain.done().subarray(0, -1); // drop the empty tagged section
    // Tagged section by hand, descending order: unknown tag 9, ZkMigrationReady (tag 3) = true, FinalizedFeaturesEpoch (tag 1) = 7.
    const tagged = Buffer.from([3, 9, 2, 0xaa, 0xbb, 3, 1, 1, 1, 8, 0, 0, 0, 0, 0, 0, 0, 7]);
    const r = new Reader(Buffer.concat([body, tagged]));
    const m = readApiVersionsResponse(r, 3);
    r.finish(true);
    expect(m.zkMigrationReady).to.equal(true);
    expect(m.finalizedFeaturesEpoch).to.equal(7n);
    expect(m._unknownTaggedFields).to.have.length(1);
    expect(m._unknownTaggedFields?.[0]?.tag).to.equal(9);
    const w = Writer.alloc(sizeApiVersionsResponse(m, 3));
    writeApiVersionsResponse(w, m, 3);
    const out = w.done();
    const section = out.subarray(body.length);
    expect([...section]).to.deep.equal([3, 1, 8, 0, 0, 0, 0, 0, 0, 0, 7, 3, 1, 1, 9, 2, 0xaa, 0xbb]);
  });

  it('nullable structs use a -1/1 marker byte', () => {
    const m: ConsumerGroupHeartbeatResponse = {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      memberId: 'm',
      memberEpoch: 1,
      heartbeatIntervalMs: 5000,
      assignment: null,
    };
    const w = Writer.alloc(sizeConsumerGroupHeartbeatResponse(m, 0));
    writeConsumerGroupHeartbeatResponse(w, m, 0);
    const bytes = w.done();
    expect(bytes[bytes.length - 2]).to.equal(0xff);
    expect(readConsumerGroupHeartbeatResponse(new Reader(bytes), 0).assignment).to.equal(null);
    const withA = { ...m, assignment: { topicPartitions: [{ topicId: 'ab'.repeat(16), partitions: [0, 2] }] } };
    const w2 = Writer.alloc(sizeConsumerGroupHeartbeatResponse(withA, 0));
    writeConsumerGroupHeartbeatResponse(w2, withA, 0);
    expect(readConsumerGroupHeartbeatResponse(new Reader(w2.done()), 0).assignment?.topicPartitions[0]?.partitions).to.deep.equal([0, 2]);
  });
});

describe('headers', () => {
  it('uses request header v1 for classic and v2 for flexible versions, v0 only for ControlledShutdown v0', () => {
    expect(requestHeaderVersion(ApiKey.Produce, 8)).to.equal(1);
    expect(requestHeaderVersion(ApiKey.Produce, 9)).to.equal(2);
    expect(requestHeaderVersion(ApiKey.ControlledShutdown, 0)).to.equal(0);
    expect(responseHeaderVersion(ApiKey.Fetch, 12)).to.equal(1);
    expect(responseHeaderVersion(ApiKey.Fetch, 11)).to.equal(0);
  });

  it('never writes ClientId as a compact string, even in header v2', () => {
    const frame = encodeRequest(
      { apiKey: ApiKey.Metadata, apiVersion: 12, correlationId: 5, clientId: 'abc' },
      {
        topics: null,
        allowAutoTopicCreation: true,
        includeTopicAuthorizedOperations: false,
      },
    );
    expect(frame.readInt16BE(8)).to.equal(3); // int16 length, not a varint
    expect(frame.toString('utf8', 10, 13)).to.equal('abc');
    expect(frame[13]).to.equal(0); // header tagged fields
    const d = decodeRequest(frame);
    expect(d.header.clientId).to.equal('abc');
    expect(d.header.headerVersion).to.equal(2);
    expect(peekRequestHeader(frame)).to.deep.equal({ apiKey: 3, apiVersion: 12, correlationId: 5 });
  });

  it('answers ApiVersions v3+ with response header v0 (no tagged fields)', () => {
    expect(responseHeaderVersion(ApiKey.ApiVersions, 3)).to.equal(0);
    const body: ApiVersionsResponse = { errorCode: 0, apiKeys: [], throttleTimeMs: 0 };
    const frame = encodeResponse(ApiKey.ApiVersions, 3, 77, body, { sizePrefix: true });
    expect(frame.readInt32BE(0)).to.equal(frame.length - 4);
    expect(frame.readInt32BE(4)).to.equal(77);
    expect(frame[8]).to.equal(0); // error code high byte follows the correlation id directly
    const back = decodeResponse(ApiKey.ApiVersions, 3, frame.subarray(4));
    expect(back.correlationId).to.equal(77);
  });

  it('rejects unknown API keys and versions with stable codes', () => {
    const bad = Buffer.from([0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff]);
    expectProtocolError(() => decodeRequest(bad), GregorErrorCode.UNKNOWN_API_KEY);
    const badVersion = Buffer.from([0, 0, 0x00, 0x63, 0, 0, 0, 1, 0xff, 0xff]);
    expectProtocolError(() => decodeRequest(badVersion), GregorErrorCode.UNSUPPORTED_VERSION);
  });
});

describe('error codes', () => {
  it('carries Kafka names, codes and retriable flags', () => {
    expect(ErrorCode.UNSUPPORTED_VERSION).to.equal(35);
    expect(ErrorCode.NOT_LEADER_OR_FOLLOWER).to.equal(6);
    expect(isRetriable(ErrorCode.NOT_LEADER_OR_FOLLOWER)).to.equal(true);
    expect(isRetriable(ErrorCode.TOPIC_ALREADY_EXISTS)).to.equal(false);
    expect(ErrorCode.UNKNOWN_SERVER_ERROR).to.equal(-1);
  });
});
