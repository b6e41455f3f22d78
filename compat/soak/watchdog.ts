/**
 * The soak's stall watchdog: every client that should be making progress (a producer getting
 * acknowledgements while the load runs, a group delivering while records it has not seen exist)
 * is watched by a counter; one that has not moved for the stall period is reported by name, with
 * what it was doing, once per stall, and again when it resumes. A stalled soak then says which
 * client stopped instead of just never finishing.
 */

export interface Watched {
  name: string;
  /** a counter that grows while the client makes progress (records acknowledged, delivered) */
  count: () => number;
  /** whether progress is expected now (e.g. the load is running, or the group is behind) */
  expected: () => boolean;
  /** what the client is doing, for the report (members, phase, last error) */
  detail?: () => string;
}

interface State {
  w: Watched;
  last: number;
  movedAt: number;
  stalledSince: number | null;
}

export class Watchdog {
  private readonly watched: State[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** stalls seen so far, by client name */
  readonly stalls = new Map<string, number>();

  constructor(
    private readonly stallMs: number,
    private readonly report: (line: string, name: string) => void,
  ) {}

  watch(w: Watched): void {
    this.watched.push({ w, last: w.count(), movedAt: performance.now(), stalledSince: null });
  }

  /** Checks every watched client now; returns the names stalled at this check. */
  check(now = performance.now()): string[] {
    const stalled: string[] = [];
    for (const s of this.watched) {
      const n = s.w.count();
      const expected = s.w.expected();
      if (n !== s.last || !expected) {
        if (s.stalledSince !== null && n !== s.last)
          this.report(`soak: ${s.w.name} resumed after ${Math.round((now - s.stalledSince) / 1000)} s without progress`, s.w.name);
        s.last = n;
        s.movedAt = now;
        s.stalledSince = null;
        continue;
      }
      if (now - s.movedAt < this.stallMs) continue;
      stalled.push(s.w.name);
      if (s.stalledSince !== null) continue;
      s.stalledSince = s.movedAt;
      this.stalls.set(s.w.name, (this.stalls.get(s.w.name) ?? 0) + 1);
      const detail = s.w.detail?.() ?? '';
      this.report(
        `soak: STALL ${s.w.name} made no progress for ${Math.round((now - s.movedAt) / 1000)} s (count ${n})${detail === '' ? '' : `: ${detail}`}`,
        s.w.name,
      );
    }
    return stalled;
  }

  /** Checks every `periodMs` until stop(). */
  start(periodMs: number): void {
    this.timer ??= setInterval(() => this.check(), periodMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
