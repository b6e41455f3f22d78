/**
 * Share-group throughput (KIP-932) beside a classic consumer group, in one run against one gregor
 * (a child process): the same topic of BENCH_SHARE_RECORDS records (100-byte values over
 * BENCH_SHARE_PARTITIONS partitions, produced once by compat/bench/native/rdkafka-produce.c), read
 * by three members of a share group (librdkafka 2.15's share consumer, implicit acknowledgement) and
 * by three members of a classic group (librdkafka's consumer, subscribe, auto commit), each member a
 * compat/bench/native/rdkafka-group-bench.c process. Every round uses fresh groups; share groups
 * start from the log start through the GROUP config share.auto.offset.reset=earliest.
 *
 * Figures: records/s from the first batch delivered to any member until the members together have
 * every record; broker CPU (utime + stime of the broker process over the same window) per record.
 * The share figure includes the acknowledgements and their durable `__share_group_state` writes.
 *
 *   npm run build && node dist/compat/bench/share-throughput.js
 * writes compat/results/$BENCH_RUN (default latest)/share-throughput.json.
 * Profile the broker with GREGOR_CHILD_NODE_FLAGS=--cpu-prof (the profile lands in the cwd).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { startChildBroker, tempDir } from '../../test/helpers/broker.js';
import { RawClient } from '../../test/helpers/raw-client.js';
import { ROOT } from '../lib/paths.js';
import { buildRdkafkaProgram } from './native-build.js';
import { startNativeProducer, THROUGHPUT_PRODUCER_CONFIG } from './native-producer.js';
import { cpuSeconds, envInt, round, writeBench } from './proc-stats.js';

const RECORDS = envInt('BENCH_SHARE_RECORDS', 300_000);
const PARTITIONS = envInt('BENCH_SHARE_PARTITIONS', 3);
const ROUNDS = envInt('BENCH_SHARE_ROUNDS', 3);
const MEMBERS = 3;
const VALUE_BYTES = 100;
const TOPIC = 'share-bench';
const KINDS = ['share', 'classic'] as const;
type Kind = (typeof KINDS)[number];

interface RunResult {
  kind: Kind;
  round: number;
  seconds: number;
  recordsPerSecond: number;
  delivered: number;
  brokerCpuSeconds: number;
  cpuUsPerRecord: number;
  /** records each member got */
  perMember: number[];
  /** the machine's 1-minute load average when the run ended (the figures are indicative above ~2) */
  load1: number;
}

const binary = (): string =>
  buildRdkafkaProgram(join(ROOT, 'compat/bench/native/rdkafka-group-bench.c'), join(ROOT, 'dist/compat/bench/native/rdkafka-group-bench'));

async function setEarliest(bootstrap: string, group: string): Promise<void> {
  const raw = await RawClient.connect(bootstrap);
  try {
    const res = await raw.request<{ responses: { errorCode: number; errorMessage: string | null }[] }>(ApiKey.IncrementalAlterConfigs, 1, {
      resources: [
        { resourceType: 32, resourceName: group, configs: [{ name: 'share.auto.offset.reset', configOperation: 0, value: 'earliest' }] },
      ],
      validateOnly: false,
    });
    const r = res.responses[0];
    if (r?.errorCode !== 0) throw new Error(`share.auto.offset.reset for ${group}: error ${r?.errorCode} ${r?.errorMessage ?? ''}`);
  } finally {
    raw.destroy();
  }
}

async function run(bootstrap: string, brokerPid: number, kind: Kind, roundNo: number): Promise<RunResult> {
  const group = `${kind}-bench-${roundNo}`;
  if (kind === 'share') await setEarliest(bootstrap, group);
  const members: ChildProcessWithoutNullStreams[] = [];
  const perMember = Array.from({ length: MEMBERS }, () => 0);
  let total = 0;
  let first: number | undefined;
  let cpuStart = 0;
  const done = new Promise<{ end: number; cpuEnd: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${group}: ${total} of ${RECORDS} records after 600 s`)), 600_000);
    for (let i = 0; i < MEMBERS; i++) {
      const child = spawn(binary(), [kind, bootstrap, group, TOPIC, 'log_level=3'], { stdio: ['pipe', 'pipe', 'pipe'] });
      members.push(child);
      child.stderr.on('data', (d: Buffer) => process.stderr.write(`[${group}#${i}] ${d.toString()}`));
      createInterface({ input: child.stdout }).on('line', (line) => {
        const m = /^b (\d+) ([\d.]+)$/.exec(line);
        if (m === null) return;
        const n = Number(m[1]);
        const t = Number(m[2]);
        if (first === undefined) {
          first = t;
          cpuStart = cpuSeconds(brokerPid);
        }
        first = Math.min(first, t);
        perMember[i] = (perMember[i] ?? 0) + n;
        const before = total;
        total += n;
        if (before < RECORDS && total >= RECORDS) {
          clearTimeout(timer);
          resolve({ end: t, cpuEnd: cpuSeconds(brokerPid) });
        }
      });
    }
  });
  try {
    const { end, cpuEnd } = await done;
    const seconds = end - (first ?? end);
    const brokerCpuSeconds = cpuEnd - cpuStart;
    return {
      kind,
      round: roundNo,
      seconds: round3(seconds),
      recordsPerSecond: Math.round(RECORDS / seconds),
      delivered: total,
      brokerCpuSeconds: round3(brokerCpuSeconds),
      cpuUsPerRecord: round((brokerCpuSeconds / RECORDS) * 1e6, 2),
      perMember: [...perMember],
      load1: round(loadavg()[0] ?? 0, 1),
    };
  } finally {
    await Promise.all(
      members.map(
        (c) =>
          new Promise<void>((resolve) => {
            const kill = setTimeout(() => c.kill('SIGKILL'), 20_000);
            c.on('exit', () => {
              clearTimeout(kill);
              resolve();
            });
            c.stdin.end();
          }),
      ),
    );
  }
}

