/**
 * Issue 14: what Kafka's default socket buffers cost on loopback, side by side in one run. Three
 * brokers run throughout: gregor with the defaults (socket.send.buffer.bytes and
 * socket.receive.buffer.bytes 102400, Kafka's, set on every accepted socket), gregor with both -1 (the
 * kernel sizes and autotunes them), and librdkafka's mock cluster (which leaves them to the kernel).
 * Each broker's produce paths are primed first; then BENCH_ROUNDS (5) rounds, the brokers in a
 * rotating order, each: produce BENCH_RECORDS (1M) 100-byte records with acks=1 into a new
 * one-partition topic (records/s, broker CPU-s and main-thread CPU-s per 1M records), then consume
 * them from the start with librdkafka's defaults (records/s, broker CPU-s per 1M). During gregor's
 * consumes its request log records every request (POST /v1/requests/record-all); the Fetch responses
 * over 100 kB give the median local time (handling, the log read included) and response-send time
 * (socket write until flushed: how long the response waits on the socket's send buffer) per Fetch.
 *
 *   node dist/compat/bench/socket-buffers.js [--out DIR]
 *
 * BENCH_PIN=1 (or BROKER_CPU:CLIENT_CPU) binds the brokers to one CPU and this process and its clients
 * to the other, as mock-vs-gregor does. Writes socket-buffers-<time>.json into compat/results (or --out).
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { adminRequest } from './admin-http.js';
import { brokerCpu, createOnePartitionTopics, servingCpu, startGregor, startMock, type Target } from './mock-vs-gregor-brokers.js';
import { primeProducePaths, startNativeConsumer, startNativeProducer, THROUGHPUT_PRODUCER_CONFIG } from './native-producer.js';
import { envInt, parsePinning, pinProcess, round, ROOT_DIR, sleep, writeBench } from './proc-stats.js';
import { median } from './tree-args.js';

const RECORDS = envInt('BENCH_RECORDS', 1_000_000);
const ROUNDS = envInt('BENCH_ROUNDS', 5);
const PRIME = envInt('BENCH_PRIME_RECORDS', 1_000_000);
const PIN = parsePinning(process.env['BENCH_PIN'], availableParallelism());
/** Fetch responses at least this large are the ones that carry records (the rest are empty long-polls) */
const LARGE_FETCH_BYTES = 100_000;

type Name = 'kafka-default' | 'kernel-sized' | 'mock';
const KERNEL_SIZED = { KAFKA_SOCKET_SEND_BUFFER_BYTES: '-1', KAFKA_SOCKET_RECEIVE_BUFFER_BYTES: '-1' };

interface Run {
  round: number;
  broker: Name;
  produceRecordsPerSec: number;
  produceCpuSPerM: number | null;
  produceMainCpuSPerM: number | null;
  consumeRecordsPerSec: number;
  consumeCpuSPerM: number | null;
  /** gregor only: Fetches over LARGE_FETCH_BYTES in the consume, and their median local / response-send ms */
  fetches: number | null;
  fetchLocalMs: number | null;
  fetchSendMs: number | null;
}

interface LoggedRequest {
  responseBytes: number;
  latencyMs: { local: number; responseSend: number };
}

function parseOut(argv: readonly string[]): string {
  if (argv.length === 0) return join(ROOT_DIR, 'compat/results');
  if (argv.length === 2 && argv[0] === '--out' && argv[1] !== undefined) return argv[1];
  throw new Error(`unknown arguments ${argv.join(' ')} (--out DIR)`);
}

function admin(t: Target, path: string, method = 'GET', body?: unknown): Promise<unknown> {
  if (t.admin === undefined) throw new Error('gregor did not report its admin address');
  return adminRequest(t.admin, method, path, body);
}

const perM = (cpu0: number | null, cpu1: number | null, records: number) =>
  cpu0 === null || cpu1 === null ? null : round(((cpu1 - cpu0) / records) * 1e6, 3);

async function runOne(round_: number, name: Name, t: Target, topic: string): Promise<Run> {
  if (name !== 'mock') await createOnePartitionTopics(t.bootstrap, [topic]);
  const p = await startNativeProducer(t.bootstrap, topic, 0, RECORDS, 1, { ...THROUGHPUT_PRODUCER_CONFIG, 'request.required.acks': 1 });
  const [c0, m0] = [brokerCpu(t), servingCpu(t)];
  const produced = await p.timed();
  const [c1, m1] = [brokerCpu(t), servingCpu(t)];
  await p.end();
  if (produced.failed > 0) throw new Error(`${name}: ${produced.failed} records failed`);

  if (name !== 'mock') {
    await admin(t, '/v1/requests', 'DELETE');
    await admin(t, '/v1/requests/record-all', 'POST', { on: true });
  }
  const c = await startNativeConsumer(t.bootstrap, topic, 1, {});
  const k0 = brokerCpu(t);
  const consumed = await c.timed();
  const k1 = brokerCpu(t);
  await c.end();
  if (consumed.records !== RECORDS) throw new Error(`${name}: consumed ${consumed.records} records, expected ${RECORDS}`);
  let fetches: LoggedRequest[] | null = null;
  if (name !== 'mock') {
    const log = (await admin(t, '/v1/requests?api=Fetch&limit=100000')) as { requests: LoggedRequest[] };
    await admin(t, '/v1/requests/record-all', 'POST', { on: false });
    fetches = log.requests.filter((r) => r.responseBytes >= LARGE_FETCH_BYTES);
    if (fetches.length === 0) throw new Error(`${name}: the request log holds no Fetch of ${LARGE_FETCH_BYTES} bytes or more`);
  }
  return {
    round: round_,
    broker: name,
    produceRecordsPerSec: Math.round(RECORDS / produced.seconds),
    produceCpuSPerM: perM(c0, c1, RECORDS),
    produceMainCpuSPerM: perM(m0, m1, RECORDS),
    consumeRecordsPerSec: Math.round(consumed.records / consumed.seconds),
    consumeCpuSPerM: perM(k0, k1, consumed.records),
    fetches: fetches?.length ?? null,
    fetchLocalMs: fetches === null ? null : round(median(fetches.map((f) => f.latencyMs.local)), 3),
    fetchSendMs: fetches === null ? null : round(median(fetches.map((f) => f.latencyMs.responseSend)), 3),
  };
}

