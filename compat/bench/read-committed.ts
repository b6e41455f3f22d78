/**
 * Issue 11: consumer throughput with isolation.level=read_committed against read_uncommitted, on a
 * topic where 10% of the transactions were aborted. The topic (3 partitions) is filled by the C
 * producer (compat/bench/native/rdkafka-produce.c) with transactions of 10,000 records round-robin
 * over the partitions, every 10th one flushed (its records are in the log) and then aborted; records
 * of aborted transactions start with '#'. Then, in every round, a C librdkafka consumer
 * (compat/bench/native/rdkafka-consume.c) reads the whole topic once per isolation level (the order
 * alternating between rounds). Not a test: prints a table and writes
 * compat/results/read-committed-<ts>.json (`gregor-bench/1`).
 *
 * Per read: records/s and MB/s delivered to the application, log records/s (committed + aborted:
 * what the broker went through), broker CPU seconds per million records delivered (whole process and
 * main thread), the consumer's; and the check that read_committed delivered exactly the committed
 * records (none marked '#') and read_uncommitted every record.
 *
 * Knobs (environment): BENCH_RC_SIZES ("100,1000"), BENCH_RC_RECORDS ("3000000,800000", one per
 * size), BENCH_RC_TXN_RECORDS (10000), BENCH_RC_ABORT_EVERY (10), BENCH_RC_ROUNDS (5),
 * BENCH_RC_PARTITIONS (3).
 */
