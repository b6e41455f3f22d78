/**
 * Issue 14: where the slow e2e rounds go. Runs rdkafka-e2e (acks=all, one record at a time) against a
 * fresh gregor that carries compat/bench/e2e-broker-trace.ts, which records the broker's garbage
 * collections and event-loop stalls on CLOCK_MONOTONIC; rdkafka-e2e stamps each round's start on the
 * same clock. For the slowest 1% and 0.1% of each run's rounds it counts which overlapped a broker GC,
 * which only a loop stall, and which neither, and whether the delivery report (produce -> ack) or the
 * wait after it made the round slow.
 *
 *   node dist/compat/bench/e2e-attribute.js        (ATTR_RUNS=4 runs per wait on one broker)
 *
 * Knobs: ATTR_RUNS (4), ATTR_ROUNDS (10000), ATTR_WARMUP (200 rounds, at most 3 s), ATTR_WAITS ("500").
 * The first runs on a fresh broker show V8's warm-up, the later ones the steady state. Writes
 * compat/results/e2e-attribute-<time>.json.
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TraceEvent } from './e2e-broker-trace.js';
import { createOnePartitionTopics, runE2E, startGregor, type E2ERounds } from './mock-vs-gregor-brokers.js';
import { envInt, percentile, round, ROOT_DIR, sleep, writeBench } from './proc-stats.js';

const RUNS = envInt('ATTR_RUNS', 4);
const ROUNDS = envInt('ATTR_ROUNDS', 10_000);
const WARMUP = envInt('ATTR_WARMUP', 200);
const WAITS = (process.env['ATTR_WAITS'] ?? '500').split(',').map(Number);

export interface Attribution {
  wait: number;
  run: number;
  rounds: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  /** broker GCs during the timed rounds: count, summed and longest pause (ms) */
  gcs: number;
  gcMs: number;
  gcMaxMs: number;
  /** event-loop gaps over 1.5 ms during the timed rounds */
  stalls: number;
  /** rounds that overlapped a GC, and their median latency (ms) */
  roundsOverlappingGc: number;
  overlappingGcP50Ms: number;
  slowest1pct: Split;
  slowest01pct: Split;
}

interface Split {
  rounds: number;
  /** overlapped a broker GC */
  gc: number;
  /** overlapped a loop stall but no GC */
  stallOnly: number;
  neither: number;
  /** the delivery report took longer than the wait after it */
  ackDominated: number;
}

/** Sets each round [start, start + latency] beside the broker's events. */
export function attribute(latUs: readonly number[], r: E2ERounds, events: readonly TraceEvent[]): Omit<Attribution, 'wait' | 'run'> {
  const n = latUs.length;
  const from = r.startsUs[0] ?? 0;
  const to = (r.startsUs[n - 1] ?? 0) + (latUs[n - 1] ?? 0);
  const inRun = events.filter((e) => e[1] + e[2] >= from && e[1] <= to);
  const gcs = inRun.filter((e) => e[0] === 'gc');
  const stalls = inRun.filter((e) => e[0] === 'stall');
  const overlaps = (i: number, list: readonly TraceEvent[]): boolean => {
    const a = r.startsUs[i] ?? 0;
    const b = a + (latUs[i] ?? 0);
    return list.some((e) => e[1] < b && e[1] + e[2] > a);
  };
  const bySlowness = [...latUs.keys()].sort((a, b) => (latUs[b] ?? 0) - (latUs[a] ?? 0));
  const split = (count: number): Split => {
    const s: Split = { rounds: count, gc: 0, stallOnly: 0, neither: 0, ackDominated: 0 };
    for (const i of bySlowness.slice(0, count)) {
      if (overlaps(i, gcs)) s.gc++;
      else if (overlaps(i, stalls)) s.stallOnly++;
      else s.neither++;
      const ack = r.acksUs[i] ?? 0;
      if (ack > (latUs[i] ?? 0) - ack) s.ackDominated++;
    }
    return s;
  };
  const withGc = [...latUs.keys()].filter((i) => overlaps(i, gcs)).map((i) => latUs[i] ?? 0);
  const ms = (us: number): number => round(us / 1000, 3);
  return {
    rounds: n,
    p50Ms: ms(percentile(latUs, 50)),
    p99Ms: ms(percentile(latUs, 99)),
    p999Ms: ms(percentile(latUs, 99.9)),
    gcs: gcs.length,
    gcMs: ms(gcs.reduce((a, e) => a + e[2], 0)),
    gcMaxMs: ms(gcs.reduce((a, e) => Math.max(a, e[2]), 0)),
    stalls: stalls.length,
    roundsOverlappingGc: withGc.length,
    overlappingGcP50Ms: withGc.length === 0 ? 0 : ms(percentile(withGc, 50)),
    slowest1pct: split(Math.ceil(n / 100)),
    slowest01pct: split(Math.ceil(n / 1000)),
  };
}

