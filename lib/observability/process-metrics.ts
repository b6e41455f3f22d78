/**
 * Process metrics, one set per process (brokers embedded in one process share it), made on the first
 * scrape so that a broker nobody scrapes runs no sampling timer:
 * - prom-client's default metrics: process_cpu_seconds_total, process_resident_memory_bytes,
 *   process_open_fds (the Strimzi dashboard's "Open File Descriptors"), nodejs_heap_size_*,
 *   nodejs_eventloop_lag_* (event-loop delay, sampled every 10 ms), nodejs_gc_duration_seconds, ...;
 * - nodejs_eventloop_utilization: the event loop's utilisation since the previous scrape (0..1);
 * - the JVM names the Strimzi Kafka dashboard's JVM panels query, filled with their Node equivalents:
 *     jvm_memory_bytes_used{area="heap"}     V8 heap used (heapUsed)
 *     jvm_memory_bytes_used{area="nonheap"}  memory outside the V8 heap held by JS objects (external,
 *                                            Buffers included): Node's nearest thing to non-heap
 *     jvm_memory_bytes_committed{area}       heapTotal / external
 *     jvm_memory_bytes_max{area="heap"}      V8's heap size limit
 *     (and the same as jvm_memory_used_bytes / _committed_bytes / _max_bytes, client_java 1.x names)
 *     jvm_gc_collection_seconds{gc}          V8 garbage collections (summary: _count, _sum), gc =
 *                                            scavenge | mark_sweep_compact | incremental_marking |
 *                                            process_weak_callbacks (V8's kinds, not the JVM's collectors)
 *     jvm_threads_current                    the process's OS threads (/proc/self/status Threads:
 *                                            main loop, libuv pool, V8 workers), Linux only
 */
import { readFileSync } from 'node:fs';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';
import { Gauge, Registry, Summary, collectDefaultMetrics } from 'prom-client';

let shared: Registry | null = null;

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark_sweep_compact',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental_marking',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'process_weak_callbacks',
};

function osThreads(): number | null {
  try {
    const m = /^Threads:\s*(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m?.[1] === undefined ? null : Number(m[1]);
  } catch {
    return null;
  }
}

/**
 * The period of the event-loop delay timer behind nodejs_eventloop_lag_*: each recorded value is
 * this period plus the delay (an idle loop reads about this much).
 */
export const EVENT_LOOP_MONITORING_PRECISION_MS = 10;

/** The process-wide registry (created, and its samplers started, on first use). */
export function processRegistry(): Registry {
  if (shared !== null) return shared;
  const r = new Registry();
  collectDefaultMetrics({ register: r, eventLoopMonitoringPrecision: EVENT_LOOP_MONITORING_PRECISION_MS });

  let lastElu = performance.eventLoopUtilization();
  new Gauge({
    name: 'nodejs_eventloop_utilization',
    help: 'Fraction of time the event loop was busy since the previous scrape',
    registers: [r],
    collect() {
      const elu = performance.eventLoopUtilization(lastElu);
      lastElu = performance.eventLoopUtilization();
      this.set(Number.isFinite(elu.utilization) ? elu.utilization : 0);
    },
  });

  const memory = (names: { used: string; committed: string; max: string }): void => {
    new Gauge({
      name: names.used,
      help: 'Node equivalent of JVM memory used: V8 heap used (heap), external memory incl. Buffers (nonheap)',
      labelNames: ['area'],
      registers: [r],
      collect() {
        const m = process.memoryUsage();
        this.set({ area: 'heap' }, m.heapUsed);
        this.set({ area: 'nonheap' }, m.external);
      },
    });
    new Gauge({
      name: names.committed,
      help: 'Node equivalent of JVM memory committed: V8 heap total (heap), external memory (nonheap)',
      labelNames: ['area'],
      registers: [r],
      collect() {
        const m = process.memoryUsage();
        this.set({ area: 'heap' }, m.heapTotal);
        this.set({ area: 'nonheap' }, m.external);
      },
    });
    new Gauge({
      name: names.max,
      help: 'Node equivalent of JVM max memory: the V8 heap size limit (heap)',
      labelNames: ['area'],
      registers: [r],
      collect() {
        this.set({ area: 'heap' }, v8.getHeapStatistics().heap_size_limit);
      },
    });
  };
  memory({ used: 'jvm_memory_bytes_used', committed: 'jvm_memory_bytes_committed', max: 'jvm_memory_bytes_max' });
  memory({ used: 'jvm_memory_used_bytes', committed: 'jvm_memory_committed_bytes', max: 'jvm_memory_max_bytes' });

  const gc = new Summary({
    name: 'jvm_gc_collection_seconds',
    help: 'Node equivalent of JVM GC time: V8 garbage collections by kind, in seconds',
    labelNames: ['gc'],
    percentiles: [],
    registers: [r],
  });
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = ((e as { detail?: unknown }).detail as { kind?: number } | null | undefined)?.kind;
      gc.observe({ gc: (kind !== undefined ? GC_KINDS[kind] : undefined) ?? 'other' }, e.duration / 1000);
    }
  });
  observer.observe({ entryTypes: ['gc'] });

  new Gauge({
    name: 'jvm_threads_current',
    help: 'Node equivalent of JVM threads: the OS threads of the process',
    registers: [r],
    collect() {
      const n = osThreads();
      if (n !== null) this.set(n);
    },
  });
  shared = r;
  return r;
}
