/**
 * Benchmark 3: broker CPU at high partition counts. For 1,000 / 3,000 / 10,000 partitions (topics
 * of 100 partitions, fresh gregor each), the broker's CPU (utime+stime from /proc/<pid>/stat) over
 * a window (BENCH_CPU_WINDOW_S, default 15 s)
 *   - idle, no client connected;
 *   - while one librdkafka consumer has every partition assigned (offset 0, nothing to read) with
 *     fetch.wait.max.ms=500, i.e. long-polling all of them;
 * and Metadata (all topics) latency at each size. Same method as compat/bench/idle-cpu.ts (3,000
 * partitions, plus a raw Fetch loop), at three sizes and in the report's format.
 */
import { spawn } from 'node:child_process';
import type { BenchContext } from '../lib/suite.js';
import { RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';
import {
  asError,
  connectRd,
  cpuMeter,
  disconnectRd,
  envInt,
  percentile,
  type RdKafkaConsumer,
  type RdMessage,
  rdkafka,
  round,
  rssBytes,
  sleep,
  writeBench,
} from './proc-stats.js';

const PER_TOPIC = 100;
const MAX_WAIT_MS = 500;
const STATS_MS = 5000;

interface SizeResult {
  partitions: number;
  createSeconds: number;
  metadataRequests: number;
  metadataP50Ms: number;
  metadataP90Ms: number;
  metadataMaxMs: number;
  metadataResponseKB: number;
  idleCpuPercent: number;
  idleCpuSeconds: number;
  consumerCpuPercent: number;
  consumerCpuSeconds: number;
  windowSeconds: number;
  fetchRequests: number | null;
  brokerCpuMsPerFetch: number | null;
  clientCpuPercent: number;
  rssMBIdle: number;
  rssMBConsumer: number;
  /** the wake-up floor over the same windows: bare Node processes doing nothing but wake 1 and 2 times a second */
  floorIdleCpuPercent: number;
  floorConsumerCpuPercent: number;
}

/**
 * A bare Node process that only wakes every `everyMs`: what the machine charges for the wake-ups alone.
 * On a shared VM a wake-up after idle can cost milliseconds of guest CPU time (a host busy elsewhere
 * runs the woken vCPU in slices), so a broker idling at a few wake-ups a second is measured beside it.
 */
function wakeFloor(everyMs: number): { pid: number; stop: () => void } {
  const child = spawn(process.execPath, ['-e', `setInterval(() => {}, ${everyMs})`], { stdio: 'ignore' });
  child.on('error', () => undefined); // a failed spawn has no pid: reported just below
  if (child.pid === undefined) throw new Error('could not start the wake-up floor process');
  return { pid: child.pid, stop: () => child.kill() };
}

interface RdStats {
  brokers?: Record<string, { nodeid?: number; req?: Record<string, number> }>;
}

async function metadataLatency(
  bootstrap: string,
  n: number,
  expectPartitions: number,
): Promise<{ p50: number; p90: number; max: number; kb: number }> {
  const c = await RawClient.connect(bootstrap);
  try {
    const lat: number[] = [];
    let kb = 0;
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const md = await c.request<{ topics: { name: string | null; partitions: unknown[] }[] }>(
        3,
        12,
        { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false },
        60_000,
      );
      lat.push(performance.now() - t);
      const seen = md.topics.filter((x) => x.name?.startsWith('pc-') === true).reduce((a, x) => a + x.partitions.length, 0);
      if (seen !== expectPartitions) throw new Error(`Metadata saw ${seen} partitions, expected ${expectPartitions}`);
      kb = (c.responses[c.responses.length - 1]?.frame.length ?? 0) / 1024;
    }
    return { p50: percentile(lat, 50), p90: percentile(lat, 90), max: Math.max(...lat), kb };
  } finally {
    c.destroy();
  }
}