async function main(): Promise<void> {
  const traceFile = join(tmpdir(), `gregor-e2e-trace-${process.pid}.json`);
  const preload = pathToFileURL(join(ROOT_DIR, 'dist/compat/bench/e2e-broker-trace.js')).href;
  process.env['E2E_TRACE_FILE'] = traceFile;
  process.env['GREGOR_CHILD_NODE_FLAGS'] = `${process.env['GREGOR_CHILD_NODE_FLAGS'] ?? ''} --import ${preload}`.trim();
  const t = await startGregor();
  const runs: Attribution[] = [];
  try {
    const pid = t.pid ?? 0;
    const topics = WAITS.flatMap((w) => Array.from({ length: RUNS }, (_, i) => `attr-${w}-${i}`));
    await createOnePartitionTopics(t.bootstrap, topics);
    for (let i = 0; i < RUNS; i++) {
      for (const w of WAITS) {
        process.kill(pid, 'SIGUSR2'); // drop what came before this run
        await sleep(100);
        let detail: E2ERounds = { acksUs: [], startsUs: [] };
        const res = await runE2E(t, `attr-${w}-${i}`, w, WARMUP, ROUNDS, 60, 3, (d) => (detail = d));
        process.kill(pid, 'SIGUSR2');
        await sleep(300);
        const events = JSON.parse(readFileSync(traceFile, 'utf8')) as TraceEvent[];
        const a = { wait: w, run: i, ...attribute(res.latenciesUs, detail, events) };
        runs.push(a);
        console.log(JSON.stringify(a));
      }
    }
  } finally {
    await t.stop();
    rmSync(traceFile, { force: true });
  }
  const path = writeBench(join(ROOT_DIR, 'compat/results'), {
    id: `e2e-attribute-${new Date().toISOString().replace(/:/g, '-')}`,
    title: 'Slow e2e rounds set beside the broker’s GCs and loop stalls',
    description:
      'rdkafka-e2e (acks=all, one record at a time) against a fresh gregor preloaded with compat/bench/e2e-broker-trace.js; per run, the slowest 1% and 0.1% of rounds split by what they overlapped on CLOCK_MONOTONIC.',
    headline: runs.map(
      (r) =>
        `w=${r.wait} run ${r.run}: p99 ${r.p99Ms} / p99.9 ${r.p999Ms} ms; slowest 0.1%: ${r.slowest01pct.gc} GC, ${r.slowest01pct.stallOnly} stall, ${r.slowest01pct.neither} neither; slowest 1%: ${r.slowest1pct.gc} / ${r.slowest1pct.stallOnly} / ${r.slowest1pct.neither}; ${r.gcs} GCs, max ${r.gcMaxMs} ms`,
    ),
    table: {
      columns: [
        'wait',
        'run',
        'p50 ms',
        'p99 ms',
        'p99.9 ms',
        'GCs',
        'GC max ms',
        'stalls',
        '1%: GC/stall/neither',
        '0.1%: GC/stall/neither',
        '1% ack-dominated',
      ],
      rows: runs.map((r) => [
        r.wait,
        r.run,
        r.p50Ms,
        r.p99Ms,
        r.p999Ms,
        r.gcs,
        r.gcMaxMs,
        r.stalls,
        `${r.slowest1pct.gc}/${r.slowest1pct.stallOnly}/${r.slowest1pct.neither}`,
        `${r.slowest01pct.gc}/${r.slowest01pct.stallOnly}/${r.slowest01pct.neither}`,
        r.slowest1pct.ackDominated,
      ]),
    },
    notes: [`ATTR_RUNS=${RUNS}, ATTR_ROUNDS=${ROUNDS}, ATTR_WARMUP=${WARMUP} (at most 3 s), runs in order on one broker.`],
  });
  console.error(`wrote ${path}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
