/**
 * Latency histograms that are cheap to record into on the request path and give Kafka's percentiles
 * at scrape time: log-linear buckets over microseconds (8 per power of two, so a bucket's midpoint is
 * within ~6% of any value in it), kept per minute in a ring of WINDOW_MINUTES slots. A set holds
 * several timers side by side (a request's six times), so one observation checks the minute once and
 * does one increment per timer into one array: no allocation. Percentiles are read over the slots of
 * the last WINDOW_MINUTES minutes, as Kafka's Yammer histograms are biased toward the last five
 * minutes; `count` is since start.
 */

const SUB_BITS = 3;
const SUB = 1 << SUB_BITS;
/** values up to 2^31 µs (~36 minutes); larger ones land in the last bucket */
const MAX_EXP = 30;
export const BUCKETS = (MAX_EXP - SUB_BITS + 2) * SUB;
/** the first value of the last bucket (a constant: V8 computes `2 ** n` with a pow() call in optimized code) */
const LAST_BUCKET_US = 2 ** (MAX_EXP + 1);
export const WINDOW_MINUTES = 5;
const MINUTE_MS = 60_000;

/** The bucket of a value in microseconds (integer >= 0). */
export function bucketOf(us: number): number {
  if (us < SUB) return us < 0 ? 0 : us;
  if (us >= LAST_BUCKET_US) return BUCKETS - 1;
  const e = 31 - Math.clz32(us);
  return (e - SUB_BITS + 1) * SUB + ((us >>> (e - SUB_BITS)) & (SUB - 1));
}

/** The bucket of a value in milliseconds. */
export function bucketOfMs(ms: number): number {
  return ms <= 0 ? 0 : bucketOf(Math.round(ms * 1000));
}

/** The midpoint (µs) of a bucket's range. */
export function bucketValue(b: number): number {
  if (b < SUB) return b;
  const e = Math.floor(b / SUB) + SUB_BITS - 1;
  const m = b % SUB;
  const width = 2 ** (e - SUB_BITS);
  return (SUB + m) * width + width / 2;
}

export class WindowedHistograms {
  /** per minute slot, `timers` bucket arrays back to back; allocated on first use */
  private readonly slots: (Uint32Array | undefined)[] = new Array<Uint32Array | undefined>(WINDOW_MINUTES);
  /** the minute (since the clock's origin) each slot holds */
  private readonly minutes = new Float64Array(WINDOW_MINUTES).fill(-1);
  private currentMinute = -1;
  private current: Uint32Array | undefined;
  /** observations since start */
  count = 0;

  constructor(readonly timers: number) {}

  /**
   * Starts an observation at `nowMs` (performance.now() time): returns the bucket array of the
   * current minute, into which the caller adds one to `timer * BUCKETS + bucketOfMs(ms)` per timer.
   */
  observe(nowMs: number): Uint32Array {
    this.count++;
    const minute = Math.floor(nowMs / MINUTE_MS);
    if (minute === this.currentMinute) return this.current!;
    const i = minute % WINDOW_MINUTES;
    let slot = this.slots[i];
    if (slot === undefined) this.slots[i] = slot = new Uint32Array(BUCKETS * this.timers);
    else if (this.minutes[i] !== minute) slot.fill(0);
    this.minutes[i] = minute;
    this.currentMinute = minute;
    this.current = slot;
    return slot;
  }

  /** Records one value of one timer (tests and single-timer use). */
  record(timer: number, ms: number, nowMs: number): void {
    this.observe(nowMs)[timer * BUCKETS + bucketOfMs(ms)]!++;
  }

  /** Timer `timer`'s `qs` quantiles (0..1) in ms over the last WINDOW_MINUTES minutes; zeros when nothing was recorded there. */
  quantiles(timer: number, qs: readonly number[], nowMs: number): number[] {
    const current = Math.floor(nowMs / MINUTE_MS);
    const merged = new Float64Array(BUCKETS);
    const base = timer * BUCKETS;
    let total = 0;
    for (let i = 0; i < WINDOW_MINUTES; i++) {
      const slot = this.slots[i];
      const minute = this.minutes[i]!;
      if (slot === undefined || minute < 0 || minute <= current - WINDOW_MINUTES || minute > current) continue;
      for (let b = 0; b < BUCKETS; b++) {
        const n = slot[base + b]!;
        if (n !== 0) {
          merged[b]! += n;
          total += n;
        }
      }
    }
    return qs.map((q) => {
      if (total === 0) return 0;
      // nearest rank: the smallest value with at least q of the observations at or below it
      const rank = Math.min(total, Math.max(1, Math.ceil(q * total)));
      let seen = 0;
      for (let b = 0; b < BUCKETS; b++) {
        seen += merged[b]!;
        if (seen >= rank) return bucketValue(b) / 1000;
      }
      return bucketValue(BUCKETS - 1) / 1000;
    });
  }
}
