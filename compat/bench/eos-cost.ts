/**
 * Issue 11: what idempotence and transactions cost a producer's throughput. A librdkafka producer
 * (the C program compat/bench/native/rdkafka-produce.c) sends records of 100 B and 1 KB with
 * acks=all, no compression, round-robin into a topic of 3 partitions, in three variants measured
 * side by side in every round: plain (enable.idempotence=false), idempotent
 * (enable.idempotence=true) and transactional (transactional.id set; a transaction is begun, filled
 * and committed every 100 ms; commit_transaction() waits for its records and the EndTxn, as Kafka's
 * ProducerPerformance --transaction-duration-ms does). Not a test: prints a table and writes
 * compat/results/eos-cost-<ts>.json (`gregor-bench/1`, so the compat suite shows it).
 *
 * Per run: records/s, MB/s of record values, broker CPU seconds per million records (whole process
 * and main thread, from /proc), the producer's, the transactions' cadence. Per record size: the
 * ratios idempotent/plain and transactional/plain (median of the per-round ratios, and the ratio of
 * the medians), checked against the issue's goals.
 *
 * Knobs (environment): BENCH_EOS_SIZES ("100,1000"), BENCH_EOS_RECORDS ("3000000,750000", one per
 * size), BENCH_EOS_ROUNDS (5), BENCH_EOS_TXN_MS (100), BENCH_EOS_PARTITIONS (3),
 * BENCH_EOS_QUEUE_KB (4096), BENCH_EOS_QUEUE_MESSAGES (100000), BENCH_EOS_VARIANTS, BENCH_EOS_LINGER_MS (5:
 * librdkafka's default; its idempotent producer spends markedly more CPU per record at small lingers).
 */
import { rmSync } from 'node:fs';
import { startChildBroker, tempDir } from '../../test/helpers/broker.js';
import { benchMachine } from './proc-stats.js';
import {
  createTopic,
  cpuWindow,
  deleteTopic,
  envList,
  envNumber,
  fixed,
  loadAverage,
  median,
  pairedRatio,
  spread,
  textTable,
  type ThreadBusy,
  writeResult,
} from './eos-common.js';
import { startNativeProducer } from './native-producer.js';

const SIZES = envList('BENCH_EOS_SIZES', '100,1000').map(Number);
const RECORDS_LIST = envList('BENCH_EOS_RECORDS', '3000000,750000').map(Number);
const ROUNDS = envNumber('BENCH_EOS_ROUNDS', 5);
const TXN_MS = envNumber('BENCH_EOS_TXN_MS', 100);
const PARTITIONS = envNumber('BENCH_EOS_PARTITIONS', 3);
/**
 * The producer's queue bound, the same in every variant. A transaction's commit waits for every
 * record queued in it, so the bound sets how far a "100 ms" transaction overruns: 4 MB / 100,000
 * records hold ~15-100 ms of records here (transactions end every ~110-150 ms), and plain throughput
 * did not move measurably against librdkafka's default 1 GB / 100,000.
 */
const QUEUE_KB = envNumber('BENCH_EOS_QUEUE_KB', 4096);
const QUEUE_MESSAGES = envNumber('BENCH_EOS_QUEUE_MESSAGES', 100_000);
const LINGER_MS = envNumber('BENCH_EOS_LINGER_MS', 5);
const VARIANTS = envList('BENCH_EOS_VARIANTS', 'plain,idempotent,transactional') as Variant[];
const DISTINCT_VALUES = 1000;

type Variant = 'plain' | 'idempotent' | 'transactional';
for (const v of VARIANTS)
  if (!['plain', 'idempotent', 'transactional'].includes(v)) throw new Error(`BENCH_EOS_VARIANTS: unknown variant ${v}`);
if (SIZES.some((s) => !(s > 0))) throw new Error('BENCH_EOS_SIZES: positive numbers');

