/**
 * Issue 16's log cleaner figures: cleaner throughput (MB of log cleaned per second, 1 KB records,
 * 10% distinct keys) and the p99 produce latency of another topic while a large log is cleaned, side
 * by side with the cleaner off; broker CPU per record cleaned.
 *
 *   node dist/compat/bench/log-cleaner.js          (BENCH_CLEAN_MB, default 256; the issue asks 1024; BENCH_CLEAN_KEYS)
 *
 * Each run starts a fresh child broker (cleaner on, then off), fills topic `big` (cleanup.policy
 * delete, so nothing cleans it yet) with BENCH_CLEAN_MB of 1 KB records over MB*1024/10 keys with
 * librdkafka, then switches `big` to compact and measures, until the cleaning is swapped in (cleaner
 * on) or for as long as it took (cleaner off), the acks=1 latency of one-at-a-time 100-byte produces
 * to topic `probe`. Writes compat/results/<run>/log-cleaner.json.
 */
import { join } from 'node:path';
import { startChildBroker, tempDir, type ChildBroker } from '../../test/helpers/broker.js';
import { ROOT } from '../lib/paths.js';
import kafkajs from 'kafkajs';
import { rmSync } from 'node:fs';
import { THROUGHPUT_PRODUCER_CONFIG } from './native-producer.js';
import { connectRd, cpuSeconds, disconnectRd, envInt, flushRd, percentile, rdkafka, round, sleep, writeBench } from './proc-stats.js';

const MB = envInt('BENCH_CLEAN_MB', 256);
const RECORDS = MB * 1024;
/** BENCH_CLEAN_KEYS: distinct keys (default 10% of the records; the 1M-over-10k-keys figure: BENCH_CLEAN_MB=977 BENCH_CLEAN_KEYS=10000). */
const KEYS = envInt('BENCH_CLEAN_KEYS', Math.max(1, Math.floor(RECORDS / 10)));
/** 64 MiB segments (an eighth of the log when it is smaller), so all but the active one are cleanable. */
const SEGMENT = Math.min(64 << 20, Math.max(1 << 20, Math.floor((MB << 20) / 8)));

interface RunResult {
  cleaner: boolean;
  seconds: number;
  probes: number;
  p50Ms: number;
  p99Ms: number;
  cleanedBytes: number | null;
  cleanMs: number | null;
  brokerCpuSeconds: number;
}

async function fill(bootstrap: string): Promise<void> {
  const p = new (rdkafka().Producer)({ 'bootstrap.servers': bootstrap, acks: 1, log_level: 0, ...THROUGHPUT_PRODUCER_CONFIG });
  await connectRd(p);
  p.setPollInterval(50);
  const value = Buffer.alloc(1000, 'v');
  for (let i = 0; i < RECORDS; i++) {
    for (;;) {
      try {
        p.produce('big', 0, value, Buffer.from(`key-${(i * 7919) % KEYS}`));
        break;
      } catch {
        await sleep(5); // queue full
      }
    }
  }
  await flushRd(p, 600_000);
  await disconnectRd(p);
}

