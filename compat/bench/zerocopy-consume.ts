/**
 * Zero-copy fetch responses (issues 14, 18, 19, 20): consume throughput and broker CPU per record of
 * this checkout beside another build of gregor (the commit before the change), side by side in one run.
 *
 *   node dist/compat/bench/zerocopy-consume.js --base /tmp/base-checkout
 *
 * `--base` is a built checkout (npm run build there). Three brokers are compared: base, this checkout
 * with gregor.fetch.zero.copy=false (`copy`: records copied once into the response) and with
 * gregor.fetch.zero.copy=true (`zerocopy`); ZC_BUILDS (comma list) picks others too: `copy-nopool` and
 * `zerocopy-nopool` set gregor.fetch.read.buffer.pool.bytes=0 (every segment read in a new buffer, as
 * before issue 14's pool). Each round starts a fresh broker of each (the order
 * rotates between rounds), produces ZC_RECORDS records of ZC_VALUE_BYTES (librdkafka's
 * C producer, acks=1, one partition, not measured), then a fresh C consumer reads them all from
 * offset 0 (librdkafka's defaults): records/s, MB/s, the broker's CPU-seconds and minor page faults
 * per 1M records over the consume, and its RSS after the consume and peak RSS (VmHWM). Figures are
 * medians over ZC_ROUNDS (5) rounds. ZC_CONSUMERS (1) consumers read at once, each every record:
 * records/s and CPU per 1M records then count what all of them read, over the slowest one's time. Workloads: ZC_VALUE_BYTES can be
 * a comma list (default 100,1024; ZC_RECORDS defaults to 1,000,000 for values under 512 bytes and
 * 200,000 above). `zerocopy-nosendfile` / `zerocopy-sendfile` set gregor.fetch.sendfile false / true:
 * large batches read into memory (pooled), or sent from the file with sendfile (session 31; `zerocopy`
 * keeps the default, true on 51e3b58-d4297e7 and false since). GREGOR_BENCH_NODE_ARGS (e.g. --cpu-prof) applies to both builds' brokers.
 * Writes compat/results/zerocopy-consume-<ISO timestamp>.json.
 */
import { resolve } from 'node:path';
import { startGregor } from '../lib/broker-process.js';
import { loadAverage, writeResult } from './eos-common.js';
import { nativeBinary, startNativeConsumer, startNativeProducer, THROUGHPUT_PRODUCER_CONFIG } from './native-producer.js';
import { benchMachine, cpuSeconds, envInt, minorFaults, peakRssBytes, round, rssBytes } from './proc-stats.js';

/** base: the other checkout; copy / zerocopy: this one with gregor.fetch.zero.copy false / true; -nopool: without the read-buffer pool */
type Build = 'base' | 'copy' | 'zerocopy' | 'copy-nopool' | 'zerocopy-nopool' | 'zerocopy-nosendfile' | 'zerocopy-sendfile';
const ALL_BUILDS: readonly Build[] = [
  'base',
  'copy',
  'zerocopy',
  'copy-nopool',
  'zerocopy-nopool',
  'zerocopy-nosendfile',
  'zerocopy-sendfile',
];
const BUILDS: readonly Build[] = (process.env.ZC_BUILDS ?? 'base,copy,zerocopy').split(',').map((b) => {
  if (!(ALL_BUILDS as readonly string[]).includes(b)) throw new Error(`ZC_BUILDS: unknown build ${b} (${ALL_BUILDS.join(', ')})`);
  return b as Build;
});
const OVERRIDES: Record<Build, Record<string, string>> = {
  base: {},
  copy: { 'gregor.fetch.zero.copy': 'false' },
  zerocopy: { 'gregor.fetch.zero.copy': 'true' },
  'copy-nopool': { 'gregor.fetch.zero.copy': 'false', 'gregor.fetch.read.buffer.pool.bytes': '0' },
  'zerocopy-nopool': { 'gregor.fetch.zero.copy': 'true', 'gregor.fetch.read.buffer.pool.bytes': '0' },
  'zerocopy-nosendfile': { 'gregor.fetch.zero.copy': 'true', 'gregor.fetch.sendfile': 'false' },
  'zerocopy-sendfile': { 'gregor.fetch.zero.copy': 'true', 'gregor.fetch.sendfile': 'true' },
};

interface Row {
  round: number;
  build: Build;
  valueBytes: number;
  records: number;
  seconds: number;
  recordsPerSec: number;
  mbPerSec: number;
  brokerCpuSPerM: number;
  /** minor page faults of the broker per 1M records consumed */
  minorFaultsPerM: number;
  /** the broker's RSS after the consume, and its peak (MB) */
  rssMb: number;
  peakRssMb: number;
}

const ROUNDS = envInt('ZC_ROUNDS', 5);
/** consumers reading the whole topic at once (each its own process); records/s and CPU count all they read */
const CONSUMERS = envInt('ZC_CONSUMERS', 1);
const VALUE_SIZES = (process.env.ZC_VALUE_BYTES ?? '100,1024').split(',').map(Number);
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? NaN) : ((s[m - 1] ?? NaN) + (s[m] ?? NaN)) / 2;
};

function recordsFor(valueBytes: number): number {
  const env = process.env.ZC_RECORDS;
  if (env !== undefined) return Number(env);
  return valueBytes < 512 ? 1_000_000 : 200_000;
}

