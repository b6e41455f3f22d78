/**
 * Shared pieces of the compat benchmarks: process CPU and RSS from /proc, the machine details each
 * result carries, writing `gregor-bench/1` files, small statistics, and loading the librdkafka
 * client (@confluentinc/kafka-javascript from compat/clients/confluent).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_SCHEMA, type BenchFile, validateBench } from '../lib/bench.js';
import { ROOT } from '../lib/paths.js';
import { machineInfo, type MachineInfo } from '../lib/results.js';

let ticks: number | undefined;
/** Clock ticks per second (utime/stime unit of /proc/<pid>/stat). */
export function clkTck(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** utime + stime of a process (all its threads), in seconds, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // comm (field 2) may hold spaces and parentheses: the fields after it start after the last ')'
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); utime is field 14, stime field 15
  return (Number(rest[14 - 3]) + Number(rest[15 - 3])) / clkTck();
}

/**
 * CPU time of a process so far in ms, at nanosecond resolution: the sum over its threads of
 * /proc/<pid>/task/<tid>/schedstat (time on a CPU). For spans too short for `cpuSeconds`' 10 ms ticks;
 * a thread that exited meanwhile drops out of the sum.
 */
export function cpuMs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread exited between the listing and the read
    }
  }
  return ns / 1e6;
}

/** Minor page faults of a process so far (all its threads; field 10 of /proc/<pid>/stat). */
export function minorFaults(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[10 - 3]);
}

/** utime and stime of a process (all its threads), in seconds: time in its own code and in the kernel for it. */
export function cpuSplit(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(rest[14 - 3]) / clkTck(), system: Number(rest[15 - 3]) / clkTck() };
}

/** utime + stime of each thread of a process, with its name (librdkafka names its threads "rdk:broker1", …). */
export interface ThreadCpu {
  tid: number;
  comm: string;
  /** user + system */
  cpuSeconds: number;
  userSeconds: number;
  systemSeconds: number;
}

export function threadCpu(pid: number): ThreadCpu[] {
  const out: ThreadCpu[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const userSeconds = Number(rest[14 - 3]) / clkTck();
    const systemSeconds = Number(rest[15 - 3]) / clkTck();
    out.push({
      tid: Number(tid),
      comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      cpuSeconds: userSeconds + systemSeconds,
      userSeconds,
      systemSeconds,
    });
  }
  return out;
}

/** CPU seconds of a process's main thread (the one whose id is the process id). */
export function mainThreadCpuSeconds(pid: number): number {
  return threadCpu(pid).find((t) => t.tid === pid)?.cpuSeconds ?? NaN;
}

/** User and system CPU seconds of a process's main thread (NaN when it is gone). */
export function mainThreadTimes(pid: number): { user: number; system: number } {
  const t = threadCpu(pid).find((x) => x.tid === pid);
  return { user: t?.userSeconds ?? NaN, system: t?.systemSeconds ?? NaN };
}

/** VmRSS of a process in bytes, from /proc/<pid>/status. */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m?.[1] === undefined) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** VmHWM (peak RSS) of a process in bytes. */
export function peakRssBytes(pid: number): number {
  const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m?.[1] === undefined ? NaN : Number(m[1]) * 1024;
}

/** CPU and wall time of a process between start() and the returned stop(). */
export function cpuMeter(pid: number): () => { cpuSeconds: number; wallSeconds: number; cpuPercent: number } {
  const c0 = cpuSeconds(pid);
  const t0 = performance.now();
  return () => {
    const cpu = cpuSeconds(pid) - c0;
    const wall = (performance.now() - t0) / 1000;
    return { cpuSeconds: cpu, wallSeconds: wall, cpuPercent: (cpu / wall) * 100 };
  };
}

/** Where BENCH_PIN puts the processes of a run: every thread of each broker on one CPU, the clients on another. */
export interface Pinning {
  brokerCpu: number;
  clientCpu: number;
}

/**
 * Reads BENCH_PIN-style text: unset or '' → null (nothing pinned); '1' → brokers on CPU 0, clients on
 * CPU 1; 'B:C' → brokers on CPU B, clients on CPU C. The two must differ and exist (0..cpus-1).
 */
