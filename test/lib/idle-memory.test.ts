import { expect } from 'chai';
import vm from 'node:vm';
import { DEFAULT_IDLE_MS, gcFunction, idleMsFromEnv, SHRINK_AFTER_MS, startIdleMemory } from '../../lib/idle-memory.js';

const MB = 2 ** 20;

/** A reducer on fakes: the test sets the utilization, slack and clock, and calls check() itself. */
function fakeReducer(idleMs = 3000) {
  const io = { utilization: 0, activity: 0, slack: 64 * MB, slackAfterCompaction: 4 * MB, now: 0, steps: [] as string[] };
  const r = startIdleMemory({
    idleMs,
    checkMs: 1000,
    minSlackBytes: 16 * MB,
    utilization: () => io.utilization,
    activity: () => io.activity,
    slack: () => io.slack,
    compact: () => {
      io.steps.push('compact');
      io.slack = io.slackAfterCompaction;
    },
    shrinkYoung: () => io.steps.push('shrink'),
    now: () => io.now,
  });
  /** n checks, one a second. */
  const tick = (n = 1): void => {
    for (let i = 0; i < n; i++) {
      io.now += 1000;
      r.check();
    }
  };
  return { io, r, tick };
}

describe('idle memory (heap given back once the broker process is idle)', () => {
  it('reads GREGOR_IDLE_GC_MS, falling back to the default for anything but a number >= 0', () => {
    expect(idleMsFromEnv(undefined)).to.equal(DEFAULT_IDLE_MS);
    expect(idleMsFromEnv('')).to.equal(DEFAULT_IDLE_MS);
    expect(idleMsFromEnv('soon')).to.equal(DEFAULT_IDLE_MS);
    expect(idleMsFromEnv('-5')).to.equal(DEFAULT_IDLE_MS);
    expect(idleMsFromEnv('0')).to.equal(0);
    expect(idleMsFromEnv('2500')).to.equal(2500);
  });

  it('does not reduce while records move, however quiet the event loop', () => {
    const { io, r, tick } = fakeReducer();
    try {
      for (let i = 0; i < 60; i++) {
        io.activity += 200; // a steady trickle: 200 records a second at a 1% busy loop
        io.utilization = 0.01;
        tick();
      }
      expect(io.steps).to.deep.equal([]);
      // the trickle stops: idle from the next check on
      tick(2);
      expect(io.steps).to.deep.equal([]);
      tick();
      expect(io.steps).to.deep.equal(['compact']);
    } finally {
      r.stop();
    }
  });

  it('compacts after idleMs of idleness, shrinks the young generation SHRINK_AFTER_MS later, once per idle stretch', () => {
    const { io, r, tick } = fakeReducer();
    try {
      tick(2);
      expect(io.steps).to.deep.equal([]);
      tick();
      expect(io.steps).to.deep.equal(['compact']);
      tick(SHRINK_AFTER_MS / 1000 - 1);
      expect(io.steps).to.deep.equal(['compact']);
      tick();
      expect(io.steps).to.deep.equal(['compact', 'shrink']);
      tick(30);
      expect(io.steps).to.deep.equal(['compact', 'shrink']);
      expect(r.stats).to.deep.equal({ compactions: 1, shrinks: 1 });
      // a busy second arms it again (the heap grew)
      io.utilization = 0.5;
      io.slack = 64 * MB;
      tick();
      io.utilization = 0.01;
      tick(3);
      expect(io.steps).to.deep.equal(['compact', 'shrink', 'compact']);
    } finally {
      r.stop();
    }
  });

  it('waits while the event loop is busy, and leaves a heap with little slack alone', () => {
    const { io, r, tick } = fakeReducer();
    try {
      io.utilization = 0.2;
      tick(10);
      expect(io.steps).to.deep.equal([]);
      // idle again: the count starts over
      io.utilization = 0;
      tick(2);
      io.utilization = 0.2;
      tick();
      io.utilization = 0;
      tick(2);
      expect(io.steps).to.deep.equal([]);
      io.slack = 4 * MB;
      tick(10);
      expect(io.steps).to.deep.equal([]);
      // the heap grew while idle (a timer's work, say): compacted once it has
      io.slack = 20 * MB;
      tick();
      expect(io.steps).to.deep.equal(['compact']);
      // busy between the steps: no shrink until idle (and compacted) again
      io.utilization = 0.9;
      tick();
      io.utilization = 0;
      io.slack = 4 * MB;
      tick(20);
      expect(io.steps).to.deep.equal(['compact']);
    } finally {
      r.stop();
    }
  });

  it('does not repeat a compaction that gave nothing back until the slack grows past what it left', () => {
    const { io, r, tick } = fakeReducer();
    io.slackAfterCompaction = 34 * MB; // e.g. a young generation still at its largest
    try {
      tick(3);
      expect(io.steps).to.deep.equal(['compact']);
      // a busy second right after (recompiling what the collection flushed), then idle again
      io.utilization = 0.3;
      tick();
      io.utilization = 0;
      tick(3);
      expect(io.steps, 'no second compaction: only the young generation shrink').to.deep.equal(['compact', 'shrink']);
      io.utilization = 0.3;
      tick();
      io.utilization = 0;
      tick(30);
      expect(io.steps).to.deep.equal(['compact', 'shrink', 'shrink']);
      // the heap grew by more than the minimum slack beyond what the compaction left: compacted again
      io.utilization = 0.3;
      io.slack = 51 * MB;
      tick();
      io.utilization = 0;
      tick(3);
      expect(io.steps).to.deep.equal(['compact', 'shrink', 'shrink', 'compact']);
    } finally {
      r.stop();
    }
  });

  it('is off at idleMs 0', () => {
    const { io, r, tick } = fakeReducer(0);
    tick(60);
    r.stop();
    expect(io.steps).to.deep.equal([]);
  });

  it("reaches V8's collector without --expose-gc and leaves the flag off", () => {
    const gc = gcFunction();
    expect(gc).to.be.a('function');
    gc({ type: 'minor' });
    // a context made now has no gc(): the flag is off again (unless this process has it from the start)
    if (typeof (globalThis as { gc?: unknown }).gc !== 'function') expect(vm.runInNewContext('typeof gc')).to.equal('undefined');
  });
});
