/**
 * Gives the V8 heap back once the broker process goes idle after a burst (`gregor start` only,
 * never an embedding process).
 *
 * V8 sizes its young generation by the allocation rate: a busy stretch (the recovery pass over
 * 10,000 logs after an unclean shutdown, start-up itself, a produce burst) grows the two semi-spaces
 * to their most (16 MB each), and V8 shrinks them only in a collection that finds the allocation
 * rate low. The old generation keeps the garbage that lib/heap-headroom.ts lets accumulate (up to
 * its headroom) and the pages that garbage fragments. An idle broker allocates next to nothing, so
 * no collection comes and all of it stays resident: at 10,000 partitions, 151 MB of RSS after a
 * kill -9 restart and its recovery pass, of which 32 MB was an empty young generation and ~25 MB
 * old-generation garbage and free pages.
 *
 * So, once the event loop has been idle for `idleMs` (default 5 s) and the heap commits at least
 * `minSlackBytes` more than the live heap measured by the last full collection:
 *   1. two full collections with a scavenge between them, under V8's --optimize-for-size (set for
 *      those calls only; with it the second one compacts the old generation's fragmented pages);
 *   2. after 6 s more of idleness, one scavenge: V8 shrinks the young generation in a
 *      collection that sees less than ~1 KB/ms allocated over the last 5 s, and only one that comes
 *      that long after the previous collection does so reliably.
 * Idle means records stopped moving too (`activity`: none appended or fetched over the stretch): a
 * broker serving a steady trickle can keep its event loop under the busy line, and there each
 * reduction (two full collections, 50-70 ms of stopped event loop at a 20 MB heap) came back every
 * minute or so, since the trickle refills the slack (seen in the soak: loop stalls over 60 ms).
 * It happens once per idle stretch: the next busy second arms it again. V8's collector is reached
 * through its gc extension, exposed for the moment a new context is made (or `node --expose-gc`'s).
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { constants, PerformanceObserver, performance } from 'node:perf_hooks';

/** Idle time before each step (GREGOR_IDLE_GC_MS overrides it; 0 turns the reduction off). */
export const DEFAULT_IDLE_MS = 5000;
/** Reduce only when the heap commits at least this much beyond the live heap. */
export const DEFAULT_MIN_SLACK_BYTES = 16 * 2 ** 20;
/** An event loop busier than this over a check interval is not idle. */
export const BUSY_FRACTION = 0.05;
const CHECK_MS = 1000;
/**
 * Idle time between step 1 and step 2: V8 weighs the allocation rate over the last 5 s, back to the
 * collection before step 1 (the busy stretch) unless the time since step 1 alone covers them.
 */
export const SHRINK_AFTER_MS = 6000;

export interface IdleMemoryOptions {
  idleMs?: number;
  checkMs?: number;
  minSlackBytes?: number;
  /** Fraction of the time the event loop was busy since the previous call. */
  utilization?: () => number;
  /** A count that moves while the broker works (records appended and fetched); a check that sees it move is busy. */
  activity?: () => number;
  /** Bytes the heap commits beyond the live heap. */
  slack?: () => number;
  /** Step 1: full collections that compact the old generation. */
  compact?: () => void;
  /** Step 2: the scavenge that shrinks the young generation. */
  shrinkYoung?: () => void;
  /** Milliseconds now (performance.now). */
  now?: () => number;
}

export interface IdleMemory {
  /** One check (the timer calls it every checkMs). */
  check(): void;
  /** Reductions run so far (step 1), and young-generation shrinks (step 2). */
  readonly stats: { compactions: number; shrinks: number };
  stop(): void;
}

/** GREGOR_IDLE_GC_MS as milliseconds (unset or not a number ≥ 0: the default; 0: off). */
export function idleMsFromEnv(value: string | undefined): number {
  const ms = value === undefined || value.trim() === '' ? NaN : Number(value);
  return Number.isFinite(ms) && ms >= 0 ? ms : DEFAULT_IDLE_MS;
}

/** gc(): a full collection; gc({ type: 'minor' }): a scavenge (Node 20's V8 takes { type: 'major' } for a scavenge too). */
type GcFunction = (options?: { type: 'minor' }) => void;

/** V8's gc(): `node --expose-gc`'s, or one from a context made while the flag is on. */
export function gcFunction(): GcFunction {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return exposed as GcFunction;
  v8.setFlagsFromString('--expose-gc');
  try {
    return vm.runInNewContext('gc') as GcFunction;
  } finally {
    // the V8 flags are back as they were (a code cache carries a hash of them, bin/load-broker.js)
    v8.setFlagsFromString('--no-expose-gc');
  }
}