async function oneRound(round_: number, build: Build, root: string | undefined, valueBytes: number): Promise<Row> {
  let records = recordsFor(valueBytes);
  const g = await startGregor(OVERRIDES[build], root === undefined ? {} : { root });
  try {
    const topic = `zc-${valueBytes}`;
    const p = await startNativeProducer(
      g.bootstrap,
      topic,
      0,
      records,
      1,
      { ...THROUGHPUT_PRODUCER_CONFIG, 'request.required.acks': 1 },
      { valueBytes },
    );
    const w = await p.timed();
    const hw = await p.highWatermark();
    await p.end();
    if (w.failed > 0 || hw !== records) throw new Error(`${build}: produced ${hw} of ${records} (${w.failed} failed)`);
    const cs = await Promise.all(Array.from({ length: CONSUMERS }, () => startNativeConsumer(g.bootstrap, topic, 1, {})));
    const cpu0 = cpuSeconds(g.pid);
    const faults0 = minorFaults(g.pid);
    const rs = await Promise.all(cs.map((c) => c.timed()));
    const cpu = cpuSeconds(g.pid) - cpu0;
    const faults = minorFaults(g.pid) - faults0;
    const rssMb = round(rssBytes(g.pid) / 1e6, 1);
    const peakRssMb = round(peakRssBytes(g.pid) / 1e6, 1);
    await Promise.all(cs.map((c) => c.end()));
    for (const r of rs) if (r.records !== records) throw new Error(`${build}: consumed ${r.records} of ${records}`);
    // several consumers at once: every record each read, over the time of the slowest
    const r = { seconds: Math.max(...rs.map((x) => x.seconds)) };
    records *= CONSUMERS;
    return {
      round: round_,
      build,
      valueBytes,
      records,
      seconds: round(r.seconds, 3),
      recordsPerSec: Math.round(records / r.seconds),
      mbPerSec: round((records * valueBytes) / 1e6 / r.seconds, 1),
      brokerCpuSPerM: round((cpu / records) * 1e6, 3),
      minorFaultsPerM: Math.round((faults / records) * 1e6),
      rssMb,
      peakRssMb,
    };
  } finally {
    await g.stop();
  }
}

async function main(): Promise<void> {
  const i = process.argv.indexOf('--base');
  const base = i >= 0 ? process.argv[i + 1] : undefined;
  if (base === undefined) throw new Error('usage: zerocopy-consume.js --base <built checkout of the base commit>');
  const roots: Record<Build, string | undefined> = {
    base: resolve(base),
    copy: undefined,
    zerocopy: undefined,
    'copy-nopool': undefined,
    'zerocopy-nopool': undefined,
    'zerocopy-nosendfile': undefined,
    'zerocopy-sendfile': undefined,
  };
  const started = new Date().toISOString();
  const loadBefore = loadAverage();
  for (const n of ['rdkafka-produce', 'rdkafka-consume'] as const) nativeBinary(n);
  const rows: Row[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    // the order rotates between rounds, so that load on the shared machine hits each build alike
    const order = BUILDS.map((_, k) => BUILDS[(k + r) % BUILDS.length] as Build);
    for (const valueBytes of VALUE_SIZES)
      for (const b of order) {
        const row = await oneRound(r, b, roots[b], valueBytes);
        rows.push(row);
        console.log(
          `round ${r} ${b} ${valueBytes} B: ${row.recordsPerSec} records/s, ${row.mbPerSec} MB/s, broker ${row.brokerCpuSPerM} CPU-s and ` +
            `${row.minorFaultsPerM} minor faults per 1M records, RSS ${row.rssMb} MB (peak ${row.peakRssMb}) (load ${loadAverage().join(' ')})`,
        );
      }
  }
  const summary = VALUE_SIZES.map((valueBytes) => {
    const of = (b: Build) => rows.filter((x) => x.build === b && x.valueBytes === valueBytes);
    const med = (b: Build, k: 'recordsPerSec' | 'mbPerSec' | 'brokerCpuSPerM' | 'minorFaultsPerM' | 'rssMb' | 'peakRssMb') =>
      median(of(b).map((x) => x[k]));
    const builds = BUILDS.map((build) => ({
      build,
      recordsPerSec: med(build, 'recordsPerSec'),
      mbPerSec: med(build, 'mbPerSec'),
      brokerCpuSPerM: med(build, 'brokerCpuSPerM'),
      minorFaultsPerM: med(build, 'minorFaultsPerM'),
      rssMb: med(build, 'rssMb'),
      peakRssMb: med(build, 'peakRssMb'),
      throughputRatio: round(med(build, 'recordsPerSec') / med('base', 'recordsPerSec'), 3),
      brokerCpuRatio: round(med(build, 'brokerCpuSPerM') / med('base', 'brokerCpuSPerM'), 3),
    }));
    return { valueBytes, records: recordsFor(valueBytes), builds };
  });
  for (const s of summary)
    for (const x of s.builds)
      console.log(
        `${s.valueBytes} B × ${s.records} ${x.build}: ${x.recordsPerSec} records/s (×${x.throughputRatio} of base), ` +
          `broker ${x.brokerCpuSPerM} CPU-s per 1M records (×${x.brokerCpuRatio}), ${x.minorFaultsPerM} minor faults per 1M, ` +
          `RSS ${x.rssMb} MB (peak ${x.peakRssMb})`,
      );
  const file = writeResult('zerocopy-consume', started, {
    id: 'zerocopy-consume',
    started,
    base: roots.base,
    rounds: ROUNDS,
    consumers: CONSUMERS,
    loadAverageBefore: loadBefore,
    loadAverageAfter: loadAverage(),
    machine: benchMachine(),
    note: 'medians; the machine is shared with other work, so the figures are indicative (see the load averages)',
    summary,
    rows,
  });
  console.log(`wrote ${file}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
