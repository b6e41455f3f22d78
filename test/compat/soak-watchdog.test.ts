/** The soak's stall watchdog (compat/soak/watchdog.ts): which client made no progress, once per stall. */
import { expect } from 'chai';
import { Watchdog } from '../../compat/soak/watchdog.js';

describe('compat/soak stall watchdog', () => {
  it('names a client without progress for the stall period once, says when it resumes, and ignores clients not expected to move', () => {
    const lines: string[] = [];
    const w = new Watchdog(10_000, (line) => lines.push(line));
    let acked = 0;
    let delivered = 0;
    let groupBehind = true;
    w.watch({ name: 'producer p', count: () => acked, expected: () => true, detail: () => 'between sends' });
    w.watch({ name: 'group g', count: () => delivered, expected: () => groupBehind, detail: () => '0 members (), running' });
    const t0 = performance.now();
    expect(w.check(t0 + 5_000)).to.deep.equal([]);
    acked = 10;
    expect(w.check(t0 + 9_000)).to.deep.equal([]);
    // the group has not moved for 11 s while behind; the producer moved at 9 s
    expect(w.check(t0 + 11_000)).to.deep.equal(['group g']);
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/^soak: STALL group g made no progress for 11 s \(count 0\): 0 members \(\), running$/);
    // still stalled: reported once
    expect(w.check(t0 + 30_000)).to.deep.equal(['producer p', 'group g']);
    expect(lines.filter((l) => l.includes('group g'))).to.have.length(1);
    expect(lines[1]).to.match(/^soak: STALL producer p made no progress for 21 s \(count 10\): between sends$/);
    expect(w.stalls.get('producer p')).to.equal(1);
    delivered = 5;
    expect(w.check(t0 + 31_000)).to.deep.equal(['producer p']);
    expect(lines[2]).to.equal('soak: group g resumed after 31 s without progress');
    // not behind: no stall however long it stays still
    groupBehind = false;
    expect(w.check(t0 + 100_000)).to.deep.equal(['producer p']);
    expect(w.stalls.get('group g')).to.equal(1);
  });
});
