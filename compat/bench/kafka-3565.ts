/**
 * KAFKA-3565 table: producer throughput with librdkafka (by default a small C program on the
 * librdkafka built for @confluentinc/kafka-javascript, compat/bench/native/rdkafka-produce.c; with
 * BENCH_3565_CLIENT=js, kafka-javascript's node-rdkafka-style Producer), 100-byte records, acks=1, one partition, for none, gzip, snappy, lz4
 * and zstd — against gregor with message format 2 (Produce v7+, magic 2 batches stored as sent), and
 * the same against `broker.version.emulate=0.10.0` (librdkafka speaks Produce v2 and writes magic 1
 * message sets, which a 0.10.0 topic stores as they are; zstd does not exist there). Not a test:
 * prints a table and writes compat/results/kafka-3565-<ts>.json.
 *
 * Figures per run: records/s, MB/s of record values, and broker CPU seconds per million records
 * (utime+stime of the broker child process from /proc over the timed window). The broker runs as
 * a child process; the producer shares the machine with it. Values are 100 random uppercase
 * letters, in two shapes (BENCH_3565_VALUES): `perf`, one value for every record, as Kafka's
 * ProducerPerformance sends (and KAFKA-3565 measured); `random`, 20,000 distinct values, so that no
 * value repeats within a batch: an entropy coder (gzip, zstd) shrinks them to ~57%, lz4 and snappy
 * hardly at all.
 *
 * Knobs (environment): BENCH_3565_RECORDS (default 3000000), BENCH_3565_CODECS, BENCH_3565_MODES
 * ("v2,v1"), BENCH_3565_CLIENT ("c" or "js").
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startChildBroker, tempDir } from '../../test/helpers/broker.js';
import { PROJECT_ROOT } from '../../test/helpers/project.js';
import { loadConfluent } from '../lib/confluent-module.js';
import { startNativeProducer, THROUGHPUT_PRODUCER_CONFIG } from './native-producer.js';
import { asError, busiest, cpuSeconds, mainThreadCpuSeconds, threadsByName, type ThreadBusy } from './proc-stats.js';

type Any = any;
const ck: Any = loadConfluent();

const RECORDS = Number(process.env['BENCH_3565_RECORDS'] ?? 3_000_000);
/**
 * Codecs to run; `codec@level` also sets the producer's compression.level (gzip@1: librdkafka's
 * fastest gzip, to tell the broker's share from the producer's compressor at the default level 6).
 */
const CODECS = (process.env['BENCH_3565_CODECS'] ?? 'none,gzip,gzip@1,snappy,lz4,zstd').split(',');
const MODES = (process.env['BENCH_3565_MODES'] ?? 'v2,v1').split(',');
/**
 * Producer application: `c` (default) — compat/bench/native/rdkafka-produce.c, a C program on the
 * same librdkafka, whose produce() loop costs next to nothing; `js` — @confluentinc/kafka-javascript,
 * whose JS thread calling produce() once per record takes about a core on its own.
 */
const CLIENT = process.env['BENCH_3565_CLIENT'] ?? 'c';
/**
 * Rounds: every round runs each shape x codec once (interleaved, so slow drift on a shared machine
 * hits all codecs alike); a row reports the round with the median records/s.
 */
const ROUNDS = Number(process.env['BENCH_3565_ROUNDS'] ?? 3);
if (CLIENT !== 'c' && CLIENT !== 'js') throw new Error(`BENCH_3565_CLIENT must be c or js, not ${CLIENT}`);
const VALUE_BYTES = 100;
/**
 * Value shapes to run: `perf` — every record carries the same 100 random letters, as Kafka's
 * ProducerPerformance sends (what KAFKA-3565's figures were measured with; compresses very well);
 * `random` — 20,000 distinct values, more than a batch holds (batch.num.messages), so no codec finds
 * a value twice in one batch: only an entropy coder (gzip, zstd) gains anything, ~1.75:1.
 */
const SHAPES = (process.env['BENCH_3565_VALUES'] ?? 'perf,random').split(',');
const DISTINCT: Record<string, number> = { perf: 1, random: 20_000 };
for (const shape of SHAPES) if (DISTINCT[shape] === undefined) throw new Error(`BENCH_3565_VALUES: unknown shape ${shape} (perf, random)`);
const WARMUP = 50_000;

