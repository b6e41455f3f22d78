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
 * brokers run bin/gregor.js, i.e. dist/bundle/).
 *
 * Knobs (environment): BENCH_PARTITIONS (3000), BENCH_IDLE_S (60), BENCH_SETTLE_S (15),
 * BENCH_E2E_ROUNDS (2000), BENCH_E2E_WARMUP (100), BENCH_FETCH_WAIT_MS (500: the consumers'
 * fetch.wait.max.ms), BENCH_RESTARTS ("SIGTERM,SIGKILL", "" for none), BENCH_CPU_PROF (a directory:
 * the brokers run with --cpu-prof there; a profile is written when a broker exits cleanly),
 * BENCH_KEEP_DIR (a directory for the cluster, kept afterwards: logs and data), BENCH_LOG_LEVEL (the
 * brokers' LOG_LEVEL, default warn).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { MetadataResponse } from '../../protocol/generated/metadata.js';
import { type LocalBroker, type LocalCluster, startLocalCluster } from '../../lib/cluster/local-cluster.js';
import { RawClient } from '../../test/helpers/raw-client.js';
import { type E2eLatencyResult, measureE2eLatency } from './e2e-latency.js';
import {
  asError,
  clkTck,
  connectRd,
  cpuSeconds,
  disconnectRd,
  envInt,
  mainThreadCpuSeconds,
  mean,
  percentile,
  type RdKafkaConsumer,
  type RdMessage,
  rdkafka,
  ROOT_DIR,
  round,
  rssBytes,
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
const ISR_TIMEOUT_MS = 600_000;
const REPLICA_CLIENT = 'gregor-replica-fetcher-';

const r3 = (x: number): number => round(x, 3);

// ---- Metadata ---------------------------------------------------------------------------------

async function metadataOf(bootstrap: string, topics: string[]): Promise<MetadataResponse> {
  const c = await RawClient.connect(bootstrap);
  try {
    return await c.request<MetadataResponse>(
      ApiKey.Metadata,
      12,
      {
        topics: topics.map((name) => ({ topicId: '0'.repeat(32), name })),
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false,
      },
      30_000,
    );
  } finally {
    c.destroy();
  }
}

interface TopicState {
  partitions: number;
  withLeader: number;
  /** partitions whose ISR holds `isrSize` replicas */
  fullIsr: number;
  /** partitions whose ISR does not hold `without` */
  isrWithout: number;
  leaders: Record<string, number>;
}

async function topicState(bootstrap: string, topic: string, isrSize: number, without = -1): Promise<TopicState> {
  const md = await metadataOf(bootstrap, [topic]);
  const t = md.topics.find((x) => x.name === topic);
  const s: TopicState = { partitions: 0, withLeader: 0, fullIsr: 0, isrWithout: 0, leaders: {} };
  if (t === undefined || t.errorCode !== 0) return s;
  for (const p of t.partitions) {
    if (p.errorCode !== 0) continue;
    s.partitions++;
    if (p.leaderId >= 0) {
      s.withLeader++;
      s.leaders[p.leaderId] = (s.leaders[p.leaderId] ?? 0) + 1;
    }
    if (p.leaderId >= 0 && p.isrNodes.length === isrSize) s.fullIsr++;
    if (p.leaderId >= 0 && !p.isrNodes.includes(without)) s.isrWithout++;
  }
  return s;
}

/** Polls Metadata (every 100 ms, from each of `brokers`) until `done` holds for all; ms from `since`, or NaN on timeout. */
async function waitState(
  brokers: readonly LocalBroker[],
  topic: string,
  isrSize: number,
  done: (s: TopicState) => boolean,
  since: number,
  timeoutMs: number,
  without = -1,
): Promise<{ ms: number; last: TopicState[] }> {
  let last: TopicState[] = [];
  for (;;) {
    try {
      last = await Promise.all(brokers.map((b) => topicState(b.bootstrap, topic, isrSize, without)));
      if (last.every(done)) return { ms: performance.now() - since, last };
    } catch {
      // a broker not answering yet: poll again
    }
    if (performance.now() - since > timeoutMs) return { ms: NaN, last };
    await sleep(100);
  }
}

async function createTopic(bootstrap: string, name: string, partitions: number): Promise<void> {
  const c = await RawClient.connect(bootstrap);
  try {
    const res = await c.request<{ topics: { name: string; errorCode: number; errorMessage?: string | null }[] }>(
      ApiKey.CreateTopics,
      4,
      {
        topics: [{ name, numPartitions: partitions, replicationFactor: 2, assignments: [], configs: [] }],
        timeoutMs: 60_000,
        validateOnly: false,
      },
      120_000,
    );
    for (const t of res.topics)
      if (t.errorCode !== 0) throw new Error(`CreateTopics ${t.name}: error ${t.errorCode} ${t.errorMessage ?? ''}`);
  } finally {
    c.destroy();
  }
}

// ---- admin HTTP: request log and /metrics ----------------------------------------------------

async function admin(b: LocalBroker, method: string, p: string, body?: unknown): Promise<unknown> {
  if (b.admin === null) throw new Error(`broker ${b.nodeId} has no admin listener`);
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  const res = await fetch(`http://${b.admin}${p}`, init);
  if (!res.ok) throw new Error(`${method} ${p} on broker ${b.nodeId}: HTTP ${res.status} ${await res.text()}`);
  const type = res.headers.get('content-type') ?? '';
  return type.includes('json') ? res.json() : res.text();
}

interface LoggedRequest {
  clientId: string | null;
  responseBytes: number;
  latencyMs: { total: number; local: number; remote: number };
}

async function startRecording(brokers: readonly LocalBroker[]): Promise<void> {
  await Promise.all(brokers.map((b) => admin(b, 'POST', '/v1/requests/record-all', { on: true })));
}

interface FetchTimes {
  broker: number;
  replicaFetches: number;
  replicaLocalP50Ms: number;
  replicaLocalP99Ms: number;
  replicaLocalMaxMs: number;
  replicaLocalAvgMs: number;
  replicaTotalP50Ms: number;
  /** a replica fetch's response size, median (bytes) */
  replicaResponseBytesP50: number;
  consumerFetches: number;
  consumerLocalP50Ms: number;
  consumerLocalP99Ms: number;
  dropped: number;
}

/** Stops the recording and returns the Fetch local times it holds, replica fetches apart from consumers'. */
async function stopRecording(brokers: readonly LocalBroker[]): Promise<{ per: FetchTimes[]; replicaLocal: number[] }> {
  const per: FetchTimes[] = [];
  const replicaLocal: number[] = [];
  for (const b of brokers) {
    await admin(b, 'POST', '/v1/requests/record-all', { on: false });
    const r = (await admin(b, 'GET', '/v1/requests?api=Fetch')) as { recording: { dropped: number }; requests: LoggedRequest[] };
    await admin(b, 'DELETE', '/v1/requests');
    const rep = r.requests.filter((x) => (x.clientId ?? '').startsWith(REPLICA_CLIENT));
    const con = r.requests.filter((x) => !(x.clientId ?? '').startsWith(REPLICA_CLIENT));
    const local = rep.map((x) => x.latencyMs.local);
    replicaLocal.push(...local);
    per.push({
      broker: b.nodeId,
      replicaFetches: rep.length,
      replicaLocalP50Ms: r3(percentile(local, 50)),
      replicaLocalP99Ms: r3(percentile(local, 99)),
      replicaLocalMaxMs: r3(Math.max(...local)),
      replicaLocalAvgMs: r3(mean(local)),
      replicaTotalP50Ms: r3(
        percentile(
          rep.map((x) => x.latencyMs.total),
          50,
        ),
      ),
      replicaResponseBytesP50: percentile(
        rep.map((x) => x.responseBytes),
        50,
      ),
      consumerFetches: con.length,
      consumerLocalP50Ms: r3(
        percentile(
          con.map((x) => x.latencyMs.local),
          50,
        ),
      ),
      consumerLocalP99Ms: r3(
        percentile(
          con.map((x) => x.latencyMs.local),
          99,
        ),
      ),
      dropped: r.recording.dropped,
    });
  }
  return { per, replicaLocal };
}

/** kafka_network_requestmetrics_localtimems{request="FetchFollower"} quantiles (last five minutes) of each broker. */
async function followerLocalTimeMetric(brokers: readonly LocalBroker[]): Promise<{ broker: number; p50Ms: number; p99Ms: number }[]> {
  const out: { broker: number; p50Ms: number; p99Ms: number }[] = [];
  for (const b of brokers) {
    const text = String(await admin(b, 'GET', '/metrics'));
    const q = (label: string): number => {
      const m = new RegExp(`^kafka_network_requestmetrics_localtimems\\{request="FetchFollower",quantile="${label}"\\} (\\S+)$`, 'm').exec(
        text,
      );
      return m?.[1] === undefined ? NaN : r3(Number(m[1]));
    };
    out.push({ broker: b.nodeId, p50Ms: q('0.50'), p99Ms: q('0.99') });
  }
  return out;
}

// ---- CPU windows ------------------------------------------------------------------------------

interface CpuReading {
  at: number;
  brokers: { total: number; main: number }[];
  etcd: number;
  self: NodeJS.CpuUsage;
}

function readCpu(cluster: LocalCluster): CpuReading {
  const etcdPid = cluster.etcd.pid;
  return {
    at: performance.now(),
    brokers: cluster.brokers.map((b) => ({ total: cpuSeconds(b.pid ?? -1), main: mainThreadCpuSeconds(b.pid ?? -1) })),
    etcd: etcdPid === undefined ? NaN : cpuSeconds(etcdPid),
    self: process.cpuUsage(),
  };
}

interface CpuWindow {
  seconds: number;
  brokers: { broker: number; cpuPercent: number; mainThreadPercent: number; rssMb: number }[];
  etcdPercent: number;
  /** this process: the librdkafka client(s) and the bench's own loop */
  clientPercent: number;
}

function cpuWindow(cluster: LocalCluster, a: CpuReading, b: CpuReading): CpuWindow {
  const secs = (b.at - a.at) / 1000;
  const pct = (x: number): number => round((x / secs) * 100, 2);
  const self = (b.self.user + b.self.system - a.self.user - a.self.system) / 1e6;
  return {
    seconds: round(secs, 1),
    brokers: cluster.brokers.map((br, i) => ({
      broker: br.nodeId,
      cpuPercent: pct((b.brokers[i]?.total ?? NaN) - (a.brokers[i]?.total ?? NaN)),
      mainThreadPercent: pct((b.brokers[i]?.main ?? NaN) - (a.brokers[i]?.main ?? NaN)),
      rssMb: round(rssBytes(br.pid ?? -1) / (1 << 20), 1),
    })),
    etcdPercent: pct(b.etcd - a.etcd),
    clientPercent: pct(self),
  };
}

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

// ---- restarts -----------------------------------------------------------------------------------

interface RestartResult {
  signal: string;
  broker: number;
  /** kill → the process exited */
  exitMs: number;
  /** kill → every partition's ISR without the broker (Metadata from the other one) */
  isrShrunkMs: number;
  /** spawn → GREGOR_READY */
  readyMs: number;
  /** spawn → every partition's ISR at 2 again, in Metadata from both brokers */
  isrFullMs: number;
  /** the restarted broker's CPU seconds from spawn to full ISR */
  restartedCpuS: number;
  /** the other broker's CPU seconds over the same time */
  otherCpuS: number;
  leadersAfter: Record<string, number>;
}

async function restart(cluster: LocalCluster, victim: LocalBroker, signal: NodeJS.Signals): Promise<RestartResult> {
  const others = cluster.brokers.filter((b) => b !== victim);
  const t0 = performance.now();
  await victim.kill(signal);
  const exitMs = performance.now() - t0;
  const shrunk = await waitState(
    others,
    TOPIC,
    1,
    (s) => s.partitions === PARTITIONS && s.isrWithout === PARTITIONS,
    t0,
    120_000,
    victim.nodeId,
  );
  if (Number.isNaN(shrunk.ms))
    console.log(`  ${signal}: after 120 s, ${shrunk.last[0]?.isrWithout ?? '?'} of ${PARTITIONS} ISRs without broker ${victim.nodeId}`);
  const otherCpu0 = others.map((b) => cpuSeconds(b.pid ?? -1));
  const t1 = performance.now();
  await victim.start();
  const readyMs = performance.now() - t1;
  const full = await waitState(
    cluster.brokers,
    TOPIC,
    2,
    (s) => s.partitions === PARTITIONS && s.fullIsr === PARTITIONS,
    t1,
    ISR_TIMEOUT_MS,
  );
  const restartedCpuS = cpuSeconds(victim.pid ?? -1);
  const otherCpuS = others.reduce((a, b, i) => a + cpuSeconds(b.pid ?? -1) - (otherCpu0[i] ?? 0), 0);
  return {
    signal,
    broker: victim.nodeId,
    exitMs: Math.round(exitMs),
    isrShrunkMs: Math.round(shrunk.ms),
    readyMs: Math.round(readyMs),
    isrFullMs: Math.round(full.ms),
    restartedCpuS: round(restartedCpuS, 2),
    otherCpuS: round(otherCpuS, 2),
    leadersAfter: full.last[0]?.leaders ?? {},
  };
}

// ---- main ---------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const nodeFlags = CPU_PROF !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : [];
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
      const r = await restart(cluster, b2, sig);
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
