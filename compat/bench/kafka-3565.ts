/**
 * KAFKA-3565 table: producer throughput with librdkafka (@confluentinc/kafka-javascript 1.x, its
 * node-rdkafka-style Producer), 100-byte records, acks=1, one partition, for none, gzip, snappy, lz4
 * and zstd — against gregor with message format 2 (Produce v7+, magic 2 batches stored as sent), and
 * the same against `broker.version.emulate=0.10.0` (librdkafka speaks Produce v2 and writes magic 1
 * message sets, which a 0.10.0 topic stores as they are; zstd does not exist there). Not a test:
 * prints a table and writes compat/results/kafka-3565-<ts>.json.
 *
 * Figures per run: records/s, MB/s of record values, and broker CPU seconds per million records
 * (utime+stime of the broker child process from /proc over the timed window). The broker runs as
 * a child process; the producer shares the machine with it. Values are 100 random uppercase
 * letters (what Kafka's ProducerPerformance sends), so they compress about 40%.
 *
 * Knobs (environment): BENCH_3565_RECORDS (default 3000000), BENCH_3565_CODECS, BENCH_3565_MODES
 * ("v2,v1").
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startChildBroker, tempDir } from '../../test/helpers/broker.js';
import { PROJECT_ROOT } from '../../test/helpers/project.js';
import { loadConfluent } from '../lib/confluent-module.js';
import { mainThreadCpuSeconds, threadCpu } from './proc-stats.js';

type Any = any;
const ck: Any = loadConfluent();

const RECORDS = Number(process.env['BENCH_3565_RECORDS'] ?? 3_000_000);
/**
 * Codecs to run; `codec@level` also sets the producer's compression.level (gzip@1: librdkafka's
 * fastest gzip, to tell the broker's share from the producer's compressor at the default level 6).
 */
const CODECS = (process.env['BENCH_3565_CODECS'] ?? 'none,gzip,gzip@1,snappy,lz4,zstd').split(',');
const MODES = (process.env['BENCH_3565_MODES'] ?? 'v2,v1').split(',');
const VALUE_BYTES = 100;
const WARMUP = 50_000;

const PRODUCER_CONFIG = {
  'request.required.acks': 1,
  'linger.ms': 5,
  'batch.num.messages': 10000,
  'batch.size': 1_000_000,
  'queue.buffering.max.messages': 1_000_000,
  'queue.buffering.max.kbytes': 1_048_576,
  'max.in.flight.requests.per.connection': 5,
  'enable.idempotence': false,
};

function values(n: number): Buffer[] {
  let x = 987654321;
  return Array.from({ length: n }, () => {
    const b = Buffer.allocUnsafe(VALUE_BYTES);
    for (let i = 0; i < VALUE_BYTES; i++) {
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      b[i] = 65 + (x % 26);
    }
    return b;
  });
}

function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(f[11]) + Number(f[12])) / 100;
}

function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

async function connect(bootstrap: string, codecSpec: string): Promise<Any> {
  const [codec, level] = codecSpec.split('@');
  const p = new ck.Producer({ 'bootstrap.servers': bootstrap, 'compression.codec': codec, ...(level === undefined ? {} : { 'compression.level': Number(level) }), log_level: 0, ...PRODUCER_CONFIG });
  await new Promise<void>((resolve, reject) => p.connect({}, (e: Any) => (e ? reject(e) : resolve())));
  p.setPollInterval(50);
  return p;
}

/** Produces `n` records as fast as librdkafka's queue takes them, then flushes. */
async function produce(p: Any, topic: string, n: number, vals: Buffer[]): Promise<void> {
  const QUEUE_FULL = ck.CODES.ERRORS.ERR__QUEUE_FULL;
  for (let i = 0; i < n; ) {
    try {
      p.produce(topic, 0, vals[i % vals.length], null, Date.now());
      i++;
    } catch (e) {
      if ((e as { code?: number }).code !== QUEUE_FULL) throw e;
      await new Promise((r) => setTimeout(r, 1));
    }
    if ((i & 4095) === 0) await new Promise((r) => setImmediate(r));
  }
  await new Promise<void>((resolve, reject) => p.flush(120_000, (e: Any) => (e ? reject(e) : resolve())));
}

function highWatermark(p: Any, topic: string): Promise<number> {
  return new Promise((resolve, reject) => p.queryWatermarkOffsets(topic, 0, 10_000, (e: Any, o: Any) => (e ? reject(e) : resolve(o.highOffset))));
}

