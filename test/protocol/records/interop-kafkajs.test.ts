import { expect } from 'chai';
import { createRequire } from 'node:module';
import {
  CompressionCodec,
  ControlRecordType,
  LegacyMessage,
  RecordBatch,
  buildEndTxnBatch,
  buildMessageSet,
  buildRecordBatch,
  scanMessageSet,
} from '../../../protocol/records/index.js';
import type { RecordInput } from '../../../protocol/records/index.js';

const require = createRequire(import.meta.url);
const { RecordBatch: KjsRecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js') as {
  RecordBatch: (a: object) => Promise<any>;
};
const KjsRecord = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (a: object) => any;
const kjsDecodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder.js') as (d: any) => Promise<any>;
const KjsMessageSet = require('kafkajs/src/protocol/messageSet/index.js') as (a: object) => any;
const kjsDecodeMessageSet = require('kafkajs/src/protocol/messageSet/decoder.js') as (d: any, size: number) => Promise<any[]>;
const KjsDecoder = require('kafkajs/src/protocol/decoder.js') as new (b: Buffer) => any;
const kjsGzip = require('kafkajs/src/protocol/message/compression/gzip.js') as { compress(e: any): Promise<Buffer> };
const { Types: KjsCompression } = require('kafkajs/src/protocol/message/compression/index.js') as { Types: { None: 0; GZIP: 1 } };

const LIMIT = { maxOutput: 1 << 24 };
const NOW = 1_700_000_000_000;

interface Msg {
  key: Buffer | null;
  value: Buffer | null;
  timestamp: number;
  headers?: { [k: string]: Buffer };
}

const MESSAGES: Msg[] = [
  {
    key: Buffer.from('user-1'),
    value: Buffer.from('{"a":1}'),
    timestamp: NOW,
    headers: { trace: Buffer.from('abc'), empty: Buffer.alloc(0) },
  },
  { key: null, value: Buffer.from('no key'), timestamp: NOW + 5 },
  { key: Buffer.from('tombstone'), value: null, timestamp: NOW - 3 },
  { key: Buffer.from('big'), value: Buffer.alloc(5000, 0x41), timestamp: NOW + 1, headers: { h: Buffer.from('ü') } },
];

function asInput(m: Msg): RecordInput {
  return {
    key: m.key,
    value: m.value,
    timestamp: BigInt(m.timestamp),
    headers: Object.entries(m.headers ?? {}).map(([key, value]) => ({ key, value })),
  };
}

