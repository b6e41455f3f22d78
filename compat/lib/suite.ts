/**
 * One compat run: start gregor (one broker, or etcd + N brokers with --cluster N; or use --bootstrap),
 * probe it, run the matrix, optionally the benchmarks, then write results.json and REPORT.md. Both
 * `npm run compat` and the smoke tests call this. What it started is stopped at the end, also when the
 * run fails or the process gets SIGINT/SIGTERM.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrokerTarget, Scenario } from '../scenarios/context.js';
import { startSuiteCluster } from './broker-cluster.js';
import { gregorVersion, startGregor, SUITE_BROKER_OVERRIDES } from './broker-process.js';
import { ROOT } from './paths.js';
import { probeApiVersions } from './raw.js';
import { writeReport } from './report.js';
import {
  type BrokerInfo,
  clientInfo,
  machineInfo,
  parseResults,
  RESULTS_SCHEMA,
  type ResultsFile,
  scenarioInfo,
  summarize,
} from './results.js';
import { runMatrix } from './runner.js';
import type { Client } from './types.js';

export interface SuiteOptions {
  scenarios: Scenario[];
  clients: Client[];
  /** run against this broker instead of starting gregor */
  bootstrap?: string;
  /** start a gregor cluster of this many brokers (and an etcd) instead of one broker */
  cluster?: number;
  /** with `cluster`: keep etcd's data, the brokers' data dirs and logs here (a temporary dir, removed, otherwise) */
  clusterDir?: string;
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

/** Things the run started, stopped in reverse order at the end or on SIGINT/SIGTERM (then the process exits 128+signal). */
class Owned {
  private readonly stops: (() => Promise<void>)[] = [];
  private stopping: Promise<void> | undefined;
  private readonly onSignal = (signal: NodeJS.Signals) => {
    void this.stopAll().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };

  constructor() {
    process.once('SIGINT', this.onSignal);
    process.once('SIGTERM', this.onSignal);
  }

  add(stop: () => Promise<void>): void {
    this.stops.push(stop);
  }

  stopAll(): Promise<void> {
    process.removeListener('SIGINT', this.onSignal);
    process.removeListener('SIGTERM', this.onSignal);
    this.stopping ??= (async () => {
      for (const stop of this.stops.reverse()) await stop();
    })();
    return this.stopping;
  }
}

export async function runSuite(opts: SuiteOptions): Promise<SuiteRun> {
  const log = opts.progress ?? ((l: string) => console.log(l));
  const startedAt = new Date();
  mkdirSync(opts.outDir, { recursive: true });
  if (opts.cluster !== undefined && opts.bootstrap !== undefined) throw new Error('cluster and bootstrap exclude each other');
  const owned = new Owned();
  try {
    let main: BrokerTarget;
    let legacy: BrokerTarget | undefined;
    let brokerPid: number | undefined;
    let started: string;
    let cluster: BrokerInfo['cluster'];
    if (opts.bootstrap !== undefined) {
      main = { bootstrap: opts.bootstrap, apis: await probeApiVersions(opts.bootstrap) };
      started = 'external';
    } else if (opts.cluster !== undefined) {
      const c = await startSuiteCluster(opts.cluster, opts.clusterDir);
      owned.add(() => c.stop());
      main = {
        bootstrap: c.bootstrap,
        nodes: c.cluster.brokers.map((b) => ({ nodeId: b.nodeId, dataDir: b.dataDir })),
        apis: await probeApiVersions(c.bootstrap),
      };
      const nodes = c.cluster.brokers.map((b) => ({ nodeId: b.nodeId, bootstrap: b.bootstrap }));
      cluster = { brokers: nodes.length, nodes, metadataStore: c.etcdVersion, overrides: c.overrides };
      started = `${nodes.length}-broker gregor cluster (node ids ${nodes.map((n) => n.nodeId).join(', ')}, pids ${c.cluster.brokers.map((b) => b.pid).join(', ')}; ${c.etcdVersion} pid ${c.cluster.etcd.pid} at ${c.cluster.etcd.endpoints})`;
    } else {
      const gregor = await startGregor({ ...SUITE_BROKER_OVERRIDES });
      owned.add(() => gregor.stop());
      brokerPid = gregor.pid;
      main = { bootstrap: gregor.bootstrap, dataDir: gregor.dataDir, apis: await probeApiVersions(gregor.bootstrap) };
      started = `gregor (pid ${gregor.pid})`;
    }
    if (opts.bootstrap === undefined && opts.scenarios.some((s) => s.id === 'format-v1')) {
      const old = await startGregor({ 'broker.version.emulate': '0.10.0', 'num.partitions': '2' });
      owned.add(() => old.stop());
      legacy = { bootstrap: old.bootstrap, dataDir: old.dataDir, apis: await probeApiVersions(old.bootstrap) };
    }
    log(
      `broker under test: ${started} at ${main.bootstrap}${legacy !== undefined ? `; emulate=0.10.0 gregor at ${legacy.bootstrap}` : ''}`,
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
        ...(brokerPid !== undefined ? { brokerPid } : {}),
        startGregor,
        log,
      });
    }
    const finishedAt = new Date();
    const v = gregorVersion();
    const gregor = opts.bootstrap === undefined;
    const results: ResultsFile = {
      schema: RESULTS_SCHEMA,
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationMs: finishedAt.getTime() - startedAt.getTime(),
      machine: machineInfo(),
      broker: {
        kind: gregor ? 'gregor' : 'external',
        bootstrap: main.bootstrap,
        version: gregor ? `${v.version} (${v.commit})` : 'unknown',
        apiVersions: main.apis,
        ...(legacy !== undefined ? { legacy: { bootstrap: legacy.bootstrap, emulate: '0.10.0', apiVersions: legacy.apis } } : {}),
        ...(cluster !== undefined ? { cluster } : {}),
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
    await owned.stopAll();
  }
}
