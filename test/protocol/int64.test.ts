import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { int64At } from '../../protocol/codec/int64.js';

describe('int64At', () => {
  it('reads every range as readBigInt64BE does (constants, the ±2^53 fast path, the rest), at any byte offset', () => {
    const values = [0n, 1n, -1n, -2n, 0xffffffffn, 0x100000000n, -0x100000000n, -0xffffffffn, 1733300000000n, -1733300000000n];
    values.push(
      2n ** 53n - 1n,
      2n ** 53n,
      -(2n ** 53n),
      -(2n ** 53n) - 1n,
      2n ** 63n - 1n,
      -(2n ** 63n),
      0x1fffffn << 32n,
      -0x200000n << 32n,
    );
    for (let i = 0; i < 200; i++) values.push(randomBytes(8).readBigInt64BE(0));
    const buf = Buffer.alloc(8 * values.length + 3);
    values.forEach((v, i) => buf.writeBigInt64BE(v, 3 + 8 * i));
    values.forEach((v, i) => {
      expect(int64At(buf, 3 + 8 * i), `value ${i}`).to.equal(v);
      expect(int64At(buf, 3 + 8 * i)).to.equal(buf.readBigInt64BE(3 + 8 * i));
    });
  });

  it('refuses to read past the buffer as readBigInt64BE does', () => {
    const buf = Buffer.alloc(12);
    expect(() => int64At(buf, 5)).to.throw(RangeError);
    expect(() => buf.readBigInt64BE(5)).to.throw(RangeError);
    expect(int64At(buf, 4)).to.equal(0n);
  });
});
