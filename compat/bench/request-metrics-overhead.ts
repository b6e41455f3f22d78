/**
 * Issue 13: what the per-request timing (request metrics, request log) costs on the produce path.
 * Runs the C librdkafka producer (native/rdkafka-produce.c) against brokers built from two trees,
 * side by side, alternating A and B each round:
 *   - "small batches": linger.ms=0, batch.num.messages=BENCH_RMO_BATCH (default 5): as many Produce
 *     requests per second as one producer connection makes, the case where per-request work shows;
 *   - "large batches": librdkafka's defaults (linger 5 ms): the records/s case.
 * Figures per run: records/s, Produce requests/s (as the broker's log of requests counts them is not
 * available in the baseline, requests = records / batch for small batches), broker CPU-seconds per
 * 100k records. Medians over BENCH_RMO_ROUNDS (default 5) rounds.
 *
 *   node dist/compat/bench/request-metrics-overhead.js A=/path/to/baseline-tree B=/work/main
 *
 * With --inproc, the trees' brokers run in this process instead and one pre-encoded Produce v9
 * request (5 records of 100 bytes, acks=1) is pipelined to each (5 in flight, as librdkafka's
 * max.in.flight), BENCH_RMO_REQUESTS (default 20000) per round, the trees taking turns every round:
 * figures are this process's CPU microseconds per request (client included, the same for every
 * tree) and requests/s. Interleaving short rounds in one process makes the comparison far less
 * sensitive to other load on the machine than separate broker processes.
 *
 * Each tree must hold a built dist/ (its node_modules may be a symlink). Brokers run in-process of a
 * child `node` (no CLI), log level warn, admin listener at its default (a free port).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeRequest } from '../../protocol/frame.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';
import { startNativeProducer } from './native-producer.js';
import { loadAverage, writeResult } from './eos-common.js';
import { cpuSeconds, envInt } from './proc-stats.js';

interface Tree {
  label: string;
  root: string;
}

async function startBrokerFrom(root: string): Promise<{ bootstrap: string; pid: number; stop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gregor-rmo-'));
  const script = `
    const { startBroker } = await import(${JSON.stringify(join(root, 'dist/lib/broker.js'))});
    const { createLogger } = await import(${JSON.stringify(join(root, 'dist/lib/observability/logger.js'))});
    const b = await startBroker({ port: 0, dataDir: ${JSON.stringify(dataDir)}, logger: createLogger({ level: 'warn' }) });
    process.stdout.write('BOOTSTRAP ' + b.bootstrapServers + '\\n');
    process.on('SIGTERM', () => b.stop().then(() => process.exit(0)));
  `;
  const child: ChildProcess = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const bootstrap = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /BOOTSTRAP (\S+)/.exec(out);
      if (m?.[1] !== undefined) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`broker from ${root} exited with ${code}: ${out}`)));
  });
  return {
    bootstrap,
    pid: child.pid ?? -1,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

interface Run {
  recordsPerSec: number;
  cpuPer100k: number;
}

async function run(tree: Tree, records: number, config: Record<string, string | number>, topic: string): Promise<Run> {
  const b = await startBrokerFrom(tree.root);
  try {
    const p = await startNativeProducer(b.bootstrap, topic, Math.min(20_000, records / 10), records, 1024, { acks: 1, ...config });
    const c0 = cpuSeconds(b.pid);
    const t = await p.timed();
    const cpu = cpuSeconds(b.pid) - c0;
    await p.highWatermark();
    await p.end();
    return { recordsPerSec: records / t.seconds, cpuPer100k: (cpu / records) * 100_000 };
  } finally {
    await b.stop();
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface InprocBroker {
  bootstrapServers: string;
  stop(): Promise<void>;
}

/** One round: `requests` Produce requests pipelined `window` deep; returns CPU µs per request and requests/s. */
async function pipelined(
  bootstrap: string,
  frame: Buffer,
  requests: number,
  window: number,
): Promise<{ cpuUsPerRequest: number; requestsPerSec: number }> {
  const c = await RawClient.connect(bootstrap);
  try {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let sent = 0;
    while (sent < Math.min(window, requests)) {
      c.socket.write(frame);
      sent++;
    }
    while (c.responses.length < requests) {
      const got = c.responses.length;
      await c.waitResponses(got + 1, 10_000);
      const more = Math.min(requests - sent, c.responses.length + window - sent);
      for (let i = 0; i < more; i++) c.socket.write(frame);
      sent += Math.max(0, more);
    }
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return { cpuUsPerRequest: (cpu.user + cpu.system) / requests, requestsPerSec: (requests / ms) * 1000 };
  } finally {
    c.destroy();
  }
}

