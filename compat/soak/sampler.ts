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
  /** of `fds`: those on segment `.log` files (live or `.log.deleted`), and those whose file is unlinked (see fdKinds) */
  segmentFds: number;
  unlinkedFds: number;
  /** segment `.log` files on disk (sampled just after the fds) */
  segmentFiles: number;
  /** the segments the broker's logs hold (sum of kafka_log_log_numlogsegments, scraped just before the fds) */
  brokerSegments: number;
  /** `fds` by kind */
  fdKinds: FdKinds;
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
 * The broker's open fds by what they point at (readlink of /proc/<pid>/fd/*). Segment files by
 * extension under their live names; `pendingDelete`: segment files renamed `*.deleted` that wait out
 * file.delete.delay.ms with their descriptor open; `cleaner`: the cleaner's `.cleaned`/`.swap`
 * output; `unlinked`: files already gone from the directory (readlink ends in " (deleted)").
 */
export interface FdKinds {
  log: number;
  index: number;
  timeindex: number;
  txnindex: number;
  pendingDelete: number;
  cleaner: number;
  checkpoint: number;
  otherFile: number;
  socket: number;
  pipe: number;
  anon: number;
  /** devices, /proc files and the like */
  other: number;
  unlinked: number;
}

export const FD_KINDS: readonly (keyof FdKinds)[] = [
  'log',
  'index',
  'timeindex',
  'txnindex',
  'pendingDelete',
  'cleaner',
  'checkpoint',
  'otherFile',
  'socket',
  'pipe',
  'anon',
  'other',
  'unlinked',
];

const SEGMENT_FILE = /^\d{20}\.(log|index|timeindex|txnindex)(\.(deleted|cleaned|swap))?$/;

/** The kind of one fd's readlink target. */
export function fdKind(target: string): keyof FdKinds {
  if (target.endsWith(' (deleted)')) return 'unlinked';
  if (target.startsWith('socket:')) return 'socket';
  if (target.startsWith('pipe:')) return 'pipe';
  if (target.startsWith('anon_inode:')) return 'anon';
  if (!target.startsWith('/') || target.startsWith('/dev/') || target.startsWith('/proc/') || target.startsWith('/sys/')) return 'other';
  const name = basename(target);
  const seg = SEGMENT_FILE.exec(name);
  if (seg !== null) {
    if (seg[3] === 'deleted') return 'pendingDelete';
    if (seg[3] !== undefined) return 'cleaner';
    return seg[1] as 'log' | 'index' | 'timeindex' | 'txnindex';
  }
  if (name.includes('checkpoint') || name.endsWith('.snapshot')) return 'checkpoint';
  return 'otherFile';
}

export function emptyFdKinds(): FdKinds {
  return {
    log: 0,
    index: 0,
    timeindex: 0,
    txnindex: 0,
    pendingDelete: 0,
    cleaner: 0,
    checkpoint: 0,
    otherFile: 0,
    socket: 0,
    pipe: 0,
    anon: 0,
    other: 0,
    unlinked: 0,
  };
}

/**
 * The open fds by kind. A log keeps each segment's `.log` open (as Kafka does), so those follow the
 * segments the broker holds; what would be a leak is more `.log` fds than segments, a climb of the
 * fds that are not segment files, or of the unlinked ones. An unlinked fd is normal for a while: a
 * segment waits out file.delete.delay.ms with its fd open, and when the cleaner replaces a segment of
 * the same base offset again within that time, the rename over `<base>.log.deleted` unlinks the
 * older one early.
 */
export function fdKinds(pid: number): { total: number; kinds: FdKinds } {
  const dir = `/proc/${pid}/fd`;
  const kinds = emptyFdKinds();
  let total = 0;
  for (const fd of readdirSync(dir)) {
    let target: string;
    try {
      target = readlinkSync(`${dir}/${fd}`);
    } catch {
      continue; // closed since the listing
    }
    total++;
    kinds[fdKind(target)]++;
  }
  return { total, kinds };
}

/** `log=12 index=0 ... ` with the kinds that are not zero. */
export function describeFdKinds(k: FdKinds): string {
  return FD_KINDS.filter((x) => k[x] !== 0)
    .map((x) => `${x} ${k[x]}`)
    .join(', ');
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

/** Sum of a labelled series (e.g. `kafka_log_log_numlogsegments{topic,partition}`) in a Prometheus text exposition. */
export function sumSeries(text: string, name: string): number {
  let sum = 0;
  let seen = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const r = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([^ ]+)/.exec(line);
    if (r?.[1] !== name || r[3] === undefined) continue;
    sum += Number(r[3]);
    seen = true;
  }
  return seen ? sum : NaN;
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
    const text = await res.text();
    const metrics = parseMetrics(text);
    const now = performance.now();
    const cpu = cpuSeconds(this.pid);
    // the broker's delay histogram is timer based: each value is the timer's period plus the delay
    // (an idle loop reads ~10 ms), so the period comes off
    const ms = (name: string): number => Math.max(0, (metrics.get(name) ?? NaN) * 1000 - EVENT_LOOP_MONITORING_PRECISION_MS);
    const k = fdKinds(this.pid);
    const fds = {
      fds: k.total,
      segmentFds: k.kinds.log + k.kinds.pendingDelete,
      unlinkedFds: k.kinds.unlinked,
      brokerSegments: sumSeries(text, 'kafka_log_log_numlogsegments'),
      fdKinds: k.kinds,
    };
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
  return fitTrend(
    half.map((s) => s.t),
    half.map((s) => pick(s)),
    floor,
  );
}

