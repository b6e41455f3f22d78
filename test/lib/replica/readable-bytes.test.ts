/** What a leader's high watermark move makes readable to consumers (the purgatory's readableBytes). */
import { expect } from 'chai';
import { ReadableBytes } from '../../../lib/replica/readable-bytes.js';

describe('lib/replica ReadableBytes', () => {
  it('counts the bytes written between the marks the high watermark passes', () => {
    const r = new ReadableBytes();
    r.start(1000); // the log held 1000 bytes when the leadership began
    r.written(10n, 1100);
    r.written(12n, 1150);
    r.written(20n, 1400);
    expect(r.committed(12n)).to.equal(150);
    expect(r.committed(20n)).to.equal(250);
  });

  it('a move that passes no mark still makes at least one byte readable; a log that shrank counts one', () => {
    const r = new ReadableBytes();
    r.start(0);
    r.written(10n, 500);
    expect(r.committed(5n)).to.equal(1);
    expect(r.committed(10n)).to.equal(500);
    r.written(11n, 100); // retention deleted a segment meanwhile
    expect(r.committed(11n)).to.equal(1);
    r.written(12n, 160);
    expect(r.committed(12n)).to.equal(60);
  });

  it('drops the marks passed (many moves do not grow it)', () => {
    const r = new ReadableBytes();
    r.start(0);
    for (let i = 1; i <= 10_000; i++) {
      r.written(BigInt(i), i * 10);
      expect(r.committed(BigInt(i))).to.equal(10);
    }
    expect((r as unknown as { ends: bigint[] }).ends.length).to.be.below(200);
  });

  it('a high watermark that does not move for many writes keeps a bounded number of marks, and the total still adds up', () => {
    const r = new ReadableBytes();
    r.start(0);
    for (let i = 1; i <= 20_000; i++) r.written(BigInt(i), i * 10);
    const internal = r as unknown as { ends: bigint[]; head: number };
    expect(internal.ends.length - internal.head).to.be.at.most(4096);
    expect(r.committed(100n), 'a mark dropped: at least one byte').to.equal(1);
    expect(r.committed(20_000n), 'from the baseline to the last mark').to.equal(200_000);
  });
});
