/**
 * The broker's recent throughput, one sample a second for the last hour (the web console's charts at
 * /ui open with history instead of an empty axis): messages and bytes in (what Produce appended),
 * messages and bytes out (what consumer fetches returned; follower fetches are replication traffic
 * and not counted, as in Kafka's BytesOut). A sample is the difference of BrokerTopicMetrics' running
 * totals since the one before, so the Produce and Fetch paths pay nothing for it; the timer is unref'd
 * and costs one subtraction per series a second. 4 series x 3600 doubles: ~115 KB.
 */
import type { TopicStats } from './topic-metrics.js';

export const HISTORY_SECONDS = 3600;

export const SERIES = ['messagesIn', 'bytesIn', 'messagesOut', 'bytesOut'] as const;
export type SeriesName = (typeof SERIES)[number];

export interface HistorySnapshot {
  /** unix seconds of the first sample; samples are one second apart */
  start: number;
  /** per series, one value per second (the count in that second) */
  series: Record<SeriesName, number[]>;
}

export class ThroughputHistory {
  private readonly rings: Record<SeriesName, Float64Array>;
  private readonly last: Record<SeriesName, number>;
  /** unix second of the newest sample; -1 before the first */
  private newest = -1;
  private count = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly totals: TopicStats,
    private readonly capacity = HISTORY_SECONDS,
  ) {
    const ring = () => new Float64Array(capacity);
    this.rings = { messagesIn: ring(), bytesIn: ring(), messagesOut: ring(), bytesOut: ring() };
    this.last = { messagesIn: 0, bytesIn: 0, messagesOut: 0, bytesOut: 0 };
  }

  /** Starts sampling each second (idempotent). */
  start(): void {
    if (this.timer !== null) return;
    for (const s of SERIES) this.last[s] = this.totals[s];
    this.newest = Math.floor(Date.now() / 1000);
    this.timer = setInterval(() => this.sample(Math.floor(Date.now() / 1000)), 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Records what happened since the last sample under second `now`. Seconds the timer missed (a busy
   * event loop) are filled with zeros, and the whole difference goes to `now`.
   */
  sample(now: number): void {
    if (this.newest < 0) this.newest = now - 1;
    if (now <= this.newest) return;
    const gap = Math.min(now - this.newest, this.capacity);
    for (const s of SERIES) {
      const ring = this.rings[s];
      const total = this.totals[s];
      for (let i = gap - 1; i > 0; i--) ring[(now - i) % this.capacity] = 0;
      ring[now % this.capacity] = total - this.last[s];
      this.last[s] = total;
    }
    this.count = Math.min(this.count + gap, this.capacity);
    this.newest = now;
  }

  /** The samples of the last `seconds` (at most the hour kept), oldest first. */
  snapshot(seconds = this.capacity): HistorySnapshot {
    const n = Math.max(0, Math.min(seconds, this.count));
    const start = this.newest - n + 1;
    const series = {} as Record<SeriesName, number[]>;
    for (const s of SERIES) {
      const ring = this.rings[s];
      const out = new Array<number>(n);
      for (let i = 0; i < n; i++) out[i] = ring[(start + i) % this.capacity] ?? 0;
      series[s] = out;
    }
    return { start, series };
  }
}