export function parsePinning(text: string | undefined, cpus: number): Pinning | null {
  if (text === undefined || text === '' || text === '0') return null;
  const m = text === '1' ? ['1', '0', '1'] : /^(\d+):(\d+)$/.exec(text);
  if (m === null) throw new Error(`BENCH_PIN=${text}: expected 1 or BROKER_CPU:CLIENT_CPU`);
  const [brokerCpu, clientCpu] = [Number(m[1]), Number(m[2])];
  if (brokerCpu === clientCpu) throw new Error(`BENCH_PIN=${text}: the broker and the clients need different CPUs`);
  if (Math.max(brokerCpu, clientCpu) >= cpus) throw new Error(`BENCH_PIN=${text}: this machine has CPUs 0-${cpus - 1}`);
  return { brokerCpu, clientCpu };
}

/**
 * Binds every thread of process `pid` to CPU `cpu` (taskset -a -p, util-linux). Threads it starts
 * later inherit the binding from the thread that starts them.
 */
export function pinProcess(pid: number, cpu: number): void {
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

/** The CPUs process `pid` may run on, as /proc/<pid>/status lists them (e.g. '0-1', '1'). */
export function allowedCpus(pid: number): string {
  const m = /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m?.[1] ?? '';
}

export interface BenchMachine extends MachineInfo {
  loadavg: number[];
  clkTck: number;
}

export function benchMachine(): BenchMachine {
  return { ...machineInfo(), loadavg: loadavg().map((x) => round(x, 2)), clkTck: clkTck() };
}

/**
 * What new page-cache pages cost on this machine now: the kernel milliseconds (this process's system
 * time) to write 128 MiB in 1 MiB writes to a new file in `dir` (the OS temp dir, where the brokers'
 * data dirs go), which is then deleted. A broker's appends pay this per byte; an in-memory broker
 * does not. On the VMs these benchmarks run on it swings by ~10x: a page the guest freed under a
 * second ago is reused cheaply (~25-45 ms here), one it must get back from the hypervisor is not
 * (~230-450 ms).
 */
export function pageSupplyMs(dir = tmpdir()): number {
  const file = join(dir, `gregor-page-supply-${process.pid}`);
  const buf = Buffer.alloc(1 << 20, 0x5a);
  const fd = openSync(file, 'w');
  const before = process.cpuUsage();
  try {
    for (let i = 0; i < 128; i++) writeSync(fd, buf);
    return round(process.cpuUsage(before).system / 1000, 1);
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
}

/** Validates and writes `<outDir>/<id>.json`; returns the path. Throws on an invalid shape. */
export function writeBench(
  outDir: string,
  bench: Omit<BenchFile, 'schema' | 'machine'> & { machine?: MachineInfo },
  extra: Record<string, unknown> = {},
): string {
  const machine = bench.machine ?? benchMachine();
  // other work on the machine shows in the figures: say how busy it was
  const notes = [
    ...(bench.notes ?? []),
    `Load average when written: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(', ')} (1/5/15 min) on ${machine.cpu.cores} cores.`,
  ];
  const file: BenchFile & Record<string, unknown> = { schema: BENCH_SCHEMA, ...bench, notes, machine, ...extra };
  const problems = validateBench(file);
  if (problems.length > 0) throw new Error(`bench ${bench.id}: ${problems.join('; ')}`);
  mkdirSync(outDir, { recursive: true });
  const path = join(outDir, `${bench.id}.json`);
  writeFileSync(path, JSON.stringify(file, null, 2) + '\n');
  return path;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Nearest-rank percentile of unsorted values. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}

export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** Short human form: 1234567 -> "1.23M", 12345 -> "12.3k". */
export function si(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1e9) return `${(x / 1e9).toPrecision(3)}G`;
  if (a >= 1e6) return `${(x / 1e6).toPrecision(3)}M`;
  if (a >= 1e3) return `${(x / 1e3).toPrecision(3)}k`;
  return x.toPrecision(3);
}

/** Reads an integer knob from the environment. */
export function envInt(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`${name}=${v} is not a number`);
  return n;
}

