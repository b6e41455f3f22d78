/**
 * The brokers and the native clients of compat/bench/mock-vs-gregor.ts: a fresh gregor child
 * (`node bin/gregor.js start --port 0 --data-dir <tmp>`, ready at its GREGOR_READY line), librdkafka's
 * mock cluster hosted by compat/bench/native/rdkafka-mock-bench.c (one broker, the given topics with
 * their log limits lifted; ready at its "bootstrap" line), or any broker given by --bootstrap; the
 * start-up timings; and the C end-to-end latency client (compat/bench/native/rdkafka-e2e.c).
 * The C programs are compiled on first use by native-build.ts, against the librdkafka the other C
 * load generators link.
 */
import { type ChildProcess, type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { cpuSeconds, peakRssBytes, percentile, mean, round, rssBytes, threadCpu } from './proc-stats.js';
import { ROOT } from '../lib/paths.js';
import { buildRdkafkaProgram, RDK_LIB, RDK_SRC } from './native-build.js';
import { RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';

/** librdkafka's version from the header the C programs are compiled against (RD_KAFKA_VERSION). */
export function librdkafkaVersion(): string {
  const m = /#define RD_KAFKA_VERSION\s+0x([0-9a-f]{8})/i.exec(readFileSync(join(RDK_SRC, 'src/rdkafka.h'), 'utf8'));
  if (m?.[1] === undefined) return 'unknown';
  const v = parseInt(m[1], 16);
  return `${(v >>> 24) & 0xff}.${(v >>> 16) & 0xff}.${(v >>> 8) & 0xff}`;
}

/** compat/bench/native/<name>.c compiled into dist/compat/bench/native/ when missing or older than its source. */
export function benchBinary(name: 'rdkafka-mock-bench' | 'rdkafka-e2e'): string {
  return buildRdkafkaProgram(join(ROOT, `compat/bench/native/${name}.c`), join(ROOT, `dist/compat/bench/native/${name}`), {
    // the mock host reads the mock's internal structs: it needs the build's config.h (deps/librdkafka)
    includes: name === 'rdkafka-mock-bench' ? [RDK_SRC] : [],
    // also after librdkafka is rebuilt: the mock host depends on the layout of its internal structs
    dependsOn: [join(RDK_LIB, 'librdkafka.so.1')],
  });
}

export type TargetName = 'gregor' | 'mock' | 'broker';

/** A broker under test. pid is null for a --bootstrap broker given without --pid (no CPU, no RSS). */
export interface Target {
  name: TargetName;
  bootstrap: string;
  pid: number | null;
  /** ms from spawn to ready (null for --bootstrap) */
  readyMs: number | null;
  /** gregor's admin HTTP address (host:port) from its ready line; absent for the mock and --bootstrap */
  admin?: string;
  stop(): Promise<void>;
}

/** CPU seconds of the broker process (all threads). */
export function brokerCpu(t: Target): number | null {
  return t.pid === null ? null : cpuSeconds(t.pid);
}

/**
 * CPU seconds of the thread that serves the clients: gregor's main thread (its event loop), the
 * mock's "rdk:mock" thread (the mock serves every connection from it; the host's main thread only
 * waits on stdin), a --bootstrap broker's main thread.
 */
export function servingCpu(t: Target): number | null {
  if (t.pid === null) return null;
  const threads = threadCpu(t.pid);
  const th = t.name === 'mock' ? threads.find((x) => x.comm === 'rdk:mock') : threads.find((x) => x.tid === t.pid);
  return th?.cpuSeconds ?? null;
}

export const SERVING_THREAD: Record<TargetName, string> = { gregor: 'main thread', mock: 'rdk:mock thread', broker: 'main thread' };

export function rssMB(t: Target): number | null {
  return t.pid === null ? null : round(rssBytes(t.pid) / 1048576, 1);
}

export function peakRssMB(t: Target): number | null {
  return t.pid === null ? null : round(peakRssBytes(t.pid) / 1048576, 1);
}

/** Waits for a stdout line matching `re`; resolves with the match and the ms since `spawnedAt`. */
function waitLine(
  child: ChildProcess,
  re: RegExp,
  what: string,
  spawnedAt: number,
  stderr: () => string,
): Promise<{ m: RegExpExecArray; ms: number }> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${what}: not ready within 30 s: ${stderr()}`)), 30_000);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code} before it was ready: ${stderr()}`));
    };
    child.once('exit', onExit);
    const onData = (d: Buffer) => {
      out = (out + d.toString()).slice(-65536);
      const m = re.exec(out);
      if (m !== null) {
        const ms = performance.now() - spawnedAt;
        clearTimeout(timer);
        child.off('exit', onExit);
        child.stdout?.off('data', onData);
        child.stdout?.resume(); // keep draining
        resolve({ m, ms });
      }
    };
    child.stdout?.on('data', onData);
  });
}

