/**
 * Idle-CPU benchmark: a child gregor broker with 3,000 partitions by default (30 topics x 100), its CPU
 * (utime + stime from /proc/<pid>/stat) measured over a window
 *   1. idle, no client connected;
 *   2. while one librdkafka consumer (@confluentinc/kafka-javascript, node-rdkafka-style KafkaConsumer)
 *      has all 3,000 partitions assigned at offset 0 with fetch.wait.max.ms=500 and nothing is produced;
 *   3. while a raw Fetch v11 loop asks for all 3,000 partitions with max_wait 500 ms (one request in
 *      flight at a time), so the per-request cost is known exactly;
 * plus Metadata latency for all topics (raw Metadata v12, all topics). Not a test: it prints a table
 * and writes compat/results/idle-cpu-<timestamp>.json with the machine's details.
 *
 * The idle window starts BENCH_IDLE_SETTLE_S after the topics are made: creating thousands of
 * partitions leaves work behind for a while (log opens and checkpoints, the collections of what the
 * creation allocated), which is not what an idle broker costs and would be subtracted from every
 * fetch below as if it were.
 *
 * Environment knobs: BENCH_WINDOW_S (default 30), BENCH_SETTLE_S (default 5), BENCH_IDLE_SETTLE_S (30),
 * BENCH_TOPICS (30), BENCH_PARTITIONS (100), BENCH_METADATA_N (50).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { startChildBroker, tempDir } from '../../test/helpers/broker.js';
import { PROJECT_ROOT } from '../../test/helpers/project.js';
import { fetchBody, FETCH_V, processRss, RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';
import { asError } from './proc-stats.js';

type Any = any;

const WINDOW_S = Number(process.env['BENCH_WINDOW_S'] ?? 30);
const SETTLE_S = Number(process.env['BENCH_SETTLE_S'] ?? 5);
const IDLE_SETTLE_S = Number(process.env['BENCH_IDLE_SETTLE_S'] ?? 30);
const TOPICS = Number(process.env['BENCH_TOPICS'] ?? 30);
const PARTITIONS = Number(process.env['BENCH_PARTITIONS'] ?? 100);
const METADATA_N = Number(process.env['BENCH_METADATA_N'] ?? 50);
const MAX_WAIT_MS = 500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function clkTck(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
}
const TICKS = clkTck();

/** utime + stime of a process, in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // fields after "(comm)"; comm may contain spaces, so split after the last ')'
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); utime is field 14, stime field 15
  const utime = Number(rest[14 - 3]);
  const stime = Number(rest[15 - 3]);
  return (utime + stime) / TICKS;
}

interface Window {
  phase: string;
  seconds: number;
  cpuSeconds: number;
  cpuPercentOfOneCore: number;
  /** broker requests observed in the window, when known */
  requests?: number;
  rssMBStart: number;
  rssMBEnd: number;
  /** the bench process's own CPU (client side), % of one core */
  clientCpuPercent: number;
}

async function measure(phase: string, pid: number, extra: () => Record<string, number> = () => ({})): Promise<Window> {
  const rss0 = await processRss(pid);
  const c0 = cpuSeconds(pid);
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  await sleep(WINDOW_S * 1000);
  const c1 = cpuSeconds(pid);
  const u1 = process.cpuUsage(u0);
  const secs = (performance.now() - t0) / 1000;
  const rss1 = await processRss(pid);
  return {
    phase,
    seconds: round(secs, 2),
    cpuSeconds: round(c1 - c0, 3),
    cpuPercentOfOneCore: round(((c1 - c0) / secs) * 100, 3),
    rssMBStart: round(rss0 / 1048576, 1),
    rssMBEnd: round(rss1 / 1048576, 1),
    clientCpuPercent: round(((u1.user + u1.system) / 1e6 / secs) * 100, 2),
    ...extra(),
  };
}

