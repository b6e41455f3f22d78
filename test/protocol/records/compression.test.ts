import { expect } from 'chai';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { compressSync as lz4Block } from 'lz4-napi';
import { compressSync as snappyRaw } from 'snappy';
import { Encoder as ZstdEncoder } from '@toondepauw/node-zstd';
import { GregorErrorCode, ProtocolError } from '../../../protocol/codec/errors.js';
import { CompressionCodec, compress, decompress, xxhash32 } from '../../../protocol/records/index.js';

const CODECS = [CompressionCodec.GZIP, CompressionCodec.SNAPPY, CompressionCodec.LZ4, CompressionCodec.ZSTD] as const;
const MB = 1 << 20;

function expectProtocolError(fn: () => unknown, code?: string): ProtocolError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ProtocolError);
    if (code !== undefined) expect((err as ProtocolError).code).to.equal(code);
    return err as ProtocolError;
  }
  expect.fail('expected a ProtocolError');
}

function sample(size: number): Buffer {
  // compressible but not trivial
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = (i * 7 + (i >> 5)) % 61;
  return out;
}

describe('records/compression', () => {
  describe('xxhash32', () => {
    it('matches the reference vectors', () => {
      expect(xxhash32(Buffer.alloc(0))).to.equal(0x02cc5d05);
      expect(xxhash32(Buffer.from('abc'))).to.equal(0x32d153ff);
      expect(xxhash32(Buffer.from('0123456789abcdefghijklmnop'))).to.equal(0xb6e6aacc);
      expect(xxhash32(Buffer.from('Nobody inspects the spammish repetition'))).to.equal(0xe2293b2f);
    });
  });

  for (const codec of CODECS) {
    describe(`codec ${codec}`, () => {
      for (const size of [0, 1, 100, 70_000, 300_000]) {
        it(`round-trips ${size} bytes`, () => {
          const data = sample(size);
          const packed = compress(codec, data);
          expect(decompress(codec, packed, { maxOutput: size }).equals(data)).to.equal(true);
        });
      }

      it('refuses output above maxOutput', () => {
        const data = Buffer.alloc(200_000, 0x61);
        const packed = compress(codec, data);
        expectProtocolError(() => decompress(codec, packed, { maxOutput: 50_000 }), GregorErrorCode.COMPRESSION_FAILED);
      });

      it('turns garbage into ProtocolError only', () => {
        fc.assert(
          fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
            try {
              decompress(codec, Buffer.from(bytes), { maxOutput: MB });
            } catch (err) {
              if (!(err instanceof ProtocolError)) throw err;
            }
          }),
          { numRuns: 400 },
        );
      });

      it('turns corrupted valid data into ProtocolError or some output, never another error', () => {
        const packed = compress(codec, sample(5000));
        fc.assert(
          fc.property(fc.nat(packed.length - 1), fc.integer({ min: 1, max: 255 }), fc.nat(packed.length), (pos, xor, cut) => {
            const bad = Buffer.from(packed);
            bad[pos] = (bad[pos] ?? 0) ^ xor;
            for (const input of [bad, packed.subarray(0, cut)]) {
              try {
                decompress(codec, input, { maxOutput: MB });
              } catch (err) {
                if (!(err instanceof ProtocolError)) throw err;
              }
            }
          }),
          { numRuns: 300 },
        );
      });
    });
  }

  it('rejects unknown codecs with UNSUPPORTED_COMPRESSION', () => {
    expectProtocolError(() => decompress(5, Buffer.alloc(4), { maxOutput: 10 }), GregorErrorCode.UNSUPPORTED_COMPRESSION);
    expectProtocolError(() => compress(7, Buffer.alloc(4)), GregorErrorCode.UNSUPPORTED_COMPRESSION);
  });

  describe('gzip', () => {
    it('reads concatenated gzip members', () => {
      const a = zlib.gzipSync(Buffer.from('hello '));
      const b = zlib.gzipSync(Buffer.from('world'));
      expect(decompress(CompressionCodec.GZIP, Buffer.concat([a, b]), { maxOutput: 100 }).toString()).to.equal('hello world');
    });
    it('bounds a gzip bomb', () => {
      const bomb = zlib.gzipSync(Buffer.alloc(64 * MB));
      expect(bomb.length).to.be.below(100_000);
      expectProtocolError(() => decompress(CompressionCodec.GZIP, bomb, { maxOutput: MB }), GregorErrorCode.COMPRESSION_FAILED);
    });
  });

  describe('snappy', () => {
    it('writes xerial framing and reads raw and xerial', () => {
      const data = sample(100_000);
      const xerial = compress(CompressionCodec.SNAPPY, data);
      expect(xerial.subarray(0, 8).toString('hex')).to.equal('82534e4150505900');
      expect(xerial.readInt32BE(8)).to.equal(1);
      expect(xerial.readInt32BE(12)).to.equal(1);
      const raw = compress(CompressionCodec.SNAPPY, data, { snappyFraming: 'raw' });
      expect(raw.equals(snappyRaw(data))).to.equal(true);
      expect(decompress(CompressionCodec.SNAPPY, raw, { maxOutput: data.length }).equals(data)).to.equal(true);
      expect(decompress(CompressionCodec.SNAPPY, xerial, { maxOutput: data.length }).equals(data)).to.equal(true);
    });
    it('checks the declared length against maxOutput before decoding', () => {
      const raw = snappyRaw(Buffer.alloc(100_000));
      expectProtocolError(() => decompress(CompressionCodec.SNAPPY, raw, { maxOutput: 99_999 }), GregorErrorCode.COMPRESSION_FAILED);
      // a lying prefix claiming 4 GiB
      expectProtocolError(() => decompress(CompressionCodec.SNAPPY, Buffer.from('ffffffff0f00', 'hex'), { maxOutput: MB }));
    });
  });

  describe('lz4 frames', () => {
    const data = sample(150_000);
    it('writes the standard header checksum for magic 1 and 2', () => {
      const frame = compress(CompressionCodec.LZ4, data, { magic: 1 });
      expect(frame.readUInt32LE(0)).to.equal(0x184d2204);
      expect(frame[6]).to.equal((xxhash32(frame, 4, 6) >>> 8) & 0xff);
    });
    it('writes the KAFKA-1493 header checksum for magic 0, and accepts it only for magic 0', () => {
      const frame = compress(CompressionCodec.LZ4, data, { magic: 0 });
      const quirk = (xxhash32(frame, 0, 6) >>> 8) & 0xff;
      expect(frame[6]).to.equal(quirk);
      expect(decompress(CompressionCodec.LZ4, frame, { maxOutput: data.length, magic: 0 }).equals(data)).to.equal(true);
      if (quirk !== ((xxhash32(frame, 4, 6) >>> 8) & 0xff)) {
        expectProtocolError(() => decompress(CompressionCodec.LZ4, frame, { maxOutput: data.length, magic: 1 }));
      }
      // magic 0 accepts the correct form as well
      const good = compress(CompressionCodec.LZ4, data, { magic: 2 });
      expect(decompress(CompressionCodec.LZ4, good, { maxOutput: data.length, magic: 0 }).equals(data)).to.equal(true);
    });
    it('stores incompressible blocks uncompressed (high bit set)', () => {
      const noise = randomBytes(1000);
      const frame = compress(CompressionCodec.LZ4, noise);
      expect(frame.readUInt32LE(7) >>> 31, frame.subarray(0, 16).toString('hex')).to.equal(1);
      expect(decompress(CompressionCodec.LZ4, frame, { maxOutput: 1000 }).equals(noise)).to.equal(true);
    });
    it('checks block and content checksums and content size', () => {
      // hand-made frame: FLG with block checksum, content size and content checksum
      const payload = Buffer.from('kafka kafka kafka');
      const desc = Buffer.alloc(10);
      desc[0] = 0x40 | 0x10 | 0x08 | 0x04;
      desc[1] = 0x40;
      desc.writeBigUInt64LE(BigInt(payload.length), 2);
      const blockSize = Buffer.alloc(4);
      blockSize.writeUInt32LE((payload.length | 0x80000000) >>> 0);
      const blockSum = Buffer.alloc(4);
      blockSum.writeUInt32LE(xxhash32(payload));
      const contentSum = Buffer.alloc(4);
      contentSum.writeUInt32LE(xxhash32(payload));
      const frame = Buffer.concat([
        Buffer.from([0x04, 0x22, 0x4d, 0x18]),
        desc,
        Buffer.from([(xxhash32(desc) >>> 8) & 0xff]),
        blockSize,
        payload,
        blockSum,
        Buffer.alloc(4),
        contentSum,
      ]);
      expect(decompress(CompressionCodec.LZ4, frame, { maxOutput: 100 }).toString()).to.equal('kafka kafka kafka');
      const badBlock = Buffer.from(frame);
      badBlock[22] = (badBlock[22] ?? 0) ^ 1; // inside the payload: block checksum fails first
      expectProtocolError(() => decompress(CompressionCodec.LZ4, badBlock, { maxOutput: 100 }), GregorErrorCode.COMPRESSION_FAILED);
      expectProtocolError(() => decompress(CompressionCodec.LZ4, frame, { maxOutput: 10 }), GregorErrorCode.COMPRESSION_FAILED);
    });
    it('reads linked (dependent) blocks, whose matches reach into the previous block', () => {
      // two 64 KiB blocks, the second compressed against the first as its dictionary (FLG bit 5 clear)
      const text = Buffer.from(Array.from({ length: 4000 }, (_, i) => `record ${i % 997} of a kafka log; `).join(''));
      const first = text.subarray(0, 64 << 10);
      const second = text.subarray(64 << 10, 128 << 10);
      const b1 = lz4Block(first).subarray(4);
      const b2 = lz4Block(second, first).subarray(4);
      expect(b2.length, 'the dictionary helps').to.be.below(lz4Block(second).length - 4);
      const desc = Buffer.from([0x40, 0x40]);
      const size = (n: number) => {
        const b = Buffer.alloc(4);
        b.writeUInt32LE(n);
        return b;
      };
      const frame = Buffer.concat([
        Buffer.from([0x04, 0x22, 0x4d, 0x18]),
        desc,
        Buffer.from([(xxhash32(desc) >>> 8) & 0xff]),
        size(b1.length),
        b1,
        size(b2.length),
        b2,
        Buffer.alloc(4),
      ]);
      const out = decompress(CompressionCodec.LZ4, frame, { maxOutput: MB });
      expect(out.equals(Buffer.concat([first, second]))).to.equal(true);
      // the same blocks declared independent: the second cannot be decoded alone
      const independent = Buffer.from(frame);
      independent[4] = 0x60;
      independent[6] = (xxhash32(independent, 4, 6) >>> 8) & 0xff;
      expectProtocolError(() => decompress(CompressionCodec.LZ4, independent, { maxOutput: MB }), GregorErrorCode.COMPRESSION_FAILED);
    });
    it('bounds an lz4 bomb', () => {
      const frame = compress(CompressionCodec.LZ4, Buffer.alloc(8 * MB));
      expectProtocolError(() => decompress(CompressionCodec.LZ4, frame, { maxOutput: MB }), GregorErrorCode.COMPRESSION_FAILED);
    });
  });

  describe('zstd', () => {
    it('decompresses frames without a content size', () => {
      // 'abc' x 1000 from python zstandard's streaming compressor (no content size field)
      const frame = Buffer.from('28b52ffd0058550000186162630100b2d37743', 'hex');
      expect((frame[4] ?? 0xff) >>> 6).to.equal(0);
      expect(decompress(CompressionCodec.ZSTD, frame, { maxOutput: 3000 }).toString()).to.equal('abc'.repeat(1000));
      expectProtocolError(() => decompress(CompressionCodec.ZSTD, frame, { maxOutput: 2999 }), GregorErrorCode.COMPRESSION_FAILED);
    });
    it('decompresses concatenated frames', () => {
      const enc = new ZstdEncoder(3);
      const both = Buffer.concat([enc.encodeSync(Buffer.from('foo')), enc.encodeSync(Buffer.from('bar'))]);
      expect(decompress(CompressionCodec.ZSTD, both, { maxOutput: 6 }).toString()).to.equal('foobar');
    });
    it('refuses a zstd bomb before decoding it', () => {
      const frame = compress(CompressionCodec.ZSTD, Buffer.alloc(32 * MB));
      expect(frame.length).to.be.below(10_000);
      expectProtocolError(() => decompress(CompressionCodec.ZSTD, frame, { maxOutput: MB }), GregorErrorCode.COMPRESSION_FAILED);
    });
  });
});
