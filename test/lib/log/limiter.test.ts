import { expect } from 'chai';
import { Limiter } from '../../../lib/log/limiter.js';

describe('lib/log Limiter', () => {
  it('runs at most `limit` tasks at once, the rest in arrival order, and frees slots on failure', async () => {
    const limiter = new Limiter(3);
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const task = (i: number) => async (): Promise<number> => {
      started.push(i);
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 1 + (i % 4)));
      running--;
      if (i === 4) throw new Error('task 4 fails');
      return i;
    };
    const results = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => limiter.run(task(i))));
    expect(peak).to.equal(3);
    expect(started).to.deep.equal(Array.from({ length: 12 }, (_, i) => i));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : 'failed'))).to.deep.equal([
      0,
      1,
      2,
      3,
      'failed',
      5,
      6,
      7,
      8,
      9,
      10,
      11,
    ]);
    // every slot came back
    expect(await Promise.all([1, 2, 3].map((i) => limiter.run(() => Promise.resolve(i))))).to.deep.equal([1, 2, 3]);
  });
});
