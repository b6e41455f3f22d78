import { expect } from 'chai';
import { ChunkBuffer } from '../../../lib/network/chunk-buffer.js';

/** Bytes 0..n-1 (mod 251) so that a misplaced copy shows. */
const seq = (from: number, n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (from + i) % 251));

describe('ChunkBuffer', () => {
  it('takes a frame inside one chunk as a view, and one straddling chunks as a copy', () => {
    const b = new ChunkBuffer();
    const chunk = seq(0, 10);
    b.push(chunk);
    const v = b.take(4);
    expect(v.buffer).to.equal(chunk.buffer);
    expect([...v]).to.deep.equal([0, 1, 2, 3]);
    b.push(seq(10, 10));
    expect(b.take(12).equals(seq(4, 12))).to.equal(true);
    expect(b.buffered).to.equal(4);
  });

  it('assembles an expected frame from many chunks as they arrive, keeping the bytes after it', () => {
    const b = new ChunkBuffer();
    const all = seq(0, 4 + 100_000 + 7);
    b.push(all.subarray(0, 6)); // size prefix + 2 body bytes
    expect(b.takeInt32()).to.equal(all.readInt32BE(0));
    b.expect(100_000);
    let at = 6;
    while (at < all.length) {
      const n = Math.min(16384, all.length - at);
      b.push(all.subarray(at, at + n));
      at += n;
    }
    expect(b.buffered).to.equal(100_000 + 7);
    const frame = b.take(100_000);
    expect(frame.equals(all.subarray(4, 4 + 100_000))).to.equal(true);
    expect(frame.buffer).to.not.equal(all.buffer); // a copy: the chunks were released
    expect(b.buffered).to.equal(7);
    expect(b.take(7).equals(all.subarray(4 + 100_000))).to.equal(true);
  });

  it('expect() leaves a frame already held alone and refuses a take() of another size', () => {
    const b = new ChunkBuffer();
    b.push(seq(0, 50));
    b.expect(20); // held: no assembly
    expect(b.take(20).equals(seq(0, 20))).to.equal(true);
    b.expect(100);
    expect(() => b.take(30)).to.throw(/frame/);
    b.clear();
    expect(b.buffered).to.equal(0);
    b.push(seq(0, 3));
    expect(b.take(3).equals(seq(0, 3))).to.equal(true);
  });
});
