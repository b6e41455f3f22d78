/**
 * A ring of per-second samples of a few series (the console's charts): one value per series per unix
 * second, the last `capacity` seconds kept. Seconds nobody sampled (a busy event loop, a timer that
 * fired late) are filled with zeros for counts, or with the new value for gauges (a lag held).
 */
export class SecondRing {
  private readonly columns: Float64Array[];
  /** unix second of the newest sample; -1 before the first */
  newest = -1;
  private count = 0;

  constructor(
    width: number,
    readonly capacity: number,
  ) {
    this.columns = Array.from({ length: width }, () => new Float64Array(capacity));
  }

  /** Whether a sample under second `now` would be taken (the first, or a later second than the newest). */
  accepts(now: number): boolean {
    return this.newest < 0 || now > this.newest;
  }

  /** Puts `values` (one per series) under second `now`; the seconds since the newest get zeros or, with `hold`, the same values. */
  put(now: number, values: ArrayLike<number>, hold = false): void {
    if (this.newest < 0) this.newest = now - 1;
    if (now <= this.newest) return;
    const gap = Math.min(now - this.newest, this.capacity);
    for (let c = 0; c < this.columns.length; c++) {
      const col = this.columns[c] as Float64Array;
      const v = values[c] ?? 0;
      for (let i = gap - 1; i > 0; i--) col[(now - i) % this.capacity] = hold ? v : 0;
      col[now % this.capacity] = v;
    }
    this.count = Math.min(this.count + gap, this.capacity);
    this.newest = now;
  }

  /** The samples of the last `seconds` (at most the capacity), oldest first, per series. */
  snapshot(seconds = this.capacity): { start: number; columns: number[][] } {
    const n = Math.max(0, Math.min(seconds, this.count));
    const start = this.newest - n + 1;
    const columns = this.columns.map((col) => {
      const out = new Array<number>(n);
      for (let i = 0; i < n; i++) out[i] = col[(start + i) % this.capacity] ?? 0;
      return out;
    });
    return { start, columns };
  }
}