/** Whether this process runs with --optimize-for-size already (the reduction then leaves the flag alone). */
function optimizesForSize(): boolean {
  const args = [...process.execArgv, ...(process.env['NODE_OPTIONS'] ?? '').split(/\s+/)];
  return args.some((a) => /^--optimize[-_]for[-_]size(=|$)/.test(a));
}

export function startIdleMemory(opts: IdleMemoryOptions = {}): IdleMemory {
  const idleMs = opts.idleMs ?? DEFAULT_IDLE_MS;
  const checkMs = opts.checkMs ?? CHECK_MS;
  const minSlack = opts.minSlackBytes ?? DEFAULT_MIN_SLACK_BYTES;
  const stats = { compactions: 0, shrinks: 0 };
  if (idleMs <= 0) return { check: () => undefined, stats, stop: () => undefined };

  let observer: PerformanceObserver | null = null;
  let slack = opts.slack;
  // the live heap: the heap in use just after a full collection (before the first one, at start)
  let live = v8.getHeapStatistics().used_heap_size;
  if (slack === undefined) {
    observer = new PerformanceObserver((list) => {
      const full = list
        .getEntries()
        .some((e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR);
      if (full) live = v8.getHeapStatistics().used_heap_size;
    });
    observer.observe({ entryTypes: ['gc'] });
    slack = () => v8.getHeapStatistics().total_heap_size - live;
  }
  let gc: GcFunction | undefined;
  const collector = (): GcFunction => (gc ??= gcFunction());
  const compact =
    opts.compact ??
    (() => {
      const run = collector();
      const toggle = !optimizesForSize();
      if (toggle) v8.setFlagsFromString('--optimize-for-size');
      try {
        run();
        run({ type: 'minor' });
        run();
      } finally {
        if (toggle) v8.setFlagsFromString('--no-optimize-for-size');
      }
      live = v8.getHeapStatistics().used_heap_size; // before the observer hears of it
    });
  const now = opts.now ?? (() => performance.now());
  const shrinkYoung = opts.shrinkYoung ?? (() => collector()({ type: 'minor' }));
  let lastElu = performance.eventLoopUtilization();
  const utilization =
    opts.utilization ??
    (() => {
      const elu = performance.eventLoopUtilization();
      const u = performance.eventLoopUtilization(elu, lastElu).utilization;
      lastElu = elu;
      return u;
    });

  // armed: waits for an idle stretch with slack; compacted: step 1 done, waits for step 2; done: until busy again
  let state: 'armed' | 'compacted' | 'done' = 'armed';
  let idleFor = 0;
  let compactedAt = 0;
  /**
   * The slack the last compaction left (what it could not give back: committed young generation,
   * pages V8 keeps). Another compaction waits until the slack is minSlack beyond it: a compaction
   * that gives nothing back is not repeated at every idle stretch. Seen at 3,000 partitions with a
   * long-polling consumer: a busy second followed each compaction (likely recompiling what the
   * collection flushed; not proven), and a compaction of ~150 ms came back every 6 s (2.5% of a core
   * at idle).
   */
  let floor = 0;
  const activity = opts.activity ?? (() => 0);
  let lastActivity = activity();
  const check = (): void => {
    const u = utilization();
    const a = activity();
    const moved = a !== lastActivity;
    lastActivity = a;
    if (moved || !(u <= BUSY_FRACTION)) {
      idleFor = 0;
      state = 'armed';
      return;
    }
    idleFor += checkMs;
    if (idleFor < idleMs) return;
    if (state === 'armed') {
      const s = slack();
      if (s < minSlack) return;
      if (s < floor + minSlack) {
        // nothing more for a compaction to give back: only the young generation's shrink, if any
        shrinkYoung();
        stats.shrinks++;
        state = 'done';
        return;
      }
      compact();
      stats.compactions++;
      floor = slack();
      utilization(); // from here: the collections just run are not the process being busy
      state = 'compacted';
      compactedAt = now();
    } else if (state === 'compacted' && now() - compactedAt >= SHRINK_AFTER_MS) {
      shrinkYoung();
      stats.shrinks++;
      state = 'done';
    }
  };
  const timer = setInterval(check, checkMs);
  timer.unref();
  return {
    check,
    stats,
    stop() {
      clearInterval(timer);
      observer?.disconnect();
    },
  };
}
