/**
 * The benchmark suite behind `npm run compat -- --bench`: compat/lib/suite.ts imports this module
 * and calls runBenchmarks(ctx) after the matrix. Each benchmark writes `gregor-bench/1` JSON into
 * ctx.outDir; one that fails writes a file saying so (the report shows it) and the others still run.
 *
 * Direct entry (no matrix, no REPORT.md):
 *   node dist/compat/bench/suite.js [--out DIR] [id ...]
 * ids: producer-throughput e2e-latency partitions-cpu startup kafka-200 kafka-3565 kafka-1933
 * (default: all). BENCH_ONLY=id,id selects benchmarks under `npm run compat -- --bench` too.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startGregor } from '../lib/broker-process.js';
import type { BenchContext } from '../lib/suite.js';
import { e2eLatency } from './e2e-latency.js';
import { kafka200 } from './kafka-200.js';
import { partitionsCpu } from './partitions-cpu.js';
import { producerThroughput } from './producer-throughput.js';
import { startup } from './startup.js';
import { writeBench } from './proc-stats.js';

type Bench = (ctx: BenchContext) => Promise<void>;

const HERE = dirname(fileURLToPath(import.meta.url));

/**
 * Benchmarks that live in other engineers' modules (issue 6): loaded only when compiled, and
 * called through `runBenchmark(ctx)` (or a default export / `run`).
 */
function external(file: string): Bench | null {
  const path = join(HERE, file);
  if (!existsSync(path)) return null;
  return async (ctx) => {
    const mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    const fn = [mod['runBenchmark'], mod['default'], mod['run']].find((f) => typeof f === 'function') as Bench | undefined;
    if (fn === undefined) throw new Error(`${file} exports no runBenchmark(ctx) / default / run function`);
    await fn(ctx);
  };
}

export const BENCHMARKS: { id: string; title: string; run: () => Bench | null }[] = [
  { id: 'producer-throughput', title: 'producer/consumer throughput', run: () => producerThroughput },
  { id: 'e2e-latency', title: 'end-to-end latency', run: () => e2eLatency },
  { id: 'partitions-cpu', title: 'CPU at 1,000/3,000/10,000 partitions', run: () => partitionsCpu },
  { id: 'startup', title: 'start-up and RSS', run: () => startup },
  { id: 'kafka-200', title: 'KAFKA-200: socket buffers over a 50 ms RTT link', run: () => kafka200 },
  { id: 'kafka-3565', title: 'KAFKA-3565 (compression issue)', run: () => external('kafka-3565.js') },
  { id: 'kafka-1933', title: 'KAFKA-1933 (compression issue)', run: () => external('kafka-1933.js') },
];

function selected(only?: string[]): typeof BENCHMARKS {
  const env = process.env['BENCH_ONLY'];
  const ids = only !== undefined && only.length > 0 ? only : env !== undefined && env !== '' ? env.split(',').map((s) => s.trim()) : undefined;
  if (ids === undefined) return BENCHMARKS;
  const unknown = ids.filter((id) => !BENCHMARKS.some((b) => b.id === id));
  if (unknown.length > 0) throw new Error(`unknown benchmark ids: ${unknown.join(', ')} (known: ${BENCHMARKS.map((b) => b.id).join(', ')})`);
  return BENCHMARKS.filter((b) => ids.includes(b.id));
}

export async function runBenchmarks(ctx: BenchContext, only?: string[]): Promise<void> {
  const t0 = performance.now();
  for (const b of selected(only)) {
    const run = b.run();
    if (run === null) {
      ctx.log(`bench ${b.id}: not present (compat/bench/${b.id}.ts not built yet); skipped`);
      continue;
    }
    const t = performance.now();
    ctx.log(`bench ${b.id}: ${b.title} ...`);
    try {
      await run(ctx);
      ctx.log(`bench ${b.id}: done in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    } catch (e) {
      const err = e as Error;
      ctx.log(`bench ${b.id}: FAILED after ${((performance.now() - t) / 1000).toFixed(1)} s: ${err.message}`);
      try {
        writeBench(ctx.outDir, { id: `${b.id}-failed`, title: `${b.title}: failed`, headline: [`failed: ${err.message.split('\n')[0] ?? ''}`], notes: (err.stack ?? err.message).split('\n').slice(0, 12) });
      } catch {
        // nothing more to do
      }
    }
  }
  ctx.log(`benchmarks: ${((performance.now() - t0) / 1000).toFixed(0)} s in all`);
}

async function main(argv: string[]): Promise<void> {
  let out = resolve(HERE, '../../../compat/results', `bench-${new Date().toISOString().replace(/[:.]/g, '-')}`, 'bench');
  const ids: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--out') out = resolve(argv[++i] ?? '.');
    else ids.push(a);
  }
  selected(ids); // fail early on unknown ids
  const gregor = await startGregor({ 'group.initial.rebalance.delay.ms': '0' });
  try {
    await runBenchmarks({ outDir: out, bootstrap: gregor.bootstrap, brokerPid: gregor.pid, startGregor, log: (l) => console.log(l) }, ids);
  } finally {
    await gregor.stop();
  }
  console.log(`results in ${out}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