async function run(cleaner: boolean, cleanMsOn: number | null): Promise<RunResult> {
  const dir = tempDir('gregor-bench-clean-');
  let b: ChildBroker | null = null;
  try {
    b = await startChildBroker(dir, 0, {
      'log.cleaner.enable': String(cleaner),
      'log.cleaner.backoff.ms': '500',
      'admin.listener': 'none',
    });
    const pid = b.child.pid ?? 0;
    let cleaned: { bytes: number; ms: number } | null = null;
    b.child.stdout?.on('data', (d: Buffer) => {
      const m = /"bytes":"(\d+) -> \d+","ms":(\d+),"msg":"cleaned log"/.exec(d.toString());
      if (m !== null && m[1] !== undefined && m[2] !== undefined) cleaned = { bytes: Number(m[1]), ms: Number(m[2]) };
    });
    const admin = new kafkajs.Kafka({ brokers: [b.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        { topic: 'big', numPartitions: 1, configEntries: [{ name: 'segment.bytes', value: String(SEGMENT) }] },
        { topic: 'probe', numPartitions: 1 },
      ],
    });
    await fill(b.bootstrap);
    const probe = new (rdkafka().Producer)({ 'bootstrap.servers': b.bootstrap, acks: 1, 'linger.ms': 0, dr_cb: true, log_level: 0 });
    await connectRd(probe);
    probe.setPollInBackground(true);
    let ack: (() => void) | null = null;
    probe.on('delivery-report', () => {
      const a = ack;
      ack = null;
      a?.();
    });
    const send = async (): Promise<number> => {
      const t0 = performance.now();
      const done = new Promise<void>((r) => (ack = r));
      probe.produce('probe', 0, Buffer.alloc(100, 'p'), null);
      await done;
      return performance.now() - t0;
    };
    for (let i = 0; i < 200; i++) await send(); // warm-up
    const cpu0 = cpuSeconds(pid);
    const started = performance.now();
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: 'big', configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }],
    });
    const lat: number[] = [];
    const until = (): boolean => (cleaner ? cleaned === null : performance.now() - started < (cleanMsOn ?? 10_000));
    while (until() && performance.now() - started < 600_000) lat.push(await send());
    const seconds = (performance.now() - started) / 1000;
    const brokerCpuSeconds = cpuSeconds(pid) - cpu0;
    await disconnectRd(probe);
    await admin.disconnect();
    const c = cleaned as { bytes: number; ms: number } | null;
    return {
      cleaner,
      seconds: round(seconds, 2),
      probes: lat.length,
      p50Ms: round(percentile(lat, 50), 3),
      p99Ms: round(percentile(lat, 99), 3),
      cleanedBytes: c?.bytes ?? null,
      cleanMs: c?.ms ?? null,
      brokerCpuSeconds: round(brokerCpuSeconds, 2),
    };
  } finally {
    if (b !== null) {
      b.child.kill('SIGTERM');
      await b.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

const on = await run(true, null);
const off = await run(false, (on.seconds || 10) * 1000);
const logBytes = RECORDS * 1070;
const mbPerSec = on.cleanMs === null ? null : round(logBytes / 1e6 / (on.cleanMs / 1000), 1);
const cpuPerRecordUs = round(((on.brokerCpuSeconds - off.brokerCpuSeconds) / RECORDS) * 1e6, 2);
const ratio = round(on.p99Ms / off.p99Ms, 2);
const outDir = join(ROOT, 'compat/results', process.env['BENCH_RUN'] ?? 'latest');
const file = writeBench(
  outDir,
  {
    id: 'log-cleaner',
    title: 'Log cleaner: throughput and produce latency of another topic while a large log is cleaned',
    headline: [
      `cleaner: ${mbPerSec ?? '?'} MB/s of log cleaned (${MB} MB, 1 KB records, ${KEYS} distinct keys)`,
      `probe p99 produce latency: ${on.p99Ms} ms while cleaning vs ${off.p99Ms} ms with the cleaner off (${ratio}x)`,
      `broker CPU: ${cpuPerRecordUs} us per record cleaned (extra over the cleaner-off run)`,
    ],
    table: {
      columns: ['cleaner', 'seconds', 'probes', 'p50 ms', 'p99 ms', 'broker CPU-s', 'cleaned bytes read', 'clean ms'],
      rows: [on, off].map((r) => [
        r.cleaner ? 'on' : 'off',
        r.seconds,
        r.probes,
        r.p50Ms,
        r.p99Ms,
        r.brokerCpuSeconds,
        r.cleanedBytes,
        r.cleanMs,
      ]),
    },
    notes: [
      `BENCH_CLEAN_MB=${MB}: ${RECORDS} records over ${KEYS} keys, ${SEGMENT >> 20} MiB segments; one run on a shared machine: quote the ratio.`,
    ],
  },
  { on, off, mbPerSec, cpuPerRecordUs, ratio },
);
console.log(JSON.stringify({ on, off, mbPerSec, cpuPerRecordUs, ratio }));
console.log(file);
