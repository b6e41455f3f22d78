/**
 * Issue 14: gregor beside librdkafka's mock cluster, the same workloads in one run (`npm run bench`).
 *
 *   node dist/compat/bench/mock-vs-gregor.js                      gregor and the mock, side by side
 *   node dist/compat/bench/mock-vs-gregor.js --bootstrap H:P [--pid N]   any broker (CPU/RSS with --pid)
 *   node dist/compat/bench/mock-vs-gregor.js --compare A.json B.json     the change between two runs
 *
 * Workloads (100-byte records, one partition, librdkafka's C clients from compat/bench/native/):
 *   1. produce acks=1, BENCH_RECORDS (1,000,000) records: records/s, broker CPU-s per 1M records,
 *      and the serving thread's (gregor's main thread; the mock's rdk:mock thread);
 *   2. produce acks=all, the same;
 *   3. consume from the start the records of 1: records/s;
 *   4. end-to-end latency, acks=all, one record at a time (produce, ack, consumer has it),
 *      fetch.wait.max.ms=500 and 0: p50/p99/p99.9 ms, broker CPU µs per round;
 *   5. process start → ready beside `node -e 0` (interleaved), RSS 5 s after start and after 1-3.
 * Each round starts a fresh gregor and a fresh mock (the order alternates between rounds), and runs
 * every workload on both back to back, so load on the shared machine hits both alike. Figures are
 * medians over BENCH_ROUNDS (3) rounds; e2e percentiles pool every round's samples.
 * BENCH_PIN=1 (or BROKER_CPU:CLIENT_CPU) runs the workloads with each broker on a CPU of its own and
 * the clients on the other (see PIN below).
 * Output: compat/results/bench-<ISO timestamp, ':' as '-'>.json and .md, and the table on stdout.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';
import { gregorVersion } from '../lib/broker-process.js';
import { RESULTS_DIR } from '../lib/paths.js';
import {
  benchBinary,
  brokerCpu,
  externalBroker,
  librdkafkaVersion,
  peakRssMB,
  rssMB,
  runE2E,
  SERVING_THREAD,
  servingCpu,
  startGregor,
  startMock,
  type Target,
  type TargetName,
  timeNodeE0,
  timeReady,
} from './mock-vs-gregor-brokers.js';
import {
  compareFiles,
  markdownTable,
  type Round,
  SCHEMA,
  type StartupRun,
  summarize,
  type TargetRound,
  type Throughput,
} from './mock-vs-gregor-report.js';
import {
  nativeBinary,
  primeProducePaths,
  startNativeConsumer,
  startNativeProducer,
  THROUGHPUT_PRODUCER_CONFIG,
} from './native-producer.js';
import { benchMachine, cpuSeconds, envInt, pageSupplyMs, parsePinning, pinProcess, round, sleep } from './proc-stats.js';

const RECORDS = envInt('BENCH_RECORDS', 1_000_000);
const ROUNDS = envInt('BENCH_ROUNDS', 3);
const WARMUP = envInt('BENCH_WARMUP_RECORDS', 50_000);
/**
 * Untimed records produced with acks=1 and then with acks=all into a topic of their own by every fresh
 * broker of a round, before its first timed workload (primeProducePaths says why: a fresh gregor's
 * first ~1M records cost about twice the later ones, which the first workload, acks=1, used to pay).
 */
const PRIME = envInt('BENCH_PRIME_RECORDS', 1_000_000);
/** timed e2e rounds per cell: 10,000, so that p99.9 is the 10th-slowest round rather than the slowest */
const E2E_ROUNDS = envInt('BENCH_E2E_ROUNDS', 10_000);
/**
 * e2e warm-up rounds, stopped after BENCH_E2E_WARMUP_MAX_S seconds whatever this says. A fresh gregor
 * reaches its steady state on this workload only after ~20,000-30,000 one-record rounds: until then V8
 * is still tiering up and deoptimizing the per-request functions (measured with --trace-opt
 * --trace-deopt: 218 compilations in the first 10,000 rounds, 65 in the next, 5 in the fourth), which
 * costs ~60 µs per round on TurboFan's threads and stalls the main thread (p99 2.2 ms in the first
 * 10,000 rounds, 0.3-0.5 ms from the third on; compat/bench/e2e-attribute.ts shows it). The mock has
 * no JIT to warm. A broker pays this once; the timed rounds measure the steady state.
 */