/** Stops a child: `gentle` (SIGTERM or closing stdin), SIGKILL after 10 s. */
async function stopChild(child: ChildProcess, gentle: () => void): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  gentle();
  const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(t);
}

/**
 * A fresh gregor: `node bin/gregor.js start --port 0 --data-dir <tmp>`, ready at GREGOR_READY; `root`:
 * the checkout whose broker runs (another, built, for an A/B of two trees); `env`: more environment
 * for the broker (its configuration as KAFKA_* variables, for an A/B of two settings).
 */
export async function startGregor(root = ROOT, env: Readonly<Record<string, string>> = {}): Promise<Target> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gregor-mvg-'));
  const nodeFlags = (process.env['GREGOR_CHILD_NODE_FLAGS'] ?? '').split(' ').filter((f) => f !== '');
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, join(root, 'bin/gregor.js'), 'start', '--port', '0', '--data-dir', dataDir], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const stop = async () => {
    await stopChild(child, () => child.kill('SIGTERM'));
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const { m, ms } = await waitLine(child, /(?:^|\n)GREGOR_READY (\{[^\n]*\})\n/, 'gregor', spawnedAt, () => stderr);
    const ready = JSON.parse(m[1] ?? '{}') as { bootstrap?: string; admin?: string };
    if (ready.bootstrap === undefined) throw new Error(`GREGOR_READY without bootstrap: ${m[1]}`);
    const t: Target = { name: 'gregor', bootstrap: ready.bootstrap, pid: child.pid ?? null, readyMs: ms, stop };
    if (ready.admin !== undefined) t.admin = ready.admin;
    return t;
  } catch (e) {
    await stop();
    throw e;
  }
}

