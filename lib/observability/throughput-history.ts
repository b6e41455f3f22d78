/**
 * The broker's recent throughput, one sample a second for the last hour (the web console's charts at
 * /ui open with history instead of an empty axis): messages and bytes in (what Produce appended),
 * messages and bytes out (what consumer fetches returned; follower fetches are replication traffic
 * and not counted, as in Kafka's BytesOut). A sample is the difference of BrokerTopicMetrics' running
 * totals since the one before, so the Produce and Fetch paths pay nothing for it; the timer is unref'd
 * and costs one subtraction per series a second. 4 series x 3600 doubles: ~115 KB.
 */
import { SecondRing } from './second-ring.js';
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
  private readonly ring: SecondRing;
  private readonly last: Record<SeriesName, number>;
  private readonly delta = new Float64Array(SERIES.length);
  private readonly samplers: ((now: number) => void)[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly totals: TopicStats,
    capacity = HISTORY_SECONDS,
  ) {
    this.ring = new SecondRing(SERIES.length, capacity);
    this.last = { messagesIn: 0, bytesIn: 0, messagesOut: 0, bytesOut: 0 };
  }

  /** Runs `sampler` with each second's sample (per-topic and per-group histories ride on this timer). */
  addSampler(sampler: (now: number) => void): void {
    this.samplers.push(sampler);
  }

  /** Starts sampling each second (idempotent). */
  start(): void {
    if (this.timer !== null) return;
    for (const s of SERIES) this.last[s] = this.totals[s];
    this.ring.newest = Math.floor(Date.now() / 1000);
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
    if (!this.ring.accepts(now)) return;
    SERIES.forEach((s, i) => {
      const total = this.totals[s];
      this.delta[i] = total - this.last[s];
      this.last[s] = total;
    });
    this.ring.put(now, this.delta);
    for (const f of this.samplers) f(now);
  }

  /** The samples of the last `seconds` (at most the hour kept), oldest first. */
  snapshot(seconds = this.ring.capacity): HistorySnapshot {
    const { start, columns } = this.ring.snapshot(seconds);
    const series = {} as Record<SeriesName, number[]>;
    SERIES.forEach((s, i) => (series[s] = columns[i] ?? []));
    return { start, series };
  }
}
