import { expect } from 'chai';
import { DEFAULT_HEADROOM_BYTES, growingPercent, headroomFromEnv, startHeapHeadroom } from '../../lib/heap-headroom.js';

const MB = 2 ** 20;

describe('heap headroom (V8 growing percent of the broker process)', () => {
  it('keeps the headroom above a small live heap, within 100%..1000%, and leaves a large one to V8', () => {
    expect(growingPercent(10 * MB, 64 * MB)).to.equal(640);
    expect(growingPercent(32 * MB, 64 * MB)).to.equal(200);
    expect(growingPercent(60 * MB, 64 * MB)).to.equal(107);
    expect(growingPercent(1 * MB, 64 * MB)).to.equal(1000);
    expect(growingPercent(0, 64 * MB)).to.equal(1000);
    expect(growingPercent(64 * MB, 64 * MB)).to.equal(0);
    expect(growingPercent(500 * MB, 64 * MB)).to.equal(0);
    expect(growingPercent(10 * MB, 0)).to.equal(0);
  });

  it('reads GREGOR_HEAP_HEADROOM_MB, falling back to the default for anything but a number >= 0', () => {
    expect(headroomFromEnv(undefined)).to.equal(DEFAULT_HEADROOM_BYTES);
    expect(headroomFromEnv('')).to.equal(DEFAULT_HEADROOM_BYTES);
    expect(headroomFromEnv('lots')).to.equal(DEFAULT_HEADROOM_BYTES);
    expect(headroomFromEnv('-1')).to.equal(DEFAULT_HEADROOM_BYTES);
    expect(headroomFromEnv('0')).to.equal(0);
    expect(headroomFromEnv('128')).to.equal(128 * MB);
  });

  it('sets the flag from the live heap, follows a growing heap between collections, and restores V8 on stop', () => {
    const flags: string[] = [];
    let used = 10 * MB;
    const h = startHeapHeadroom({ headroomBytes: 64 * MB, setFlags: (f) => flags.push(f), heapUsed: () => used });
    try {
      expect(flags).to.deep.equal(['--heap-growing-percent=640']);
      // garbage between full collections (within headroom + young generation) changes nothing
      used = 90 * MB;
      h.update(false);
      expect(h.percent).to.equal(640);
      // a heap in use beyond what garbage explains: the live heap grew
      used = 10 * MB + 64 * MB + 32 * MB + 22 * MB;
      h.update(false);
      expect(h.percent).to.equal(200);
      // a full collection measures the live heap itself
      used = 16 * MB;
      h.update(true);
      expect(h.percent).to.equal(400);
      used = 100 * MB;
      h.update(true);
      expect(h.percent).to.equal(0);
      expect(flags).to.deep.equal([
        '--heap-growing-percent=640',
        '--heap-growing-percent=200',
        '--heap-growing-percent=400',
        '--heap-growing-percent=0',
      ]);
      used = 10 * MB;
      h.update(true);
    } finally {
      h.stop();
    }
    expect(flags.at(-1)).to.equal('--heap-growing-percent=0');
    expect(h.percent).to.equal(0);
  });

  it('withV8Defaults runs a function under V8 defaults (for a code cache made after ready) and applies the percent again, even if it throws', () => {
    const flags: string[] = [];
    const h = startHeapHeadroom({ headroomBytes: 64 * MB, setFlags: (f) => flags.push(f), heapUsed: () => 10 * MB });
    try {
      const seen = h.withV8Defaults(() => flags.at(-1));
      expect(seen).to.equal('--heap-growing-percent=0');
      expect(() =>
        h.withV8Defaults(() => {
          throw new Error('cache write failed');
        }),
      ).to.throw('cache write failed');
      expect(flags).to.deep.equal([
        '--heap-growing-percent=640',
        '--heap-growing-percent=0',
        '--heap-growing-percent=640',
        '--heap-growing-percent=0',
        '--heap-growing-percent=640',
      ]);
      expect(h.percent).to.equal(640);
    } finally {
      h.stop();
    }
  });

  it('does nothing with a headroom of 0', () => {
    const flags: string[] = [];
    const h = startHeapHeadroom({ headroomBytes: 0, setFlags: (f) => flags.push(f), heapUsed: () => 10 * MB });
    h.update(true);
    expect(h.withV8Defaults(() => 7)).to.equal(7);
    h.stop();
    expect(flags).to.deep.equal([]);
  });
});