const PRODUCER_CONFIG = {
  acks: 'all',
  'compression.codec': 'none',
  'linger.ms': LINGER_MS,
  'batch.num.messages': 10000,
  'batch.size': 1_000_000,
  'queue.buffering.max.messages': QUEUE_MESSAGES,
  'queue.buffering.max.kbytes': QUEUE_KB,
  'max.in.flight.requests.per.connection': 5,
  log_level: 0,
};

function recordsFor(size: number): number {
  const i = SIZES.indexOf(size);
  return RECORDS_LIST[Math.min(i, RECORDS_LIST.length - 1)] ?? 1_000_000;
}

/** One variant at one size in one round. */
interface Run {
  size: number;
  variant: Variant;
  round: number;
  records: number;
  seconds: number;
  recordsPerSecond: number;
  mbPerSecond: number;
  brokerCpuSecondsPerMillion: number;
  brokerMainThreadCpuSecondsPerMillion: number;
  producerCpuSecondsPerMillion: number;
  /** broker + producer CPU per million records: on a saturated 2-core box throughput ~ 1 / this */
  totalCpuSecondsPerMillion: number;
  producerThreads: ThreadBusy[];
  brokerThreads: ThreadBusy[];
  transactions: number;
  /** wall time / transactions: how often a transaction ended */
  msPerTransaction: number | null;
  /** share of the timed part spent inside commit_transaction (waiting for its records and EndTxn) */
  commitShare: number | null;
  highWatermarkSum: number;
  controlRecords: number;
  loadavg: number[];
}

async function measure(bootstrap: string, brokerPid: number, size: number, variant: Variant, round: number): Promise<Run> {
  const records = recordsFor(size);
  const warmup = Math.round(records / 20);
  const topic = `eos-${size}-${variant}-${round}`;
  await createTopic(bootstrap, topic, PARTITIONS);
  const config: Record<string, string | number | boolean> = { ...PRODUCER_CONFIG };
  if (variant === 'plain') config['enable.idempotence'] = false;
  if (variant === 'idempotent') config['enable.idempotence'] = true;
  if (variant === 'transactional') config['transactional.id'] = `eos-cost-${size}-${round}`;
  const p = await startNativeProducer(bootstrap, topic, warmup, records, DISTINCT_VALUES, config, {
    valueBytes: size,
    partitions: PARTITIONS,
    ...(variant === 'transactional' ? { txnMs: TXN_MS } : {}),
  });
  try {
    const end = cpuWindow(brokerPid, p.pid);
    const t = await p.timed();
    const cpu = end(t.seconds);
    if (t.failed > 0) throw new Error(`${topic}: ${t.failed} records failed delivery`);
    const hw = await p.watermarks();
    if (hw.highWatermark !== warmup + records + hw.controlRecords)
      throw new Error(
        `${topic}: high watermarks sum to ${hw.highWatermark}, expected ${warmup + records} records + ${hw.controlRecords} markers`,
      );
    const perM = (cpuS: number) => (cpuS / records) * 1e6;
    return {
      size,
      variant,
      round,
      records,
      seconds: t.seconds,
      recordsPerSecond: records / t.seconds,
      mbPerSecond: (records * size) / 1e6 / t.seconds,
      brokerCpuSecondsPerMillion: perM(cpu.brokerCpu),
      brokerMainThreadCpuSecondsPerMillion: perM(cpu.brokerMainCpu),
      producerCpuSecondsPerMillion: perM(cpu.clientCpu),
      totalCpuSecondsPerMillion: perM(cpu.brokerCpu + cpu.clientCpu),
      producerThreads: cpu.clientThreads,
      brokerThreads: cpu.brokerThreads,
      transactions: t.transactions,
      msPerTransaction: t.transactions > 0 ? (t.seconds * 1000) / t.transactions : null,
      commitShare: t.transactions > 0 ? t.commitSeconds / t.seconds : null,
      highWatermarkSum: hw.highWatermark,
      controlRecords: hw.controlRecords,
      loadavg: loadAverage(),
    };
  } finally {
    await p.end();
    await deleteTopic(bootstrap, topic);
  }
}

