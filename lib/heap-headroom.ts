/**
 * Old-generation headroom for the broker process (`gregor start` only, never an embedding process).
 *
 * Every produce request and every fetch response is a Buffer: a fresh ArrayBuffer whose bytes V8
 * counts as external memory, and V8 weighs that against its old-generation limit, which it sets
 * from the live heap times a growing factor plus a few MB. gregor's live heap is small (~10 MB), so
 * the limit sat ~10 MB above it (--trace-incremental-marking: marking started on "allocation limit"
 * with 8-10 MB of a 20 MB limit in use), and a produce or consume stream started a full
 * collection every few MB of records (31-37 while 1M 100-byte records were produced, read back and
 * 1M more produced; 1 with the headroom), though nearly all of those bytes die young and a scavenge
 * would free them. Their marking and sweeping, and the cache misses they cause, cost a third of the
 * broker's CPU per record at acks=all and over half of it when consuming.
 *
 * The fix: keep the limit at least HEADROOM bytes above the live heap, through V8's
 * --heap-growing-percent (read whenever V8 recomputes its limits, so it can be set at run time).
 * The percent follows the live heap (measured after each full collection, and at most once a
 * second from the heap in use): HEADROOM / live, between 100% and 1000%. Once the live heap is
 * itself larger than HEADROOM, V8's own growing factor is left alone. Memory stays bounded: the
 * heap grows at most ~HEADROOM before a full collection (RSS: no change beyond noise under load).
 */
import v8 from 'node:v8';
import { constants, PerformanceObserver } from 'node:perf_hooks';

/** Default headroom (GREGOR_HEAP_HEADROOM_MB overrides it; 0 turns the tuning off). */
export const DEFAULT_HEADROOM_BYTES = 64 * 2 ** 20;
const MIN_PERCENT = 100;
const MAX_PERCENT = 1000;
/** How often the heap in use is checked between full collections. */
const CHECK_MS = 1000;
/** The young generation's most (two 16 MB semi-spaces): heap in use above live + headroom + this means the live heap grew. */
const YOUNG_BYTES = 32 * 2 ** 20;

/**
 * The --heap-growing-percent that keeps `headroom` bytes between a live heap of `live` bytes and
 * V8's next full-collection limit; 0 (V8's own factor) when the live heap is larger than the headroom.
 */
export function growingPercent(live: number, headroom: number): number {
  if (headroom <= 0 || live >= headroom) return 0;
  const percent = Math.ceil((100 * headroom) / Math.max(live, 1));
  return Math.min(MAX_PERCENT, Math.max(MIN_PERCENT, percent));
}

export interface HeapHeadroomOptions {
  headroomBytes?: number;
  /** Applies a V8 flag (tests pass a recorder). */
  setFlags?: (flags: string) => void;
  /** Bytes of heap in use now. */
  heapUsed?: () => number;
}

/** The running tuner; stop() leaves V8's own factor in place again. */
export interface HeapHeadroom {
  /** The percent applied now (0: V8's own). */
  readonly percent: number;
  /** Re-reads the heap: `afterFullGc` when it was just collected (its size is the live heap). */
  update(afterFullGc: boolean): void;
  /**
   * Runs `fn` with V8's own factor in force, then applies the percent again. A V8 code cache carries a
   * hash of the V8 flags it was made under and is refused by a process whose flags differ, so one made
   * while the tuning is on must be made under the flags a fresh process starts with (bin/load-broker.js).
   */
  withV8Defaults<T>(fn: () => T): T;
  stop(): void;
}

/** GREGOR_HEAP_HEADROOM_MB as bytes (unset or not a number ≥ 0: the default). */
export function headroomFromEnv(value: string | undefined): number {
  const mb = value === undefined || value.trim() === '' ? NaN : Number(value);
  return Number.isFinite(mb) && mb >= 0 ? mb * 2 ** 20 : DEFAULT_HEADROOM_BYTES;
}

export function startHeapHeadroom(opts: HeapHeadroomOptions = {}): HeapHeadroom {
  const headroom = opts.headroomBytes ?? DEFAULT_HEADROOM_BYTES;
  const setFlags = opts.setFlags ?? ((f: string) => v8.setFlagsFromString(f));
  const heapUsed = opts.heapUsed ?? (() => v8.getHeapStatistics().used_heap_size);
  let live = heapUsed();
  let percent = 0;
  const apply = (p: number): void => {
    if (p === percent) return;
    percent = p;
    setFlags(`--heap-growing-percent=${p}`);
  };
  const update = (afterFullGc: boolean): void => {
    const used = heapUsed();
    // between full collections the heap in use holds garbage too: only a heap beyond what the
    // headroom and the young generation explain says the live heap grew
    if (afterFullGc) live = used;
    else if (used - headroom - YOUNG_BYTES > live) live = used - headroom - YOUNG_BYTES;
    apply(growingPercent(live, headroom));
  };
  if (headroom <= 0) return { percent: 0, update: () => undefined, withV8Defaults: (fn) => fn(), stop: () => undefined };
  update(true);
  const observer = new PerformanceObserver((list) => {
    const full = list.getEntries().some((e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR);
    if (full) update(true);
  });
  observer.observe({ entryTypes: ['gc'] });
  const timer = setInterval(() => update(false), CHECK_MS);
  timer.unref();
  return {
    get percent() {
      return percent;
    },
    update,
    withV8Defaults<T>(fn: () => T): T {
      const applied = percent;
      apply(0);
      try {
        return fn();
      } finally {
        apply(applied);
      }
    },
    stop() {
      clearInterval(timer);
      observer.disconnect();
      apply(0);
    },
  };
}