async function main(): Promise<void> {
  const out = parseOut(process.argv.slice(2));
  const topics = Array.from({ length: ROUNDS }, (_, i) => `socket-buffers-${i}`);
  const brokers: [Name, Target][] = [];
  try {
    if (PIN !== null) pinProcess(process.pid, PIN.clientCpu);
    brokers.push(['kafka-default', await startGregor()], ['kernel-sized', await startGregor(undefined, KERNEL_SIZED)]);
    brokers.push(['mock', await startMock([...topics, 'socket-buffers-prime'].map((t) => `${t}:1`))]);
    for (const [name, t] of brokers) {
      if (PIN !== null && t.pid !== null) pinProcess(t.pid, PIN.brokerCpu);
      if (name !== 'mock') await createOnePartitionTopics(t.bootstrap, ['socket-buffers-prime']);
      await primeProducePaths(t.bootstrap, 'socket-buffers-prime', PRIME, THROUGHPUT_PRODUCER_CONFIG);
    }
    await sleep(1000);
    const runs: Run[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      for (let k = 0; k < brokers.length; k++) {
        const [name, t] = brokers[(i + k) % brokers.length] as [Name, Target];
        const run = await runOne(i + 1, name, t, topics[i] as string);
        runs.push(run);
        process.stderr.write(
          `round ${run.round} ${name}: produce ${run.produceRecordsPerSec}/s (${run.produceCpuSPerM ?? '-'} CPU-s/M, main ${run.produceMainCpuSPerM ?? '-'}), consume ${run.consumeRecordsPerSec}/s (${run.consumeCpuSPerM ?? '-'} CPU-s/M)${run.fetches === null ? '' : `, ${run.fetches} fetches: local ${run.fetchLocalMs} ms, send ${run.fetchSendMs} ms`}\n`,
        );
      }
    }
    const of = (n: Name) => runs.filter((r) => r.broker === n);
    const med = (n: Name, f: (r: Run) => number | null) => round(median(of(n).map((r) => f(r) ?? NaN)), 3);
    const line = (n: Name) => {
      const produce = med(n, (r) => r.produceRecordsPerSec);
      const consume = med(n, (r) => r.consumeRecordsPerSec);
      const vsMock = (x: number, m: number) => round(x / m, 3);
      const fetch = n === 'mock' ? '' : `; per Fetch local ${med(n, (r) => r.fetchLocalMs)} ms, send ${med(n, (r) => r.fetchSendMs)} ms`;
      return `${n}: produce ${produce}/s (${vsMock(
        produce,
        med('mock', (r) => r.produceRecordsPerSec),
      )}x the mock; broker ${med(n, (r) => r.produceCpuSPerM)} CPU-s/M, main thread ${med(n, (r) => r.produceMainCpuSPerM)}), consume ${consume}/s (${vsMock(
        consume,
        med('mock', (r) => r.consumeRecordsPerSec),
      )}x; broker ${med(n, (r) => r.consumeCpuSPerM)} CPU-s/M)${fetch}`;
    };
    const path = writeBench(
      out,
      {
        id: `socket-buffers-${new Date().toISOString().replace(/:/g, '-')}`,
        title: "Kafka's default socket buffers against kernel-sized ones, beside the librdkafka mock",
        description: `${RECORDS} records of 100 bytes per round, one partition, acks=1 (the C producer of npm run bench), then consumed from the start (the C consumer, librdkafka's defaults); ${ROUNDS} rounds, the three brokers in a rotating order, running throughout. kafka-default: socket.send.buffer.bytes and socket.receive.buffer.bytes 102400; kernel-sized: both -1.${PIN === null ? '' : ` Pinned: brokers on CPU ${PIN.brokerCpu}, clients on CPU ${PIN.clientCpu}.`}`,
        headline: [line('kafka-default'), line('kernel-sized'), line('mock')],
        table: {
          columns: [
            'round',
            'broker',
            'produce records/s',
            'produce broker CPU-s/M',
            'produce main-thread CPU-s/M',
            'consume records/s',
            'consume broker CPU-s/M',
            'Fetches over 100 kB',
            'Fetch local ms (median)',
            'Fetch response send ms (median)',
          ],
          rows: runs.map((r) => [
            r.round,
            r.broker,
            r.produceRecordsPerSec,
            r.produceCpuSPerM,
            r.produceMainCpuSPerM,
            r.consumeRecordsPerSec,
            r.consumeCpuSPerM,
            r.fetches,
            r.fetchLocalMs,
            r.fetchSendMs,
          ]),
        },
        notes: [
          `BENCH_RECORDS=${RECORDS}, BENCH_ROUNDS=${ROUNDS}, BENCH_PRIME_RECORDS=${PRIME}, BENCH_PIN=${process.env['BENCH_PIN'] ?? 'unset'}.`,
          "CPU from /proc/<pid>/stat (10 ms ticks) over the timed part; main thread: gregor's main thread, the mock's rdk:mock thread.",
        ],
      },
      { runs, pinning: PIN },
    );
    process.stdout.write(`${path}\n`);
  } finally {
    for (const [, t] of brokers) await t.stop();
  }
}

await main();
