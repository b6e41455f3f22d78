import { expect } from 'chai';
import fc from 'fast-check';
import { clipVerified, isVerified, markVerified } from '../../../lib/log/verified-ranges.js';

describe('lib/log verified ranges', () => {
  it('merges touching and overlapping ranges, keeps disjoint ones sorted', () => {
    const r: number[] = [];
    markVerified(r, 100, 200);
    markVerified(r, 0, 50);
    markVerified(r, 300, 400);
    expect(r).to.deep.equal([0, 50, 100, 200, 300, 400]);
    markVerified(r, 200, 300); // touches both neighbours
    expect(r).to.deep.equal([0, 50, 100, 400]);
    expect(isVerified(r, 120, 390)).to.equal(true);
    expect(isVerified(r, 40, 120)).to.equal(false);
    clipVerified(r, 150);
    expect(r).to.deep.equal([0, 50, 100, 150]);
  });

  it('property: a byte range is verified only if every byte of it was marked (at most 8 ranges kept, the shortest dropped)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(1000), fc.nat(100)), { maxLength: 30 }), fc.nat(1100), fc.nat(100), (marks, from, len) => {
        const r: number[] = [];
        const bytes = new Set<number>();
        for (const [s, l] of marks) {
          markVerified(r, s, s + l);
          for (let b = s; b < s + l; b++) bytes.add(b);
        }
        expect(r.length).to.be.at.most(16);
        for (let i = 2; i < r.length; i += 2) expect((r[i] as number) > (r[i - 1] as number)).to.equal(true);
        if (len > 0 && isVerified(r, from, from + len)) for (let b = from; b < from + len; b++) expect(bytes.has(b)).to.equal(true);
      }),
    );
  });
});