/** librdkafka's mock cluster, one broker, `topics` ("name" or "name:partitions") with unlimited logs. */
export async function startMock(topics: readonly string[]): Promise<Target> {
  const binary = benchBinary('rdkafka-mock-bench');
  const spawnedAt = performance.now();
  const child: ChildProcessWithoutNullStreams = spawn(binary, [...topics], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const stop = () => stopChild(child, () => child.stdin.end());
  try {
    const { m, ms } = await waitLine(child, /(?:^|\n)bootstrap (\S+)\n/, 'rdkafka-mock-bench', spawnedAt, () => stderr);
    return { name: 'mock', bootstrap: m[1] ?? '', pid: child.pid ?? null, readyMs: ms, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Any broker, by its bootstrap address (and its pid, when it runs here, for CPU and RSS). */
export function externalBroker(bootstrap: string, pid: number | null): Target {
  return { name: 'broker', bootstrap, pid, readyMs: null, stop: async () => {} };
}

/** ms from spawn until `node -e 0` exits: what Node.js alone costs on this machine. */
export function timeNodeE0(): Promise<number> {
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', () => resolve(performance.now() - spawnedAt));
  });
}

/** Spawn -> ready of a fresh broker (no topics), which is then stopped. */
export async function timeReady(name: 'gregor' | 'mock'): Promise<number> {
  const t = name === 'gregor' ? await startGregor() : await startMock([]);
  await t.stop();
  return t.readyMs ?? NaN;
}

// ---- the end-to-end latency client ---------------------------------------------------------------

export interface E2EResult {
  fetchWaitMaxMs: number;
  rounds: number;
  seconds: number;
  avgMs: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  ackP50Ms: number;
  /** broker CPU µs per round (whole process, and its serving thread) */
  brokerCpuUsPerRound: number | null;
  servingCpuUsPerRound: number | null;
  /** every timed round's latency, µs (kept so rounds can be pooled) */
  latenciesUs: number[];
}

/** runE2E's per-round detail beside E2EResult (not written to result files). */
export interface E2ERounds {
  /** produce() -> delivery report, µs, per timed round */
  acksUs: number[];
  /** when each timed round's produce() was called: CLOCK_MONOTONIC µs (Node's process.hrtime clock) */
  startsUs: number[];
}

/** Creates `names` as topics of one partition each on the broker at `bootstrap` (the e2e workloads' topics). */
export async function createOnePartitionTopics(bootstrap: string, names: readonly string[]): Promise<void> {
  const admin = await RawClient.connect(bootstrap);
  try {
    await rawCreateTopics(
      admin,
      names.map((name) => ({ name, partitions: 1 })),
    );
  } finally {
    admin.destroy();
  }
}

/** Percentiles (ms) of latencies in µs. */
export function latencyStats(us: readonly number[]): { avgMs: number; p50Ms: number; p99Ms: number; p999Ms: number; maxMs: number } {
  const ms = (x: number) => round(x / 1000, 3);
  return {
    avgMs: ms(mean(us)),
    p50Ms: ms(percentile(us, 50)),
    p99Ms: ms(percentile(us, 99)),
    p999Ms: ms(percentile(us, 99.9)),
    maxMs: ms(us.length === 0 ? NaN : Math.max(...us)),
  };
}

/**
 * Kafka's EndToEndLatency method with rdkafka-e2e: acks=all, linger.ms=0, one record at a time, the
 * consumer's fetch.wait.max.ms as given; `warmup` untimed rounds (or fewer once `warmupMaxSeconds`
 * have passed), then `rounds` timed rounds or fewer once `maxSeconds` have passed. `onRounds`, if
 * given, receives each timed round's ack time and start time.
 */
export async function runE2E(
  t: Target,
  topic: string,
  fetchWait: number,
  warmup: number,
  rounds: number,
  maxSeconds: number,
  warmupMaxSeconds = 3,
  onRounds?: (r: E2ERounds) => void,
): Promise<E2EResult> {
  const child: ChildProcessWithoutNullStreams = spawn(
    benchBinary('rdkafka-e2e'),
    [t.bootstrap, topic, String(warmup), String(rounds), String(maxSeconds), `c.fetch.wait.max.ms=${fetchWait}`],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, RDKAFKA_E2E_WARMUP_MAX_S: String(warmupMaxSeconds) } },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (prefix: string): Promise<string[]> => {
    const r = await lines.next();
    if (r.done === true || !r.value.startsWith(prefix)) {
      const code = await exited;
      throw new Error(
        `rdkafka-e2e (fetch.wait.max.ms=${fetchWait}, ${t.name}): expected "${prefix}", got ${r.done === true ? `exit ${code}` : JSON.stringify(r.value.slice(0, 200))}: ${stderr.trim()}`,
      );
    }
    return r.value.split(' ').slice(1);
  };
  try {
    await next('ready');
    child.stdin.write('go\n');
    await next('warm');
    const c0 = brokerCpu(t);
    const s0 = servingCpu(t);
    child.stdin.write('go\n');
    const [n, seconds, lat, acks, starts] = await next('done');
    const c1 = brokerCpu(t);
    const s1 = servingCpu(t);
    child.stdin.end('exit\n');
    const code = await exited;
    if (code !== 0) throw new Error(`rdkafka-e2e exited ${code}: ${stderr.trim()}`);
    const done = Number(n);
    const latenciesUs = (lat ?? '').split(',').map(Number);
    onRounds?.({ acksUs: (acks ?? '').split(',').map(Number), startsUs: (starts ?? '').split(',').map(Number) });
    const perRound = (a: number | null, b: number | null) => (a === null || b === null ? null : round(((b - a) * 1e6) / done, 1));
    return {
      fetchWaitMaxMs: fetchWait,
      rounds: done,
      seconds: round(Number(seconds), 3),
      ...latencyStats(latenciesUs),
      ackP50Ms: round(percentile((acks ?? '').split(',').map(Number), 50) / 1000, 3),
      brokerCpuUsPerRound: perRound(c0, c1),
      servingCpuUsPerRound: perRound(s0, s1),
      latenciesUs,
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}
