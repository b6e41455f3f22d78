/**
 * A rate over `samples` windows of `windowMs` each, as Kafka's Rate over a SampledStat: a sample
 * older than samples × windowMs is forgotten, and the rate divides the samples' sum by the time
 * since the oldest one began, but by no less than (samples − 1) windows, so that a new client's
 * first burst is measured against the whole window. Throttle time as Kafka's QuotaUtils: the time
 * that brings the rate back to the bound, (rate − bound) / bound × the window measured.
 */
export class SampledRate {
  private readonly starts: number[];
  private readonly values: number[];
  private current = 0;

  constructor(
    private readonly samples: number,
    private readonly windowMs: number,
    now: number,
  ) {
    this.starts = new Array<number>(samples).fill(now);
    this.values = new Array<number>(samples).fill(0);
  }

  /** Adds `value` at time `now` (ms). */
  record(value: number, now: number): void {
    this.purge(now);
    if (now - (this.starts[this.current] ?? now) >= this.windowMs) {
      this.current = (this.current + 1) % this.samples;
      this.starts[this.current] = now;
      this.values[this.current] = 0;
    }
    this.values[this.current] = (this.values[this.current] ?? 0) + value;
  }

  /** Takes `value` back (Kafka un-records a throttled fetch's bytes: its response goes out empty). */
  unrecord(value: number): void {
    this.values[this.current] = (this.values[this.current] ?? 0) - value;
  }

  /** The window the rate is measured over now, in ms. */
  windowSize(now: number): number {
    this.purge(now);
    const oldest = Math.min(...this.starts);
    let elapsed = now - oldest;
    const full = Math.floor(elapsed / this.windowMs);
    if (full < this.samples - 1) elapsed += (this.samples - 1 - full) * this.windowMs;
    return elapsed;
  }

  /** Units per second. */
  rate(now: number): number {
    const ms = this.windowSize(now);
    let sum = 0;
    for (const v of this.values) sum += v;
    return ms <= 0 ? 0 : (sum * 1000) / ms;
  }

  /** The throttle time (ms) a bound (units per second) calls for now; 0 while the rate is within it. */
  throttleMs(bound: number, now: number): number {
    const rate = this.rate(now);
    if (rate <= bound || bound <= 0) return 0;
    return Math.round(((rate - bound) / bound) * this.windowSize(now));
  }

  /** Whether every sample has expired (the sensor can go). */
  idle(now: number): boolean {
    return this.starts.every((s, i) => this.values[i] === 0 || now - s >= this.samples * this.windowMs);
  }

  private purge(now: number): void {
    const expiry = this.samples * this.windowMs;
    for (let i = 0; i < this.samples; i++) {
      if (now - (this.starts[i] ?? now) >= expiry) {
        this.starts[i] = now;
        this.values[i] = 0;
      }
    }
  }
}
