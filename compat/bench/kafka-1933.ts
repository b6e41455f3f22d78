/**
 * KAFKA-1933 experiment: when the broker must recompress, does the append pipeline (offsets reserved
 * in order on the main thread → CPU work on `num.append.workers` threads → commits in reservation
 * order) use the cores? Not a test: prints a table and writes compat/results/kafka-1933-<ts>.json.
 *
 * Workload (as in the JIRA): 5 producers in parallel (one connection each, Produce v8, acks=1, one
 * request in flight each), 6.2 KB records in batches of 200 (1.24 MB uncompressed v2 batches),
 * ~510 MB in total, into one partition of a topic whose compression.type forces recompression (gzip,
 * then lz4). The broker runs as a child process with num.append.workers = 0 (inline on the main
 * thread), 1, 2, 4. Figures: wall time from the first send to the last ack, speed-up against 0
 * workers, broker CPU seconds (/proc), and — while the load runs — the end-to-end latency of a
 * 100-byte record on another topic (produce → long-polling fetch returns it), p50/p99.
 * After each run every record is read back (Fetch v11): offsets contiguous, each producer's records
 * in its order, values intact.
 *
 * Knobs (environment): BENCH_1933_MB (default 510), BENCH_1933_WORKERS (default "0,1,2,4"),
 * BENCH_1933_CODECS (default "gzip,lz4").
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildRecordBatch, decodeRecords, logEntries } from '../../protocol/records/index.js';
import { startChildBroker, tempDir } from '../../test/helpers/broker.js';
import { PROJECT_ROOT } from '../../test/helpers/project.js';
import { RawClient, rawCreateTopics, rawFetch, rawProduce } from '../../test/helpers/raw-client.js';
import { mainThreadCpuSeconds } from './proc-stats.js';

const PRODUCERS = 5;
const RECORD_BYTES = 6200;
const BATCH = 200;
const TOTAL_MB = Number(process.env['BENCH_1933_MB'] ?? 510);
const WORKERS = (process.env['BENCH_1933_WORKERS'] ?? '0,1,2,4').split(',').map(Number);
const CODECS = (process.env['BENCH_1933_CODECS'] ?? 'gzip,lz4').split(',');
const BATCHES_PER_PRODUCER = Math.max(1, Math.round((TOTAL_MB * 1e6) / (RECORD_BYTES * BATCH * PRODUCERS)));
const LATENCY_INTERVAL_MS = 25;

/** Text-like values (words from a small vocabulary): compressible about as much as log lines. */
function makeValues(count: number): Buffer[] {
  const words =
    'broker partition offset record batch segment replica leader epoch commit fetch produce consumer group topic index compaction retention'.split(
      ' ',
    );
  let x = 12345;
  const rnd = (): number => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x;
  };
  return Array.from({ length: count }, () => {
    let s = '';
    while (s.length < RECORD_BYTES) s += `${words[rnd() % words.length]}${rnd() % 1000} `;
    return Buffer.from(s.slice(0, RECORD_BYTES));
  });
}

function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks (CLK_TCK 100)
}

function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}

interface RunResult {
  codec: string;
  workers: number;
  records: number;
  bytes: number;
  wallSeconds: number;
  brokerCpuSeconds: number;
  /** the broker's main thread alone: the serial part of the pipeline */
  brokerMainThreadCpuSeconds: number;
  /** the bench process (5 producers + latency probe) */
  clientCpuSeconds: number;
  mbPerSecond: number;
  latencyMs: { samples: number; p50: number; p99: number; max: number };
  verified: { contiguous: boolean; perProducerOrder: boolean; values: boolean; storedCodec: string; storedBytes: number };
}

