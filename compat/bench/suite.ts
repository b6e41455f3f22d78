/**
 * The benchmark suite behind `npm run compat -- --bench`: compat/lib/suite.ts imports this module
 * and calls runBenchmarks(ctx) after the matrix. Each benchmark writes `gregor-bench/1` JSON into
 * ctx.outDir; one that fails writes a file saying so (the report shows it) and the others still run.
 *
 * Direct entry (no matrix, no REPORT.md):
 *   node dist/compat/bench/suite.js [--out DIR] [id ...]
 * ids: producer-throughput e2e-latency partitions-cpu startup kafka-200 kafka-3565 kafka-1933 eos-cost
 * read-committed rebalance-protocols
 * (default: all). BENCH_ONLY=id,id selects benchmarks under `npm run compat -- --bench` too.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startGregor } from '../lib/broker-process.js';
import { type BenchFile, validateBench } from '../lib/bench.js';
import { ROOT } from '../lib/paths.js';
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
 * Benchmarks that live in other engineers' modules (issue 6: kafka-3565, kafka-1933), used only
 * when compiled. A module that exports `runBenchmark(ctx)` (or a default export / `run`) is
 * imported and called. A module that is a script (runs on import, writes its own JSON to
 * compat/results/ and prints "wrote <path>") is run as a child process instead, with `env` as
 * defaults for its knobs; its JSON is copied into the run when it is `gregor-bench/1` already,
 * otherwise its array of result rows becomes a report table.
 */
function external(id: string, env: Record<string, string> = {}): Bench | null {
  const path = join(HERE, `${id}.js`);
  if (!existsSync(path)) return null;
  const src = readFileSync(path, 'utf8');
  if (/export\s+(async\s+)?function\s+(runBenchmark|run)\b|export\s+default|export\s*\{[^}]*\b(runBenchmark|run)\b/.test(src)) {
    return async (ctx) => {
      const mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
      const fn = [mod['runBenchmark'], mod['default'], mod['run']].find((f) => typeof f === 'function') as Bench | undefined;
      if (fn === undefined) throw new Error(`${id}.js exports no runBenchmark(ctx) / default / run function`);
      await fn(ctx);
    };
  }
  return async (ctx) => {
    const knobs = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, process.env[k] ?? v]));
    ctx.log(
      `  running ${id}.js as a script${
        Object.keys(knobs).length > 0
          ? ` (${Object.entries(knobs)
              .map(([k, v]) => `${k}=${v}`)
              .join(' ')})`
          : ''
      }`,
    );
    const { code, out } = await new Promise<{ code: number | null; out: string }>((res) => {
      const child = spawn(process.execPath, [path], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...knobs } });
      let text = '';
      child.stdout.on('data', (d: Buffer) => (text += d.toString()));
      child.stderr.on('data', (d: Buffer) => {
        text += d.toString();
        for (const line of d.toString().split('\n')) if (line.trim() !== '') ctx.log(`  ${id}: ${line.trim()}`);
      });
      child.once('exit', (c) => res({ code: c, out: text }));
    });
    const wrote = /wrote (\S+\.json)/.exec(out);
    if (code !== 0 || wrote?.[1] === undefined)
      throw new Error(`${id}.js exited with ${code}${wrote === null ? ' without writing its JSON' : ''}:\n${out.slice(-3000)}`);
    const file = resolve(ROOT, wrote[1]);
    const data = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    if (validateBench(data).length === 0) {
      // already a gregor-bench/1 file: shown as it is
      const bench = data as unknown as BenchFile;
      mkdirSync(ctx.outDir, { recursive: true });
      const notes = [
        ...(bench.notes ?? []),
        `Run by the suite as a script${
          Object.keys(knobs).length > 0
            ? ` with ${Object.entries(knobs)
                .map(([k, v]) => `${k}=${v}`)
                .join(', ')}`
            : ''
        } (source: ${wrote[1]}).`,
      ];
      writeFileSync(join(ctx.outDir, `${bench.id}.json`), JSON.stringify({ ...bench, notes }, null, 2) + '\n');
      ctx.log(`  ${id}: copied ${wrote[1]}`);
    } else {
      writeBench(ctx.outDir, scriptResultToBench(id, data, out, knobs));
      ctx.log(`  ${id}: converted ${wrote[1]}`);
    }
  };
}

