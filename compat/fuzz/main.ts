/**
 * `npm run fuzz -- --minutes N [--seed S] [--path P] [--no-sasl] [--rss-budget-mb M]`: fuzzes a live
 * child broker for N minutes (see runner.ts for what is checked), prints a summary and writes it to
 * compat/results/fuzz-<timestamp>.json. A failure prints the shrunk stream and the seed and path that
 * replay it; the exit code is 1 then.
 */
import { Command, InvalidArgumentError } from 'commander';
import { writeResult } from '../bench/eos-common.js';
import { Harness } from './harness.js';
import { fuzz } from './runner.js';
import { FuzzStats } from './stats.js';

export interface FuzzRunOptions {
  budgetMs: number;
  seed?: number;
  path?: string;
  sasl: boolean;
  rssBudgetMb: number;
}

/** Starts the broker, fuzzes it for the budget, stops it; returns the summary. */
export async function fuzzRun(o: FuzzRunOptions): Promise<Record<string, unknown> & { failed: boolean }> {
  const started = Date.now();
  const h = new Harness({ sasl: o.sasl, rssBudget: o.rssBudgetMb * 2 ** 20 });
  const stats = new FuzzStats();
  await h.start();
  try {
    const out = await fuzz(h, stats, {
      budgetMs: o.budgetMs,
      ...(o.seed === undefined ? {} : { seed: o.seed }),
      ...(o.path === undefined ? {} : { path: o.path }),
    });
    return {
      failed: out.failed,
      startedAt: new Date(started).toISOString(),
      durationMs: Date.now() - started,
      budgetMs: o.budgetMs,
      seed: out.seed,
      runs: out.numRuns,
      replay: out.failed ? `npm run fuzz -- --seed ${out.seed} --path '${out.counterexamplePath ?? ''}'` : null,
      failure: out.error,
      counterexample: out.counterexample,
      shrinks: out.numShrinks,
      brokerStarts: h.starts,
      rssBudgetMb: o.rssBudgetMb,
      maxRssMb: Math.round(h.maxRss / 2 ** 20),
      backgroundAcked: h.backgroundAcked,
      backgroundVerified: out.backgroundVerified,
      sasl: o.sasl,
      ...stats.toJSON(),
    };
  } finally {
    await h.stop();
  }
}

function int(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('not an integer');
  return n;
}

async function main(): Promise<void> {
  const program = new Command('fuzz')
    .description('fuzz a live gregor broker with valid, mutated and adversarial request streams')
    .option('--minutes <n>', 'time budget in minutes', Number, 1)
    .option('--seed <n>', 'fast-check seed (to replay a run)', int)
    .option('--path <p>', 'fast-check path of a failure (with its --seed) to replay it')
    .option('--no-sasl', 'no SASL_PLAINTEXT listener')
    .option('--rss-budget-mb <n>', "the broker's RSS budget", int, 400)
    .parse();
  const o = program.opts<{ minutes: number; seed?: number; path?: string; sasl: boolean; rssBudgetMb: number }>();
  const summary = await fuzzRun({
    budgetMs: Math.round(o.minutes * 60_000),
    sasl: o.sasl,
    rssBudgetMb: o.rssBudgetMb,
    ...(o.seed === undefined ? {} : { seed: o.seed }),
    ...(o.path === undefined ? {} : { path: o.path }),
  });
  const file = writeResult('fuzz', new Date().toISOString(), summary);
  console.log(JSON.stringify(summary, null, 2));
  console.log(`summary: ${file}`);
  if (summary.failed) {
    console.log(`FAILED after ${String(summary['runs'])} cases: ${String(summary['failure'])}`);
    console.log(`replay: ${String(summary['replay'])}`);
    process.exitCode = 1;
  }
}

if (process.argv[1]?.endsWith('fuzz/main.js') === true) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(2);
  });
}