async function latencyProbe(bootstrap: string, stop: () => boolean): Promise<number[]> {
  const producer = await RawClient.connect(bootstrap);
  const consumer = await RawClient.connect(bootstrap);
  const samples: number[] = [];
  let offset = 0n;
  const value = Buffer.alloc(100, 'l');
  try {
    while (!stop()) {
      const waiting = rawFetch(consumer, 'latency', 0, offset, { maxWaitMs: 2000, minBytes: 1, timeoutMs: 30000 });
      await new Promise((r) => setTimeout(r, 2)); // the fetch is parked in the purgatory
      const t0 = performance.now();
      await rawProduce(producer, 'latency', [[0, buildRecordBatch([{ key: null, value, timestamp: BigInt(Date.now()) }])]]);
      const got = await waiting;
      const t1 = performance.now();
      if (got.records !== null && got.records.length > 0) {
        samples.push(t1 - t0);
        offset += 1n;
      }
      await new Promise((r) => setTimeout(r, LATENCY_INTERVAL_MS));
    }
  } finally {
    producer.destroy();
    consumer.destroy();
  }
  return samples;
}

async function run(codec: string, workers: number, values: Buffer[]): Promise<RunResult> {
  const dataDir = tempDir('gregor-1933-');
  const broker = await startChildBroker(dataDir, 0, {
    'num.append.workers': String(workers),
    'log.retention.check.interval.ms': '3600000',
  });
  const pid = broker.child.pid as number;
  try {
    const admin = await RawClient.connect(broker.bootstrap);
    await rawCreateTopics(admin, [
      { name: 'load', partitions: 1, configs: { 'compression.type': codec, 'max.message.bytes': String(4 << 20) } },
      { name: 'latency', partitions: 1 },
    ]);
    // pre-built requests: the bench process only writes bytes while the broker works
    const batches: Buffer[][] = Array.from({ length: PRODUCERS }, (_, p) =>
      Array.from({ length: BATCHES_PER_PRODUCER }, (_, b) =>
        buildRecordBatch(
          Array.from({ length: BATCH }, (_, i) => ({
            key: Buffer.from(`p${p}-${b * BATCH + i}`),
            value: values[(p * 7 + b * 3 + i) % values.length] as Buffer,
            timestamp: BigInt(Date.now()),
          })),
        ),
      ),
    );
    const clients = await Promise.all(Array.from({ length: PRODUCERS }, () => RawClient.connect(broker.bootstrap)));
    // warm-up (JIT, worker start-up): one batch per producer, not timed, part of the data
    await Promise.all(clients.map((c, p) => rawProduce(c, 'load', [[0, batches[p]?.[0] as Buffer]])));
    let done = false;
    const probe = latencyProbe(broker.bootstrap, () => done);
    await new Promise((r) => setTimeout(r, 200));
    const cpu0 = cpuSeconds(pid);
    const main0 = mainThreadCpuSeconds(pid);
    const self0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      clients.map(async (c, p) => {
        for (let b = 1; b < BATCHES_PER_PRODUCER; b++) {
          const res = await rawProduce(c, 'load', [[0, batches[p]?.[b] as Buffer]], 1);
          if (res[0]?.errorCode !== 0) throw new Error(`produce failed: error ${res[0]?.errorCode}`);
        }
      }),
    );
    const wall = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds(pid) - cpu0;
    const mainCpu = mainThreadCpuSeconds(pid) - main0;
    const self = process.cpuUsage(self0);
    done = true;
    const lat = await probe;
    for (const c of clients) c.destroy();

    // read back and verify
    const total = PRODUCERS * BATCHES_PER_PRODUCER * BATCH;
    const next = new Array<number>(PRODUCERS).fill(0);
    let offset = 0n;
    let contiguous = true;
    let valuesOk = true;
    let storedBytes = 0;
    const codecs = new Set<number>();
    while (offset < BigInt(total)) {
      const f = await rawFetch(admin, 'load', 0, offset, { maxBytes: 32 << 20, timeoutMs: 60000 });
      if (f.errorCode !== 0 || f.records === null || f.records.length === 0)
        throw new Error(`read back at ${offset}: error ${f.errorCode}`);
      for (const e of logEntries(f.records)) if (e.kind === 'batch') codecs.add(e.batch.compression);
      storedBytes += f.records.length;
      for (const r of decodeRecords(f.records, { maxOutput: 1 << 28 }).records) {
        if (r.offset < offset) continue;
        if (r.offset !== offset) contiguous = false;
        const [pp, nn] = (r.key?.toString() ?? '').slice(1).split('-').map(Number) as [number, number];
        if (next[pp] !== nn) contiguous = false;
        next[pp] = nn + 1;
        const b = Math.floor(nn / BATCH);
        if (!r.value?.equals(values[(pp * 7 + b * 3 + (nn % BATCH)) % values.length] as Buffer)) valuesOk = false;
        offset = r.offset + 1n;
      }
    }
    admin.destroy();
    const perProducerOrder = next.every((n) => n === BATCHES_PER_PRODUCER * BATCH);
    const bytes = (total - PRODUCERS * BATCH) * RECORD_BYTES;
    return {
      codec,
      workers,
      records: total - PRODUCERS * BATCH,
      bytes,
      wallSeconds: wall,
      brokerCpuSeconds: cpu,
      brokerMainThreadCpuSeconds: mainCpu,
      clientCpuSeconds: (self.user + self.system) / 1e6,
      mbPerSecond: bytes / 1e6 / wall,
      latencyMs: { samples: lat.length, p50: percentile(lat, 50), p99: percentile(lat, 99), max: Math.max(...lat) },
      verified: {
        contiguous,
        perProducerOrder,
        values: valuesOk,
        storedCodec: [...codecs].map((c) => ['none', 'gzip', 'snappy', 'lz4', 'zstd'][c]).join(','),
        storedBytes,
      },
    };
  } finally {
    broker.child.kill('SIGTERM');
    await broker.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

type Row = RunResult & { speedup: number | null };

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
function benchFile(rows: Row[], settings: object, timestamp: string, mach: object) {
  const codecs = [...new Set(rows.map((r) => r.codec))];
  const at = (codec: string, w: number): Row | undefined => rows.find((r) => r.codec === codec && r.workers === w);
  const headline = codecs.flatMap((c) => {
    const w0 = at(c, 0);
    const w2 = at(c, 2);
    return w0 === undefined || w2 === undefined
      ? []
      : [
          `${c}: ${(w0.wallSeconds / w2.wallSeconds).toFixed(2)}× at 2 workers (${w0.wallSeconds.toFixed(1)} s inline → ${w2.wallSeconds.toFixed(1)} s); e2e p99 on another topic ${w0.latencyMs.p99.toFixed(1)} ms → ${w2.latencyMs.p99.toFixed(1)} ms`,
        ];
  });
  const series = (y: (r: Row) => number) =>
    codecs.map((c) => ({ name: c, points: rows.filter((r) => r.codec === c).map((r) => ({ x: String(r.workers), y: y(r) })) }));
  return {
    schema: 'gregor-bench/1',
    id: 'kafka-1933',
    title: 'KAFKA-1933: recompression on the append worker pool (reserve → parallel → commit)',
    description:
      '5 producers in parallel, 6.2 KB records in batches of 200, ~510 MB, one partition of a topic whose compression.type forces the broker to compress every batch; `num.append.workers` 0 (inline on the main thread), 1, 2, 4. Wall time from the first timed send to the last ack; e2e latency of a 100-byte record on another topic while the load runs.',
    machine: mach,
    headline,
    charts: [
      {
        kind: 'bar',
        title: 'wall time, s (lower is better)',
        xLabel: 'num.append.workers',
        yLabel: 's',
        series: series((r) => r.wallSeconds),
      },
      {
        kind: 'bar',
        title: 'e2e latency p99 of a 100-byte record on another topic, ms',
        xLabel: 'num.append.workers',
        yLabel: 'ms',
        series: series((r) => r.latencyMs.p99),
      },
    ],
    table: {
      columns: [
        'codec',
        'workers',
        'wall s',
        'speed-up',
        'MB/s',
        'broker CPU s',
        'broker main thread CPU s',
        'client CPU s',
        'e2e p50 ms',
        'e2e p99 ms',
        'verified',
      ],
      rows: rows.map((r) => [
        r.codec,
        r.workers,
        Number(r.wallSeconds.toFixed(2)),
        r.speedup === null ? null : Number(r.speedup.toFixed(2)),
        Number(r.mbPerSecond.toFixed(1)),
        Number(r.brokerCpuSeconds.toFixed(2)),
        Number(r.brokerMainThreadCpuSeconds.toFixed(2)),
        Number(r.clientCpuSeconds.toFixed(2)),
        Number(r.latencyMs.p50.toFixed(2)),
        Number(r.latencyMs.p99.toFixed(2)),
        r.verified.contiguous && r.verified.perProducerOrder && r.verified.values ? `ok (${r.verified.storedCodec})` : 'FAILED',
      ]),
    },
    notes: [
      'The broker is a child process; the 5 producers (pre-built uncompressed v2 batches, Produce v8, acks=1, one request in flight each) and the latency probe run in the bench process on the same machine.',
      "Verified after each run by reading everything back (Fetch v11): offsets contiguous from 0, every producer's records in its order, every value intact, stored codec the topic's.",
    ],
    timestamp,
    settings,
    results: rows,
  };
}

function printTable(rows: Row[], bytes: number): void {
  console.log(
    `\nKAFKA-1933: ${PRODUCERS} producers, ${RECORD_BYTES}-byte records, batches of ${BATCH}, ${bytes / 1e6} MB timed per run, 1 partition\n`,
  );
  console.log('codec  workers  wall s  speed-up  MB/s   broker CPU s  (main)  client CPU s  e2e p50 ms  e2e p99 ms  verified');
  for (const r of rows) {
    const ok =
      r.verified.contiguous && r.verified.perProducerOrder && r.verified.values
        ? `ok (${r.verified.storedCodec})`
        : `FAILED ${JSON.stringify(r.verified)}`;
    console.log(
      `${r.codec.padEnd(6)} ${String(r.workers).padStart(7)}  ${r.wallSeconds.toFixed(2).padStart(6)}  ${(r.speedup ?? NaN).toFixed(2).padStart(8)}  ${r.mbPerSecond.toFixed(1).padStart(5)}  ${r.brokerCpuSeconds.toFixed(2).padStart(12)}  ${r.brokerMainThreadCpuSeconds.toFixed(2).padStart(6)}  ${r.clientCpuSeconds.toFixed(2).padStart(12)}  ${r.latencyMs.p50.toFixed(2).padStart(10)}  ${r.latencyMs.p99.toFixed(2).padStart(10)}  ${ok}`,
    );
  }
}

async function main(): Promise<void> {
  const settings = {
    producers: PRODUCERS,
    recordBytes: RECORD_BYTES,
    batchRecords: BATCH,
    batchesPerProducer: BATCHES_PER_PRODUCER,
    warmupBatchesPerProducer: 1,
    partitions: 1,
    acks: 1,
    producerCompression: 'none',
    produceVersion: 8,
    latencyIntervalMs: LATENCY_INTERVAL_MS,
  };
  const from = process.env['BENCH_1933_FROM'];
  let report;
  if (from !== undefined) {
    // re-render an earlier run's raw results in the current shape
    const old = JSON.parse(readFileSync(from, 'utf8')) as {
      timestamp: string;
      settings: object;
      results: Row[];
      machine?: { cpuModel?: string };
    };
    report = benchFile(old.results, old.settings, old.timestamp, machine());
  } else {
    const values = makeValues(64);
    const results: RunResult[] = [];
    for (const codec of CODECS) {
      for (const w of WORKERS) {
        process.stderr.write(`kafka-1933: ${codec}, num.append.workers=${w} …\n`);
        results.push(await run(codec, w, values));
      }
    }
    const rows: Row[] = results.map((r) => {
      const base = results.find((x) => x.codec === r.codec && x.workers === 0);
      return { ...r, speedup: base === undefined ? null : base.wallSeconds / r.wallSeconds };
    });
    report = benchFile(rows, settings, new Date().toISOString(), machine());
  }
  printTable(report.results, report.results[0]?.bytes ?? 0);
  for (const h of report.headline) console.log(`  ${h}`);
  const dir = path.join(PROJECT_ROOT, 'compat/results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `kafka-1933-${report.timestamp.replace(/:/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2));
  console.log(`\nwrote ${path.relative(PROJECT_ROOT, file)}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
