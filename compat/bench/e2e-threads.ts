/**
 * Issue 14's end-to-end workload alone, with the broker's CPU per round split by thread: a fresh
 * gregor, rdkafka-e2e (acks=all, one record at a time) at fetch.wait.max.ms 500 and 0, and the
 * utime+stime each of gregor's threads (/proc/<pid>/task/<tid>/stat) spent during the timed rounds,
 * in µs per round per thread (by tid: Node 20 names every thread "node"), and the main thread's split
 * between user space and the kernel.
 *
 *   node dist/compat/bench/e2e-threads.js
 *
 * The first run on a fresh broker pays V8's warm-up: TurboFan compiles the per-request code on its
 * background threads (perf shows them in v8::internal::compiler::*), hundreds of µs per round; later
 * runs on the same broker show the steady state. Hence E2E_REPEAT.
 *
 * Knobs: E2E_ROUNDS (2000), E2E_WARMUP (200), E2E_MAX_S (20), E2E_REPEAT (1: runs per wait, all on the
 * same broker), E2E_WAITS ("500,0"), E2E_PRELOAD_RECORDS (0; else first produce that many records
 * with acks=1 and with acks=all and consume them, as `npm run bench` does before its e2e workload),
 * GREGOR_CHILD_NODE_FLAGS (node flags for gregor, e.g. --cpu-prof), E2E_BOOTSTRAP + E2E_PID (a
 * gregor started by hand instead), E2E_ATTACH (a command run beside each run, e.g. perf record),
 * E2E_MARK_FILE (a file that gets a line at each run's start and end). Output: one JSON line per run.
 */
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { brokerCpu, createOnePartitionTopics, externalBroker, runE2E, servingCpu, startGregor } from './mock-vs-gregor-brokers.js';
import { startNativeConsumer, startNativeProducer } from './native-producer.js';
import { envInt, round, sleep, threadCpu } from './proc-stats.js';

const ROUNDS = envInt('E2E_ROUNDS', 2000);
const WARMUP = envInt('E2E_WARMUP', 200);
const MAX_S = envInt('E2E_MAX_S', 20);
const REPEAT = envInt('E2E_REPEAT', 1);
const WAITS = (process.env['E2E_WAITS'] ?? '500,0').split(',').map(Number);
/** as `npm run bench` runs the e2e workload: after producing (acks=1, then acks=all) and consuming this many records */
const PRELOAD = envInt('E2E_PRELOAD_RECORDS', 0);
const PRODUCER_CONFIG = { 'linger.ms': 5, 'batch.num.messages': 10000, 'batch.size': 1_000_000, 'enable.idempotence': false };

/**
 * CPU seconds per thread, keyed "main" or "<comm>#<tid>" (Node 20 names every thread "node"), and the
 * main thread's user and system seconds as "main:user" and "main:system".
 */
function byName(pid: number): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of threadCpu(pid)) {
    m.set(t.tid === pid ? 'main' : `${t.comm}#${t.tid}`, t.cpuSeconds);
    if (t.tid === pid) m.set('main:user', t.userSeconds).set('main:system', t.systemSeconds);
  }
  return m;
}

/** E2E_MARK_FILE: a file (gregor's stdout, opened for appending) that gets a line at each run's start and end, to split V8 traces */
function mark(what: string): void {
  const f = process.env['E2E_MARK_FILE'];
  if (f !== undefined) appendFileSync(f, `=== ${what}\n`);
}

// E2E_BOOTSTRAP=host:port E2E_PID=N: a gregor started by hand (e.g. with V8 trace flags) instead of a fresh one
const given = process.env['E2E_BOOTSTRAP'];
const t = given === undefined ? await startGregor() : externalBroker(given, envInt('E2E_PID', 0));
try {
  const pid = t.pid ?? 0;
  const topics = ['preload-acks1', 'preload-acksall', ...WAITS.flatMap((w) => Array.from({ length: REPEAT }, (_, i) => `e2e-${w}-${i}`))];
  await createOnePartitionTopics(t.bootstrap, topics);
  if (PRELOAD > 0) {
    for (const [topic, acks] of [
      ['preload-acks1', 1],
      ['preload-acksall', -1],
    ] as const) {
      const p = await startNativeProducer(t.bootstrap, topic, 0, PRELOAD, 1, { ...PRODUCER_CONFIG, 'request.required.acks': acks });
      await p.timed();
      await p.end();
    }
    const c = await startNativeConsumer(t.bootstrap, 'preload-acks1', 1, {});
    await c.timed();
    await c.end();
    await sleep(2000);
  }
  for (let i = 0; i < REPEAT; i++) {
    for (const w of WAITS) {
      // E2E_ATTACH="<command>": run it beside each run, stopped with SIGINT after it; {pid} is the
      // broker's pid, {run} "<wait>-<i>" (e.g. E2E_ATTACH="perf record -g -p {pid} -o /tmp/p-{run}.data")
      const attach = process.env['E2E_ATTACH'];
      const argv = attach?.replaceAll('{pid}', String(pid)).replaceAll('{run}', `${w}-${i}`).split(' ') ?? [];
      const perf = argv[0] === undefined ? null : spawn(argv[0], argv.slice(1), { stdio: 'ignore' });
      if (perf !== null) await sleep(300); // attached before the run starts
      mark(`run ${w}-${i} start`);
      const before = byName(pid);
      const c0 = brokerCpu(t);
      const s0 = servingCpu(t);
      // runE2E measures CPU itself between warm-up and done; the per-thread split spans the whole run
      const r = await runE2E(t, `e2e-${w}-${i}`, w, WARMUP, ROUNDS, MAX_S);
      mark(`run ${w}-${i} end`);
      const after = byName(pid);
      const total = (brokerCpu(t) ?? 0) - (c0 ?? 0);
      if (perf !== null) {
        const exited = new Promise((r) => perf.once('exit', r));
        perf.kill('SIGINT');
        await exited;
      }
      const threads: Record<string, number> = {};
      const perRound = (name: string): number => round((((after.get(name) ?? 0) - (before.get(name) ?? 0)) * 1e6) / (r.rounds + WARMUP), 1);
      for (const name of after.keys()) if (!name.includes(':') && perRound(name) > 0) threads[name] = perRound(name);
      console.log(
        JSON.stringify({
          wait: w,
          rounds: r.rounds,
          brokerUsPerRound: r.brokerCpuUsPerRound,
          mainUsPerRound: r.servingCpuUsPerRound,
          p50: r.p50Ms,
          p99: r.p99Ms,
          p999: r.p999Ms,
          max: r.maxMs,
          ackP50: r.ackP50Ms,
          wholeRunUsPerRound: round((total * 1e6) / (r.rounds + WARMUP), 1),
          wholeRunMainUsPerRound: round((((servingCpu(t) ?? 0) - (s0 ?? 0)) * 1e6) / (r.rounds + WARMUP), 1),
          threads,
          // the main thread over the whole run, in user space (JavaScript, V8, Node's C++) and in the kernel
          wholeRunMainUserUsPerRound: perRound('main:user'),
          wholeRunMainSysUsPerRound: perRound('main:system'),
        }),
      );
    }
  }
} finally {
  await t.stop();
}