const round3 = (x: number): number => round(x, 3);
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
};

const dataDir = tempDir('gregor-share-bench-');
/**
 * Share members learn a new assignment at their next heartbeat (group.share.heartbeat.interval.ms,
 * 5 s by default): the first member to join reads alone until then. A 1 s interval keeps that start-up
 * phase short beside the classic group's rebalance (both are inside the timed window).
 */
const BROKER_CONFIG = {
  'num.partitions': String(PARTITIONS),
  'group.share.min.heartbeat.interval.ms': '1000',
  'group.share.heartbeat.interval.ms': '1000',
};
const broker = await startChildBroker(dataDir, 0, BROKER_CONFIG);
const results: RunResult[] = [];
try {
  const producer = await startNativeProducer(
    broker.bootstrap,
    TOPIC,
    0,
    RECORDS,
    1000,
    { ...THROUGHPUT_PRODUCER_CONFIG, log_level: 0 },
    {
      valueBytes: VALUE_BYTES,
      partitions: PARTITIONS,
    },
  );
  const filled = await producer.timed();
  await producer.end();
  if (filled.failed > 0) throw new Error(`${filled.failed} records failed delivery`);
  const pid = broker.child.pid as number;
  for (let r = 1; r <= ROUNDS; r++) {
    for (const kind of r % 2 === 1 ? KINDS : [...KINDS].reverse()) {
      const res = await run(broker.bootstrap, pid, kind, r);
      results.push(res);
      process.stderr.write(
        `share-throughput: round ${r}/${ROUNDS} ${kind}: ${res.recordsPerSecond} records/s, ${res.cpuUsPerRecord} us broker CPU/record, members ${res.perMember.join('/')}, load ${res.load1}\n`,
      );
    }
  }
} finally {
  broker.child.kill('SIGTERM');
  await broker.exited;
  rmSync(dataDir, { recursive: true, force: true });
}

const of = (kind: Kind) => results.filter((r) => r.kind === kind);
const summary = Object.fromEntries(
  KINDS.map((k) => [
    k,
    { recordsPerSecond: median(of(k).map((r) => r.recordsPerSecond)), cpuUsPerRecord: median(of(k).map((r) => r.cpuUsPerRecord)) },
  ]),
) as Record<Kind, { recordsPerSecond: number; cpuUsPerRecord: number }>;
const ratio = round(summary.share.recordsPerSecond / summary.classic.recordsPerSecond, 2);
const file = writeBench(
  join(ROOT, 'compat/results', process.env['BENCH_RUN'] ?? 'latest'),
  {
    id: 'share-throughput',
    title: 'Share group (3 members, implicit acknowledgement) vs classic consumer group (3 members), librdkafka 2.15',
    headline: [
      `share group: ${summary.share.recordsPerSecond} records/s, ${summary.share.cpuUsPerRecord} us broker CPU per record`,
      `classic group: ${summary.classic.recordsPerSecond} records/s, ${summary.classic.cpuUsPerRecord} us broker CPU per record`,
      `share / classic: ${ratio}x (goal >= 0.5x)`,
    ],
    table: {
      columns: ['kind', 'round', 'seconds', 'records/s', 'delivered', 'broker CPU-s', 'us CPU/record', 'per member', 'load (1 min)'],
      rows: results.map((r) => [
        r.kind,
        r.round,
        r.seconds,
        r.recordsPerSecond,
        r.delivered,
        r.brokerCpuSeconds,
        r.cpuUsPerRecord,
        r.perMember.join('/'),
        r.load1,
      ]),
    },
    notes: [
      `${RECORDS} records of ${VALUE_BYTES} B over ${PARTITIONS} partitions, ${ROUNDS} rounds (order alternates), medians; broker settings ${JSON.stringify(BROKER_CONFIG)}, gregor's defaults otherwise (group.share.partition.max.record.locks 2000).`,
      'Timed from the first batch any member got to the batch that completed the count (members are librdkafka processes; their batch times are CLOCK_MONOTONIC).',
      'A shared 2-core machine: quote the ratio, the absolute figures are indicative.',
    ],
  },
  { records: RECORDS, partitions: PARTITIONS, members: MEMBERS, summary, ratio, results },
);
console.log(JSON.stringify({ summary, ratio }));
console.log(file);