interface Row {
  mode: string;
  codec: string;
  records: number;
  seconds: number;
  recordsPerSecond: number;
  mbPerSecond: number;
  brokerCpuSecondsPerMillion: number;
  producerCpuSecondsPerMillion: number;
  /** the broker's main thread alone (the rest: append workers, libuv, GC helpers) */
  brokerMainThreadCpuSecondsPerMillion: number;
  /**
   * Busiest producer-process threads over the timed window, % of one core: the JS thread that calls
   * produce() ("node") and librdkafka's own ("rdk:broker…" builds, compresses and sends the batches).
   */
  producerThreads: { name: string; busyPercent: number }[];
  highWatermark: number;
}

/** CPU seconds per thread name (threads of one name summed). */
function threadsByName(pid: number): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of threadCpu(pid)) {
    const name = t.tid === pid ? 'node (JS)' : t.comm;
    m.set(name, (m.get(name) ?? 0) + t.cpuSeconds);
  }
  return m;
}

async function runMode(mode: string, vals: Buffer[]): Promise<Row[]> {
  const dataDir = tempDir('gregor-3565-');
  const overrides: Record<string, string> = { 'num.partitions': '1', 'log.retention.check.interval.ms': '3600000' };
  if (mode === 'v1') overrides['broker.version.emulate'] = '0.10.0';
  const broker = await startChildBroker(dataDir, 0, overrides);
  const pid = broker.child.pid as number;
  const rows: Row[] = [];
  try {
    for (const codec of CODECS) {
      if (mode === 'v1' && codec === 'zstd') continue; // zstd needs Produce v7 / magic 2
      process.stderr.write(`kafka-3565: format ${mode === 'v1' ? '1 (emulate 0.10.0)' : '2'}, ${codec} …\n`);
      const topic = `perf-${codec.replace('@', '-level-')}`;
      const p = await connect(broker.bootstrap, codec);
      try {
        await produce(p, topic, WARMUP, vals); // creates the topic, warms up both sides
        const cpu0 = cpuSeconds(pid);
        const main0 = mainThreadCpuSeconds(pid);
        const threads0 = threadsByName(process.pid);
        const self0 = selfCpuSeconds();
        const t0 = performance.now();
        await produce(p, topic, RECORDS, vals);
        const seconds = (performance.now() - t0) / 1000;
        const cpu = cpuSeconds(pid) - cpu0;
        const mainCpu = mainThreadCpuSeconds(pid) - main0;
        const self = selfCpuSeconds() - self0;
        const producerThreads = [...threadsByName(process.pid)]
          .map(([name, c]) => ({ name, busyPercent: Math.round(((c - (threads0.get(name) ?? 0)) / seconds) * 100) }))
          .filter((t) => t.busyPercent >= 5)
          .sort((a, b) => b.busyPercent - a.busyPercent);
        const hw = await highWatermark(p, topic);
        rows.push({
          mode: mode === 'v1' ? 'format 1 (0.10.0, Produce v2)' : 'format 2 (Produce v7+)',
          codec,
          records: RECORDS,
          seconds,
          recordsPerSecond: RECORDS / seconds,
          mbPerSecond: (RECORDS * VALUE_BYTES) / 1e6 / seconds,
          brokerCpuSecondsPerMillion: (cpu / RECORDS) * 1e6,
          producerCpuSecondsPerMillion: (self / RECORDS) * 1e6,
          brokerMainThreadCpuSecondsPerMillion: (mainCpu / RECORDS) * 1e6,
          producerThreads,
          highWatermark: hw,
        });
        if (hw !== WARMUP + RECORDS) throw new Error(`${topic}: high watermark ${hw}, expected ${WARMUP + RECORDS}`);
      } finally {
        await new Promise<void>((resolve) => p.disconnect(() => resolve()));
      }
    }
  } finally {
    broker.child.kill('SIGTERM');
    await broker.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}

function machine() {
  const cpus = os.cpus();
  return {
    node: process.version,
    os: { type: os.type(), platform: os.platform(), release: os.release(), arch: os.arch() },
    cpu: { model: cpus[0]?.model ?? 'unknown', cores: cpus.length },
    memoryBytes: os.totalmem(),
  };
}

/** The report in the compat suite's `gregor-bench/1` shape (compat/README.md), raw results kept. */
function benchFile(rows: Row[], timestamp: string) {
  const none = (mode: string): Row | undefined => rows.find((r) => r.mode === mode && r.codec === 'none');
  const ratios = rows
    .filter((r) => r.mode.startsWith('format 1'))
    .map((r) => {
      const v2 = rows.find((x) => x.mode.startsWith('format 2') && x.codec === r.codec);
      return { codec: r.codec, format1OverFormat2: v2 === undefined ? null : r.recordsPerSecond / v2.recordsPerSecond };
    });
  const modes = [...new Set(rows.map((r) => r.mode))];
  const headline = [
    ...modes.map((m) => `${m}: ${rows.filter((r) => r.mode === m).map((r) => `${r.codec} ${Math.round(r.recordsPerSecond / 1000)}k/s`).join(', ')}`),
    ...(ratios.length > 0 ? [`format 1 / format 2: ${ratios.map((r) => `${r.codec} ${(r.format1OverFormat2 ?? NaN).toFixed(2)}`).join(', ')}`] : []),
  ];
  return {
    schema: 'gregor-bench/1',
    id: 'kafka-3565',
    title: 'KAFKA-3565: librdkafka producer throughput per codec, message format 2 vs 1',
    description:
      'librdkafka producer, 100-byte records, acks=1, one partition, per codec; against a default gregor (Produce v7+, magic 2 stored as sent) and against `broker.version.emulate=0.10.0` (Produce v2, magic 1 message sets).',
    machine: machine(),
    headline,
    charts: [
      { kind: 'bar', title: 'records/s', xLabel: 'codec', yLabel: 'records/s', series: modes.map((m) => ({ name: m, points: rows.filter((r) => r.mode === m).map((r) => ({ x: r.codec, y: Math.round(r.recordsPerSecond) })) })) },
      { kind: 'bar', title: 'broker CPU seconds per million records', xLabel: 'codec', yLabel: 'CPU s / M', series: modes.map((m) => ({ name: m, points: rows.filter((r) => r.mode === m).map((r) => ({ x: r.codec, y: Number(r.brokerCpuSecondsPerMillion.toFixed(3)) })) })) },
    ],
    table: {
      columns: ['format', 'codec', 'records/s', 'MB/s', 'vs none', 'broker CPU s/M', 'broker main thread CPU s/M', 'producer CPU s/M', 'busiest producer threads, % of a core'],
      rows: rows.map((r) => {
        const base = none(r.mode);
        return [
          r.mode,
          r.codec,
          Math.round(r.recordsPerSecond),
          Number(r.mbPerSecond.toFixed(1)),
          base === undefined ? null : Number((r.recordsPerSecond / base.recordsPerSecond).toFixed(2)),
          Number(r.brokerCpuSecondsPerMillion.toFixed(2)),
          Number(r.brokerMainThreadCpuSecondsPerMillion.toFixed(2)),
          Number(r.producerCpuSecondsPerMillion.toFixed(2)),
          r.producerThreads.map((t) => `${t.name} ${t.busyPercent}`).join(', '),
        ];
      }),
    },
    notes: [
      'The broker is a child process sharing the machine with the producer; CPU seconds come from /proc/<pid>/stat (broker) and process.cpuUsage() (producer process) over the timed window.',
      `Producer settings: ${JSON.stringify(PRODUCER_CONFIG)}; ${WARMUP} warm-up records first, then ${RECORDS} timed; the high watermark is checked to hold them all.`,
    ],
    timestamp,
    client: { library: '@confluentinc/kafka-javascript', librdkafka: ck.librdkafkaVersion ?? null, config: PRODUCER_CONFIG },
    settings: { records: RECORDS, warmupRecords: WARMUP, valueBytes: VALUE_BYTES, partitions: 1 },
    results: rows,
    format1OverFormat2: ratios,
  };
}

async function main(): Promise<void> {
  const vals = values(1000);
  const rows: Row[] = [];
  for (const mode of MODES) rows.push(...(await runMode(mode, vals)));
  const report = benchFile(rows, new Date().toISOString());
  console.log(`\nKAFKA-3565: librdkafka ${ck.librdkafkaVersion ?? ''} producer, ${VALUE_BYTES}-byte records, acks=1, 1 partition, ${RECORDS} records per run\n`);
  console.log('format                          codec    records/s     MB/s   vs none   broker CPU s/M  (main)   producer CPU s/M   busiest producer threads (% of a core)');
  for (const r of report.table.rows) {
    const [mode, codec, rps, mbs, vs, bcpu, mcpu, pcpu, threads] = r as [string, string, number, number, number | null, number, number, number, string];
    console.log(`${mode.padEnd(31)} ${codec.padEnd(7)} ${String(rps).padStart(10)}  ${mbs.toFixed(1).padStart(7)}  ${(vs ?? NaN).toFixed(2).padStart(8)}  ${bcpu.toFixed(2).padStart(14)}  ${mcpu.toFixed(2).padStart(6)}  ${pcpu.toFixed(2).padStart(17)}   ${threads}`);
  }
  for (const h of report.headline) console.log(`  ${h}`);
  const dir = path.join(PROJECT_ROOT, 'compat/results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `kafka-3565-${report.timestamp.replace(/:/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2));
  console.log(`\nwrote ${path.relative(PROJECT_ROOT, file)}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