/** Flattens one level of nesting: { a: { p50: 1 } } -> { 'a.p50': 1 }. */
function flatten(o: Record<string, unknown>): Record<string, string | number | null> {
  const out: Record<string, string | number | null> = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === null || typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean')
      out[k] = typeof v === 'boolean' ? String(v) : v;
    else if (typeof v === 'object' && !Array.isArray(v)) {
      for (const [k2, v2] of Object.entries(v as Record<string, unknown>))
        out[`${k}.${k2}`] = typeof v2 === 'number' || typeof v2 === 'string' ? v2 : v2 === null ? null : JSON.stringify(v2);
    }
  }
  return out;
}

/** A script's own JSON (any shape with an array of result objects) as a report table. */
function scriptResultToBench(id: string, data: Record<string, unknown>, stdout: string, knobs: Record<string, string>) {
  const arrays = Object.entries(data).filter(
    ([, v]) => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'object' && x !== null && !Array.isArray(x)),
  );
  const [arrName, arr] = arrays[0] ?? ['results', []];
  const rows = (arr as Record<string, unknown>[]).map(flatten);
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const round3 = (v: string | number | null | undefined) =>
    typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : (v ?? null);
  const description = typeof data['description'] === 'string' ? data['description'] : undefined;
  const settings = data['settings'];
  // the script's printed table, verbatim, is the most faithful summary
  const printed = stdout
    .split('\n')
    .filter((l) => l.trim() !== '' && !/^wrote /.test(l) && !l.startsWith(`${id}:`) && !/^kafka-\d+:/.test(l));
  return {
    id,
    title: `${id.toUpperCase()} (issue 6 benchmark, compat/bench/${id}.ts)`,
    ...(description !== undefined ? { description } : {}),
    table: { columns, rows: rows.map((r) => columns.map((c) => round3(r[c]))) },
    notes: [
      `Run by the suite as a script${
        Object.keys(knobs).length > 0
          ? ` with ${Object.entries(knobs)
              .map(([k, v]) => `${k}=${v}`)
              .join(', ')}`
          : ''
      }; table = its "${arrName}" entries.`,
      ...(settings !== undefined ? [`settings: ${JSON.stringify(settings)}`] : []),
      ...printed.slice(0, 40),
    ],
  };
}

export const BENCHMARKS: { id: string; title: string; run: () => Bench | null }[] = [
  { id: 'producer-throughput', title: 'producer/consumer throughput', run: () => producerThroughput },
  { id: 'e2e-latency', title: 'end-to-end latency', run: () => e2eLatency },
  { id: 'partitions-cpu', title: 'CPU at 1,000/3,000/10,000 partitions', run: () => partitionsCpu },
  { id: 'startup', title: 'start-up and RSS', run: () => startup },
  { id: 'kafka-200', title: 'KAFKA-200: socket buffers over a 50 ms RTT link', run: () => kafka200 },
  { id: 'kafka-3565', title: 'KAFKA-3565 (compression issue)', run: () => external('kafka-3565', { BENCH_3565_RECORDS: '500000' }) },
  { id: 'kafka-1933', title: 'KAFKA-1933 (compression issue)', run: () => external('kafka-1933', { BENCH_1933_MB: '100' }) },
  {
    id: 'eos-cost',
    title: 'Issue 11: producer throughput cost of idempotence and transactions',
    run: () => external('eos-cost', { BENCH_EOS_ROUNDS: '3' }),
  },
  {
    id: 'read-committed',
    title: 'Issue 11: read_committed vs read_uncommitted consumer throughput',
    run: () => external('read-committed', { BENCH_RC_ROUNDS: '3' }),
  },
  {
    id: 'rebalance-protocols',
    title: 'Issue 12: rebalance time of 3 members, consumer protocol beside classic',
    run: () => external('rebalance-protocols', { BENCH_REBALANCE_ROUNDS: '3' }),
  },
];

function selected(only?: string[]): typeof BENCHMARKS {
  const env = process.env['BENCH_ONLY'];
  const ids =
    only !== undefined && only.length > 0 ? only : env !== undefined && env !== '' ? env.split(',').map((s) => s.trim()) : undefined;
  if (ids === undefined) return BENCHMARKS;
  const unknown = ids.filter((id) => !BENCHMARKS.some((b) => b.id === id));
  if (unknown.length > 0)
    throw new Error(`unknown benchmark ids: ${unknown.join(', ')} (known: ${BENCHMARKS.map((b) => b.id).join(', ')})`);
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
        writeBench(ctx.outDir, {
          id: `${b.id}-failed`,
          title: `${b.title}: failed`,
          headline: [`failed: ${err.message.split('\n')[0] ?? ''}`],
          notes: (err.stack ?? err.message).split('\n').slice(0, 12),
        });
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
