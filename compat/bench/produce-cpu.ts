/**
 * Issue 14's produce path, one workload at a time: gregor's CPU per million records, by thread.
 *
 *   node dist/compat/bench/produce-cpu.js [acks1|acksall|consume ...]   (default: acks1 acksall consume)
 *
 * Starts a fresh gregor (GREGOR_CHILD_NODE_FLAGS passes node flags, e.g. --cpu-prof), then runs each
 * named workload BENCH_REPEAT (1) times on a topic of its own with librdkafka's C clients and the
 * settings of mock-vs-gregor.ts (BENCH_RECORDS records of BENCH_VALUE_BYTES (100) bytes, after
 * BENCH_WARMUP_RECORDS). 'consume' reads the last acks=1 topic from the start. Prints, per run, the
 * broker's CPU-s per 1M records (BENCH_BOOTSTRAP=host:port BENCH_PID=N: a broker already running) (utime+stime of the process, 10 ms ticks) and each busy thread's share.
 */
import { spawn } from 'node:child_process';
import { RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';
import { externalBroker, startGregor } from './mock-vs-gregor-brokers.js';
import { primeProducePaths, startNativeConsumer, startNativeProducer, THROUGHPUT_PRODUCER_CONFIG } from './native-producer.js';
import { cpuSeconds, envInt, pageSupplyMs, peakRssBytes, round, rssBytes, threadCpu } from './proc-stats.js';

const RECORDS = envInt('BENCH_RECORDS', 1_000_000);
const WARMUP = envInt('BENCH_WARMUP_RECORDS', 50_000);
const REPEAT = envInt('BENCH_REPEAT', 1);
const VALUE_BYTES = envInt('BENCH_VALUE_BYTES', 100);
/** untimed records with acks=1 and then acks=all before the first workload (primeProducePaths); 0: none */
const PRIME = envInt('BENCH_PRIME_RECORDS', 0);

const PRODUCER_CONFIG = THROUGHPUT_PRODUCER_CONFIG;

/** BENCH_PERF_DIR set: `perf record -g` of the broker over the timed part, into <dir>/<workload>.data, at BENCH_PERF_HZ (999) samples/s. */
function perfRecord(pid: number, name: string): () => Promise<void> {
  const dir = process.env['BENCH_PERF_DIR'];
  if (dir === undefined) return () => Promise.resolve();
  const child = spawn(
    'perf',
    ['record', '-g', '-F', String(envInt('BENCH_PERF_HZ', 999)), '-p', String(pid), '-o', `${dir}/${name}.data`],
    { stdio: 'ignore' },
  );
  return () =>
    new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGINT');
    });
}

type Workload = 'acks1' | 'acksall' | 'consume';

function threads(pid: number): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of threadCpu(pid)) {
    const name = t.tid === pid ? 'main' : t.comm;
    m.set(name, (m.get(name) ?? 0) + t.cpuSeconds);
  }
  return m;
}

function diff(a: Map<string, number>, b: Map<string, number>, perM: number): string {
  return [...b]
    .map(([k, v]) => [k, v - (a.get(k) ?? 0)] as const)
    .filter(([, v]) => v > 0)
    .sort((x, y) => y[1] - x[1])
    .map(([k, v]) => `${k} ${round(v * perM, 3)}`)
    .join(', ');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const workloads = (args.length > 0 ? args : ['acks1', 'acksall', 'consume']) as Workload[];
  const external = process.env['BENCH_BOOTSTRAP'];
  const t = external === undefined ? await startGregor() : externalBroker(external, envInt('BENCH_PID', 0));
  const pid = t.pid as number;
  // the kernel's cost of new page-cache pages, which the appends pay (see pageSupplyMs)
  process.stdout.write(`page supply: ${pageSupplyMs()} ms of kernel time for 128 MiB into new pages\n`);
  try {
    if (PRIME > 0) {
      const admin = await RawClient.connect(t.bootstrap);
      try {
        await rawCreateTopics(admin, [{ name: 'pc-prime', partitions: 1 }]);
      } finally {
        admin.destroy();
      }
      await primeProducePaths(t.bootstrap, 'pc-prime', PRIME, PRODUCER_CONFIG, { valueBytes: VALUE_BYTES });
    }
    let n = 0;
    let lastAcks1: string | null = null;
    for (let rep = 0; rep < REPEAT; rep++) {
      for (const w of workloads) {
        let topic = `pc-${w}-${n++}`;
        if (w !== 'consume') {
          const admin = await RawClient.connect(t.bootstrap);
          try {
            await rawCreateTopics(admin, [{ name: topic, partitions: 1 }]);
          } finally {
            admin.destroy();
          }
        } else {
          if (lastAcks1 === null) throw new Error('consume needs an acks1 run before it');
          topic = lastAcks1;
        }
        await new Promise((r) => setTimeout(r, 1000));
        let seconds: number;
        let records: number;
        let c0: number, c1: number, th0: Map<string, number>, th1: Map<string, number>;
        if (w === 'consume') {
          const c = await startNativeConsumer(t.bootstrap, topic, 1, {});
          const perf = perfRecord(pid, `${w}-${rep}-${n}`);
          [c0, th0] = [cpuSeconds(pid), threads(pid)];
          const r = await c.timed();
          [c1, th1] = [cpuSeconds(pid), threads(pid)];
          await perf();
          await c.end();
          seconds = r.seconds;
          records = r.records;
        } else {
          const acks = w === 'acks1' ? 1 : -1;
          const p = await startNativeProducer(
            t.bootstrap,
            topic,
            WARMUP,
            RECORDS,
            1,
            { ...PRODUCER_CONFIG, 'request.required.acks': acks },
            { valueBytes: VALUE_BYTES },
          );
          const perf = perfRecord(pid, `${w}-${rep}-${n}`);
          [c0, th0] = [cpuSeconds(pid), threads(pid)];
          const r = await p.timed();
          [c1, th1] = [cpuSeconds(pid), threads(pid)];
          await perf();
          const hw = await p.highWatermark();
          await p.end();
          if (r.failed > 0 || hw !== WARMUP + RECORDS) throw new Error(`${r.failed} failed, high watermark ${hw}`);
          seconds = r.seconds;
          records = RECORDS;
          if (w === 'acks1') lastAcks1 = topic;
        }
        const perM = 1e6 / records;
        process.stdout.write(
          `${w}: ${Math.round(records / seconds)} records/s, broker ${round((c1 - c0) * perM, 3)} CPU-s/M (${diff(th0, th1, perM)}), RSS ${Math.round(rssBytes(pid) / 2 ** 20)} MB, peak ${Math.round(peakRssBytes(pid) / 2 ** 20)} MB\n`,
        );
      }
    }
  } finally {
    await t.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`produce-cpu: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
