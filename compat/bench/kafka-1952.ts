/**
 * KAFKA-1952 (high CPU usage with many partitions in 0.8.2), as issue 15 states it: two brokers on
 * this machine (startLocalCluster: a real etcd and two `bin/gregor.js start` child processes with
 * metadata.store=etcd), one topic of BENCH_PARTITIONS (3,000) partitions with replication factor 2,
 * and a long-polling librdkafka consumer assigned all of them. Figures:
 *   1. CreateTopics → every partition has a leader and an ISR of 2 in Metadata v12 from both brokers;
 *   2. after BENCH_SETTLE_S, the CPU of each broker (utime+stime of the process and of its main
 *      thread, /proc/<pid>/stat and /proc/<pid>/task/<pid>/stat), of etcd and of this process (the
 *      consumer: librdkafka's threads run here, nothing else does) over BENCH_IDLE_S seconds;
 *   3. replica-fetch local time, p50/p99: every request of the idle window from the brokers' request
 *      log (POST /v1/requests/record-all, then GET /v1/requests?api=Fetch; a replica fetcher's
 *      requests carry client id gregor-replica-fetcher-<node>), i.e. Kafka's FetchFollower
 *      LocalTimeMs (the handler's time without the long-poll wait), exact per request and limited to
 *      the window; /metrics' kafka_network_requestmetrics_localtimems{request="FetchFollower"} (the
 *      last five minutes, bucketed) is reported beside it;
 *   4. end-to-end latency on a 1-partition RF-2 topic (Kafka's EndToEndLatency: one 100-byte record
 *      produced with acks=-1, wait for the ack, then for a long-polling consumer to receive it),
 *      BENCH_E2E_ROUNDS rounds after BENCH_E2E_WARMUP, while the 3,000-partition consumer polls; the
 *      replica-fetch local times under that load too;
 *   5. restarts of broker 2, SIGTERM then SIGKILL (BENCH_RESTARTS): kill → every partition's ISR
 *      without it (Metadata from broker 1), then spawn → ready → every partition's ISR back at 2
 *      (Metadata from both brokers).
 * Not a test: prints a markdown table with Kafka 0.8.2's figures and the issue's goals beside ours and
 * writes compat/results/kafka-1952-<ISO timestamp, ':' → '-'>.json. `npm run build` first (the
 * brokers run bin/gregor.js, i.e. dist/bundle/). Metadata polling, topic creation and restarts are in
 * kafka-1952-cluster.ts; the CPU windows and the request-log Fetch times in kafka-1952-measure.ts.
 *
 * Knobs (environment): BENCH_PARTITIONS (3000), BENCH_IDLE_S (60), BENCH_SETTLE_S (15),
 * BENCH_E2E_ROUNDS (2000), BENCH_E2E_WARMUP (100), BENCH_FETCH_WAIT_MS (500: the consumers'
 * fetch.wait.max.ms), BENCH_RESTARTS ("SIGTERM,SIGKILL", "" for none), BENCH_CPU_PROF (a directory:
 * the brokers run with --cpu-prof there; a profile is written when a broker exits cleanly),
 * BENCH_KEEP_DIR (a directory for the cluster, kept afterwards: logs and data), BENCH_LOG_LEVEL (the
 * brokers' LOG_LEVEL, default warn), BENCH_NODE_FLAGS (more node flags for the brokers, e.g.
 * --trace-gc: its lines go to the broker logs kept in BENCH_KEEP_DIR).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type LocalBroker, startLocalCluster } from '../../lib/cluster/local-cluster.js';
import { type E2eLatencyResult, measureE2eLatency } from './e2e-latency.js';
import { createTopic, ISR_TIMEOUT_MS, metadataOf, restart, type RestartResult, waitState } from './kafka-1952-cluster.js';
import {
  type CpuWindow,
  cpuWindow,
  type FetchTimes,
  followerLocalTimeMetric,
  readCpu,
  startRecording,
  stopRecording,
} from './kafka-1952-measure.js';
import {
  asError,
  clkTck,
  connectRd,
  disconnectRd,
  envInt,
  percentile,
  type RdKafkaConsumer,
  type RdMessage,
  rdkafka,
  ROOT_DIR,
  round,
  sleep,
} from './proc-stats.js';

const PARTITIONS = envInt('BENCH_PARTITIONS', 3000);
const IDLE_S = envInt('BENCH_IDLE_S', 60);
const SETTLE_S = envInt('BENCH_SETTLE_S', 15);
const E2E_ROUNDS = envInt('BENCH_E2E_ROUNDS', 2000);
const E2E_WARMUP = envInt('BENCH_E2E_WARMUP', 100);
const FETCH_WAIT_MS = envInt('BENCH_FETCH_WAIT_MS', 500);
const RESTARTS = (process.env['BENCH_RESTARTS'] ?? 'SIGTERM,SIGKILL').split(',').filter((s) => s !== '') as NodeJS.Signals[];
const CPU_PROF = process.env['BENCH_CPU_PROF'];
const KEEP_DIR = process.env['BENCH_KEEP_DIR'];
const TOPIC = 'kafka-1952';
const E2E_TOPIC = 'kafka-1952-e2e';

const r3 = (x: number): number => round(x, 3);

// ---- clients ------------------------------------------------------------------------------------

/** The long-polling consumer on every partition: assign at offset 0, consume(1000) in a loop. */
async function wideConsumer(bootstrap: string): Promise<{ stop(): Promise<number> }> {
  const rk = rdkafka();
  const consumer: RdKafkaConsumer = new rk.KafkaConsumer(
    {
      'bootstrap.servers': bootstrap,
      'group.id': `kafka-1952-${Date.now()}`,
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'fetch.wait.max.ms': FETCH_WAIT_MS,
      log_level: 0,
    },
    {},
  );
  await connectRd(consumer);
  consumer.assign(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: TOPIC, partition, offset: 0 })));
  let consumed = 0;
  let running = true as boolean; // cleared by stop(), which narrowing does not see
  const loop = (async () => {
    while (running) {
      const batch = await new Promise<RdMessage[]>((resolve, reject) =>
        consumer.consume(1000, (e, m) => (e ? reject(asError(e)) : resolve(m))),
      );
      consumed += batch.length;
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await disconnectRd(consumer);
      return consumed;
    },
  };
}