async function oneSize(ctx: BenchContext, partitions: number, windowS: number, settleS: number, metadataN: number): Promise<SizeResult> {
  const broker = await ctx.startGregor({ 'group.initial.rebalance.delay.ms': '0' });
  const floors: { pid: number; stop: () => void }[] = [];
  try {
    // the idle broker wakes about once a second (its housekeeping timers share one wake-up); long-polling, twice
    // (a Fetch answered every fetch.wait.max.ms = 500 ms)
    const floorIdle = wakeFloor(1000);
    floors.push(floorIdle);
    const floorPoll = wakeFloor(MAX_WAIT_MS);
    floors.push(floorPoll);
    const pid = broker.pid;
    const topics = Array.from({ length: Math.ceil(partitions / PER_TOPIC) }, (_, i) => `pc-${String(i).padStart(3, '0')}`);
    const admin = await RawClient.connect(broker.bootstrap);
    const tc = performance.now();
    for (let i = 0; i < topics.length; i += 10)
      await rawCreateTopics(
        admin,
        topics.slice(i, i + 10).map((name) => ({ name, partitions: PER_TOPIC })),
        120_000,
      );
    const createSeconds = (performance.now() - tc) / 1000;
    admin.destroy();
    const md = await metadataLatency(broker.bootstrap, metadataN, topics.length * PER_TOPIC);

    await sleep(settleS * 1000);
    ctx.log(`  ${partitions} partitions: idle window ${windowS} s`);
    const idleMeter = cpuMeter(pid);
    const floorIdleMeter = cpuMeter(floorIdle.pid);
    await sleep(windowS * 1000);
    const idle = idleMeter();
    const floorIdleCpu = floorIdleMeter();
    const rssIdle = rssBytes(pid);

    const consumer: RdKafkaConsumer = new (rdkafka().KafkaConsumer)(
      {
        'bootstrap.servers': broker.bootstrap,
        'group.id': `partitions-cpu-${partitions}`,
        'enable.auto.commit': false,
        'enable.auto.offset.store': false,
        'fetch.wait.max.ms': MAX_WAIT_MS,
        'statistics.interval.ms': STATS_MS,
        log_level: 0,
      },
      {},
    );
    // librdkafka's own statistics count its Fetch requests; the CPU window runs from one
    // statistics event to a later one, so CPU and request counts cover the same interval
    let statsWaiter: ((fetches: number) => void) | null = null;
    const fetchesOf = (st: RdStats) =>
      Object.values(st.brokers ?? {}).reduce((a, b) => a + ((b.nodeid ?? -1) >= 0 ? (b.req?.['Fetch'] ?? 0) : 0), 0);
    consumer.on('event.stats', (ev: unknown) => {
      const w = statsWaiter;
      if (w === null) return;
      statsWaiter = null;
      try {
        w(fetchesOf(JSON.parse((ev as { message: string }).message) as RdStats));
      } catch {
        w(NaN);
      }
    });
    const nextStats = () => new Promise<number>((r) => (statsWaiter = r));
    await connectRd(consumer);
    consumer.assign(topics.flatMap((topic) => Array.from({ length: PER_TOPIC }, (_, partition) => ({ topic, partition, offset: 0 }))));
    let consumed = 0;
    let consuming = true;
    const consumeAll = async () => {
      while (consuming) {
        const batch = await new Promise<RdMessage[]>((resolve, reject) =>
          consumer.consume(1000, (e, m) => (e ? reject(asError(e)) : resolve(m))),
        );
        consumed += batch.length;
      }
    };
    const loop = consumeAll();
    await sleep(settleS * 1000);
    const intervals = Math.max(1, Math.round(windowS / (STATS_MS / 1000)));
    ctx.log(`  ${partitions} partitions: librdkafka consumer window ${(intervals * STATS_MS) / 1000} s`);
    const f0 = await nextStats();
    const u0 = process.cpuUsage();
    const cm = cpuMeter(pid);
    const floorPollMeter = cpuMeter(floorPoll.pid);
    let f1 = f0;
    for (let i = 0; i < intervals; i++) f1 = await nextStats();
    const withConsumer = cm();
    const floorPollCpu = floorPollMeter();
    const u = process.cpuUsage(u0);
    const rssConsumer = rssBytes(pid);
    consuming = false;
    await loop;
    await disconnectRd(consumer);
    if (consumed !== 0) throw new Error(`consumed ${consumed} records from empty topics`);
    const fetchRequests = Number.isFinite(f1 - f0) && f1 >= f0 ? f1 - f0 : null;
    return {
      partitions,
      createSeconds: round(createSeconds, 2),
      metadataRequests: metadataN,
      metadataP50Ms: round(md.p50, 2),
      metadataP90Ms: round(md.p90, 2),
      metadataMaxMs: round(md.max, 2),
      metadataResponseKB: round(md.kb, 0),
      idleCpuPercent: round(idle.cpuPercent, 3),
      idleCpuSeconds: round(idle.cpuSeconds, 3),
      consumerCpuPercent: round(withConsumer.cpuPercent, 3),
      consumerCpuSeconds: round(withConsumer.cpuSeconds, 3),
      windowSeconds: round(withConsumer.wallSeconds, 1),
      fetchRequests,
      brokerCpuMsPerFetch:
        fetchRequests === null
          ? null
          : round(((withConsumer.cpuSeconds - (idle.cpuPercent / 100) * withConsumer.wallSeconds) * 1000) / fetchRequests, 3),
      clientCpuPercent: round(((u.user + u.system) / 1e6 / withConsumer.wallSeconds) * 100, 2),
      rssMBIdle: round(rssIdle / 1048576, 1),
      rssMBConsumer: round(rssConsumer / 1048576, 1),
      floorIdleCpuPercent: round(floorIdleCpu.cpuPercent, 3),
      floorConsumerCpuPercent: round(floorPollCpu.cpuPercent, 3),
    };
  } finally {
    for (const f of floors) f.stop();
    await broker.stop();
  }
}

