/** CRC-32 (IEEE) of byte ranges, as magic 0/1 messages use it: the JS table version for short ranges, native for long. */
import { expect } from 'chai';
import fc from 'fast-check';
import zlib from 'node:zlib';
import { crc32Range } from '../../../protocol/records/crc32.js';

describe('records/crc32', () => {
  it('crc32Range matches zlib on any range, short (JS) or long (native)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 2000 }), fc.nat(), fc.nat(), (bytes, a, b) => {
        const buf = Buffer.from(bytes);
        const s = buf.length === 0 ? 0 : a % (buf.length + 1);
        const e = s + (buf.length === 0 ? 0 : b % (buf.length - s + 1));
        expect(crc32Range(buf, s, e)).to.equal(zlib.crc32(buf.subarray(s, e)));
      }),
    );
  });
});
