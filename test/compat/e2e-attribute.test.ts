/**
 * compat/bench/e2e-attribute.ts's arithmetic: each round [start, start + latency] set beside the
 * broker's GCs and loop stalls (all on CLOCK_MONOTONIC µs).
 */
import { expect } from 'chai';
import { attribute } from '../../compat/bench/e2e-attribute.js';
import type { TraceEvent } from '../../compat/bench/e2e-broker-trace.js';

describe('e2e-attribute: slow rounds beside broker events', () => {
  // 1,000 rounds of 100 µs back to back from t=1,000,000 µs, except:
  //  round 10: 3,000 µs, a GC inside it; round 20: 2,500 µs, only a stall inside it;
  //  round 30: 2,000 µs with nothing inside it, and slow in the wait after its ack
  const n = 1000;
  const lat = Array.from({ length: n }, () => 100);
  lat[10] = 3000;
  lat[20] = 2500;
  lat[30] = 2000;
  const starts: number[] = [];
  let t = 1_000_000;
  for (const l of lat) {
    starts.push(t);
    t += l + 10;
  }
  const acks = lat.map((l) => l - 10);
  acks[30] = 50;
  const events: TraceEvent[] = [
    ['gc', (starts[10] ?? 0) + 500, 2000, 1],
    ['stall', (starts[20] ?? 0) + 100, 2000, 0],
    ['stall', (starts[10] ?? 0) + 400, 2200, 0], // a GC's stall as well: counted as the GC
    ['gc', 10, 5000, 1], // long before the run: not counted
  ];
  const a = attribute(lat, { acksUs: acks, startsUs: starts }, events);

  it('counts only the events within the timed rounds', () => {
    expect(a.gcs).to.equal(1);
    expect(a.gcMaxMs).to.equal(2);
    expect(a.stalls).to.equal(2);
    expect(a.roundsOverlappingGc).to.equal(1);
    expect(a.overlappingGcP50Ms).to.equal(3);
  });

  it('splits the slowest rounds by what they overlapped and by ack or after', () => {
    expect(a.slowest01pct).to.deep.equal({ rounds: 1, gc: 1, stallOnly: 0, neither: 0, ackDominated: 1 });
    expect(a.slowest1pct).to.deep.include({ rounds: 10, gc: 1, stallOnly: 1 });
    expect(a.slowest1pct.neither).to.equal(8);
    // every slow round but round 30 (ack 50 µs of 2,000) had its time before the delivery report
    expect(a.slowest1pct.ackDominated).to.equal(9);
  });

  it('reports the percentiles of the latencies', () => {
    expect(a.rounds).to.equal(n);
    expect(a.p50Ms).to.equal(0.1);
    expect(a.p999Ms).to.be.within(2, 3);
  });
});