type E2eResult = Omit<E2eLatencyResult, 'fetchWaitMaxMs' | 'brokerCpuPercent' | 'seconds'> & { leader: number };

/** e2e-latency.ts's measurement, against the 1-partition RF-2 topic while the 3,000 partitions exist. */
async function e2e(bootstrap: string, leader: LocalBroker): Promise<E2eResult> {
  const r = await measureE2eLatency(bootstrap, leader.pid ?? process.pid, E2E_TOPIC, FETCH_WAIT_MS, E2E_ROUNDS, E2E_WARMUP);
  return {
    rounds: r.rounds,
    avgMs: r.avgMs,
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    p999Ms: r.p999Ms,
    minMs: r.minMs,
    maxMs: r.maxMs,
    ackP50Ms: r.ackP50Ms,
    ackP99Ms: r.ackP99Ms,
    leader: leader.nodeId,
  };
}

// ---- main ---------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const nodeFlags = CPU_PROF !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : [];
  nodeFlags.push(...(process.env['BENCH_NODE_FLAGS'] ?? '').split(' ').filter((f) => f !== ''));
  if (CPU_PROF !== undefined) mkdirSync(CPU_PROF, { recursive: true });
  const t00 = performance.now();
  const cluster = await startLocalCluster({
    brokers: 2,
    ...(KEEP_DIR !== undefined ? { dir: KEEP_DIR } : {}),
    nodeFlags,
    env: { LOG_LEVEL: process.env['BENCH_LOG_LEVEL'] ?? 'warn' },
    overrides: {
      'default.replication.factor': '2',
      'offsets.topic.replication.factor': '2',
      'group.initial.rebalance.delay.ms': '0',
    },
  });
  console.log(`cluster of 2 brokers up in ${Math.round(performance.now() - t00)} ms (${cluster.dir})`);
  const [b1, b2] = cluster.brokers as [LocalBroker, LocalBroker];
  const report: Record<string, unknown> = {};
  let wide: { stop(): Promise<number> } | undefined;
  try {
    await waitState([b1], TOPIC, 2, () => true, performance.now(), 30_000); // both answer
    for (;;) {
      const md = await metadataOf(b1.bootstrap, []);
      if (md.brokers.length === 2) break;
      await sleep(100);
    }

    // 1. create the topic, wait for leaders and full ISRs
    const tc = performance.now();
    await createTopic(b1.bootstrap, TOPIC, PARTITIONS);
    const createResponseMs = performance.now() - tc;
    const leaders = await waitState(
      cluster.brokers,
      TOPIC,
      2,
      (s) => s.partitions === PARTITIONS && s.withLeader === PARTITIONS,
      tc,
      ISR_TIMEOUT_MS,
    );
    const isr = await waitState(
      cluster.brokers,
      TOPIC,
      2,
      (s) => s.partitions === PARTITIONS && s.fullIsr === PARTITIONS,
      tc,
      ISR_TIMEOUT_MS,
    );
    report['create'] = {
      createResponseMs: Math.round(createResponseMs),
      allLeadersMs: Math.round(leaders.ms),
      allIsrFullMs: Math.round(isr.ms),
      leaders: isr.last[0]?.leaders,
    };
    console.log(
      `create: response ${Math.round(createResponseMs)} ms, leaders ${Math.round(leaders.ms)} ms, full ISR ${Math.round(isr.ms)} ms`,
    );
    if (Number.isNaN(isr.ms)) throw new Error(`the ISRs did not fill within ${ISR_TIMEOUT_MS} ms: ${JSON.stringify(isr.last)}`);

    // the e2e topic now, so that its creation is not in the idle window
    await createTopic(b1.bootstrap, E2E_TOPIC, 1);
    const e2eReady = await waitState(
      cluster.brokers,
      E2E_TOPIC,
      2,
      (s) => s.partitions === 1 && s.fullIsr === 1,
      performance.now(),
      60_000,
    );
    const e2eLeader = Number(Object.keys(e2eReady.last[0]?.leaders ?? {})[0] ?? -1);

    // 2. the wide consumer, settle, idle window
    wide = await wideConsumer(cluster.bootstrap());
    console.log(`consumer assigned ${PARTITIONS} partitions; settling ${SETTLE_S} s, then ${IDLE_S} s idle window`);
    await sleep(SETTLE_S * 1000);
    await startRecording(cluster.brokers);
    const c0 = readCpu(cluster);
    await sleep(IDLE_S * 1000);
    const c1 = readCpu(cluster);
    const idle = cpuWindow(cluster, c0, c1);
    const idleFetch = await stopRecording(cluster.brokers);
    const metric = await followerLocalTimeMetric(cluster.brokers);
    report['idle'] = {
      cpu: idle,
      replicaFetch: {
        source: 'request log (record-all over the idle window), Fetch requests with client id gregor-replica-fetcher-<node>',
        p50Ms: r3(percentile(idleFetch.replicaLocal, 50)),
        p99Ms: r3(percentile(idleFetch.replicaLocal, 99)),
        perBroker: idleFetch.per,
      },
      fetchFollowerMetric: metric,
    };
    console.log(
      `idle: broker CPU ${idle.brokers.map((b) => `${b.broker}: ${b.cpuPercent}% (main ${b.mainThreadPercent}%)`).join(', ')}, etcd ${idle.etcdPercent}%, consumer ${idle.clientPercent}%`,
    );
    console.log(
      `idle: broker threads ${idle.brokers
        .map(
          (b) =>
            `${b.broker}: ${Object.entries(b.threadsPercent)
              .map(([k, p]) => `${k} ${p}%`)
              .join(', ')}`,
        )
        .join('; ')}`,
    );
    console.log(
      `replica-fetch local time: p50 ${r3(percentile(idleFetch.replicaLocal, 50))} ms, p99 ${r3(percentile(idleFetch.replicaLocal, 99))} ms over ${idleFetch.replicaLocal.length} requests`,
    );

    // 3. e2e while the wide consumer polls
    await startRecording(cluster.brokers);
    const e0 = readCpu(cluster);
    const e2eBroker = cluster.brokers.find((b) => b.nodeId === e2eLeader);
    if (e2eBroker === undefined) throw new Error(`no broker ${e2eLeader}`);
    const lat = await e2e(cluster.bootstrap(), e2eBroker);
    const e1 = readCpu(cluster);
    const e2eFetch = await stopRecording(cluster.brokers);
    report['e2e'] = {
      ...lat,
      cpu: cpuWindow(cluster, e0, e1),
      replicaFetch: {
        p50Ms: r3(percentile(e2eFetch.replicaLocal, 50)),
        p99Ms: r3(percentile(e2eFetch.replicaLocal, 99)),
        perBroker: e2eFetch.per,
      },
    };
    console.log(
      `e2e: avg ${lat.avgMs} ms, p50 ${lat.p50Ms}, p99 ${lat.p99Ms}, p99.9 ${lat.p999Ms} (ack p50 ${lat.ackP50Ms}, leader ${lat.leader})`,
    );

    // 4. restarts of broker 2
    const restarts: RestartResult[] = [];
    for (const sig of RESTARTS) {
      const r = await restart(cluster, b2, sig, TOPIC, PARTITIONS);
      restarts.push(r);
      console.log(
        `restart (${sig}): exit ${r.exitMs} ms, ISR shrunk ${r.isrShrunkMs} ms after the kill; ready ${r.readyMs} ms, full ISR ${r.isrFullMs} ms after spawn`,
      );
      await sleep(5000);
    }
    report['restarts'] = restarts;
    const consumed = await wide.stop();
    wide = undefined;
    if (consumed !== 0) throw new Error(`the wide consumer got ${consumed} records from an empty topic`);
  } finally {
    if (wide !== undefined) await wide.stop().catch(() => 0);
    await cluster.stop();
  }

  const cpus = os.cpus();
  const date = new Date().toISOString();
  const out = {
    benchmark: 'kafka-1952',
    date,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    cpuModel: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    loadavg: os.loadavg().map((x) => round(x, 2)),
    clkTck: clkTck(),
    librdkafkaVersion: rdkafka().librdkafkaVersion,
    settings: {
      partitions: PARTITIONS,
      replicationFactor: 2,
      idleSeconds: IDLE_S,
      settleSeconds: SETTLE_S,
      e2eRounds: E2E_ROUNDS,
      e2eWarmup: E2E_WARMUP,
      fetchWaitMaxMs: FETCH_WAIT_MS,
      restarts: RESTARTS,
      cpuProfileDir: CPU_PROF ?? null,
    },
    ...report,
  };
  const dir = path.join(ROOT_DIR, 'compat', 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `kafka-1952-${date.replace(/:/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  printTable(out as unknown as Out);
  console.log(`\nwrote ${path.relative(ROOT_DIR, file)}`);
}

interface Out {
  cpuModel: string;
  cores: number;
  node: string;
  loadavg: number[];
  create: { allLeadersMs: number; allIsrFullMs: number; createResponseMs: number };
  idle: {
    cpu: CpuWindow;
    replicaFetch: { p50Ms: number; p99Ms: number; perBroker: FetchTimes[] };
    fetchFollowerMetric: { broker: number; p50Ms: number; p99Ms: number }[];
  };
  e2e: E2eResult & { replicaFetch: { p50Ms: number; p99Ms: number } };
  restarts: RestartResult[];
}

function printTable(o: Out): void {
  const rows: [string, string, string, string, string][] = [];
  const ok = (met: boolean): string => (met ? 'yes' : '**no**');
  for (const b of o.idle.cpu.brokers)
    rows.push([
      `idle CPU, broker ${b.broker} (% of one core; main thread)`,
      `${b.cpuPercent} (${b.mainThreadPercent})`,
      '~10',
      '≤ 2',
      ok(b.cpuPercent <= 2),
    ]);
  rows.push(['idle CPU, etcd / consumer process (%)', `${o.idle.cpu.etcdPercent} / ${o.idle.cpu.clientPercent}`, '', '', '']);
  const rf = o.idle.replicaFetch;
  rows.push(['replica-fetch local time p50 / p99, idle (ms)', `${rf.p50Ms} / ${rf.p99Ms}`, '~9', '≤ 1', ok(rf.p99Ms <= 1)]);
  rows.push([
    'FetchFollower LocalTimeMs p50 / p99 from /metrics (ms, per broker)',
    o.idle.fetchFollowerMetric.map((m) => `${m.p50Ms} / ${m.p99Ms}`).join('; '),
    '',
    '',
    '',
  ]);
  rows.push([
    'replica-fetch local time p50 / p99, during e2e (ms)',
    `${o.e2e.replicaFetch.p50Ms} / ${o.e2e.replicaFetch.p99Ms}`,
    '',
    '',
    '',
  ]);
  const e = o.e2e;
  rows.push([
    'e2e acks=-1 avg / p50 / p99 / p99.9 (ms)',
    `${e.avgMs} / ${e.p50Ms} / ${e.p99Ms} / ${e.p999Ms}`,
    '28.6 / 27 / 41 / 52',
    'p50 ≤ 5, p99 ≤ 15',
    ok(e.p50Ms <= 5 && e.p99Ms <= 15),
  ]);
  rows.push([`e2e produce ack p50 / p99 (ms)`, `${e.ackP50Ms} / ${e.ackP99Ms}`, '', '', '']);
  rows.push([
    `create ${PARTITIONS} partitions → all leaders / all ISR 2 (ms)`,
    `${o.create.allLeadersMs} / ${o.create.allIsrFullMs}`,
    '',
    '≤ 10000',
    ok(o.create.allIsrFullMs <= 10_000),
  ]);
  for (const r of o.restarts)
    rows.push([
      `restart broker ${r.broker} (${r.signal}): spawn → ready / → all ISR 2 (ms)`,
      `${r.readyMs} / ${r.isrFullMs}`,
      '',
      '≤ 10000',
      ok(r.isrFullMs <= 10_000),
    ]);
  for (const r of o.restarts)
    rows.push([`  (${r.signal}: kill → exit / → ISRs without it, ms)`, `${r.exitMs} / ${r.isrShrunkMs}`, '', '', '']);
  console.log(
    `\nKAFKA-1952: 2 brokers, ${PARTITIONS} partitions RF 2 (${o.cpuModel}, ${o.cores} cores, node ${o.node}, load ${o.loadavg.join(' ')})\n`,
  );
  console.log('| figure | gregor | Kafka 0.8.2 (KAFKA-1952) | goal | met |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e instanceof Error ? e.stack : String(e));
    process.exit(1);
  },
);