/** The least-squares trend of (xs seconds, ys) judged against max(3 × residual sd, floor). */
function fitTrend(xs: readonly number[], ys: readonly number[], floor: number): Trend {
  const fit = leastSquares(xs, ys);
  const span = (xs[xs.length - 1] ?? 0) - (xs[0] ?? 0);
  const drift = fit.slope * span;
  const allowed = Math.max(3 * fit.residualSd, floor);
  return {
    slopePerHour: fit.slope * 3600,
    drift,
    noise: fit.residualSd,
    allowed,
    window: { fromS: xs[0] ?? 0, toS: xs[xs.length - 1] ?? 0, samples: xs.length },
    flat: drift <= allowed,
  };
}

/** RSS right after the broker's full collections, and its trend: see rssAfterFullGc. */
export interface TroughTrend extends Trend {
  /** every sample taken just after a full collection, over the whole run */
  troughs: { t: number; rssBytes: number }[];
}

/** A sample whose heapTotal is this fraction of the previous one's or less follows a full collection that gave memory back. */
export const FULL_GC_HEAP_DROP = 0.75;

/**
 * The RSS verdict that a saw-tooth cannot fool. Between full collections the broker lets its heap
 * grow (lib/heap-headroom.ts allows up to 64 MB above the live heap), so RSS climbs and falls back,
 * and a least-squares slope over the second half passes or fails by the phase the run ends in. What
 * a leak raises is the floor: RSS right after each full collection, spotted as a sample whose
 * heapTotal fell to FULL_GC_HEAP_DROP of the previous one or less. Judged as trend() judges, on those
 * samples over the second half of the run: flat when their fitted drift is within max(3 × their
 * residual sd, `floor`). Null when the second half has fewer than 3 of them (a short run, or a heap
 * that never shrank): then the slope verdict stands.
 */
export function rssAfterFullGc(samples: readonly Sample[], floor: number): TroughTrend | null {
  const troughs: { t: number; rssBytes: number }[] = [];
  for (let i = 1; i < samples.length; i++) {
    const prev = samples[i - 1];
    const cur = samples[i];
    if (prev === undefined || cur === undefined || !(prev.heapTotalBytes > 0)) continue;
    if (cur.heapTotalBytes <= prev.heapTotalBytes * FULL_GC_HEAP_DROP) troughs.push({ t: cur.t, rssBytes: cur.rssBytes });
  }
  const from = samples[Math.floor(samples.length / 2)]?.t ?? 0;
  const late = troughs.filter((x) => x.t >= from);
  if (late.length < 3) return null;
  const fit = fitTrend(
    late.map((x) => x.t),
    late.map((x) => x.rssBytes),
    floor,
  );
  return { ...fit, troughs };
}

export interface FdVerdict {
  /** fds that are neither a segment file's (any extension, live or awaiting deletion) nor unlinked: sockets, pipes, checkpoints, other files */
  other: Trend;
  unlinked: Trend;
  /** samples with more segment fds than segment files on disk (+2 for files made between the two listings) */
  samplesOverFiles: number;
  /**
   * The leak detector against the broker's own count: samples with more open `.log` fds (live
   * names) than segments its logs hold (+2 for a roll or a topic's deletion between the scrape and
   * the listing). NaN-safe: samples without the metric are not counted.
   */
  samplesLogFdsOverSegments: number;
  /** open segment-file fds (live names) per segment the broker holds, at the last sample: constant when the growth is honest */
  segmentFdsPerSegmentLast: number;
  flat: boolean;
}

/** Fds on segment files (any extension) under live names, or renamed for deletion, or the cleaner's output. */
export function segmentFileFds(k: FdKinds): number {
  return k.log + k.index + k.timeindex + k.txnindex + k.pendingDelete + k.cleaner;
}

/**
 * The fd verdict: the total follows the segments (a topic without retention keeps adding them), so
 * a leak shows as a climb in the other fds or the unlinked ones, as more segment fds than segment
 * files, or as more open `.log` files than segments the broker holds.
 */
export function fdVerdict(samples: readonly Sample[]): FdVerdict {
  const other = trend(samples, (s) => s.fds - segmentFileFds(s.fdKinds) - s.fdKinds.unlinked, 3);
  const unlinked = trend(samples, (s) => s.fdKinds.unlinked, 3);
  const samplesOverFiles = samples.filter((s) => s.segmentFds > s.segmentFiles + 2).length;
  const samplesLogFdsOverSegments = samples.filter((s) => s.fdKinds.log > s.brokerSegments + 2).length;
  const last = samples[samples.length - 1];
  const live = (k: FdKinds): number => k.log + k.index + k.timeindex + k.txnindex;
  const segmentFdsPerSegmentLast = last === undefined ? NaN : live(last.fdKinds) / last.brokerSegments;
  return {
    other,
    unlinked,
    samplesOverFiles,
    samplesLogFdsOverSegments,
    segmentFdsPerSegmentLast,
    flat: other.flat && unlinked.flat && samplesOverFiles === 0 && samplesLogFdsOverSegments === 0,
  };
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