const PRODUCER_CONFIG = { 'request.required.acks': 1, ...THROUGHPUT_PRODUCER_CONFIG };

/**
 * `n` distinct values of random uppercase letters (the C producer generates the same ones). The
 * arithmetic is 32-bit (Math.imul): in doubles the product loses its low bits and the sequence falls
 * into a short cycle, which made earlier runs' values compress about 11:1 instead of ~1.75:1.
 */
function values(n: number): Buffer[] {
  let x = 987654321;
  return Array.from({ length: n }, () => {
    const b = Buffer.allocUnsafe(VALUE_BYTES);
    for (let i = 0; i < VALUE_BYTES; i++) {
      x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff;
      b[i] = 65 + (x % 26);
    }
    return b;
  });
}

function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

async function connect(bootstrap: string, codecSpec: string): Promise<Any> {
  const [codec, level] = codecSpec.split('@');
  const p = new ck.Producer({
    'bootstrap.servers': bootstrap,
    'compression.codec': codec,
    ...(level === undefined ? {} : { 'compression.level': Number(level) }),
    log_level: 0,
    ...PRODUCER_CONFIG,
  });
  await new Promise<void>((resolve, reject) => p.connect({}, (e: Any) => (e ? reject(asError(e)) : resolve())));
  p.setPollInterval(50);
  return p;
}

/** Produces `n` records as fast as librdkafka's queue takes them, then flushes. */
async function produce(p: Any, topic: string, n: number, vals: Buffer[]): Promise<void> {
  const QUEUE_FULL = ck.CODES.ERRORS.ERR__QUEUE_FULL;
  for (let i = 0; i < n;) {
    try {
      p.produce(topic, 0, vals[i % vals.length], null, Date.now());
      i++;
    } catch (e) {
      if ((e as { code?: number }).code !== QUEUE_FULL) throw e;
      await new Promise((r) => setTimeout(r, 1));
    }
    if ((i & 4095) === 0) await new Promise((r) => setImmediate(r));
  }
  await new Promise<void>((resolve, reject) => p.flush(120_000, (e: Any) => (e ? reject(asError(e)) : resolve())));
}

function highWatermark(p: Any, topic: string): Promise<number> {
  return new Promise((resolve, reject) =>
    p.queryWatermarkOffsets(topic, 0, 10_000, (e: Any, o: Any) => (e ? reject(asError(e)) : resolve(o.highOffset))),
  );
}

interface Row {
  /** value shape: perf (one value, as ProducerPerformance) or random (20,000 distinct) */
  values: string;
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
  producerThreads: ThreadBusy[];
  /** Busiest broker threads, % of one core ("main" is its event loop; libuv's pool writes the log). */
  brokerThreads: ThreadBusy[];
  highWatermark: number;
  /** records/s of every round of this shape, format and codec (the row is the median one) */
  roundsRecordsPerSecond?: number[];
}

/** CPU over one timed window: the broker's (all threads, main thread, busiest threads) and the producer's. */
interface WindowCpu {
  brokerCpu: number;
  brokerMainCpu: number;
  producerCpu: number;
  producerThreads: ThreadBusy[];
  brokerThreads: ThreadBusy[];
}

interface Measured extends WindowCpu {
  seconds: number;
  highWatermark: number;
}

/**
 * Starts reading CPU counters for a timed window; the returned function ends it after `seconds`.
 * `producerPid`'s main thread is named `producerMain`; `producerCpu` reads the producer's total.
 */
function cpuWindow(
  brokerPid: number,
  producerPid: number,
  producerMain: string,
  producerCpu: () => number,
): (seconds: number) => WindowCpu {
  const cpu0 = cpuSeconds(brokerPid);
  const main0 = mainThreadCpuSeconds(brokerPid);
  const threads0 = threadsByName(producerPid, producerMain);
  const broker0 = threadsByName(brokerPid, 'main');
  const self0 = producerCpu();
  return (seconds) => ({
    brokerCpu: cpuSeconds(brokerPid) - cpu0,
    brokerMainCpu: mainThreadCpuSeconds(brokerPid) - main0,
    producerCpu: producerCpu() - self0,
    producerThreads: busiest(threadsByName(producerPid, producerMain), threads0, seconds),
    brokerThreads: busiest(threadsByName(brokerPid, 'main'), broker0, seconds),
  });
}

