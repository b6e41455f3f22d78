/**
 * log.cleaner.io.max.bytes.per.second, changeable while cleanings run (Kafka's Throttler and its
 * updateDesiredRatePerSec). The main thread keeps each cleaner thread's share of the rate in shared
 * memory (ThrottleControl) that every job carries; a worker's Throttle reads it at each read or
 * write and sleeps while its I/O runs ahead of it. A change bumps a generation counter and wakes the
 * sleepers, which start a new measuring window at the new rate.
 */

/** BigInt64 slot 0: bytes per second per thread (0: unthrottled); Int32 slot at byte 8: the generation. */
const SHARED_BYTES = 16;
/** Rates at or above this are no limit (Kafka's default is Double.MAX_VALUE). */
const UNLIMITED = 2 ** 62;
/** The measuring window: a rate change or a long pause never carries further than this. */
const WINDOW_MS = 1000;

function views(shared: SharedArrayBuffer): { rate: BigInt64Array; gen: Int32Array } {
  return { rate: new BigInt64Array(shared, 0, 1), gen: new Int32Array(shared, 8, 1) };
}

/** The main thread's side: one per cleaner, shared with every job it hands out. */
export class ThrottleControl {
  readonly shared = new SharedArrayBuffer(SHARED_BYTES);
  private readonly v = views(this.shared);

  constructor(bytesPerSecond = Infinity) {
    this.set(bytesPerSecond);
  }

  /** Bytes per second each thread may read and write now (Infinity, or ≥ 2^62: no limit); wakes sleeping threads. */
  set(bytesPerSecond: number): void {
    const next = !Number.isFinite(bytesPerSecond) || bytesPerSecond >= UNLIMITED ? 0n : BigInt(Math.max(1, Math.floor(bytesPerSecond)));
    if (Atomics.load(this.v.rate, 0) === next) return;
    Atomics.store(this.v.rate, 0, next);
    Atomics.add(this.v.gen, 0, 1);
    Atomics.notify(this.v.gen, 0);
  }

  /** The rate per thread now (Infinity: no limit). */
  get bytesPerSecond(): number {
    const r = Atomics.load(this.v.rate, 0);
    return r === 0n ? Infinity : Number(r);
  }
}

/** A control of its own at a fixed rate (tests, tools). */
export function fixedRate(bytesPerSecond = Infinity): SharedArrayBuffer {
  return new ThrottleControl(bytesPerSecond).shared;
}

/** The worker's side: sleeps the thread (Atomics.wait) when its I/O runs ahead of the shared rate. */
export class Throttle {
  private readonly v: { rate: BigInt64Array; gen: Int32Array };
  private gen: number;
  private start = performance.now();
  private bytes = 0;

  constructor(shared: SharedArrayBuffer) {
    this.v = views(shared);
    this.gen = Atomics.load(this.v.gen, 0);
  }

  private restart(gen: number): void {
    this.gen = gen;
    this.start = performance.now();
    this.bytes = 0;
  }

  add(n: number): void {
    const gen = Atomics.load(this.v.gen, 0);
    if (gen !== this.gen) this.restart(gen);
    const rate = Number(Atomics.load(this.v.rate, 0));
    if (rate === 0) return;
    this.bytes += n;
    const elapsed = performance.now() - this.start;
    const ahead = (this.bytes / rate) * 1000 - elapsed;
    // woken early ('ok' or 'not-equal'): the rate changed, the next add measures against the new one
    if (ahead > 1 && Atomics.wait(this.v.gen, 0, gen, ahead) !== 'timed-out') return;
    if (performance.now() - this.start > WINDOW_MS) this.restart(gen);
  }
}