function round(x: number, d: number): number {
  const f = 10 ** d;
  return Math.round(x * f) / f;
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

async function main(): Promise<void> {
  const dataDir = tempDir('gregor-idle-cpu-');
  const broker = await startChildBroker(dataDir, 0, {});
  const pid = broker.child.pid!;
  const topicNames = Array.from({ length: TOPICS }, (_, i) => `idle-${String(i).padStart(2, '0')}`);
  const windows: Window[] = [];
  try {
    const admin = await RawClient.connect(broker.bootstrap);
    const tc = performance.now();
    for (const name of topicNames) await rawCreateTopics(admin, [{ name, partitions: PARTITIONS }]);
    const createMs = performance.now() - tc;
    console.log(`created ${TOPICS} x ${PARTITIONS} partitions in ${createMs.toFixed(0)} ms`);

    // Metadata for all topics (v12, topics null)
    const lat: number[] = [];
    let partitionsSeen = 0;
    let metadataTopics = 0;
    for (let i = 0; i < METADATA_N; i++) {
      const t = performance.now();
      const md = await admin.request<{ topics: { name: string | null; partitions: unknown[] }[] }>(
        3,
        12,
        { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false },
        30_000,
      );
      lat.push(performance.now() - t);
      partitionsSeen = md.topics.filter((x) => x.name?.startsWith('idle-') === true).reduce((a, x) => a + x.partitions.length, 0);
      metadataTopics = md.topics.length;
    }
    if (partitionsSeen !== TOPICS * PARTITIONS) throw new Error(`Metadata saw ${partitionsSeen} partitions`);
    const metadata: Record<string, number> = {
      requests: METADATA_N,
      topicsInResponse: metadataTopics,
      benchPartitions: partitionsSeen,
      medianMs: round(percentile(lat, 50), 2),
      p90Ms: round(percentile(lat, 90), 2),
      maxMs: round(Math.max(...lat), 2),
      firstMs: round(lat[0] ?? NaN, 2),
    };
    admin.destroy();

    await sleep(IDLE_SETTLE_S * 1000);
    console.log(`measuring: idle (${WINDOW_S} s)`);
    windows.push(await measure('idle, no clients', pid));

    // librdkafka consumer on all partitions
    const ck = createRequire(path.join(PROJECT_ROOT, 'compat/clients/confluent/package.json'))('@confluentinc/kafka-javascript');
    const consumer = new ck.KafkaConsumer(
      {
        'bootstrap.servers': broker.bootstrap,
        'group.id': 'idle-cpu-bench',
        'enable.auto.commit': false,
        'enable.auto.offset.store': false,
        'fetch.wait.max.ms': MAX_WAIT_MS,
        log_level: 0,
      },
      {},
    );
    await new Promise<void>((resolve, reject) => consumer.connect({ timeout: 30_000 }, (e: Any) => (e ? reject(asError(e)) : resolve())));
    consumer.assign(topicNames.flatMap((topic) => Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition, offset: 0 }))));
    let consumed = 0;
    let consuming = true;
    const consumeAll = async () => {
      while (consuming) {
        const batch: Any[] = await new Promise((resolve, reject) =>
          consumer.consume(1000, (e: Any, m: Any[]) => (e ? reject(asError(e)) : resolve(m))),
        );
        consumed += batch.length;
      }
    };
    const consumeLoop = consumeAll();
    await sleep(SETTLE_S * 1000);
    console.log(`measuring: librdkafka consumer on ${TOPICS * PARTITIONS} partitions (${WINDOW_S} s)`);
    windows.push(await measure(`librdkafka assign ${TOPICS * PARTITIONS} partitions, fetch.wait.max.ms=${MAX_WAIT_MS}`, pid));
    consuming = false;
    await consumeLoop;
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
    if (consumed !== 0) throw new Error(`consumed ${consumed} records from empty topics`);

    // raw Fetch loop on all partitions
    const f = await RawClient.connect(broker.bootstrap);
    const body = fetchBody(topicNames[0]!, [], { maxWaitMs: MAX_WAIT_MS, minBytes: 1, maxBytes: 50 << 20 });
    body.topics = topicNames.map((topic) => ({
      topic,
      partitions: Array.from({ length: PARTITIONS }, (_, partition) => ({
        partition,
        currentLeaderEpoch: -1,
        fetchOffset: 0n,
        logStartOffset: -1n,
        partitionMaxBytes: 1 << 20,
      })),
    }));
    let fetches = 0;
    let fetching = true as boolean; // cleared below, which narrowing does not see
    const fetchDurations: number[] = [];
    const fetchAll = async () => {
      while (fetching) {
        const t = performance.now();
        const res = await f.request<{ errorCode: number; responses: { partitions: { errorCode: number }[] }[] }>(1, FETCH_V, body, 10_000);
        fetchDurations.push(performance.now() - t);
        if (res.errorCode !== 0 || res.responses.some((r) => r.partitions.some((p) => p.errorCode !== 0))) throw new Error('fetch error');
        fetches++;
      }
    };
    const fetchLoop = fetchAll();
    await sleep(SETTLE_S * 1000);
    const before = fetches;
    console.log(`measuring: raw Fetch v${FETCH_V} loop on ${TOPICS * PARTITIONS} partitions (${WINDOW_S} s)`);
    windows.push(
      await measure(`raw Fetch v${FETCH_V} loop, ${TOPICS * PARTITIONS} partitions, max_wait ${MAX_WAIT_MS} ms`, pid, () => ({
        requests: fetches - before,
      })),
    );
    fetching = false;
    await fetchLoop;
    f.destroy();
    const w = windows[windows.length - 1]!;
    const perFetchCpuMs =
      w.requests !== undefined && w.requests > 0
        ? round(((w.cpuSeconds - (windows[0]?.cpuSeconds ?? 0) * (w.seconds / (windows[0]?.seconds ?? 1))) * 1000) / w.requests, 3)
        : NaN;

    const cpus = os.cpus();
    const report = {
      benchmark: 'idle-cpu',
      date: new Date().toISOString(),
      node: process.version,
      os: `${os.type()} ${os.release()} ${os.arch()}`,
      cpuModel: cpus[0]?.model ?? 'unknown',
      cores: cpus.length,
      availableParallelism: os.availableParallelism(),
      loadavg: os.loadavg(),
      clkTck: TICKS,
      settings: {
        topics: TOPICS,
        partitionsPerTopic: PARTITIONS,
        windowSeconds: WINDOW_S,
        settleSeconds: SETTLE_S,
        idleSettleSeconds: IDLE_SETTLE_S,
        maxWaitMs: MAX_WAIT_MS,
        createTopicsMs: round(createMs, 0),
      },
      librdkafkaVersion: String(ck.librdkafkaVersion ?? 'unknown'),
      windows,
      rawFetch: { requests: w.requests, medianMs: round(percentile(fetchDurations, 50), 2), perFetchBrokerCpuMsAboveIdle: perFetchCpuMs },
      metadataAllTopics: metadata,
      goal: 'idle consumer on 10,000 partitions keeps the broker under 1% of one core (issue 14)',
    };
    const dir = path.join(PROJECT_ROOT, 'compat', 'results');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `idle-cpu-${report.date.replace(/:/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);

    console.log('');
    console.log(`broker CPU, % of one core (${report.cpuModel}, ${report.cores} cores, node ${report.node})`);
    console.log('phase'.padEnd(64) + 'CPU %'.padStart(8) + 'CPU s'.padStart(8) + 'req'.padStart(7) + 'RSS MB'.padStart(9));
    for (const x of windows) {
      console.log(
        x.phase.padEnd(64) +
          x.cpuPercentOfOneCore.toFixed(3).padStart(8) +
          x.cpuSeconds.toFixed(2).padStart(8) +
          String(x.requests ?? '').padStart(7) +
          x.rssMBEnd.toFixed(0).padStart(9),
      );
    }
    console.log(
      `raw Fetch: median ${report.rawFetch.medianMs} ms per request (max_wait ${MAX_WAIT_MS}), ~${perFetchCpuMs} ms broker CPU per ${TOPICS * PARTITIONS}-partition fetch above idle`,
    );
    console.log(
      `Metadata v12, all topics (${metadata['topicsInResponse']} topics, ${metadata['benchPartitions']} bench partitions): median ${metadata['medianMs']} ms, p90 ${metadata['p90Ms']} ms, max ${metadata['maxMs']} ms, first ${metadata['firstMs']} ms`,
    );
    console.log(`wrote ${path.relative(PROJECT_ROOT, file)}`);
  } finally {
    broker.child.kill('SIGTERM');
    await Promise.race([broker.exited, sleep(10_000)]);
    if (broker.child.exitCode === null) broker.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
