/**
 * The soak's sampler: every few seconds the broker's RSS and open fds (from /proc/<pid>), CPU, and
 * from its admin listener's /metrics the V8 heap, active handles and the event-loop delay since the
 * previous scrape (prom-client resets its delay histogram at each scrape, so each sample's p99 is
 * the interval's). Then the verdicts: a least-squares trend of RSS and fds over the second half of
 * the run against the noise around it, and the event-loop delay p99.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { EVENT_LOOP_MONITORING_PRECISION_MS } from '../../lib/observability/process-metrics.js';
import { cpuSeconds, percentile, rssBytes } from '../bench/proc-stats.js';

export interface Sample {
  /** seconds since the soak started */
  t: number;
  rssBytes: number;
  fds: number;
  /** of `fds`: those on segment `.log` files, and those whose file is unlinked (see fdKinds) */
  segmentFds: number;
  unlinkedFds: number;
  /** segment `.log` files on disk (sampled just after the fds) */
  segmentFiles: number;
  cpuPercent: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
  activeHandles: number;
  loopDelayP50Ms: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  /** records acknowledged so far, and delivered to groups so far (from the workload) */
  acked: number;
  consumed: number;
}

/** Unlabelled series of a Prometheus text exposition, by name. */
export function parseMetrics(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    const r = /^([a-zA-Z_:][a-zA-Z0-9_:]*) ([^ ]+)/.exec(line);
    if (r?.[1] !== undefined && r[2] !== undefined) m.set(r[1], Number(r[2]));
  }
  return m;
}

/**
 * The open fds by what they point at. A log keeps each segment's `.log` open (as Kafka does), so the
 * total grows with the segments on disk; what would be a leak is an fd that is not a segment's, or
 * an fd whose file is gone. Such an "unlinked" fd is normal for a while: a segment waits out
 * file.delete.delay.ms with its fd open, and when the cleaner replaces a segment of the same base
 * offset again within that time, the rename over `<base>.log.deleted` unlinks the older one early.
 */
export function fdKinds(pid: number): { total: number; segmentLogs: number; unlinked: number } {
  const dir = `/proc/${pid}/fd`;
  let total = 0;
  let segmentLogs = 0;
  let unlinked = 0;
  for (const fd of readdirSync(dir)) {
    let target: string;
    try {
      target = readlinkSync(`${dir}/${fd}`);
    } catch {
      continue; // closed since the listing
    }
    total++;
    if (target.endsWith(' (deleted)')) unlinked++;
    else if (SEGMENT_LOG.test(basename(target))) segmentLogs++;
  }
  return { total, segmentLogs, unlinked };
}

const SEGMENT_LOG = /^\d{20}\.log(\.deleted)?$/;