/** One row per size x variant: the median of each figure over the rounds. */
interface Summary {
  size: number;
  variant: Variant;
  recordsPerSecond: number;
  mbPerSecond: number;
  /** median of the per-round ratios to plain (both measured in the same round), and the ratio of the medians */
  vsPlain: number | null;
  vsPlainOfMedians: number | null;
  vsPlainPerRound: number[];
  /** plain's total CPU per record / this variant's (the CPU-bound estimate of the same ratio) */
  cpuVsPlain: number | null;
  /** this variant's broker CPU per record / plain's (medians): what the broker itself pays */
  brokerCpuVsPlain: number | null;
  brokerCpuSecondsPerMillion: number;
  brokerMainThreadCpuSecondsPerMillion: number;
  producerCpuSecondsPerMillion: number;
  msPerTransaction: number | null;
  commitShare: number | null;
  roundsRecordsPerSecond: number[];
  /** (max - min) / median of the per-round records/s */
  spread: number;
}

function summarize(runs: Run[]): Summary[] {
  const out: Summary[] = [];
  for (const size of SIZES) {
    const plain = runs.filter((r) => r.size === size && r.variant === 'plain');
    for (const variant of VARIANTS) {
      const rs = runs.filter((r) => r.size === size && r.variant === variant);
      const rps = rs.map((r) => r.recordsPerSecond);
      const med = (f: (r: Run) => number | null) => {
        const xs = rs.map(f).filter((x): x is number => x !== null);
        return xs.length === 0 ? null : median(xs);
      };
      const paired = pairedRatio(
        rs.map((r) => ({ round: r.round, value: r.recordsPerSecond })),
        plain.map((r) => ({ round: r.round, value: r.recordsPerSecond })),
      );
      const hasPlain = plain.length > 0 && variant !== 'plain';
      out.push({
        size,
        variant,
        recordsPerSecond: median(rps),
        mbPerSecond: median(rs.map((r) => r.mbPerSecond)),
        vsPlain: hasPlain ? paired.median : null,
        vsPlainOfMedians: hasPlain ? median(rps) / median(plain.map((r) => r.recordsPerSecond)) : null,
        vsPlainPerRound: hasPlain ? paired.perRound : [],
        cpuVsPlain: hasPlain
          ? median(plain.map((r) => r.totalCpuSecondsPerMillion)) / median(rs.map((r) => r.totalCpuSecondsPerMillion))
          : null,
        brokerCpuVsPlain: hasPlain
          ? median(rs.map((r) => r.brokerCpuSecondsPerMillion)) / median(plain.map((r) => r.brokerCpuSecondsPerMillion))
          : null,
        brokerCpuSecondsPerMillion: median(rs.map((r) => r.brokerCpuSecondsPerMillion)),
        brokerMainThreadCpuSecondsPerMillion: median(rs.map((r) => r.brokerMainThreadCpuSecondsPerMillion)),
        producerCpuSecondsPerMillion: median(rs.map((r) => r.producerCpuSecondsPerMillion)),
        msPerTransaction: med((r) => r.msPerTransaction),
        commitShare: med((r) => r.commitShare),
        roundsRecordsPerSecond: rps.map(Math.round),
        spread: spread(rps),
      });
    }
  }
  return out;
}

/** The issue's goals: idempotent within 5% of plain; transactional (100 ms) within 10% at 1 KB, 25% at 100 B. */
function goals(summary: Summary[]) {
  const goal = (variant: Variant, size: number, limit: number) => {
    const s = summary.find((x) => x.variant === variant && x.size === size);
    if (s === undefined || s.vsPlain === null) return [];
    const ratio = fixed(s.vsPlain, 3);
    return [
      {
        goal: `${variant} ${size} B within ${Math.round(limit * 100)}% of plain`,
        ratio,
        ratioOfMedians: fixed(s.vsPlainOfMedians ?? NaN, 3),
        cpuRatio: fixed(s.cpuVsPlain ?? NaN, 3),
        met: ratio >= 1 - limit,
      },
    ];
  };
  return [
    ...SIZES.flatMap((size) => goal('idempotent', size, 0.05)),
    ...goal('transactional', 1000, 0.1),
    ...goal('transactional', 100, 0.25),
  ];
}

