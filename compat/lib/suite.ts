/**
 * One compat run: start gregor (or use --bootstrap), probe it, run the matrix, optionally the
 * benchmarks, then write results.json and REPORT.md. Both `npm run compat` and the smoke test call this.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrokerTarget, Scenario } from '../scenarios/context.js';
import { type GregorProcess, gregorVersion, startGregor, SUITE_BROKER_OVERRIDES } from './broker-process.js';
import { ROOT } from './paths.js';
import { probeApiVersions } from './raw.js';
import { writeReport } from './report.js';
import { clientInfo, machineInfo, parseResults, RESULTS_SCHEMA, type ResultsFile, scenarioInfo, summarize } from './results.js';
import { runMatrix } from './runner.js';
import type { Client } from './types.js';

export interface SuiteOptions {
  scenarios: Scenario[];
  clients: Client[];
  /** run against this broker instead of starting gregor */
  bootstrap?: string;
  outDir: string;
  bench?: boolean;
  compare?: string;
  progress?: (line: string) => void;
}

export interface SuiteRun {
  results: ResultsFile;
  outDir: string;
  report: string;
}

/** Contract for the benchmark suite (compat/bench/suite.ts, another module): writes `outDir/*.json`. */
export interface BenchContext {
  outDir: string;
  bootstrap: string;
  /** the broker's pid when the suite started it (for /proc CPU figures) */
  brokerPid?: number;
  startGregor: typeof startGregor;
  log: (line: string) => void;
}

async function runBenchmarks(ctx: BenchContext): Promise<void> {
  const mod = join(ROOT, 'dist/compat/bench/suite.js');
  if (!existsSync(mod)) {
    ctx.log('--bench: no benchmark suite yet (compat/bench/suite.ts exporting runBenchmarks(ctx)); skipping');
    return;
  }
  const { runBenchmarks: run } = (await import(pathToFileURL(mod).href)) as { runBenchmarks: (c: BenchContext) => Promise<void> };
  await run(ctx);
}

export async function runSuite(opts: SuiteOptions): Promise<SuiteRun> {
  const log = opts.progress ?? ((l: string) => console.log(l));
  const startedAt = new Date();
  mkdirSync(opts.outDir, { recursive: true });
  const owned: GregorProcess[] = [];
  try {
    let main: BrokerTarget;
    let legacy: BrokerTarget | undefined;
    let gregor: GregorProcess | undefined;
    if (opts.bootstrap !== undefined) {
      main = { bootstrap: opts.bootstrap, apis: await probeApiVersions(opts.bootstrap) };
    } else {
      gregor = await startGregor({ ...SUITE_BROKER_OVERRIDES });
      owned.push(gregor);
      main = { bootstrap: gregor.bootstrap, dataDir: gregor.dataDir, apis: await probeApiVersions(gregor.bootstrap) };
      if (opts.scenarios.some((s) => s.id === 'format-v1')) {
        const old = await startGregor({ 'broker.version.emulate': '0.10.0', 'num.partitions': '2' });
        owned.push(old);
        legacy = { bootstrap: old.bootstrap, dataDir: old.dataDir, apis: await probeApiVersions(old.bootstrap) };
      }
    }
    log(
      `broker under test: ${gregor !== undefined ? `gregor (pid ${gregor.pid})` : 'external'} at ${main.bootstrap}${legacy !== undefined ? `; emulate=0.10.0 gregor at ${legacy.bootstrap}` : ''}`,
    );
    const cells = await runMatrix({
      main,
      ...(legacy !== undefined ? { legacy } : {}),
      scenarios: opts.scenarios,
      clients: opts.clients,
      progress: log,
    });
    if (opts.bench === true) {
      await runBenchmarks({
        outDir: join(opts.outDir, 'bench'),
        bootstrap: main.bootstrap,
        ...(gregor !== undefined ? { brokerPid: gregor.pid } : {}),
        startGregor,
        log,
      });
    }
    const finishedAt = new Date();
    const v = gregorVersion();
    const results: ResultsFile = {
      schema: RESULTS_SCHEMA,
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationMs: finishedAt.getTime() - startedAt.getTime(),
      machine: machineInfo(),
      broker: {
        kind: gregor !== undefined ? 'gregor' : 'external',
        bootstrap: main.bootstrap,
        version: gregor !== undefined ? `${v.version} (${v.commit})` : 'unknown',
        apiVersions: main.apis,
        ...(legacy !== undefined ? { legacy: { bootstrap: legacy.bootstrap, emulate: '0.10.0', apiVersions: legacy.apis } } : {}),
      },
      clients: await clientInfo(opts.clients),
      scenarios: scenarioInfo(opts.scenarios),
      cells,
      summary: summarize(cells),
    };
    writeFileSync(join(opts.outDir, 'results.json'), JSON.stringify(results, null, 2) + '\n');
    const older = opts.compare !== undefined ? parseResults(readFileSync(opts.compare, 'utf8'), opts.compare) : undefined;
    const report = writeReport(opts.outDir, results, older);
    return { results, outDir: opts.outDir, report };
  } finally {
    for (const b of owned.reverse()) await b.stop();
  }
}
