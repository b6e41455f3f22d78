/**
 * A preload for a gregor under compat/bench/e2e-attribute.ts (`node --import <this> bin/gregor.js ...`):
 * records the broker's garbage collections and event-loop stalls on CLOCK_MONOTONIC, the clock
 * rdkafka-e2e stamps its rounds with, so each slow round can be set beside what the broker was doing.
 * Not part of the broker: it only observes. On SIGUSR2 it writes the events since the last SIGUSR2 to
 * $E2E_TRACE_FILE as JSON and starts afresh.
 *
 * A stall is a gap of over 1.5 ms between two runs of a 1 ms interval timer: the loop was busy (a
 * long callback, a GC, a JIT finalization) or the thread was not scheduled.
 */
import { writeFileSync } from 'node:fs';
import { PerformanceObserver, performance, type PerformanceEntry } from 'node:perf_hooks';

/** [kind, start µs on CLOCK_MONOTONIC, duration µs, detail (the GC kind; 0 for stalls)] */
export type TraceEvent = ['gc' | 'stall', number, number, number];

const file = process.env['E2E_TRACE_FILE'];
if (file !== undefined) {
  // performance.now() counts from a monotonic origin; process.hrtime is CLOCK_MONOTONIC itself
  const originUs = Number(process.hrtime.bigint()) / 1e3 - performance.now() * 1e3;
  let events: TraceEvent[] = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries() as (PerformanceEntry & { detail?: { kind?: number } })[]) {
      events.push(['gc', originUs + e.startTime * 1e3, e.duration * 1e3, e.detail?.kind ?? 0]);
    }
  }).observe({ entryTypes: ['gc'] });
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    if (now - last > 1.5) events.push(['stall', originUs + last * 1e3, (now - last) * 1e3, 0]);
    last = now;
  }, 1).unref();
  process.on('SIGUSR2', () => {
    writeFileSync(file, JSON.stringify(events));
    events = [];
  });
}