const E2E_WARMUP = envInt('BENCH_E2E_WARMUP', 30_000);
const E2E_WARMUP_MAX_S = envInt('BENCH_E2E_WARMUP_MAX_S', 15);
const E2E_MAX_S = envInt('BENCH_E2E_MAX_S', 15);
const STARTUP_RUNS = envInt('BENCH_STARTUP_RUNS', 5);
const IDLE_S = envInt('BENCH_IDLE_S', 5);
/** a pause before each later workload, so that one's background work (GC, log flushes) is not billed to the next */
const SETTLE_S = envInt('BENCH_SETTLE_S', 2);
/**
 * BENCH_PIN (1, or BROKER_CPU:CLIENT_CPU; default off): after start-up is timed, binds this process and
 * so every client it starts to one CPU and each broker to the other. Neither broker then shares a core
 * with the clients: on a 2-core machine the unpinned produce workloads keep both cores busy, and a
 * broker that costs more CPU per record loses throughput to the clients it competes with as much as
 * to its own work. Pinned, a broker is measured against the rate one core of clients can offer.
 */
const PIN = parsePinning(process.env['BENCH_PIN'], availableParallelism());
const WAITS = [500, 0] as const;
const VALUE_BYTES = 100;
const NUMBER_ARRAY = /\[\s*(-?[\d.eE+-]+(?:,\s*-?[\d.eE+-]+)*)\s*\]/g;

/** The load generators' settings (as KAFKA-3565's producer; acks set per workload). */
const PRODUCER_CONFIG = THROUGHPUT_PRODUCER_CONFIG;
const CONSUMER_CONFIG = {}; // librdkafka's defaults (fetch.wait.max.ms 500, fetch.max.bytes 50 MB, ...)

const log = (s: string): void => void process.stderr.write(`${s}\n`);

function parseArgs(argv: string[]): { bootstrap?: string; pid?: number; compare?: [string, string]; out: string } {
  const out: { bootstrap?: string; pid?: number; compare?: [string, string]; out: string } = { out: RESULTS_DIR };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--bootstrap') out.bootstrap = val();
    else if (a === '--pid') out.pid = Number(val());
    else if (a === '--out') out.out = val();
    else if (a === '--compare') out.compare = [val(), val()];
    else throw new Error(`unknown argument ${a} (--bootstrap host:port [--pid N] | --compare A.json B.json | --out DIR)`);
  }
  return out;
}

const perM = (a: number | null, b: number | null, n: number): number | null =>
  a === null || b === null ? null : round(((b - a) / n) * 1e6, 3);

async function produce(t: Target, topic: string, acks: 1 | -1): Promise<Throughput> {
  const p = await startNativeProducer(t.bootstrap, topic, WARMUP, RECORDS, 1, { ...PRODUCER_CONFIG, 'request.required.acks': acks });
  const [c0, s0, p0] = [brokerCpu(t), servingCpu(t), cpuSeconds(p.pid)];
  const r = await p.timed();
  const [c1, s1, p1] = [brokerCpu(t), servingCpu(t), cpuSeconds(p.pid)];
  const hw = await p.highWatermark();
  await p.end();
  if (r.failed > 0) throw new Error(`${r.failed} records failed`);
  if (hw !== WARMUP + RECORDS) throw new Error(`high watermark ${hw}, expected ${WARMUP + RECORDS}`);
  return {
    records: RECORDS,
    seconds: round(r.seconds, 3),
    recordsPerSec: Math.round(RECORDS / r.seconds),
    brokerCpuSPerM: perM(c0, c1, RECORDS),
    servingCpuSPerM: perM(s0, s1, RECORDS),
    clientCpuSPerM: perM(p0, p1, RECORDS) ?? NaN,
  };
}