// ---- @confluentinc/kafka-javascript (librdkafka), installed in compat/clients/confluent ----------

/* The package is CommonJS without types we can use under exactOptionalPropertyTypes; the few
   shapes used are declared here. */
export interface RdMessage {
  value: Buffer | null;
  size: number;
  topic: string;
  partition: number;
  offset: number;
  timestamp?: number;
}
export interface RdKafkaConsumer {
  connect(opts: { timeout?: number }, cb: (err: unknown) => void): void;
  assign(tps: { topic: string; partition: number; offset?: number }[]): void;
  consume(n: number, cb: (err: unknown, msgs: RdMessage[]) => void): void;
  consume(): void;
  on(ev: 'data', fn: (m: RdMessage) => void): void;
  on(ev: string, fn: (...a: unknown[]) => void): void;
  setDefaultConsumeTimeout(ms: number): void;
  disconnect(cb: () => void): void;
}
export interface RdProducer {
  connect(opts: { timeout?: number }, cb: (err: unknown) => void): void;
  produce(
    topic: string,
    partition: number | null,
    value: Buffer | null,
    key?: Buffer | null,
    timestamp?: number | null,
    opaque?: unknown,
  ): void;
  setPollInterval(ms: number): void;
  setPollInBackground(on: boolean): void;
  poll(): void;
  flush(timeoutMs: number, cb: (err: unknown) => void): void;
  on(ev: 'delivery-report', fn: (err: unknown, report: { partition: number; offset: number; opaque?: unknown }) => void): void;
  on(ev: string, fn: (...a: unknown[]) => void): void;
  disconnect(cb: () => void): void;
}
export interface RdKafkaModule {
  librdkafkaVersion: string;
  KafkaConsumer: new (conf: Record<string, unknown>, topicConf: Record<string, unknown>) => RdKafkaConsumer;
  Producer: new (conf: Record<string, unknown>, topicConf?: Record<string, unknown>) => RdProducer;
}

let rd: RdKafkaModule | undefined;
export function rdkafka(): RdKafkaModule {
  rd ??= createRequire(join(ROOT, 'compat/clients/confluent/package.json'))('@confluentinc/kafka-javascript') as RdKafkaModule;
  return rd;
}

/** The settings the producer-throughput benches share: acks, 5 ms linger, 1 MB batches, a deep queue, no logs. */
export function throughputProducerConfig(bootstrap: string, acks: number, props: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'bootstrap.servers': bootstrap,
    acks,
    'linger.ms': 5,
    'batch.size': 1000000,
    'queue.buffering.max.messages': 500000,
    'queue.buffering.max.kbytes': 1048576,
    log_level: 0,
    ...props,
  };
}

export function confluentVersion(): string {
  try {
    return (
      createRequire(join(ROOT, 'compat/clients/confluent/package.json'))('@confluentinc/kafka-javascript/package.json') as {
        version: string;
      }
    ).version;
  } catch {
    return 'unknown';
  }
}

/**
 * An Error for whatever a client's callback or a catch produced: Errors as they are (librdkafka's
 * LibrdKafkaError is one), anything else wrapped, with its message when it has one.
 */
export function asError(e: unknown): Error {
  if (e instanceof Error) return e;
  return new Error(typeof e === 'object' && e !== null && 'message' in e && typeof e.message === 'string' ? e.message : String(e));
}

export function connectRd(c: { connect(opts: { timeout?: number }, cb: (err: unknown) => void): void }, timeoutMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => c.connect({ timeout: timeoutMs }, (e) => (e ? reject(asError(e)) : resolve())));
}

export function disconnectRd(c: { disconnect(cb: () => void): void }, timeoutMs = 10_000): Promise<void> {
  return Promise.race([new Promise<void>((resolve) => c.disconnect(() => resolve())), sleep(timeoutMs)]);
}

export function flushRd(p: RdProducer, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => p.flush(timeoutMs, (e) => (e ? reject(asError(e)) : resolve())));
}

