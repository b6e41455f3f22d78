/**
 * Benchmark 2: end-to-end latency as Kafka's EndToEndLatency tool measures it: produce one record
 * with acks=-1, wait for its acknowledgement, then wait until a consumer has it; one record at a
 * time, E2E_ROUNDS rounds (default 5,000) after a warm-up, for librdkafka's fetch.wait.max.ms 0 and
 * 500. Producer and consumer are librdkafka (@confluentinc/kafka-javascript, node-rdkafka-style),
 * the consumer assigned to the single partition.
 */
import type { BenchContext } from '../lib/suite.js';
import { RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';
import {
  connectRd,
  asError,
  cpuMeter,
  disconnectRd,
  envInt,
  mean,
  percentile,
  type RdKafkaConsumer,
  type RdMessage,
  type RdProducer,
  rdkafka,
  round,
  sleep,
  writeBench,
} from './proc-stats.js';

const WAITS = [0, 500] as const;
const VALUE_SIZE = 100;

export interface E2eLatencyResult {
  fetchWaitMaxMs: number;
  rounds: number;
  avgMs: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  minMs: number;
  /** the acks=-1 produce alone (delivery report), median and p99 */
  ackP50Ms: number;
  ackP99Ms: number;
  brokerCpuPercent: number;
  seconds: number;
}

/**
 * One record at a time on partition 0 of `topic`: librdkafka producer (acks=-1, delivery report) and a
 * long-polling librdkafka consumer; the time from produce to the consumer seeing it, over `rounds` after
 * `warmup`, with the CPU of process `pid` (the broker leading the partition) over the measured rounds.
 */
export async function measureE2eLatency(
  bootstrap: string,
  pid: number,
  topic: string,
  fetchWait: number,
  rounds: number,
  warmup: number,
): Promise<E2eLatencyResult> {
  const rk = rdkafka();
  const producer: RdProducer = new rk.Producer({ 'bootstrap.servers': bootstrap, acks: -1, 'linger.ms': 0, dr_cb: true, log_level: 0 });
  await connectRd(producer);
  producer.setPollInBackground(true);
  const consumer: RdKafkaConsumer = new rk.KafkaConsumer(
    {
      'bootstrap.servers': bootstrap,
      'group.id': `e2e-${fetchWait}-${Date.now()}`,
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'fetch.wait.max.ms': fetchWait,
      'fetch.min.bytes': 1,
      log_level: 0,
    },
    { 'auto.offset.reset': 'latest' },
  );
  await connectRd(consumer);
  const c = consumer as RdKafkaConsumer & { setDefaultConsumeLoopTimeoutDelay(ms: number): void };
  c.setDefaultConsumeTimeout(1000);
  c.setDefaultConsumeLoopTimeoutDelay(0);

  // waiters keyed by round number (the record value starts with it)
  let wantSeen = -1;
  let seenResolve: (() => void) | null = null;
  let ackResolve: ((err: unknown) => void) | null = null;
  consumer.on('data', (m: RdMessage) => {
    const n = Number(m.value?.subarray(0, 10).toString() ?? -2);
    if (n === wantSeen && seenResolve !== null) {
      const r = seenResolve;
      seenResolve = null;
      r();
    }
  });
  producer.on('delivery-report', (err) => {
    const r = ackResolve;
    ackResolve = null;
    r?.(err);
  });
  // assign at the end of the partition, then start the flowing consume loop
  consumer.assign([{ topic, partition: 0, offset: -1 }]);
  consumer.consume();
  await sleep(1000);

  const filler = Buffer.alloc(VALUE_SIZE - 10, 'x');
  const lat: number[] = [];
  const acks: number[] = [];
  let meter: (() => { cpuSeconds: number; wallSeconds: number; cpuPercent: number }) | undefined;
  for (let i = 0; i < warmup + rounds; i++) {
    if (i === warmup) meter = cpuMeter(pid);
    const value = Buffer.concat([Buffer.from(String(i).padStart(10, '0')), filler]);
    wantSeen = i;
    const seen = new Promise<void>((r) => (seenResolve = r));
    const acked = new Promise<unknown>((r) => (ackResolve = r));
    const t0 = performance.now();
    producer.produce(topic, 0, value, null);
    const err = await Promise.race([acked, sleep(10_000).then(() => new Error('no delivery report within 10 s'))]);
    if (err) throw new Error(`round ${i}: ${asError(err).message}`);
    const tAck = performance.now();
    const ok = await Promise.race([seen.then(() => true), sleep(10_000).then(() => false)]);
    if (!ok) throw new Error(`round ${i}: the consumer did not see the record within 10 s (fetch.wait.max.ms=${fetchWait})`);
    const t1 = performance.now();
    if (i >= warmup) {
      lat.push(t1 - t0);
      acks.push(tAck - t0);
    }
  }
  const cpu = meter?.() ?? { cpuSeconds: NaN, wallSeconds: NaN, cpuPercent: NaN };
  await disconnectRd(consumer);
  await disconnectRd(producer);
  const r3 = (x: number) => round(x, 3);
  return {
    fetchWaitMaxMs: fetchWait,
    rounds,
    avgMs: r3(mean(lat)),
    p50Ms: r3(percentile(lat, 50)),
    p99Ms: r3(percentile(lat, 99)),
    p999Ms: r3(percentile(lat, 99.9)),
    maxMs: r3(Math.max(...lat)),
    minMs: r3(Math.min(...lat)),
    ackP50Ms: r3(percentile(acks, 50)),
    ackP99Ms: r3(percentile(acks, 99)),
    brokerCpuPercent: round(cpu.cpuPercent, 1),
    seconds: round(cpu.wallSeconds, 1),
  };
}

export async function e2eLatency(ctx: BenchContext): Promise<void> {
  const rounds = envInt('BENCH_E2E_ROUNDS', 5000);
  const warmup = envInt('BENCH_E2E_WARMUP', 200);
  const broker = await ctx.startGregor({ 'group.initial.rebalance.delay.ms': '0' });
  const results: E2eLatencyResult[] = [];
  try {
    const admin = await RawClient.connect(broker.bootstrap);
    await rawCreateTopics(
      admin,
      WAITS.map((w) => ({ name: `e2e-wait${w}`, partitions: 1 })),
    );
    admin.destroy();
    for (const w of WAITS) {
      const r = await measureE2eLatency(broker.bootstrap, broker.pid, `e2e-wait${w}`, w, rounds, warmup);
      results.push(r);
      ctx.log(
        `  fetch.wait.max.ms=${w}: avg ${r.avgMs} ms, p50 ${r.p50Ms}, p99 ${r.p99Ms}, p99.9 ${r.p999Ms} (broker CPU ${r.brokerCpuPercent}% of a core)`,
      );
    }
  } finally {
    await broker.stop();
  }
  writeBench(ctx.outDir, {
    id: 'e2e-latency',
    title: 'End-to-end latency (EndToEndLatency-style, acks=-1)',
    description:
      `Kafka's EndToEndLatency method: produce one ${VALUE_SIZE}-byte record with acks=-1, wait for the acknowledgement, then for a consumer to receive it; ` +
      `${rounds.toLocaleString('en-US')} rounds (after ${warmup} warm-up rounds) per setting, one topic of one partition per setting, fresh gregor. ` +
      `librdkafka ${rdkafka().librdkafkaVersion} for both: Producer (linger.ms=0, delivery reports polled in the background) and KafkaConsumer assigned to the partition, flowing consume loop.`,
    headline: results.map(
      (r) => `fetch.wait.max.ms=${r.fetchWaitMaxMs}: avg ${r.avgMs} ms, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, p99.9 ${r.p999Ms} ms`,
    ),
    charts: [
      {
        kind: 'bar',
        title: 'End-to-end latency (ms)',
        xLabel: 'statistic',
        yLabel: 'ms',
        series: results.map((r) => ({
          name: `fetch.wait.max.ms=${r.fetchWaitMaxMs}`,
          points: [
            { x: 'avg', y: r.avgMs },
            { x: 'p50', y: r.p50Ms },
            { x: 'p99', y: r.p99Ms },
            { x: 'p99.9', y: r.p999Ms },
          ],
        })),
      },
    ],
    table: {
      columns: [
        'fetch.wait.max.ms',
        'rounds',
        'avg ms',
        'p50 ms',
        'p99 ms',
        'p99.9 ms',
        'min ms',
        'max ms',
        'produce ack p50 ms',
        'broker CPU % of a core',
        'seconds',
      ],
      rows: results.map((r) => [
        r.fetchWaitMaxMs,
        r.rounds,
        r.avgMs,
        r.p50Ms,
        r.p99Ms,
        r.p999Ms,
        r.minMs,
        r.maxMs,
        r.ackP50Ms,
        r.brokerCpuPercent,
        r.seconds,
      ]),
    },
    notes: [
      "librdkafka's fetch.wait.max.ms is the MaxWaitTime it puts in each Fetch request (with fetch.min.bytes=1): the broker holds an empty fetch up to that long. librdkafka keeps one Fetch in flight per broker and sends the next when the previous answers, so with 500 a record appended while a fetch waits is returned when the broker wakes the long poll on append (gregor does), and with 0 the consumer polls back to back while it waits. The broker CPU in the table is over the whole timed run, where rounds follow each other without a pause, so it is mostly the rounds' own produce/fetch work.",
      'Latency = from produce() to the consumer\'s "data" event, including the wait for the acks=-1 delivery report first (as EndToEndLatency does send().get() before poll()). Single node: acks=-1 waits only for the leader.',
    ],
  });
}
