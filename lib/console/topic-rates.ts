/**
 * Per-topic throughput for the topic list: the per-topic meters (BrokerTopicMetrics) are snapshotted
 * every 10 s while the console is loaded, and a topic's rate is the growth since the snapshot before
 * the last one (10-20 s ago) over the time between.
 */
import type { BrokerTopicMetrics } from '../observability/topic-metrics.js';

interface Snapshot {
  at: number;
  counts: Map<string, { messagesIn: number; bytesIn: number; messagesOut: number; bytesOut: number }>;
}

export interface TopicRate {
  messagesInPerSec: number;
  bytesInPerSec: number;
  messagesOutPerSec: number;
  bytesOutPerSec: number;
}

const ZERO: TopicRate = { messagesInPerSec: 0, bytesInPerSec: 0, messagesOutPerSec: 0, bytesOutPerSec: 0 };

export class TopicRates {
  private older: Snapshot;
  private newer: Snapshot;

  constructor(
    private readonly meters: BrokerTopicMetrics,
    signal: AbortSignal,
    everyMs = 10_000,
  ) {
    this.older = this.newer = this.take();
    const timer = setInterval(() => {
      this.older = this.newer;
      this.newer = this.take();
    }, everyMs);
    timer.unref();
    signal.addEventListener('abort', () => clearInterval(timer), { once: true });
  }

  private take(): Snapshot {
    const counts: Snapshot['counts'] = new Map();
    for (const [name, s] of this.meters.topics())
      counts.set(name, { messagesIn: s.messagesIn, bytesIn: s.bytesIn, messagesOut: s.messagesOut, bytesOut: s.bytesOut });
    return { at: Date.now(), counts };
  }

  rate(topic: string): TopicRate {
    const then = this.older.counts.get(topic);
    const seconds = (Date.now() - this.older.at) / 1000;
    const s = this.meters.peek(topic);
    if (s === undefined || seconds < 1) return ZERO;
    const d = (a: number, b: number | undefined) => Math.max(0, a - (b ?? 0)) / seconds;
    return {
      messagesInPerSec: d(s.messagesIn, then?.messagesIn),
      bytesInPerSec: d(s.bytesIn, then?.bytesIn),
      messagesOutPerSec: d(s.messagesOut, then?.messagesOut),
      bytesOutPerSec: d(s.bytesOut, then?.bytesOut),
    };
  }
}