describe('records interop with kafkajs 2.2.4', () => {
  for (const [name, compression] of [
    ['none', KjsCompression.None],
    ['gzip', KjsCompression.GZIP],
  ] as const) {
    it(`decodes a kafkajs v2 record batch (${name})`, async () => {
      const records = MESSAGES.map((m, i) =>
        KjsRecord({ offsetDelta: i, timestampDelta: m.timestamp - NOW, key: m.key, value: m.value, headers: m.headers ?? {} }),
      );
      const enc = await KjsRecordBatch({
        compression,
        firstTimestamp: NOW,
        maxTimestamp: NOW + 5,
        lastOffsetDelta: MESSAGES.length - 1,
        transactional: true,
        producerId: 12345,
        producerEpoch: 2,
        firstSequence: 10,
        records,
      });
      const buf: Buffer = enc.buffer;
      const batch = RecordBatch.at(buf);
      batch.validate();
      expect(batch.sizeInBytes).to.equal(buf.length);
      expect(batch.compression).to.equal(compression);
      expect(batch.isTransactional).to.equal(true);
      expect(batch.producerId).to.equal(12345n);
      expect(batch.producerEpoch).to.equal(2);
      expect(batch.baseSequence).to.equal(10);
      const got = batch.records(LIMIT);
      expect(got.length).to.equal(MESSAGES.length);
      got.forEach((r, i) => {
        const m = MESSAGES[i] as Msg;
        expect(r.offset).to.equal(BigInt(i));
        expect(r.timestamp).to.equal(BigInt(m.timestamp));
        expect(r.key === null ? null : r.key.toString('hex')).to.equal(m.key === null ? null : m.key.toString('hex'));
        expect(r.value === null ? null : r.value.toString('hex')).to.equal(m.value === null ? null : m.value.toString('hex'));
        expect(r.headers.map((h) => [h.key, h.value?.toString('hex')])).to.deep.equal(
          Object.entries(m.headers ?? {}).map(([k, v]) => [k, v.toString('hex')]),
        );
      });
    });

    it(`kafkajs decodes our v2 record batch (${name})`, async () => {
      const buf = buildRecordBatch(MESSAGES.map(asInput), {
        compression,
        baseOffset: 1000n,
        producerId: 7n,
        producerEpoch: 1,
        baseSequence: 0,
      });
      const decoded = await kjsDecodeBatch(new KjsDecoder(buf));
      expect(decoded.firstOffset).to.equal('1000');
      expect(decoded.producerId).to.equal('7');
      expect(decoded.records.length).to.equal(MESSAGES.length);
      decoded.records.forEach((r: any, i: number) => {
        const m = MESSAGES[i] as Msg;
        expect(r.offset).to.equal(String(1000 + i));
        expect(r.timestamp).to.equal(String(m.timestamp));
        expect(r.key).to.deep.equal(m.key);
        expect(r.value).to.deep.equal(m.value);
        expect(Object.keys(r.headers)).to.deep.equal(Object.keys(m.headers ?? {}));
        for (const [k, v] of Object.entries(m.headers ?? {})) expect(Buffer.compare(r.headers[k], v)).to.equal(0);
      });
    });
  }

  it('kafkajs sees our control batch as a control record', async () => {
    const buf = buildEndTxnBatch({
      type: ControlRecordType.COMMIT,
      producerId: 5n,
      producerEpoch: 0,
      coordinatorEpoch: 3,
      timestamp: BigInt(NOW),
    });
    const decoded = await kjsDecodeBatch(new KjsDecoder(buf));
    expect(decoded.isControlBatch).to.equal(true);
    expect(decoded.inTransaction).to.equal(true);
    expect(decoded.records[0].isControlRecord).to.equal(true);
    expect(decoded.records[0].key.readInt16BE(2)).to.equal(ControlRecordType.COMMIT);
  });

  for (const version of [0, 1] as const) {
    it(`decodes kafkajs message sets, magic ${version} (plain and gzip)`, async () => {
      const entries = MESSAGES.map((m) => ({ key: m.key, value: m.value, timestamp: m.timestamp }));
      const plain: Buffer = KjsMessageSet({ messageVersion: version, compression: KjsCompression.None, entries }).buffer;
      const set = scanMessageSet(plain);
      expect(set.partial).to.equal(null);
      set.messages.forEach((m) => m.validate());
      const recs = set.messages.flatMap((m) => m.records(LIMIT));
      expect(recs.map((r) => r.value?.toString('hex') ?? null)).to.deep.equal(MESSAGES.map((m) => m.value?.toString('hex') ?? null));
      expect(recs.map((r) => r.timestamp)).to.deep.equal(MESSAGES.map((m) => (version === 0 ? -1n : BigInt(m.timestamp))));

      // as kafkajs's Produce v0-v2 encoder does: inner set with relative offsets, gzipped, in one wrapper
      const inner = KjsMessageSet({ messageVersion: version, compression: KjsCompression.GZIP, entries });
      const wrapperBuf: Buffer = KjsMessageSet({
        messageVersion: version,
        entries: [{ compression: KjsCompression.GZIP, timestamp: NOW, value: await kjsGzip.compress(inner), key: null }],
      }).buffer;
      const wrapper = LegacyMessage.at(wrapperBuf);
      wrapper.validate();
      expect(wrapper.compression).to.equal(CompressionCodec.GZIP);
      // the broker assigns the wrapper the offset of the last inner message
      wrapper.setOffset(203n);
      const inners = wrapper.records(LIMIT);
      expect(inners.map((r) => r.offset)).to.deep.equal(version === 1 ? [200n, 201n, 202n, 203n] : [0n, 1n, 2n, 3n]);
      expect(inners.map((r) => r.key?.toString() ?? null)).to.deep.equal(MESSAGES.map((m) => m.key?.toString() ?? null));
    });

    it(`kafkajs decodes our message sets, magic ${version} (plain and gzip)`, async () => {
      const input = MESSAGES.map((m) => ({ key: m.key, value: m.value, timestamp: BigInt(m.timestamp) }));
      for (const compression of [CompressionCodec.NONE, CompressionCodec.GZIP]) {
        const buf = buildMessageSet(input, { magic: version, compression, baseOffset: 40n });
        const decoded = await kjsDecodeMessageSet(new KjsDecoder(buf), buf.length);
        expect(decoded.map((m: any) => m.offset)).to.deep.equal(['40', '41', '42', '43']);
        expect(decoded.map((m: any) => m.value)).to.deep.equal(MESSAGES.map((m) => m.value));
        expect(decoded.map((m: any) => m.key)).to.deep.equal(MESSAGES.map((m) => m.key));
        if (version === 1) expect(decoded.map((m: any) => m.timestamp)).to.deep.equal(MESSAGES.map((m) => String(m.timestamp)));
      }
    });
  }
});