/**
 * Produces n records (value valueAt(i)) to `partition` (null: librdkafka's partitioner), waiting while
 * librdkafka's queue is full and yielding to the event loop every 4096 records, then flushes.
 */
export async function produceAllRd(
  p: RdProducer,
  topic: string,
  partition: number | null,
  n: number,
  valueAt: (i: number) => Buffer,
): Promise<void> {
  for (let i = 0; i < n;) {
    try {
      p.produce(topic, partition, valueAt(i), null);
      i++;
    } catch (e) {
      // QUEUE_FULL: let librdkafka drain
      if (!(e instanceof Error && /full/i.test(e.message))) throw e;
      await sleep(1);
    }
    if ((i & 4095) === 0) await new Promise((r) => setImmediate(r));
  }
  await flushRd(p, 120_000);
}

/** A librdkafka producer with throughputProducerConfig (acks=1) that produces n records, flushes and disconnects; the seconds it took. */
export async function timedProduceRd(
  bootstrap: string,
  props: Record<string, unknown>,
  topic: string,
  partition: number | null,
  n: number,
  valueAt: (i: number) => Buffer,
): Promise<number> {
  const p = new (rdkafka().Producer)(throughputProducerConfig(bootstrap, 1, props));
  await connectRd(p);
  p.setPollInterval(50);
  const t0 = performance.now();
  await produceAllRd(p, topic, partition, n, valueAt);
  const secs = (performance.now() - t0) / 1000;
  await disconnectRd(p);
  return secs;
}

/**
 * A librdkafka consumer (assignment from offset 0, no group commits) that reads n records of `topic`'s
 * partitions 0..partitions-1; the seconds from assign to the n-th record and the value bytes seen.
 * Throws when fewer than n arrive within `timeoutMs`.
 */
export async function timedConsumeRd(
  bootstrap: string,
  props: Record<string, unknown>,
  topic: string,
  partitions: number,
  n: number,
  timeoutMs = 120_000,
): Promise<{ seconds: number; bytes: number }> {
  const c = new (rdkafka().KafkaConsumer)(
    {
      'bootstrap.servers': bootstrap,
      'group.id': `bench-${topic}-${Date.now()}`,
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'fetch.wait.max.ms': 100,
      log_level: 0,
      ...props,
    },
    { 'auto.offset.reset': 'earliest' },
  );
  await connectRd(c);
  c.setDefaultConsumeTimeout(100);
  const t0 = performance.now();
  c.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition, offset: 0 })));
  let got = 0;
  let bytes = 0;
  const deadline = t0 + timeoutMs;
  while (got < n && performance.now() < deadline) {
    const msgs = await new Promise<RdMessage[]>((resolve, reject) => c.consume(10000, (e, m) => (e ? reject(asError(e)) : resolve(m))));
    got += msgs.length;
    for (const m of msgs) bytes += m.size;
  }
  const seconds = (performance.now() - t0) / 1000;
  await disconnectRd(c);
  if (got !== n) throw new Error(`librdkafka consumer saw ${got}/${n} records of ${topic}`);
  return { seconds, bytes };
}

export const ROOT_DIR = ROOT;

/** A thread (threads of one name summed) and how busy it was over a window, % of one core. */
export interface ThreadBusy {
  name: string;
  busyPercent: number;
}

/** CPU seconds per thread name (threads of one name summed; the main thread is called `mainName`). */
export function threadsByName(pid: number, mainName: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of threadCpu(pid)) {
    const name = t.tid === pid ? mainName : t.comm;
    m.set(name, (m.get(name) ?? 0) + t.cpuSeconds);
  }
  return m;
}

/** The threads at least 5% busy between two `threadsByName` readings `seconds` apart, busiest first. */
export function busiest(after: Map<string, number>, before: Map<string, number>, seconds: number): ThreadBusy[] {
  return [...after]
    .map(([name, c]) => ({ name, busyPercent: Math.round(((c - (before.get(name) ?? 0)) / seconds) * 100) }))
    .filter((t) => t.busyPercent >= 5)
    .sort((a, b) => b.busyPercent - a.busyPercent);
}