async function inproc(trees: Tree[]): Promise<void> {
  const rounds = envInt('BENCH_RMO_ROUNDS', 15);
  const requests = envInt('BENCH_RMO_REQUESTS', 20_000);
  const brokers = new Map<string, InprocBroker>();
  const dirs: string[] = [];
  for (const t of trees) {
    const { startBroker } = (await import(join(t.root, 'dist/lib/broker.js'))) as { startBroker: (o: object) => Promise<InprocBroker> };
    const { silentLogger } = (await import(join(t.root, 'dist/lib/observability/logger.js'))) as { silentLogger: () => unknown };
    const dataDir = mkdtempSync(join(tmpdir(), 'gregor-rmo-'));
    dirs.push(dataDir);
    brokers.set(t.label, await startBroker({ port: 0, dataDir, logger: silentLogger(), config: { 'auto.create.topics.enable': true } }));
  }
  const batch = buildRecordBatch(
    Array.from({ length: 5 }, (_, i) => ({ key: null, value: Buffer.alloc(100, 65 + i), timestamp: BigInt(Date.now()) })),
  );
  const frame = encodeRequest(
    { apiKey: 0, apiVersion: 9, correlationId: 1, clientId: 'rmo' },
    { transactionalId: null, acks: 1, timeoutMs: 10_000, topicData: [{ name: 'rmo', partitionData: [{ index: 0, records: batch }] }] },
    { sizePrefix: true },
  );
  for (const [label, b] of brokers) {
    const c = await RawClient.connect(b.bootstrapServers);
    await rawCreateTopics(c, [{ name: 'rmo', partitions: 1 }]);
    c.destroy();
    await pipelined(b.bootstrapServers, frame, requests / 2, 5); // warm-up
    process.stderr.write(`warmed ${label}\n`);
  }
  const results = new Map<string, { cpu: number[]; rps: number[] }>(trees.map((t) => [t.label, { cpu: [], rps: [] }]));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? trees : [...trees].reverse();
    for (const t of order) {
      const res = await pipelined(brokers.get(t.label)!.bootstrapServers, frame, requests, 5);
      results.get(t.label)!.cpu.push(res.cpuUsPerRequest);
      results.get(t.label)!.rps.push(res.requestsPerSec);
      process.stderr.write(
        `round ${r} ${t.label}: ${res.cpuUsPerRequest.toFixed(2)} CPU-µs/request, ${Math.round(res.requestsPerSec)} requests/s\n`,
      );
    }
  }
  console.log(
    `\nin-process, Produce v9 (5 x 100-byte records, acks=1) pipelined 5 deep, ${requests} requests x ${rounds} rounds (medians):`,
  );
  const base = trees[0]!.label;
  const summary: unknown[] = [];
  for (const t of trees) {
    const cpu = median(results.get(t.label)!.cpu);
    const rps = median(results.get(t.label)!.rps);
    const rel =
      t.label === base
        ? ''
        : ` (${(((cpu - median(results.get(base)!.cpu)) / median(results.get(base)!.cpu)) * 100).toFixed(1)}% CPU vs ${base})`;
    console.log(`  ${t.label} (${t.root}): ${cpu.toFixed(2)} CPU-µs per request${rel}, ${Math.round(rps)} requests/s`);
    summary.push({ tree: t.label, root: t.root, cpuUsPerRequest: cpu, requestsPerSec: rps, rounds: results.get(t.label) });
  }
  const file = writeResult('request-metrics-overhead-inproc', new Date().toISOString(), {
    id: 'request-metrics-overhead',
    mode: 'inproc',
    requests,
    roundsCount: rounds,
    loadAverage: loadAverage(),
    results: summary,
  });
  console.log(`results in ${file}`);
  for (const b of brokers.values()) await b.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const inprocMode = args.includes('--inproc');
  const trees: Tree[] = args
    .filter((a) => a !== '--inproc')
    .map((a) => {
      const [label, root] = a.split('=');
      if (label === undefined || root === undefined) throw new Error(`expected LABEL=/path/to/tree, got ${a}`);
      return { label, root };
    });
  if (trees.length === 0) throw new Error('usage: request-metrics-overhead.js [--inproc] A=/tree B=/tree');
  if (inprocMode) return inproc(trees);
  const rounds = envInt('BENCH_RMO_ROUNDS', 5);
  const batch = envInt('BENCH_RMO_BATCH', 5);
  const scenarios = [
    {
      name: `small batches (linger.ms=0, batch.num.messages=${batch})`,
      records: envInt('BENCH_RMO_SMALL_RECORDS', 200_000),
      config: { 'linger.ms': 0, 'batch.num.messages': batch },
      requestsPer: 1 / batch,
    },
    { name: 'large batches (librdkafka defaults)', records: envInt('BENCH_RMO_LARGE_RECORDS', 2_000_000), config: {}, requestsPer: 0 },
  ];
  const summary: unknown[] = [];
  for (const sc of scenarios) {
    const results = new Map<string, Run[]>(trees.map((t) => [t.label, []]));
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? trees : [...trees].reverse();
      for (const t of order) {
        const res = await run(t, sc.records, sc.config, `rmo-${r}`);
        results.get(t.label)!.push(res);
        process.stderr.write(
          `${sc.name} round ${r} ${t.label}: ${Math.round(res.recordsPerSec)} records/s, ${res.cpuPer100k.toFixed(3)} CPU-s/100k records\n`,
        );
      }
    }
    console.log(`\n${sc.name}, ${sc.records} records x ${rounds} rounds (medians):`);
    for (const t of trees) {
      const runs = results.get(t.label)!;
      const rps = median(runs.map((x) => x.recordsPerSec));
      const cpu = median(runs.map((x) => x.cpuPer100k));
      const req = sc.requestsPer > 0 ? `, ~${Math.round(rps * sc.requestsPer)} Produce requests/s` : '';
      console.log(`  ${t.label} (${t.root}): ${Math.round(rps)} records/s${req}, broker ${cpu.toFixed(3)} CPU-s per 100k records`);
      summary.push({
        scenario: sc.name,
        records: sc.records,
        tree: t.label,
        root: t.root,
        recordsPerSec: rps,
        brokerCpuSecondsPer100k: cpu,
        runs,
      });
    }
  }
  const file = writeResult('request-metrics-overhead', new Date().toISOString(), {
    id: 'request-metrics-overhead',
    mode: 'processes',
    rounds,
    loadAverage: loadAverage(),
    results: summary,
  });
  console.log(`results in ${file}`);
}

await main();
