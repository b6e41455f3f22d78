/**
 * Per-second history of something per key (a topic's throughput, a group's total lag), for the
 * console's topic and group pages: each key gets a SecondRing of the last `capacity` seconds once it
 * has something to show. Bounded: at most `maxKeys` rings (the key idle longest gives its ring up);
 * a counter key whose counts have not moved for a whole ring gives it up too, so idle topics cost
 * only their last totals; keys no longer reported (a deleted topic or group) are forgotten.
 * - kind 'counter': the reported values are running totals from zero; the ring keeps each second's difference.
 * - kind 'gauge': the reported values are kept as they are (a missed second holds the value).
 */
import { SecondRing } from './second-ring.js';

interface Entry {
  ring: SecondRing | null;
  /** counters: the totals of the last sample */
  last: number[];
  /** unix second when the values last moved (counters) or were reported (gauges) */
  active: number;
  seen: number;
}

export interface KeyedSnapshot {
  /** unix seconds of the first sample; samples are one second apart */
  start: number;
  series: Record<string, number[]>;
}

export class KeyedHistory {
  private readonly entries = new Map<string, Entry>();
  private rings = 0;
  private readonly scratch: Float64Array;

  constructor(
    readonly series: readonly string[],
    private readonly opts: { kind: 'counter' | 'gauge'; capacity: number; maxKeys: number },
  ) {
    this.scratch = new Float64Array(series.length);
  }

  /** Takes second `now`'s values of every key; keys not in `rows` are forgotten. */
  sample(now: number, rows: Iterable<readonly [string, ArrayLike<number>]>): void {
    const counter = this.opts.kind === 'counter';
    for (const [key, values] of rows) {
      let e = this.entries.get(key);
      if (e === undefined) {
        // a counter's totals start at zero with the process (the meters are made on a key's first
        // count): what it holds at first sight happened since the last sample
        e = { ring: null, last: new Array<number>(this.series.length).fill(0), active: -1, seen: now };
        this.entries.set(key, e);
      }
      e.seen = now;
      let moved = !counter;
      for (let i = 0; i < this.series.length; i++) {
        const v = values[i] ?? 0;
        const d = counter ? v - (e.last[i] ?? 0) : v;
        if (counter) e.last[i] = v;
        if (d !== 0) moved = true;
        this.scratch[i] = d;
      }
      if (moved) e.active = now;
      if (e.ring === null) {
        if (!moved) continue;
        e.ring = this.newRing();
      } else if (counter && now - e.active >= this.opts.capacity) {
        e.ring = null;
        this.rings--;
        continue;
      }
      e.ring.put(now, this.scratch, !counter);
    }
    for (const [key, e] of this.entries)
      if (e.seen !== now) {
        if (e.ring !== null) this.rings--;
        this.entries.delete(key);
      }
  }

  private newRing(): SecondRing {
    if (this.rings >= this.opts.maxKeys) {
      let idlest: Entry | undefined;
      for (const e of this.entries.values()) if (e.ring !== null && (idlest === undefined || e.active < idlest.active)) idlest = e;
      if (idlest !== undefined) {
        idlest.ring = null;
        this.rings--;
      }
    }
    this.rings++;
    return new SecondRing(this.series.length, this.opts.capacity);
  }

  /** The last `seconds` of `key` (empty series when it has no history). */
  snapshot(key: string, seconds = this.opts.capacity): KeyedSnapshot {
    const ring = this.entries.get(key)?.ring ?? null;
    const series: Record<string, number[]> = {};
    if (ring === null) {
      for (const s of this.series) series[s] = [];
      return { start: Math.floor(Date.now() / 1000), series };
    }
    const { start, columns } = ring.snapshot(seconds);
    this.series.forEach((s, i) => (series[s] = columns[i] ?? []));
    return { start, series };
  }

  /** Keys with a ring (for tests and the bound). */
  get ringCount(): number {
    return this.rings;
  }
}