/** Segment `.log` files (live, or renamed for deletion) in the partition dirs of `dataDir`. */
export function segmentFilesIn(dataDir: string): number {
  let n = 0;
  for (const d of readdirSync(dataDir, { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    try {
      for (const f of readdirSync(join(dataDir, d.name))) if (SEGMENT_LOG.test(f)) n++;
    } catch {
      // a partition deleted since the listing
    }
  }
  return n;
}

export class Sampler {
  readonly samples: Sample[] = [];
  private lastCpu: number;
  private lastAt: number;
  private readonly t0 = performance.now();

  constructor(
    private readonly pid: number,
    private readonly admin: string,
    private readonly dataDir: string,
    private readonly progress: () => { acked: number; consumed: number },
  ) {
    this.lastCpu = cpuSeconds(pid);
    this.lastAt = performance.now();
  }

  async sample(): Promise<Sample> {
    const res = await fetch(`http://${this.admin}/metrics`, { signal: AbortSignal.timeout(10_000) });
    const metrics = parseMetrics(await res.text());
    const now = performance.now();
    const cpu = cpuSeconds(this.pid);
    // the broker's delay histogram is timer based: each value is the timer's period plus the delay
    // (an idle loop reads ~10 ms), so the period comes off
    const ms = (name: string): number => Math.max(0, (metrics.get(name) ?? NaN) * 1000 - EVENT_LOOP_MONITORING_PRECISION_MS);
    const k = fdKinds(this.pid);
    const fds = { fds: k.total, segmentFds: k.segmentLogs, unlinkedFds: k.unlinked };
    const s: Sample = {
      t: Math.round((now - this.t0) / 100) / 10,
      rssBytes: rssBytes(this.pid),
      ...fds,
      segmentFiles: segmentFilesIn(this.dataDir),
      cpuPercent: Math.round(((cpu - this.lastCpu) / ((now - this.lastAt) / 1000)) * 1000) / 10,
      heapUsedBytes: metrics.get('nodejs_heap_size_used_bytes') ?? NaN,
      heapTotalBytes: metrics.get('nodejs_heap_size_total_bytes') ?? NaN,
      externalBytes: metrics.get('nodejs_external_memory_bytes') ?? NaN,
      activeHandles: metrics.get('nodejs_active_handles_total') ?? NaN,
      loopDelayP50Ms: ms('nodejs_eventloop_lag_p50_seconds'),
      loopDelayP99Ms: ms('nodejs_eventloop_lag_p99_seconds'),
      loopDelayMaxMs: ms('nodejs_eventloop_lag_max_seconds'),
      ...this.progress(),
    };
    this.lastCpu = cpu;
    this.lastAt = now;
    this.samples.push(s);
    return s;
  }
}

export interface Trend {
  /** least-squares slope, per hour */
  slopePerHour: number;
  /** the fitted change over the window */
  drift: number;
  /** standard deviation of the residuals around the fit */
  noise: number;
  /** the drift allowed: max(3 × noise, floor) */
  allowed: number;
  window: { fromS: number; toS: number; samples: number };
  flat: boolean;
}

/** Least-squares line through (x, y); slope and residual standard deviation. */
export function leastSquares(xs: readonly number[], ys: readonly number[]): { slope: number; intercept: number; residualSd: number } {
  const n = Math.min(xs.length, ys.length);
  if (n < 2) return { slope: 0, intercept: ys[0] ?? 0, residualSd: 0 };
  let sx = 0;
  let sy = 0;
  for (let i = 0; i < n; i++) {
    sx += xs[i] ?? 0;
    sy += ys[i] ?? 0;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    const dx = (xs[i] ?? 0) - mx;
    sxy += dx * ((ys[i] ?? 0) - my);
    sxx += dx * dx;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  const intercept = my - slope * mx;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += ((ys[i] ?? 0) - (intercept + slope * (xs[i] ?? 0))) ** 2;
  return { slope, intercept, residualSd: Math.sqrt(ss / Math.max(1, n - 2)) };
}

/**
 * Trend of `pick` over the second half of the samples: flat when the fitted drift across that half
 * is within three residual standard deviations (the noise) or within `floor` (e.g. 8 MB of RSS, 3
 * fds: changes too small to be a leak in any run length the tool is meant for).
 */
export function trend(samples: readonly Sample[], pick: (s: Sample) => number, floor: number): Trend {
  const half = samples.slice(Math.floor(samples.length / 2));
  const xs = half.map((s) => s.t);
  const fit = leastSquares(
    xs,
    half.map((s) => pick(s)),
  );
  const span = (xs[xs.length - 1] ?? 0) - (xs[0] ?? 0);
  const drift = fit.slope * span;
  const allowed = Math.max(3 * fit.residualSd, floor);
  return {
    slopePerHour: fit.slope * 3600,
    drift,
    noise: fit.residualSd,
    allowed,
    window: { fromS: xs[0] ?? 0, toS: xs[xs.length - 1] ?? 0, samples: half.length },
    flat: drift <= allowed,
  };
}

export interface FdVerdict {
  /** fds that are neither a segment's `.log` nor unlinked: sockets, pipes, other files */
  other: Trend;
  unlinked: Trend;
  /** samples with more segment fds than segment files on disk (+2 for files made between the two listings) */
  samplesOverFiles: number;
  flat: boolean;
}

/**
 * The fd verdict: the total follows the segments on disk (a topic without retention keeps adding
 * them), so a leak shows as a climb in the other fds or the unlinked ones, or as more segment fds
 * than segment files.
 */
export function fdVerdict(samples: readonly Sample[]): FdVerdict {
  const other = trend(samples, (s) => s.fds - s.segmentFds - s.unlinkedFds, 3);
  const unlinked = trend(samples, (s) => s.unlinkedFds, 3);
  const samplesOverFiles = samples.filter((s) => s.segmentFds > s.segmentFiles + 2).length;
  return { other, unlinked, samplesOverFiles, flat: other.flat && unlinked.flat && samplesOverFiles === 0 };
}

export interface LoopDelayVerdict {
  /** 99th percentile of the per-interval p99s (each interval is one sampling period) */
  p99Ms: number;
  medianIntervalP99Ms: number;
  worstIntervalP99Ms: number;
  maxMs: number;
  intervalsOver20Ms: number;
  ok: boolean;
}

export function loopDelay(samples: readonly Sample[], limitMs = 20): LoopDelayVerdict {
  const p99s = samples.map((s) => s.loopDelayP99Ms).filter((x) => Number.isFinite(x));
  const p99 = percentile(p99s, 99);
  return {
    p99Ms: p99,
    medianIntervalP99Ms: percentile(p99s, 50),
    worstIntervalP99Ms: Math.max(...p99s),
    maxMs: Math.max(...samples.map((s) => s.loopDelayMaxMs).filter((x) => Number.isFinite(x))),
    intervalsOver20Ms: p99s.filter((x) => x > limitMs).length,
    ok: p99 < limitMs,
  };
}