/** One codec with the JavaScript client in this process. */
async function measureJs(bootstrap: string, brokerPid: number, topic: string, codec: string, vals: Buffer[]): Promise<Measured> {
  const p = await connect(bootstrap, codec);
  try {
    await produce(p, topic, WARMUP, vals); // creates the topic, warms up both sides
    const end = cpuWindow(brokerPid, process.pid, 'node (JS)', selfCpuSeconds);
    const t0 = performance.now();
    await produce(p, topic, RECORDS, vals);
    const seconds = (performance.now() - t0) / 1000;
    return { seconds, ...end(seconds), highWatermark: await highWatermark(p, topic) };
  } finally {
    await new Promise<void>((resolve) => p.disconnect(() => resolve()));
  }
}

/** One codec with the C producer as a child process (its threads read from /proc). */
async function measureC(bootstrap: string, brokerPid: number, topic: string, codecSpec: string, distinct: number): Promise<Measured> {
  const [codec, level] = codecSpec.split('@');
  const config: Record<string, string | number | boolean> = {
    'compression.codec': codec ?? 'none',
    ...(level === undefined ? {} : { 'compression.level': Number(level) }),
    log_level: 0,
    ...PRODUCER_CONFIG,
  };
  const p = await startNativeProducer(bootstrap, topic, WARMUP, RECORDS, distinct, config);
  try {
    const end = cpuWindow(brokerPid, p.pid, 'main', () => cpuSeconds(p.pid));
    const { seconds, failed } = await p.timed();
    const cpu = end(seconds);
    if (failed > 0) throw new Error(`${topic}: ${failed} records failed delivery`);
    return { seconds, ...cpu, highWatermark: await p.highWatermark() };
  } finally {
    await p.end();
  }
}

async function runMode(mode: string): Promise<Row[]> {
  const dataDir = tempDir('gregor-3565-');
  const overrides: Record<string, string> = { 'num.partitions': '1', 'log.retention.check.interval.ms': '3600000' };
  if (mode === 'v1') overrides['broker.version.emulate'] = '0.10.0';
  const broker = await startChildBroker(dataDir, 0, overrides);
  const pid = broker.child.pid as number;
  const rows: Row[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++)
      for (const shape of SHAPES)
        for (const codec of CODECS) {
          if (mode === 'v1' && codec === 'zstd') continue; // zstd needs Produce v7 / magic 2
          process.stderr.write(
            `kafka-3565: round ${round}/${ROUNDS}, format ${mode === 'v1' ? '1 (emulate 0.10.0)' : '2'}, ${shape} values, ${codec} …\n`,
          );
          const topic = `perf-${shape}-${codec.replace('@', '-level-')}-${round}`;
          const distinct = DISTINCT[shape] as number;
          const m =
            CLIENT === 'c'
              ? await measureC(broker.bootstrap, pid, topic, codec, distinct)
              : await measureJs(broker.bootstrap, pid, topic, codec, values(distinct));
          rows.push({
            values: shape,
            mode: mode === 'v1' ? 'format 1 (0.10.0, Produce v2)' : 'format 2 (Produce v7+)',
            codec,
            records: RECORDS,
            seconds: m.seconds,
            recordsPerSecond: RECORDS / m.seconds,
            mbPerSecond: (RECORDS * VALUE_BYTES) / 1e6 / m.seconds,
            brokerCpuSecondsPerMillion: (m.brokerCpu / RECORDS) * 1e6,
            producerCpuSecondsPerMillion: (m.producerCpu / RECORDS) * 1e6,
            brokerMainThreadCpuSecondsPerMillion: (m.brokerMainCpu / RECORDS) * 1e6,
            producerThreads: m.producerThreads,
            brokerThreads: m.brokerThreads,
            highWatermark: m.highWatermark,
          });
          if (m.highWatermark !== WARMUP + RECORDS)
            throw new Error(`${topic}: high watermark ${m.highWatermark}, expected ${WARMUP + RECORDS}`);
        }
  } finally {
    broker.child.kill('SIGTERM');
    await broker.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
  return medianRows(rows);
}