async function main(): Promise<void> {
  const dataDir = tempDir('gregor-eos-cost-');
  const broker = await startChildBroker(dataDir, 0, { 'num.partitions': String(PARTITIONS), 'log.retention.check.interval.ms': '3600000' });
  const pid = broker.child.pid as number;
  const loadBefore = loadAverage();
  const t0 = performance.now();
  const runs: Run[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      // rotate the order every round so that no variant always runs first or after the same one
      const sizes = round % 2 === 1 ? SIZES : [...SIZES].reverse();
      for (const size of sizes) {
        const order = VARIANTS.map((_, i) => VARIANTS[(i + round - 1) % VARIANTS.length] as Variant);
        for (const variant of order) {
          const r = await measure(broker.bootstrap, pid, size, variant, round);
          runs.push(r);
          process.stderr.write(
            `eos-cost: round ${round}/${ROUNDS}, ${size} B, ${variant}: ${Math.round(r.recordsPerSecond)} records/s${r.transactions > 0 ? `, a transaction every ${r.msPerTransaction?.toFixed(0)} ms` : ''}\n`,
          );
        }
      }
    }
  } finally {
    broker.child.kill('SIGTERM');
    await broker.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
  const wallSeconds = (performance.now() - t0) / 1000;
  const summary = summarize(runs);
  const g = goals(summary);
  const columns = [
    'size',
    'variant',
    'records/s',
    'MB/s',
    'vs plain (paired)',
    'vs plain (medians)',
    'CPU-based vs plain',
    'broker CPU s/M',
    'broker CPU vs plain',
    'broker main s/M',
    'producer CPU s/M',
    'ms per txn',
    'commit share',
    'records/s per round (k)',
    'spread',
  ];
  const rows = summary.map((s) => [
    `${s.size} B`,
    s.variant,
    Math.round(s.recordsPerSecond),
    fixed(s.mbPerSecond, 1),
    s.vsPlain === null ? null : fixed(s.vsPlain, 3),
    s.vsPlainOfMedians === null ? null : fixed(s.vsPlainOfMedians, 3),
    s.cpuVsPlain === null ? null : fixed(s.cpuVsPlain, 3),
    fixed(s.brokerCpuSecondsPerMillion, 2),
    s.brokerCpuVsPlain === null ? null : fixed(s.brokerCpuVsPlain, 2),
    fixed(s.brokerMainThreadCpuSecondsPerMillion, 2),
    fixed(s.producerCpuSecondsPerMillion, 2),
    s.msPerTransaction === null ? null : Math.round(s.msPerTransaction),
    s.commitShare === null ? null : `${Math.round(s.commitShare * 100)}%`,
    s.roundsRecordsPerSecond.map((x) => Math.round(x / 1000)).join(' / '),
    `${Math.round(s.spread * 100)}%`,
  ]);
  const timestamp = new Date().toISOString();
  const headline = [
    ...SIZES.flatMap((size) =>
      summary
        .filter((s) => s.size === size && s.vsPlain !== null)
        .map(
          (s) =>
            `${size} B ${s.variant} / plain: ${s.vsPlain?.toFixed(3)} (per round: ${s.vsPlainPerRound.map((x) => x.toFixed(2)).join(', ')})`,
        ),
    ),
    ...g.map((x) => `goal ${x.goal}: ${x.met ? 'met' : 'not met'} (${x.ratio})`),
    'Kafka (KIP-98 / "Transactions in Apache Kafka"): about 3% lower throughput for 1 KB records committed every 100 ms.',
  ];
  const report = {
    schema: 'gregor-bench/1',
    id: 'eos-cost',
    title: 'Issue 11: producer throughput cost of idempotence and transactions',
    description: `librdkafka C producer, acks=all, no compression, ${PARTITIONS} partitions round-robin; plain vs enable.idempotence=true vs transactional (commit every ${TXN_MS} ms), per record size, interleaved over ${ROUNDS} rounds.`,
    machine: benchMachine(),
    headline,
    charts: [
      {
        kind: 'bar',
        title: 'records/s (median of rounds)',
        xLabel: 'record size',
        yLabel: 'records/s',
        series: VARIANTS.map((v) => ({
          name: v,
          points: summary.filter((s) => s.variant === v).map((s) => ({ x: `${s.size} B`, y: Math.round(s.recordsPerSecond) })),
        })),
      },
      {
        kind: 'bar',
        title: 'broker CPU seconds per million records',
        xLabel: 'record size',
        yLabel: 'CPU s / M',
        series: VARIANTS.map((v) => ({
          name: v,
          points: summary.filter((s) => s.variant === v).map((s) => ({ x: `${s.size} B`, y: fixed(s.brokerCpuSecondsPerMillion, 3) })),
        })),
      },
    ],
    table: { columns, rows },
    notes: [
      'Producer: compat/bench/native/rdkafka-produce.c (librdkafka in C; its produce() loop costs next to nothing). Broker and producer are child processes sharing the machine; CPU from /proc/<pid>/stat over the timed window (10 ms ticks); "broker main" is the broker\'s main thread (/proc/<pid>/task/<pid>/stat).',
      `Producer settings: ${JSON.stringify(PRODUCER_CONFIG)}. Each run: a fresh topic of ${PARTITIONS} partitions, records round-robin over them, ${DISTINCT_VALUES} distinct values of random letters, warm-up of 1/20 of the records first (not timed), then the timed records to the end of the flush (transactional: the last commit); the sum of the high watermarks is checked to be every record plus one marker per partition per transaction.`,
      `Transactional: transactional.id set, init_transactions once, then begin, produce, and commit_transaction once ${TXN_MS} ms have passed since begin (it blocks until its records are acknowledged and the EndTxn answered), as Kafka's ProducerPerformance --transaction-duration-ms does. "ms per txn" is the timed wall time / transactions, "commit share" the part of it spent inside commit_transaction.`,
      `${ROUNDS} rounds; every round runs each size and variant once, in an order rotated per round. Figures are medians over rounds; "vs plain (paired)" is the median of the per-round ratios (the goal check), "vs plain (medians)" the ratio of the medians, "CPU-based" plain's (broker + producer) CPU per record / the variant's; "broker CPU vs plain" the variant's broker CPU per record / plain's. "spread" = (max - min) / median of the per-round records/s.`,
      'MB/s counts record values (10^6 bytes).',
      `Load average: ${loadBefore.join(', ')} at the start, ${loadAverage().join(', ')} at the end (1/5/15 min); the run took ${Math.round(wallSeconds)} s.`,
    ],
    timestamp,
    settings: {
      sizes: SIZES,
      records: SIZES.map(recordsFor),
      rounds: ROUNDS,
      txnMs: TXN_MS,
      partitions: PARTITIONS,
      queueKb: QUEUE_KB,
      queueMessages: QUEUE_MESSAGES,
      variants: VARIANTS,
      distinctValues: DISTINCT_VALUES,
    },
    client: { library: 'librdkafka (C, compat/bench/native/rdkafka-produce.c)', config: PRODUCER_CONFIG },
    summary,
    goals: g,
    results: runs,
  };
  console.log(
    `\nIssue 11: producer cost of idempotence and transactions (librdkafka C producer, acks=all, ${PARTITIONS} partitions, ${ROUNDS} rounds, ${Math.round(wallSeconds)} s)\n`,
  );
  console.log(textTable(columns, rows));
  console.log('');
  for (const h of headline) console.log(`  ${h}`);
  console.log(`\nwrote ${writeResult('eos-cost', timestamp, report)}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