async function consume(t: Target, topic: string): Promise<Throughput> {
  const c = await startNativeConsumer(t.bootstrap, topic, 1, CONSUMER_CONFIG);
  const [c0, s0, p0] = [brokerCpu(t), servingCpu(t), cpuSeconds(c.pid)];
  const r = await c.timed();
  const [c1, s1, p1] = [brokerCpu(t), servingCpu(t), cpuSeconds(c.pid)];
  await c.end();
  if (r.records !== WARMUP + RECORDS) throw new Error(`consumed ${r.records} records, expected ${WARMUP + RECORDS}`);
  return {
    records: r.records,
    seconds: round(r.seconds, 3),
    recordsPerSec: Math.round(r.records / r.seconds),
    brokerCpuSPerM: perM(c0, c1, r.records),
    servingCpuSPerM: perM(s0, s1, r.records),
    clientCpuSPerM: perM(p0, p1, r.records) ?? NaN,
    firstRecordMs: round(r.secondsToFirst * 1000, 2),
  };
}

interface RunError {
  round: number;
  target: TargetName;
  workload: string;
  message: string;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.compare !== undefined) {
    process.stdout.write(compareFiles(...args.compare) + '\n');
    return;
  }
  const started = new Date();
  const t0 = performance.now();
  const stamp = started.toISOString().replace(/:/g, '-');
  const loadBefore = loadavg().map((x) => round(x, 2));
  const pageSupplyBefore = pageSupplyMs();
  const pair = args.bootstrap === undefined;
  const targets: TargetName[] = pair ? ['mock', 'gregor'] : ['broker'];
  // compile the C programs first (not inside a timed part)
  for (const n of ['rdkafka-produce', 'rdkafka-consume'] as const) nativeBinary(n);
  benchBinary('rdkafka-e2e');
  if (pair) benchBinary('rdkafka-mock-bench');
  log(
    `mock-vs-gregor: ${pair ? 'gregor and the librdkafka mock' : args.bootstrap}, ${ROUNDS} rounds, ${RECORDS.toLocaleString('en-US')} records (+${WARMUP.toLocaleString('en-US')} warm-up), load ${loadBefore.join(' ')}`,
  );

  // 5a. start-up: spawn -> ready of each broker beside `node -e 0`, interleaved, the order rotating
  const startup: StartupRun[] = [];
  if (pair) {
    const kinds = ['gregor', 'mock', 'node -e 0'] as const;
    for (let i = 0; i < STARTUP_RUNS; i++) {
      const order = kinds.map((_, j) => kinds[(i + j) % kinds.length] ?? 'gregor');
      const ms: Record<string, number> = {};
      for (const k of order) ms[k] = round(k === 'node -e 0' ? await timeNodeE0() : await timeReady(k), 1);
      startup.push({ order, ms });
    }
    log(`  start-up: ${startup.map((s) => `gregor ${s.ms['gregor']} / mock ${s.ms['mock']} / node ${s.ms['node -e 0']}`).join('; ')} ms`);
  }

  if (PIN !== null) {
    pinProcess(process.pid, PIN.clientCpu);
    log(`  pinned: the brokers to CPU ${PIN.brokerCpu}, this process and its clients to CPU ${PIN.clientCpu}`);
  }
  const rounds: Round[] = [];
  const errors: RunError[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    const order: TargetName[] = pair ? (r % 2 === 1 ? ['gregor', 'mock'] : ['mock', 'gregor']) : ['broker'];
    const prefix = pair ? `mvg-r${r}` : `mvg-${stamp.replace(/[^0-9A-Za-z]/g, '')}-r${r}`;
    const topic = {
      prime: `${prefix}-prime`,
      acks1: `${prefix}-acks1`,
      acksAll: `${prefix}-acksall`,
      e2e: (w: number) => `${prefix}-e2e-w${w}`,
    };
    const allTopics = [topic.prime, topic.acks1, topic.acksAll, ...WAITS.map(topic.e2e)];
    const round_: Round = { round: r, order, startedAt: new Date().toISOString(), results: {} };
    rounds.push(round_);
    const running: Target[] = [];
    try {
      for (const name of order) {
        let t: Target;
        if (name === 'mock') t = await startMock(allTopics.map((x) => `${x}:1`));
        else {
          t = name === 'gregor' ? await startGregor() : externalBroker(args.bootstrap ?? '', args.pid ?? null);
          running.push(t);
          const admin = await RawClient.connect(t.bootstrap);
          try {
            await rawCreateTopics(
              admin,
              allTopics.map((name) => ({ name, partitions: 1 })),
            );
          } finally {
            admin.destroy();
          }
        }
        if (!running.includes(t)) running.push(t);
        if (PIN !== null) {
          if (t.pid === null) throw new Error('BENCH_PIN needs the broker process: pass --pid with --bootstrap');
          pinProcess(t.pid, PIN.brokerCpu);
        }
        round_.results[name] = { e2e: [], rssIdleMB: null, rssAfterProduceConsumeMB: null, rssEndMB: null, peakRssMB: null };
      }
      const res = (t: Target): TargetRound => round_.results[t.name] as TargetRound;
      const attempt = async <T>(t: Target, workload: string, fn: () => Promise<T>): Promise<T | undefined> => {
        try {
          return await fn();
        } catch (e) {
          const message = e instanceof Error ? e.message : String(e);
          errors.push({ round: r, target: t.name, workload, message });
          log(`  round ${r} ${t.name} ${workload}: FAILED: ${message}`);
          return undefined;
        }
      };
      await sleep(IDLE_S * 1000);
      for (const t of running) res(t).rssIdleMB = rssMB(t);
      if (PRIME > 0) {
        for (const t of running) await attempt(t, 'priming', () => primeProducePaths(t.bootstrap, topic.prime, PRIME, PRODUCER_CONFIG));
        await sleep(SETTLE_S * 1000);
      }
      for (const t of running) {
        const x = await attempt(t, 'produce acks=1', () => produce(t, topic.acks1, 1));
        if (x !== undefined) res(t).produceAcks1 = x;
      }
      const settle = () => sleep(SETTLE_S * 1000);
      await settle();
      for (const t of running) {
        const x = await attempt(t, 'consume', () => consume(t, topic.acks1));
        if (x !== undefined) res(t).consume = x;
        res(t).rssAfterProduceConsumeMB = rssMB(t);
      }
      await settle();
      for (const t of running) {
        const x = await attempt(t, 'produce acks=all', () => produce(t, topic.acksAll, -1));
        if (x !== undefined) res(t).produceAcksAll = x;
      }
      for (const w of WAITS) {
        await settle();
        for (const t of running) {
          const x = await attempt(t, `e2e fetch.wait.max.ms=${w}`, () =>
            runE2E(t, topic.e2e(w), w, E2E_WARMUP, E2E_ROUNDS, E2E_MAX_S, E2E_WARMUP_MAX_S),
          );
          if (x !== undefined) res(t).e2e.push(x);
        }
      }
      for (const t of running) {
        res(t).rssEndMB = rssMB(t);
        res(t).peakRssMB = peakRssMB(t);
      }
      for (const t of running) {
        const x = res(t);
        const e2e = x.e2e.map((e) => `w${e.fetchWaitMaxMs} p50 ${e.p50Ms} p99 ${e.p99Ms} ms (${e.rounds})`).join(', ');
        log(
          `  round ${r} ${t.name}: acks=1 ${x.produceAcks1?.recordsPerSec ?? '-'}/s, acks=all ${x.produceAcksAll?.recordsPerSec ?? '-'}/s, consume ${x.consume?.recordsPerSec ?? '-'}/s, ${e2e}, RSS ${x.rssIdleMB} → ${x.rssAfterProduceConsumeMB} MB`,
        );
      }
    } finally {
      for (const t of running) await t.stop();
    }
  }

  const summary = summarize(targets, rounds, startup, RECORDS);
  const serving = Object.fromEntries(targets.map((t) => [t, SERVING_THREAD[t]]));
  const table = markdownTable(targets, summary, serving);
  const machine = {
    ...benchMachine(),
    loadBefore,
    loadAfter: loadavg().map((x) => round(x, 2)),
    pageSupplyMs: { before: pageSupplyBefore, after: pageSupplyMs() },
  };
  const seconds = round((performance.now() - t0) / 1000, 1);
  const file = {
    schema: SCHEMA,
    id: 'mock-vs-gregor',
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    durationSeconds: seconds,
    mode: pair
      ? 'gregor beside the librdkafka mock cluster'
      : `--bootstrap ${args.bootstrap}${args.pid !== undefined ? ` --pid ${args.pid}` : ''}`,
    targets,
    machine,
    versions: { node: process.version, gregor: gregorVersion(), librdkafka: librdkafkaVersion() },
    settings: {
      records: RECORDS,
      warmupRecords: WARMUP,
      primeRecords: PRIME,
      valueBytes: VALUE_BYTES,
      partitions: 1,
      rounds: ROUNDS,
      idleSeconds: IDLE_S,
      settleSecondsBetweenWorkloads: SETTLE_S,
      e2e: {
        rounds: E2E_ROUNDS,
        warmup: E2E_WARMUP,
        warmupMaxSeconds: E2E_WARMUP_MAX_S,
        maxSecondsPerCell: E2E_MAX_S,
        fetchWaitMaxMs: WAITS,
        producer: { acks: 'all', 'linger.ms': 0 },
      },
      startupRuns: STARTUP_RUNS,
      pinning: PIN,
      producer: PRODUCER_CONFIG,
      consumer: { ...CONSUMER_CONFIG, note: "librdkafka's defaults; assign from the beginning, read until partition EOF" },
      gregor: 'node bin/gregor.js start --port 0 --data-dir <fresh tmp dir> (defaults otherwise), LOG_LEVEL=warn',
      mock: 'compat/bench/native/rdkafka-mock-bench.c: rd_kafka_mock_cluster_new with 1 broker, the topics created with 1 partition and their log limits (5 MB / 100,000 message sets) lifted',
      servingThread: serving,
    },
    summary,
    startup,
    rounds,
    errors,
  };
  mkdirSync(args.out, { recursive: true });
  const jsonPath = join(args.out, `bench-${stamp}.json`);
  const mdPath = join(args.out, `bench-${stamp}.md`);
  // arrays of numbers (the e2e samples: 10,000 per cell) on one line each, not one number per line
  writeFileSync(jsonPath, JSON.stringify(file, null, 1).replace(NUMBER_ARRAY, (_, xs: string) => `[${xs.replace(/\s+/g, '')}]`) + '\n');
  const notes = [
    `${file.mode}; ${ROUNDS} rounds, medians; ${RECORDS.toLocaleString('en-US')} records of ${VALUE_BYTES} bytes, one partition; librdkafka ${file.versions.librdkafka} C clients; gregor ${file.versions.gregor.version} (${file.versions.gregor.commit}); Node ${process.version}.`,
    `Machine: ${machine.cpu.model}, ${machine.cpu.cores} cores; load average ${loadBefore.join(' ')} before, ${machine.loadAfter.join(' ')} after. Run took ${seconds} s.`,
    `New page-cache pages (proc-stats.ts pageSupplyMs: kernel ms to write 128 MiB to a new file): ${machine.pageSupplyMs.before} ms before the run, ${machine.pageSupplyMs.after} ms after. gregor's appends pay this per byte and the mock does not; on a VM it swings ~10x with whether the guest has recently freed pages to reuse.`,
    pair
      ? "ratio = gregor / mock (higher is better for records/s, lower for ms and MB), of the medians; per round: gregor / mock within each round (run back to back, so the machine's load at that minute hits both), median and range over the rounds. Broker CPU: utime+stime of the broker process over the timed part (10 ms ticks); serving thread: gregor's main thread, the mock's rdk:mock thread (it serves every connection)."
      : `Broker CPU: utime+stime of the broker process over the timed part (10 ms ticks), and its main thread${args.pid === undefined ? ' (needs --pid)' : ''}.`,
    ...(PIN === null
      ? []
      : [
          `Pinned (BENCH_PIN): every thread of each broker on CPU ${PIN.brokerCpu}; this process and the client programs on CPU ${PIN.clientCpu}, after start-up was timed. Neither broker shares a core with the clients.`,
        ]),
    ...(errors.length > 0
      ? [`${errors.length} workload(s) failed: ${errors.map((e) => `round ${e.round} ${e.target} ${e.workload}: ${e.message}`).join('; ')}`]
      : []),
  ];
  writeFileSync(mdPath, `# mock vs gregor, ${started.toISOString()}\n\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n`);
  process.stdout.write(`${table}\n\n${notes.join('\n')}\n\nwrote ${jsonPath}\nwrote ${mdPath}\n`);
  if (errors.length > 0) process.exitCode = 1;
}

main().catch((e: unknown) => {
  process.stderr.write(`mock-vs-gregor: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