/** One row per shape x codec: the round with the median records/s, with every round's figure. */
function medianRows(rows: Row[]): Row[] {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const k = `${r.values}|${r.codec}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  return [...groups.values()].map((g) => {
    const sorted = [...g].sort((a, b) => a.recordsPerSecond - b.recordsPerSecond);
    const median = sorted[Math.floor((sorted.length - 1) / 2)] as Row;
    return { ...median, roundsRecordsPerSecond: g.map((r) => Math.round(r.recordsPerSecond)) };
  });
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

/**
 * The issue's two goals per row: compressed throughput at least that of `none` (same shape and
 * format), and format 1 within 10% of format 2 (same shape and codec).
 */
function goals(rows: Row[], ratios: { values: string; codec: string; format1OverFormat2: number | null }[]) {
  const compressed = rows
    .filter((r) => r.codec !== 'none')
    .map((r) => {
      const base = rows.find((x) => x.values === r.values && x.mode === r.mode && x.codec === 'none');
      const vsNone = base === undefined ? null : Number((r.recordsPerSecond / base.recordsPerSecond).toFixed(2));
      return { values: r.values, mode: r.mode, codec: r.codec, vsNone, met: vsNone !== null && vsNone >= 1 };
    });
  // only where both formats ran
  const format1 = ratios.flatMap((r) => {
    if (r.format1OverFormat2 === null) return [];
    const ratio = Number(r.format1OverFormat2.toFixed(2));
    return [{ values: r.values, codec: r.codec, format1OverFormat2: ratio, met: ratio >= 0.9 }];
  });
  const line = (name: string, all: number, missed: string[]): string =>
    `${name}: ${all - missed.length}/${all} met${missed.length > 0 ? `; missed: ${missed.join(', ')}` : ''}`;
  return {
    compressedAtLeastUncompressed: compressed,
    format1Within10Percent: format1,
    summary: [
      line(
        'compressed >= none',
        compressed.length,
        compressed.filter((x) => !x.met).map((x) => `${x.values} ${x.mode.slice(0, 8)} ${x.codec} ${x.vsNone}`),
      ),
      line(
        'format 1 within 10% of format 2',
        format1.length,
        format1.filter((x) => !x.met).map((x) => `${x.values} ${x.codec} ${x.format1OverFormat2}`),
      ),
    ],
  };
}

/** The report in the compat suite's `gregor-bench/1` shape (compat/README.md), raw results kept. */
function benchFile(rows: Row[], timestamp: string) {
  const none = (r: Row): Row | undefined => rows.find((x) => x.values === r.values && x.mode === r.mode && x.codec === 'none');
  const ratios = rows
    .filter((r) => r.mode.startsWith('format 1'))
    .map((r) => {
      const v2 = rows.find((x) => x.values === r.values && x.mode.startsWith('format 2') && x.codec === r.codec);
      return { values: r.values, codec: r.codec, format1OverFormat2: v2 === undefined ? null : r.recordsPerSecond / v2.recordsPerSecond };
    });
  // one series per value shape and format
  const series = [...new Set(rows.map((r) => `${r.values}|${r.mode}`))].map((k) => {
    const [values, mode] = k.split('|') as [string, string];
    return { name: `${mode}, ${values} values`, rows: rows.filter((r) => r.values === values && r.mode === mode) };
  });
  const headline = [
    ...series.map((s) => `${s.name}: ${s.rows.map((r) => `${r.codec} ${Math.round(r.recordsPerSecond / 1000)}k/s`).join(', ')}`),
    ...SHAPES.flatMap((shape) => {
      const rs = ratios.filter((r) => r.values === shape);
      return rs.length > 0
        ? [`format 1 / format 2, ${shape} values: ${rs.map((r) => `${r.codec} ${(r.format1OverFormat2 ?? NaN).toFixed(2)}`).join(', ')}`]
        : [];
    }),
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
      {
        kind: 'bar',
        title: 'records/s',
        xLabel: 'codec',
        yLabel: 'records/s',
        series: series.map((s) => ({ name: s.name, points: s.rows.map((r) => ({ x: r.codec, y: Math.round(r.recordsPerSecond) })) })),
      },
      {
        kind: 'bar',
        title: 'broker CPU seconds per million records',
        xLabel: 'codec',
        yLabel: 'CPU s / M',
        series: series.map((s) => ({
          name: s.name,
          points: s.rows.map((r) => ({ x: r.codec, y: Number(r.brokerCpuSecondsPerMillion.toFixed(3)) })),
        })),
      },
    ],
    table: {
      columns: [
        'values',
        'format',
        'codec',
        'records/s',
        'MB/s',
        'vs none',
        'broker CPU s/M',
        'broker main thread CPU s/M',
        'producer CPU s/M',
        'busiest producer threads, % of a core',
        'busiest broker threads, % of a core',
        'records/s per round (k)',
      ],
      rows: rows.map((r) => {
        const base = none(r);
        return [
          r.values,
          r.mode,
          r.codec,
          Math.round(r.recordsPerSecond),
          Number(r.mbPerSecond.toFixed(1)),
          base === undefined ? null : Number((r.recordsPerSecond / base.recordsPerSecond).toFixed(2)),
          Number(r.brokerCpuSecondsPerMillion.toFixed(2)),
          Number(r.brokerMainThreadCpuSecondsPerMillion.toFixed(2)),
          Number(r.producerCpuSecondsPerMillion.toFixed(2)),
          r.producerThreads.map((t) => `${t.name} ${t.busyPercent}`).join(', '),
          r.brokerThreads.map((t) => `${t.name} ${t.busyPercent}`).join(', '),
          (r.roundsRecordsPerSecond ?? []).map((x) => Math.round(x / 1000)).join(' / '),
        ];
      }),
    },
    notes: [
      CLIENT === 'c'
        ? 'Producer: compat/bench/native/rdkafka-produce.c, a C program on the same librdkafka (its produce() loop costs next to nothing). The broker and the producer are child processes sharing the machine; CPU seconds come from /proc/<pid>/stat of each over the timed window.'
        : 'Producer: @confluentinc/kafka-javascript in the benchmark process (its JS thread calls produce() once per record). The broker is a child process sharing the machine with it; CPU seconds come from /proc/<pid>/stat (broker) and process.cpuUsage() (producer process) over the timed window.',
      `Producer settings: ${JSON.stringify(PRODUCER_CONFIG)}; ${WARMUP} warm-up records first, then ${RECORDS} timed; the high watermark is checked to hold them all.`,
      `${ROUNDS} rounds, each running every shape and codec once in turn; each row is the round with the median records/s (results[].roundsRecordsPerSecond has them all).`,
    ],
    timestamp,
    client: {
      library: CLIENT === 'c' ? 'librdkafka (C, compat/bench/native/rdkafka-produce.c)' : '@confluentinc/kafka-javascript',
      librdkafka: ck.librdkafkaVersion ?? null,
      config: PRODUCER_CONFIG,
    },
    settings: {
      records: RECORDS,
      warmupRecords: WARMUP,
      rounds: ROUNDS,
      valueBytes: VALUE_BYTES,
      partitions: 1,
      valueShapes: Object.fromEntries(SHAPES.map((s) => [s, { distinctValues: DISTINCT[s] }])),
    },
    results: rows,
    format1OverFormat2: ratios,
    goals: goals(rows, ratios),
  };
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  for (const mode of MODES) rows.push(...(await runMode(mode)));
  const report = benchFile(rows, new Date().toISOString());
  console.log(
    `\nKAFKA-3565: librdkafka ${ck.librdkafkaVersion ?? ''} producer (${CLIENT === 'c' ? 'C program' : 'kafka-javascript'}), ${VALUE_BYTES}-byte records, acks=1, 1 partition, ${RECORDS} records per run\n`,
  );
  console.log(
    'values  format                          codec    records/s     MB/s   vs none   broker CPU s/M  (main)   producer CPU s/M   busiest producer threads (% of a core)   busiest broker threads (% of a core)     records/s per round (k)',
  );
  for (const r of report.table.rows) {
    const [shape, mode, codec, rps, mbs, vs, bcpu, mcpu, pcpu, threads, bthreads, perRound] = r as [
      string,
      string,
      string,
      number,
      number,
      number | null,
      number,
      number,
      number,
      string,
      string,
      string,
    ];
    console.log(
      `${shape.padEnd(7)} ${mode.padEnd(31)} ${codec.padEnd(7)} ${String(rps).padStart(10)}  ${mbs.toFixed(1).padStart(7)}  ${(vs ?? NaN).toFixed(2).padStart(8)}  ${bcpu.toFixed(2).padStart(14)}  ${mcpu.toFixed(2).padStart(6)}  ${pcpu.toFixed(2).padStart(17)}   ${threads.padEnd(30)} ${bthreads.padEnd(40)} ${perRound}`,
    );
  }
  for (const h of report.headline) console.log(`  ${h}`);
  for (const g of report.goals.summary) console.log(`  goal ${g}`);
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