export async function partitionsCpu(ctx: BenchContext): Promise<void> {
  const windowS = envInt('BENCH_CPU_WINDOW_S', 15);
  const settleS = envInt('BENCH_CPU_SETTLE_S', 3);
  const metadataN = envInt('BENCH_METADATA_N', 30);
  const sizes = (process.env['BENCH_PARTITION_SIZES'] ?? '1000,3000,10000').split(',').map(Number);
  const results: SizeResult[] = [];
  for (const n of sizes) {
    const r = await oneSize(ctx, n, windowS, settleS, metadataN);
    results.push(r);
    ctx.log(
      `  ${n} partitions: idle ${r.idleCpuPercent}% of a core, with consumer ${r.consumerCpuPercent}% (${r.fetchRequests ?? '?'} fetches), Metadata p50 ${r.metadataP50Ms} ms; wake-up floor (bare node every 1000 / ${MAX_WAIT_MS} ms) ${r.floorIdleCpuPercent}% / ${r.floorConsumerCpuPercent}%`,
    );
  }
  writeBench(ctx.outDir, {
    id: 'partitions-cpu',
    title: 'Broker CPU and Metadata latency at 1,000 / 3,000 / 10,000 partitions',
    description:
      `A fresh gregor per size, topics of ${PER_TOPIC} partitions, nothing produced. Broker CPU = utime+stime of its process from /proc over a ${windowS} s window: ` +
      `idle with no client, then while one librdkafka ${rdkafka().librdkafkaVersion} KafkaConsumer has every partition assigned at offset 0 with fetch.wait.max.ms=${MAX_WAIT_MS} (long-polling all of them). ` +
      `Metadata latency: ${metadataN} Metadata v12 requests for all topics on one connection. ` +
      `Wake-up floor: over the same windows, the CPU of bare Node processes that only wake every 1000 ms (idle window) and every ${MAX_WAIT_MS} ms (consumer window), what this machine charges for the wake-ups alone.`,
    headline: results.map(
      (r) =>
        `${r.partitions.toLocaleString('en-US')} partitions: idle ${r.idleCpuPercent}% of a core (a bare Node waking every second: ${r.floorIdleCpuPercent}%), long-polling consumer ${r.consumerCpuPercent}% (waking every ${MAX_WAIT_MS} ms: ${r.floorConsumerCpuPercent}%), Metadata (all topics) p50 ${r.metadataP50Ms} ms`,
    ),
    charts: [
      {
        kind: 'line',
        title: 'Broker CPU, % of one core',
        xLabel: 'partitions',
        yLabel: '% of one core',
        series: [
          { name: 'idle', points: results.map((r) => ({ x: r.partitions, y: r.idleCpuPercent })) },
          {
            name: `librdkafka consumer, fetch.wait.max.ms=${MAX_WAIT_MS}`,
            points: results.map((r) => ({ x: r.partitions, y: r.consumerCpuPercent })),
          },
        ],
      },
      {
        kind: 'line',
        title: 'Metadata (all topics) latency, ms',
        xLabel: 'partitions',
        yLabel: 'ms',
        series: [
          { name: 'p50', points: results.map((r) => ({ x: r.partitions, y: r.metadataP50Ms })) },
          { name: 'p90', points: results.map((r) => ({ x: r.partitions, y: r.metadataP90Ms })) },
        ],
      },
    ],
    table: {
      columns: [
        'partitions',
        'create s',
        'idle CPU %',
        'consumer CPU %',
        'Fetch requests in window',
        'broker CPU ms / Fetch (above idle)',
        'consumer process CPU %',
        'Metadata p50 ms',
        'p90 ms',
        'max ms',
        'Metadata response KB',
        'RSS MB idle',
        'RSS MB with consumer',
        'wake-up floor % (bare node, 1000 ms)',
        `wake-up floor % (bare node, ${MAX_WAIT_MS} ms)`,
      ],
      rows: results.map((r) => [
        r.partitions,
        r.createSeconds,
        r.idleCpuPercent,
        r.consumerCpuPercent,
        r.fetchRequests,
        r.brokerCpuMsPerFetch,
        r.clientCpuPercent,
        r.metadataP50Ms,
        r.metadataP90Ms,
        r.metadataMaxMs,
        r.metadataResponseKB,
        r.rssMBIdle,
        r.rssMBConsumer,
        r.floorIdleCpuPercent,
        r.floorConsumerCpuPercent,
      ]),
    },
    notes: [
      `CPU % is of one core (100% = one core busy); the kernel counts CPU in clock ticks (10 ms), so 0 means less than one tick in the window (< ${round(1 / windowS, 2)}%).`,
      `Fetch requests are counted from librdkafka's own statistics (statistics.interval.ms=${STATS_MS}, req.Fetch of the broker); the consumer window runs from one statistics event to the one ${windowS} s later, so CPU and the count cover the same interval. "consumer process CPU" is the benchmark process (librdkafka's threads and the statistics JSON parsing).`,
      'librdkafka sends full Fetch requests naming every assigned partition (no incremental fetch sessions), so each long poll carries all partitions.',
    ],
  });
}
