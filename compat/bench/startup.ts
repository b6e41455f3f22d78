/**
 * Benchmark 4: start-up and memory. First, with no client, spawn -> the `GREGOR_READY` stdout line
 * (issue 13's budget: 300 ms) for `node bin/gregor.js start --port 0`, the same with three declared
 * topics (`--topic`), and through `npm start`. Then `node bin/gregor.js start` on a fresh data dir and
 * a free port; a raw client retries connecting every 2 ms, asks Metadata for a new topic
 * (auto-created), and produces one record (Produce v8, acks=1) until it succeeds: spawn -> listening
 * -> first successful produce. Each BENCH_STARTUP_RUNS times (default 5, median reported). Then, on
 * one more broker: RSS idle, after BENCH_RSS_RECORDS records (default 1,000,000, 100 bytes,
 * librdkafka acks=1; 0 skips the memory part), and after a 5 s settle, plus the peak (VmHWM).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildRecordBatch } from '../../protocol/records/index.js';
import type { BenchContext } from '../lib/suite.js';
import { RawClient, rawListOffset, rawProduce } from '../../test/helpers/raw-client.js';
import {
  connectRd,
  disconnectRd,
  envInt,
  produceAllRd,
  peakRssBytes,
  type RdProducer,
  rdkafka,
  ROOT_DIR,
  round,
  rssBytes,
  sleep,
  writeBench,
} from './proc-stats.js';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

interface Started {
  child: ChildProcess;
  dataDir: string;
  bootstrap: string;
  spawnedAt: number;
  listeningMs: number;
  producedMs: number;
  stop(): Promise<void>;
}

async function tryConnect(port: number): Promise<RawClient | null> {
  try {
    return await RawClient.connect(`127.0.0.1:${port}`);
  } catch {
    return null;
  }
}

/** Spawns gregor and measures until the first successful produce. */
async function startAndProduce(): Promise<Started> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gregor-startup-'));
  const port = await freePort();
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [join(ROOT_DIR, 'bin/gregor.js'), 'start', '--data-dir', dataDir, '--port', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'warn' },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const deadline = spawnedAt + 30_000;
    let c: RawClient | null = null;
    while (c === null) {
      if (child.exitCode !== null) throw new Error(`gregor exited with ${child.exitCode}: ${stderr}`);
      if (performance.now() > deadline) throw new Error('gregor did not listen within 30 s');
      c = await tryConnect(port);
      if (c === null) await sleep(2);
    }
    const listeningMs = performance.now() - spawnedAt;
    const topic = 'startup';
    const batch = buildRecordBatch([{ key: null, value: Buffer.alloc(100, 'x'), timestamp: BigInt(Date.now()) }]);
    for (;;) {
      if (performance.now() > deadline) throw new Error('no successful produce within 30 s');
      const md = await c.request<{ topics: { name: string; errorCode: number; partitions: { errorCode: number; leaderId: number }[] }[] }>(
        3,
        4,
        { topics: [{ name: topic }], allowAutoTopicCreation: true },
        10_000,
      );
      const t = md.topics.find((x) => x.name === topic);
      if (
        t !== undefined &&
        t.errorCode === 0 &&
        t.partitions.length > 0 &&
        t.partitions.every((p) => p.errorCode === 0 && p.leaderId >= 0)
      ) {
        const res = await rawProduce(c, topic, [[0, batch]], 1);
        if (res[0]?.errorCode === 0) break;
      }
      await sleep(2);
    }
    const producedMs = performance.now() - spawnedAt;
    c.destroy();
    return { child, dataDir, bootstrap: `127.0.0.1:${port}`, spawnedAt, listeningMs, producedMs, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The commands of the start -> GREGOR_READY series (each on a fresh data dir, appended). */
export const READY_VARIANTS: readonly { name: string; cmd: string; args: readonly string[] }[] = [
  { name: 'node bin/gregor.js start --port 0', cmd: process.execPath, args: [join(ROOT_DIR, 'bin/gregor.js'), 'start', '--port', '0'] },
  {
    name: '... --topic orders:3 --topic events:6:retention.ms=60000 --topic compacted:1:cleanup.policy=compact',
    cmd: process.execPath,
    args: [
      join(ROOT_DIR, 'bin/gregor.js'),
      'start',
      '--port',
      '0',
      '--topic',
      'orders:3',
      '--topic',
      'events:6:retention.ms=60000',
      '--topic',
      'compacted:1:cleanup.policy=compact',
    ],
  },
  { name: 'npm start -- --port 0', cmd: 'npm', args: ['start', '--silent', '--', '--port', '0'] },
];

/** Spawns one variant on a fresh data dir; ms from spawn until the GREGOR_READY line is on its stdout. */
async function startToReady(variant: (typeof READY_VARIANTS)[number]): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gregor-ready-'));
  const spawnedAt = performance.now();
  // its own process group: npm does not pass SIGTERM on to the broker it started, so the group is signalled
  const child = spawn(variant.cmd, [...variant.args, '--data-dir', dataDir], {
    cwd: ROOT_DIR,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'warn' },
    detached: true,
  });
  const signal = (sig: NodeJS.Signals): void => {
    try {
      process.kill(-(child.pid ?? 0), sig);
    } catch {
      // already gone
    }
  };
  let out = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    return await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no GREGOR_READY within 30 s: ${stderr}`)), 30_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (/(^|\n)GREGOR_READY \{/.test(out)) {
          clearTimeout(timer);
          resolve(performance.now() - spawnedAt);
        }
      });
      child.once('exit', (code) => reject(new Error(`${variant.name} exited with ${code}: ${stderr}`)));
    });
  } finally {
    signal('SIGTERM');
    const t = setTimeout(() => signal('SIGKILL'), 10_000);
    await exited;
    // npm may exit before the broker it started: wait until the whole group is gone
    for (let i = 0; i < 1000; i++) {
      try {
        process.kill(-(child.pid ?? 0), 0);
      } catch {
        break;
      }
      await sleep(10);
    }
    clearTimeout(t);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** ms from spawn until `cmd` exits: what Node.js alone (node -e 0) or npm alone costs on this machine. */
function timeToExit(cmd: string, args: readonly string[]): Promise<number> {
  const spawnedAt = performance.now();
  const child = spawn(cmd, args, { stdio: 'ignore', cwd: ROOT_DIR });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', () => resolve(performance.now() - spawnedAt));
  });
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : ((s[s.length / 2 - 1] ?? 0) + (s[s.length / 2] ?? 0)) / 2;
};

async function produceMany(bootstrap: string, topic: string, n: number): Promise<number> {
  const p: RdProducer = new (rdkafka().Producer)({
    'bootstrap.servers': bootstrap,
    acks: 1,
    'linger.ms': 5,
    'batch.size': 1000000,
    'queue.buffering.max.messages': 500000,
    log_level: 0,
  });
  await connectRd(p);
  p.setPollInterval(50);
  const value = Buffer.alloc(100, 'v');
  const t0 = performance.now();
  await produceAllRd(p, topic, 0, n, () => value);
  const secs = (performance.now() - t0) / 1000;
  await disconnectRd(p);
  const c = await RawClient.connect(bootstrap);
  const end = Number(await rawListOffset(c, topic, 0));
  c.destroy();
  if (end !== n) throw new Error(`${end} of ${n} records stored`);
  return secs;
}

export async function startup(ctx: BenchContext): Promise<void> {
  const runs = envInt('BENCH_STARTUP_RUNS', 5);
  const nRecords = envInt('BENCH_RSS_RECORDS', 1_000_000);
  // interleaved: run i of every command (and of a bare `node -e 0`, spawn -> exit) before run i + 1,
  // so load on the shared machine hits all of them alike
  const series = [
    ...READY_VARIANTS.map((v) => ({ name: v.name, ms: [] as number[], run: () => startToReady(v) })),
    { name: 'baseline: node -e 0 (spawn -> exit)', ms: [] as number[], run: () => timeToExit(process.execPath, ['-e', '0']) },
    {
      name: 'baseline: npm run env (npm running a script that does nothing, spawn -> exit)',
      ms: [] as number[],
      run: () => timeToExit('npm', ['run', '--silent', 'env']),
    },
  ];
  for (let i = 0; i < runs; i++) for (const v of series) v.ms.push(round(await v.run(), 1));
  const ready = series.map((v) => ({ name: v.name, ms: v.ms, median: round(median(v.ms), 1) }));
  for (const r of ready) ctx.log(`  ${r.median} ms (median of ${runs}; ${r.ms.join(', ')}): ${r.name}`);
  const readyMed = ready[0]?.median ?? NaN;
  const times: { listeningMs: number; producedMs: number }[] = [];
  for (let i = 0; i < runs; i++) {
    const s = await startAndProduce();
    times.push({ listeningMs: round(s.listeningMs, 1), producedMs: round(s.producedMs, 1) });
    await s.stop();
  }
  const med = median;
  const listenMed = round(med(times.map((t) => t.listeningMs)), 1);
  const prodMed = round(med(times.map((t) => t.producedMs)), 1);
  ctx.log(`  start -> listening ${listenMed} ms, -> first produce ${prodMed} ms (median of ${runs})`);
  const readyRows: (string | number)[][] = ready.map((r) => [
    `start → GREGOR_READY, median ms: ${r.name} (runs: ${r.ms.join(', ')})`,
    r.median,
  ]);
  const readyChart = {
    kind: 'bar' as const,
    title: 'Start → GREGOR_READY line (ms, no client)',
    xLabel: 'run',
    yLabel: 'ms',
    series: ready.map((r) => ({ name: r.name, points: r.ms.map((y, i) => ({ x: String(i + 1), y })) })),
  };
  if (nRecords === 0) {
    writeBench(ctx.outDir, {
      id: 'startup',
      title: 'Start-up time',
      description: `Spawn → GREGOR_READY on stdout (no client), ${runs} runs per command; then spawn → listening → first successful produce (Metadata v4 auto-create + Produce v8 acks=1, a raw client retrying every 2 ms). Memory part skipped (BENCH_RSS_RECORDS=0).`,
      headline: [
        `process start → GREGOR_READY: ${readyMed} ms (median of ${runs}, node bin/gregor.js start --port 0)`,
        `process start → first successful produce: ${prodMed} ms (listening after ${listenMed} ms)`,
      ],
      charts: [readyChart],
      table: {
        columns: ['measure', 'value'],
        rows: [...readyRows, ['start → listening, median ms', listenMed], ['start → first successful produce, median ms', prodMed]],
      },
      notes: [
        'Each run is a fresh process on a fresh data dir, so the time includes Node.js starting, loading the compiled broker and creating __consumer_offsets.',
      ],
    });
    return;
  }

  const s = await startAndProduce();
  const pid = s.child.pid ?? -1;
  let rssIdle: number;
  let rssAfter: number;
  let rssSettled: number;
  let peak: number;
  let produceSecs: number;
  try {
    await sleep(5000);
    rssIdle = rssBytes(pid);
    const c = await RawClient.connect(s.bootstrap);
    await c.request(
      19,
      4,
      {
        topics: [{ name: 'rss', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
        timeoutMs: 30000,
        validateOnly: false,
      },
      30_000,
    );
    c.destroy();
    produceSecs = await produceMany(s.bootstrap, 'rss', nRecords);
    rssAfter = rssBytes(pid);
    await sleep(5000);
    rssSettled = rssBytes(pid);
    peak = peakRssBytes(pid);
  } finally {
    await s.stop();
  }
  const mb = (b: number) => round(b / 1048576, 1);
  ctx.log(
    `  RSS idle ${mb(rssIdle)} MB, after ${nRecords} records ${mb(rssAfter)} MB (${mb(rssSettled)} MB 5 s later, peak ${mb(peak)} MB)`,
  );
  writeBench(ctx.outDir, {
    id: 'startup',
    title: 'Start-up time and memory',
    description:
      `Spawn → GREGOR_READY on stdout (no client) for each command in the first table rows, ${runs} runs each. ` +
      `\`node bin/gregor.js start\` with a fresh data dir and a free port, ${runs} times. A raw client retries connecting every 2 ms, then asks Metadata (v4, auto-create) for a new topic and produces one 100-byte record (Produce v8, acks=1) until it succeeds. ` +
      `Memory: VmRSS of the broker process from /proc/<pid>/status, idle 5 s after start-up, then right after ${nRecords.toLocaleString('en-US')} 100-byte records produced by librdkafka (acks=1, one partition) and 5 s later.`,
    headline: [
      `process start → GREGOR_READY: ${readyMed} ms (median of ${runs}, node bin/gregor.js start --port 0)`,
      `process start → first successful produce: ${prodMed} ms (median of ${runs}; listening after ${listenMed} ms)`,
      `RSS idle ${mb(rssIdle)} MB; after ${nRecords.toLocaleString('en-US')} records ${mb(rssAfter)} MB (peak ${mb(peak)} MB)`,
    ],
    charts: [
      readyChart,
      {
        kind: 'bar',
        title: 'Start-up (ms)',
        xLabel: 'run',
        yLabel: 'ms',
        series: [
          { name: 'listening', points: times.map((t, i) => ({ x: String(i + 1), y: t.listeningMs })) },
          { name: 'first produce acknowledged', points: times.map((t, i) => ({ x: String(i + 1), y: t.producedMs })) },
        ],
      },
      {
        kind: 'bar',
        title: 'Broker RSS (MB)',
        xLabel: 'when',
        yLabel: 'MB',
        series: [
          {
            name: 'VmRSS',
            points: [
              { x: 'idle', y: mb(rssIdle) },
              { x: `after ${nRecords / 1e6}M records`, y: mb(rssAfter) },
              { x: '+5 s', y: mb(rssSettled) },
              { x: 'peak (VmHWM)', y: mb(peak) },
            ],
          },
        ],
      },
    ],
    table: {
      columns: ['measure', 'value'],
      rows: [
        ...readyRows,
        ['start → listening, median ms', listenMed],
        ['start → first successful produce, median ms', prodMed],
        ['start → first produce, each run (ms)', times.map((t) => t.producedMs).join(', ')],
        ['RSS idle, MB', mb(rssIdle)],
        [`RSS after ${nRecords.toLocaleString('en-US')} records, MB`, mb(rssAfter)],
        ['RSS 5 s later, MB', mb(rssSettled)],
        ['peak RSS (VmHWM), MB', mb(peak)],
        [`time to produce ${nRecords.toLocaleString('en-US')} records, s`, round(produceSecs, 2)],
      ],
    },
    notes: [
      'The start-up time includes Node.js itself starting (node bin/gregor.js from a fresh process), loading the compiled broker, opening the fresh data dir and auto-creating the topic.',
    ],
  });
}
