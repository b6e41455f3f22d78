/**
 * The message browser's "newest" read of a topic with many partitions (issue 19): only the `limit`
 * partitions with the newest largest timestamps are read, which hold the topic's newest `limit`
 * records; the cases where that does not apply fall back to reading every partition.
 */
import { expect } from 'chai';
import { END_SCAN, newestPartitions, type Selection } from '../../../lib/console/browse.js';
import { routeName } from '../../../lib/console/timing.js';
import type { TopicLogs } from '../../../lib/topics.js';

function logsWith(maxTimestamps: bigint[]): TopicLogs {
  return maxTimestamps.map((ts) => ({
    summary: () => ({ segments: [{ maxTimestamp: ts - 1000n }, { maxTimestamp: ts }] }),
  })) as unknown as TopicLogs;
}

function sel(over: Partial<Selection> = {}): Selection {
  return { partitions: [], from: 'end', offset: 0n, timestamp: 0n, cursor: new Map(), limit: 50, q: '', filter: null, ...over };
}

describe('console message browser: newest records of a wide topic', () => {
  const n = 300;
  // partition p's newest record is at 1_000_000 + (p * 7919) % n: a shuffled order
  const ts = Array.from({ length: n }, (_v, p) => 1_000_000n + BigInt((p * 7919) % n));
  const all = Array.from({ length: n }, (_v, p) => p);

  it('reads only the `limit` partitions with the newest timestamps, `limit` deep', () => {
    const got = newestPartitions(sel(), logsWith(ts), all);
    expect(n * 50).to.be.greaterThan(END_SCAN);
    expect(got).to.not.equal(null);
    const want = [...all].sort((a, b) => Number(ts[b]! - ts[a]!)).slice(0, 50);
    expect(got!.partitions).to.have.members(want);
    expect(got!.depth).to.equal(50);
  });

  it('keeps the whole-topic read for a search, a filter, another start, few partitions, or no timestamps', () => {
    expect(newestPartitions(sel({ q: 'x' }), logsWith(ts), all)).to.equal(null);
    expect(newestPartitions(sel({ from: 'start' }), logsWith(ts), all)).to.equal(null);
    expect(newestPartitions(sel(), logsWith(ts), all.slice(0, 10))).to.equal(null);
    // a partition without timestamps sorts last: the top is still timed; a top holding one is not exact
    const untimed = [...ts];
    untimed[0] = -1n;
    expect(newestPartitions(sel(), logsWith(untimed), all)?.partitions).to.not.include(0);
    expect(newestPartitions(sel(), logsWith(ts.map(() => -1n)), all)).to.equal(null);
  });

  it('names console routes for Server-Timing and /ui/api/timings', () => {
    expect(routeName('GET', /^\/topics\/([^/]+)\/messages$/)).to.equal('GET /topics/:p/messages');
    expect(routeName('GET', /^\/overview$/)).to.equal('GET /overview');
  });
});