import { rmSync } from 'node:fs';
import { startChildBroker, tempDir } from '../../test/helpers/broker.js';
import { benchMachine } from './proc-stats.js';
import {
  createTopic,
  cpuWindow,
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
import { startNativeConsumer, startNativeProducer } from './native-producer.js';

const SIZES = envList('BENCH_RC_SIZES', '100,1000').map(Number);
const RECORDS_LIST = envList('BENCH_RC_RECORDS', '3000000,800000').map(Number);
const TXN_RECORDS = envNumber('BENCH_RC_TXN_RECORDS', 10_000);
const ABORT_EVERY = envNumber('BENCH_RC_ABORT_EVERY', 10);
const ROUNDS = envNumber('BENCH_RC_ROUNDS', 5);
const PARTITIONS = envNumber('BENCH_RC_PARTITIONS', 3);
const LEVELS = ['read_committed', 'read_uncommitted'] as const;
type Level = (typeof LEVELS)[number];

const FILL_CONFIG = {
  acks: 'all',
  'compression.codec': 'none',
  'linger.ms': 5,
  'batch.num.messages': 10000,
  'batch.size': 1_000_000,
  'queue.buffering.max.messages': 100_000,
  'queue.buffering.max.kbytes': 4096,
  'max.in.flight.requests.per.connection': 5,
  log_level: 0,
};
/** librdkafka's consumer defaults otherwise (fetch.max.bytes 50 MB, max.partition.fetch.bytes 1 MB, fetch.wait.max.ms 500). */
const CONSUMER_CONFIG = { log_level: 0 };

function recordsFor(size: number): number {
  return RECORDS_LIST[Math.min(SIZES.indexOf(size), RECORDS_LIST.length - 1)] ?? 1_000_000;
}

interface Fill {
  size: number;
  topic: string;
  records: number;
  transactions: number;
  abortedTransactions: number;
  abortedRecords: number;
  committedRecords: number;
  controlRecords: number;
  seconds: number;
  recordsPerSecond: number;
}

interface Read {
  size: number;
  level: Level;
  round: number;
  /** assign → last record delivered (the throughput's time) */
  seconds: number;
  /** assign → every partition at EOF (the CPU window) */
  secondsToEof: number;
  delivered: number;
  expected: number;
  markedRecords: number;
  expectedMarked: number;
  ok: boolean;
  recordsPerSecond: number;
  mbPerSecond: number;
  /** records in the log (committed + aborted) / s */
  logRecordsPerSecond: number;
  brokerCpuSecondsPerMillion: number;
  brokerMainThreadCpuSecondsPerMillion: number;
  consumerCpuSecondsPerMillion: number;
  brokerThreads: ThreadBusy[];
  consumerThreads: ThreadBusy[];
  loadavg: number[];
}

async function fill(bootstrap: string, size: number): Promise<Fill> {
  const topic = `rc-${size}`;
  const records = recordsFor(size);
  await createTopic(bootstrap, topic, PARTITIONS);
  const p = await startNativeProducer(
    bootstrap,
    topic,
    0,
    records,
    1000,
    { ...FILL_CONFIG, 'transactional.id': `rc-fill-${size}` },
    { valueBytes: size, partitions: PARTITIONS, txnRecords: TXN_RECORDS, abortEvery: ABORT_EVERY },
  );
  try {
    const t = await p.timed();
    if (t.failed > 0) throw new Error(`${topic}: ${t.failed} records failed delivery`);
    const hw = await p.watermarks();
    if (hw.highWatermark !== records + hw.controlRecords)
      throw new Error(`${topic}: high watermarks sum to ${hw.highWatermark}, expected ${records} + ${hw.controlRecords} markers`);
    const abortedTransactions = Math.floor(t.transactions / ABORT_EVERY);
    return {
      size,
      topic,
      records,
      transactions: t.transactions,
      abortedTransactions,
      abortedRecords: t.abortedRecords,
      committedRecords: records - t.abortedRecords,
      controlRecords: hw.controlRecords,
      seconds: t.seconds,
      recordsPerSecond: records / t.seconds,
    };
  } finally {
    await p.end();
  }
}

async function read(bootstrap: string, brokerPid: number, f: Fill, level: Level, round: number): Promise<Read> {
  const c = await startNativeConsumer(bootstrap, f.topic, PARTITIONS, { ...CONSUMER_CONFIG, 'isolation.level': level });
  try {
    const end = cpuWindow(brokerPid, c.pid);
    const t = await c.timed();
    const cpu = end(t.secondsToEof);
    const expected = level === 'read_committed' ? f.committedRecords : f.records;
    const expectedMarked = level === 'read_committed' ? 0 : f.abortedRecords;
    const perM = (cpuS: number) => (cpuS / t.records) * 1e6;
    return {
      size: f.size,
      level,
      round,
      seconds: t.seconds,
      secondsToEof: t.secondsToEof,
      delivered: t.records,
      expected,
      markedRecords: t.markedRecords,
      expectedMarked,
      ok: t.records === expected && t.markedRecords === expectedMarked,
      recordsPerSecond: t.records / t.seconds,
      mbPerSecond: t.valueBytes / 1e6 / t.seconds,
      logRecordsPerSecond: f.records / t.seconds,
      brokerCpuSecondsPerMillion: perM(cpu.brokerCpu),
      brokerMainThreadCpuSecondsPerMillion: perM(cpu.brokerMainCpu),
      consumerCpuSecondsPerMillion: perM(cpu.clientCpu),
      brokerThreads: cpu.brokerThreads,
      consumerThreads: cpu.clientThreads,
      loadavg: loadAverage(),
    };
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  const dataDir = tempDir('gregor-read-committed-');
  const broker = await startChildBroker(dataDir, 0, { 'num.partitions': String(PARTITIONS), 'log.retention.check.interval.ms': '3600000' });
  const pid = broker.child.pid as number;
  const loadBefore = loadAverage();
  const t0 = performance.now();
  const fills: Fill[] = [];
  const reads: Read[] = [];
  try {
    for (const size of SIZES) {
      const f = await fill(broker.bootstrap, size);
      fills.push(f);
      process.stderr.write(
        `read-committed: filled rc-${size}: ${f.records} records in ${f.transactions} transactions (${f.abortedTransactions} aborted, ${f.abortedRecords} records), ${Math.round(f.recordsPerSecond)} records/s\n`,
      );
    }
    for (let round = 1; round <= ROUNDS; round++) {
      for (const f of round % 2 === 1 ? fills : [...fills].reverse()) {
        for (const level of round % 2 === 1 ? LEVELS : [...LEVELS].reverse()) {
          const r = await read(broker.bootstrap, pid, f, level, round);
          reads.push(r);
          process.stderr.write(
            `read-committed: round ${round}/${ROUNDS}, ${f.size} B, ${level}: ${r.delivered} records, ${Math.round(r.recordsPerSecond)}/s${r.ok ? '' : ` WRONG COUNT (expected ${r.expected}, '#' ${r.markedRecords} expected ${r.expectedMarked})`}\n`,
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

  const summary = SIZES.flatMap((size) => {
    const of = (level: Level) => reads.filter((r) => r.size === size && r.level === level);
    const ru = of('read_uncommitted');
    return LEVELS.map((level) => {
      const rs = of(level);
      const rps = rs.map((r) => r.recordsPerSecond);
      const paired = pairedRatio(
        rs.map((r) => ({ round: r.round, value: r.recordsPerSecond })),
        ru.map((r) => ({ round: r.round, value: r.recordsPerSecond })),
      );
      const pairedLog = pairedRatio(
        rs.map((r) => ({ round: r.round, value: r.logRecordsPerSecond })),
        ru.map((r) => ({ round: r.round, value: r.logRecordsPerSecond })),
      );
      return {
        size,
        level,
        recordsPerSecond: median(rps),
        mbPerSecond: median(rs.map((r) => r.mbPerSecond)),
        logRecordsPerSecond: median(rs.map((r) => r.logRecordsPerSecond)),
        deliveredVsUncommitted: level === 'read_uncommitted' ? null : paired.median,
        deliveredVsUncommittedPerRound: level === 'read_uncommitted' ? [] : paired.perRound,
        logVsUncommitted: level === 'read_uncommitted' ? null : pairedLog.median,
        brokerCpuSecondsPerMillion: median(rs.map((r) => r.brokerCpuSecondsPerMillion)),
        brokerMainThreadCpuSecondsPerMillion: median(rs.map((r) => r.brokerMainThreadCpuSecondsPerMillion)),
        consumerCpuSecondsPerMillion: median(rs.map((r) => r.consumerCpuSecondsPerMillion)),
        delivered: [...new Set(rs.map((r) => r.delivered))],
        expected: rs[0]?.expected ?? null,
        allExact: rs.every((r) => r.ok),
        roundsRecordsPerSecond: rps.map(Math.round),
        spread: spread(rps),
      };
    });
  });
  const allOk = reads.every((r) => r.ok);
  const columns = [
    'size',
    'isolation',
    'records/s delivered',
    'MB/s',
    'log records/s',
    'vs uncommitted (delivered)',
    'vs uncommitted (log)',
    'broker CPU s/M',
    'broker main s/M',
    'consumer CPU s/M',
    'delivered / expected',
    'records/s per round (k)',
    'spread',
  ];
  const rows = summary.map((s) => [
    `${s.size} B`,
    s.level,
    Math.round(s.recordsPerSecond),
    fixed(s.mbPerSecond, 1),
    Math.round(s.logRecordsPerSecond),
    s.deliveredVsUncommitted === null ? null : fixed(s.deliveredVsUncommitted, 3),
    s.logVsUncommitted === null ? null : fixed(s.logVsUncommitted, 3),
    fixed(s.brokerCpuSecondsPerMillion, 2),
    fixed(s.brokerMainThreadCpuSecondsPerMillion, 2),
    fixed(s.consumerCpuSecondsPerMillion, 2),
    `${s.delivered.join('|')} / ${s.expected ?? '?'}${s.allExact ? ' exact' : ' WRONG'}`,
    s.roundsRecordsPerSecond.map((x) => Math.round(x / 1000)).join(' / '),
    `${Math.round(s.spread * 100)}%`,
  ]);
  const timestamp = new Date().toISOString();
  const headline = [
    ...summary
      .filter((s) => s.deliveredVsUncommitted !== null)
      .map(
        (s) =>
          `${s.size} B read_committed / read_uncommitted, records delivered per second: ${s.deliveredVsUncommitted?.toFixed(3)} (log records per second: ${s.logVsUncommitted?.toFixed(3)}; per round: ${s.deliveredVsUncommittedPerRound.map((x) => x.toFixed(2)).join(', ')})`,
      ),
    `exact counts (read_committed = committed records with none from an aborted transaction, read_uncommitted = all): ${allOk ? 'yes, every read' : 'NO'}`,
  ];
  const report = {
    schema: 'gregor-bench/1',
    id: 'read-committed',
    title: 'Issue 11: read_committed vs read_uncommitted consumer throughput, 10% aborted transactions',
    description: `A topic of ${PARTITIONS} partitions filled with transactions of ${TXN_RECORDS} records, every ${ABORT_EVERY}th aborted (after its records were written); a librdkafka C consumer reads it whole with each isolation level, interleaved over ${ROUNDS} rounds.`,
    machine: benchMachine(),
    headline,
    charts: [
      {
        kind: 'bar',
        title: 'records/s delivered (median of rounds)',
        xLabel: 'record size',
        yLabel: 'records/s',
        series: LEVELS.map((l) => ({
          name: l,
          points: summary.filter((s) => s.level === l).map((s) => ({ x: `${s.size} B`, y: Math.round(s.recordsPerSecond) })),
        })),
      },
      {
        kind: 'bar',
        title: 'broker CPU seconds per million records delivered',
        xLabel: 'record size',
        yLabel: 'CPU s / M',
        series: LEVELS.map((l) => ({
          name: l,
          points: summary.filter((s) => s.level === l).map((s) => ({ x: `${s.size} B`, y: fixed(s.brokerCpuSecondsPerMillion, 3) })),
        })),
      },
    ],
    table: { columns, rows },
    notes: [
      `Fill: compat/bench/native/rdkafka-produce.c with transactional.id, --txn-records=${TXN_RECORDS} --abort-every=${ABORT_EVERY}, records round-robin over the partitions (each transaction spans all of them); an aborted transaction is flushed first, so its records are in the log, then aborted; settings ${JSON.stringify(FILL_CONFIG)}. ${fills.map((f) => `${f.size} B: ${f.records} records, ${f.transactions} transactions, ${f.abortedTransactions} aborted (${f.abortedRecords} records), ${f.controlRecords} markers, filled at ${Math.round(f.recordsPerSecond)} records/s`).join('; ')}.`,
      `Read: compat/bench/native/rdkafka-consume.c, assign of every partition from the beginning, rd_kafka_consume_batch_queue (without waiting for full batches) until every partition reports EOF (read_committed: at the last stable offset, here the high watermark); librdkafka consumer defaults otherwise. Timed from the assign to the last record delivered (EOF comes only after an empty long-poll at the end, fetch.wait.max.ms later); the CPU window runs to the last EOF.`,
      `"records/s delivered" counts records handed to the application; "log records/s" every record in the log (committed + aborted) over the same time. CPU per million is per record delivered. "vs uncommitted" is the median of the per-round ratios read_committed / read_uncommitted. "spread" = (max - min) / median of the per-round records/s.`,
      `Load average: ${loadBefore.join(', ')} at the start, ${loadAverage().join(', ')} at the end (1/5/15 min); the run took ${Math.round(wallSeconds)} s.`,
    ],
    timestamp,
    settings: {
      sizes: SIZES,
      records: SIZES.map(recordsFor),
      txnRecords: TXN_RECORDS,
      abortEvery: ABORT_EVERY,
      rounds: ROUNDS,
      partitions: PARTITIONS,
      fillConfig: FILL_CONFIG,
      consumerConfig: CONSUMER_CONFIG,
    },
    fills,
    summary,
    allExact: allOk,
    results: reads,
  };
  console.log(
    `\nIssue 11: read_committed vs read_uncommitted (librdkafka C consumer, ${PARTITIONS} partitions, ${TXN_RECORDS}-record transactions, 1 in ${ABORT_EVERY} aborted, ${ROUNDS} rounds, ${Math.round(wallSeconds)} s)\n`,
  );
  console.log(textTable(columns, rows));
  console.log('');
  for (const h of headline) console.log(`  ${h}`);
  console.log(`\nwrote ${writeResult('read-committed', timestamp, report)}`);
  if (!allOk) process.exitCode = 1;
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
