/**
 * Issue 14, "scale with partitions": one broker process (`node bin/gregor.js start --port 0
 * --data-dir D`, as a user runs it; `npm run build` first, since bin/ runs dist/bundle/) on a fresh
 * data dir. Figures:
 *   1. spawn -> `GREGOR_READY` on the empty dir;
 *   2. CreateTopics (raw, v4) of one topic with BENCH_PARTITIONS partitions (default 10,000): the
 *      request's time and VmRSS right after it and after BENCH_SETTLE_MS (default 2000);
 *   3. one record produced to each of a few partitions (first, middle, last), so the restarts have
 *      data to keep;
 *   4. clean restart: SIGTERM -> exit (shutdown time), spawn -> GREGOR_READY (restart time), VmRSS;
 *   5. kill -9 restart: SIGKILL, spawn -> GREGOR_READY, VmRSS;
 *   6. one record produced to every partition (one request), kill -9, restart: the worst case, in
 *      which every log has to be recovered before the broker is ready;
 * after each restart the log end offsets of the first, middle and last partition are checked with
 * ListOffsets, one request each (*ListOffsetsMs: what a client waits after a restart; a wrong figure
 * fails the run), and partition 0 is fetched from its start (its time is reported:
 * the first read of a partition, which opens a lazily opened log). After the last restart, one
 * ListOffsets request for every partition checks all log end offsets (the time until every log is
 * recovered and answers: *AllOffsetsMs, and from spawn: *SpawnToAllOffsetsMs), with the broker's CPU seconds (utime+stime from
 * /proc/<pid>/stat) at ready, after that request and BENCH_SETTLE_MS later, and VmRSS then. After the
 * clean restart and the last one, VmRSS once the broker has been idle BENCH_IDLE_MS (default 15000;
 * 0 skips it) more: *IdleMb, after lib/idle-memory.ts gave the heap back.
 *
 * BENCH_CPU_PROF=<dir>: the restarted brokers run with `node --cpu-prof --cpu-prof-dir=<dir>` (the
 * profile is written when each exits). Output: a table on stdout and
 * compat/results/partitions-restart-<ISO timestamp, ':' -> '-'>.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildRecordBatch } from '../../protocol/records/index.js';
import {
  LIST_OFFSETS_V,
  PRODUCE_V,
  RawClient,
  rawCreateTopics,
  rawFetch,
  rawListOffset,
  rawProduce,
} from '../../test/helpers/raw-client.js';
import { cpuSeconds, envInt, ROOT_DIR, round, rssBytes, sleep, writeBench } from './proc-stats.js';

const PARTITIONS = envInt('BENCH_PARTITIONS', 10_000);
const SETTLE_MS = envInt('BENCH_SETTLE_MS', 2000);
const CPU_PROF = process.env['BENCH_CPU_PROF'];
/** How long the broker is left idle for the *IdleMb figures (lib/idle-memory.ts gives memory back ~11 s into an idle stretch). */
const IDLE_MS = envInt('BENCH_IDLE_MS', 15_000);
const TOPIC = 'wide';

interface Running {
  child: ChildProcess;
  pid: number;
  bootstrap: string;
  readyMs: number;
  /** performance.now() at spawn. */
  spawnedAt: number;
  exited: Promise<number | null>;
  stderr(): string;
}

const MB = (b: number): number => round(b / (1 << 20), 1);

/** Spawns the broker on `dataDir`; resolves at its GREGOR_READY line with the time it took. */
async function startBroker(dataDir: string, profile: boolean): Promise<Running> {
  const nodeArgs = profile && CPU_PROF !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : [];
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, join(ROOT_DIR, 'bin/gregor.js'), 'start', '--port', '0', '--data-dir', dataDir], {
    cwd: ROOT_DIR,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'warn' },
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-8000)));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const bootstrap = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no GREGOR_READY within 120 s: ${err}`)), 120_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /(?:^|\n)GREGOR_READY (\{.*\})/.exec(out);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve((JSON.parse(m[1]) as { bootstrap: string }).bootstrap);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gregor exited with ${code} before GREGOR_READY: ${err}`));
    });
  });
  return { child, pid: child.pid ?? -1, bootstrap, readyMs: performance.now() - spawnedAt, spawnedAt, exited, stderr: () => err };
}

/** SIGTERM; ms until the process exited. */
async function stopClean(b: Running): Promise<number> {
  const t0 = performance.now();
  b.child.kill('SIGTERM');
  const code = await Promise.race([b.exited, sleep(120_000).then(() => 'timeout' as const)]);
  if (code === 'timeout') {
    b.child.kill('SIGKILL');
    throw new Error('gregor did not exit within 120 s of SIGTERM');
  }
  if (code !== 0) throw new Error(`gregor exited with ${code} on SIGTERM: ${b.stderr()}`);
  return performance.now() - t0;
}

async function kill9(b: Running): Promise<void> {
  b.child.kill('SIGKILL');
  await b.exited;
}

/** The partitions written to (and checked after each restart). */
function probePartitions(): number[] {
  return [...new Set([0, Math.floor(PARTITIONS / 2), PARTITIONS - 1])];
}

async function checkOffsets(bootstrap: string, expected: Map<number, bigint>): Promise<{ listOffsetsMs: number; firstFetchMs: number }> {
  const c = await RawClient.connect(bootstrap);
  try {
    const t0 = performance.now();
    // the probe partitions only (one request each): after the produce to every partition the rest are
    // checked by checkAllOffsets in one request (10,000 requests in turn timed the recovery of every log)
    for (const p of probePartitions()) {
      const want = expected.get(p) ?? 0n;
      const got = await rawListOffset(c, TOPIC, p, -1n);
      if (got !== want) throw new Error(`partition ${p}: log end offset ${got} after restart, expected ${want}`);
    }
    const listOffsetsMs = performance.now() - t0;
    // a fetch of partition 0 from its start reads it (a lazily opened log opens here)
    const t1 = performance.now();
    const f = await rawFetch(c, TOPIC, 0, 0n, { maxWaitMs: 0 });
    if (f.errorCode !== 0) throw new Error(`fetch of partition 0: error ${f.errorCode}`);
    if (f.records === null || f.records.length === 0) throw new Error('fetch of partition 0 returned no records');
    return { listOffsetsMs, firstFetchMs: performance.now() - t1 };
  } finally {
    c.destroy();
  }
}

/** One ListOffsets (latest) of every partition; throws unless each is `expected`. */
async function checkAllOffsets(bootstrap: string, expected: Map<number, bigint>): Promise<number> {
  const c = await RawClient.connect(bootstrap);
  try {
    const t0 = performance.now();
    const res = await c.request<{ topics: { partitions: { partitionIndex: number; errorCode: number; offset: bigint }[] }[] }>(
      2,
      LIST_OFFSETS_V,
      {
        replicaId: -1,
        isolationLevel: 0,
        topics: [
          {
            name: TOPIC,
            partitions: Array.from({ length: PARTITIONS }, (_, partitionIndex) => ({
              partitionIndex,
              currentLeaderEpoch: -1,
              timestamp: -1n,
            })),
          },
        ],
      },
      600_000,
    );
    const ms = performance.now() - t0;
    const got = res.topics[0]?.partitions ?? [];
    if (got.length !== PARTITIONS) throw new Error(`ListOffsets of every partition answered ${got.length}`);
    for (const p of got) {
      const want = expected.get(p.partitionIndex) ?? 0n;
      if (p.errorCode !== 0 || p.offset !== want)
        throw new Error(`partition ${p.partitionIndex}: error ${p.errorCode}, log end offset ${p.offset}, expected ${want}`);
    }
    return ms;
  } finally {
    c.destroy();
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gregor-partitions-'));
  const rows: (string | number | null)[][] = [];
  const figures: Record<string, number> = {};
  let current: Running | null = null;
  try {
    // 1. empty start
    current = await startBroker(dataDir, false);
    figures['emptyStartMs'] = current.readyMs;
    figures['emptyRssMb'] = MB(rssBytes(current.pid));

    // 2. create the topic
    const c = await RawClient.connect(current.bootstrap);
    const t0 = performance.now();
    // Kafka's controller (and gregor) refuses a request writing over 10,000 metadata records (one
    // per partition): half the partitions at creation, the rest by CreatePartitions
    const first = Math.min(PARTITIONS, 5000);
    await rawCreateTopics(c, [{ name: TOPIC, partitions: first }], 600_000);
    for (let count = first; count < PARTITIONS;) {
      count = Math.min(PARTITIONS, count + 9000);
      const grown = await c.request<{ results: { errorCode: number; errorMessage: string | null }[] }>(
        37,
        1,
        { topics: [{ name: TOPIC, count, assignments: null }], timeoutMs: 60_000, validateOnly: false },
        600_000,
      );
      const bad = grown.results.find((r) => r.errorCode !== 0);
      if (bad !== undefined) throw new Error(`CreatePartitions to ${count}: ${bad.errorCode} ${bad.errorMessage ?? ''}`);
    }
    figures['createMs'] = performance.now() - t0;
    figures['rssAfterCreateMb'] = MB(rssBytes(current.pid));
    await sleep(SETTLE_MS);
    figures['rssAfterCreateSettledMb'] = MB(rssBytes(current.pid));

    // 3. a record in a few partitions
    const expected = new Map<number, bigint>();
    for (const p of probePartitions()) {
      const batch = buildRecordBatch([{ key: null, value: Buffer.from(`p${p}`), timestamp: BigInt(Date.now()) }]);
      const [r] = await rawProduce(c, TOPIC, [[p, batch]], 1);
      if (r?.errorCode !== 0) throw new Error(`produce to ${p}: error ${r?.errorCode}`);
      expected.set(p, 1n);
    }
    c.destroy();

    // 4. clean restart
    figures['shutdownMs'] = await stopClean(current);
    current = null;
    current = await startBroker(dataDir, true);
    figures['cleanRestartMs'] = current.readyMs;
    figures['rssAfterCleanRestartMb'] = MB(rssBytes(current.pid));
    const clean = await checkOffsets(current.bootstrap, expected);
    figures['cleanListOffsetsMs'] = clean.listOffsetsMs;
    figures['cleanFirstFetchMs'] = clean.firstFetchMs;
    await sleep(SETTLE_MS);
    figures['rssAfterCleanRestartSettledMb'] = MB(rssBytes(current.pid));
    if (IDLE_MS > 0) {
      await sleep(IDLE_MS);
      figures['rssAfterCleanRestartIdleMb'] = MB(rssBytes(current.pid));
    }

    // 5. kill -9 restart
    await kill9(current);
    current = null;
    current = await startBroker(dataDir, true);
    figures['kill9RestartMs'] = current.readyMs;
    figures['rssAfterKill9RestartMb'] = MB(rssBytes(current.pid));
    const k9 = await checkOffsets(current.bootstrap, expected);
    figures['kill9ListOffsetsMs'] = k9.listOffsetsMs;
    figures['kill9FirstFetchMs'] = k9.firstFetchMs;

    // 6. a record in every partition (one Produce request), then kill -9: every log was written
    //    since the last clean shutdown, so the restart recovers all of them
    const w = await RawClient.connect(current.bootstrap);
    const one = buildRecordBatch([{ key: null, value: Buffer.from('all'), timestamp: BigInt(Date.now()) }]);
    const t1 = performance.now();
    const res = (
      await w.request<{ responses: { partitionResponses: { errorCode: number }[] }[] }>(
        0,
        PRODUCE_V,
        {
          transactionalId: null,
          acks: 1,
          timeoutMs: 10_000,
          topicData: [{ name: TOPIC, partitionData: Array.from({ length: PARTITIONS }, (_, index) => ({ index, records: one })) }],
        },
        600_000,
      )
    ).responses.flatMap((t) => t.partitionResponses);
    figures['produceToAllMs'] = performance.now() - t1;
    if (res.length !== PARTITIONS || res.some((r) => r.errorCode !== 0)) throw new Error('produce to every partition failed');
    for (let p = 0; p < PARTITIONS; p++) expected.set(p, (expected.get(p) ?? 0n) + 1n);
    figures['rssAfterProduceToAllMb'] = MB(rssBytes(current.pid));
    w.destroy();
    await kill9(current);
    current = null;
    current = await startBroker(dataDir, true);
    figures['kill9AllWrittenRestartMs'] = current.readyMs;
    figures['rssAfterKill9AllWrittenRestartMb'] = MB(rssBytes(current.pid));
    figures['kill9AllWrittenCpuAtReadyS'] = cpuSeconds(current.pid);
    // the first reads come while the logs are still being recovered (in the background, or by them)
    const all = await checkOffsets(current.bootstrap, expected);
    figures['kill9AllWrittenListOffsetsMs'] = all.listOffsetsMs;
    figures['kill9AllWrittenFirstFetchMs'] = all.firstFetchMs;
    figures['kill9AllWrittenAllOffsetsMs'] = await checkAllOffsets(current.bootstrap, expected);
    figures['kill9AllWrittenSpawnToAllOffsetsMs'] = performance.now() - current.spawnedAt;
    figures['kill9AllWrittenCpuAfterAllOffsetsS'] = cpuSeconds(current.pid);
    figures['rssAfterKill9AllWrittenAllOffsetsMb'] = MB(rssBytes(current.pid));
    await sleep(SETTLE_MS);
    figures['rssAfterKill9AllWrittenSettledMb'] = MB(rssBytes(current.pid));
    figures['kill9AllWrittenCpuSettledS'] = cpuSeconds(current.pid);
    if (IDLE_MS > 0) {
      await sleep(IDLE_MS);
      figures['rssAfterKill9AllWrittenIdleMb'] = MB(rssBytes(current.pid));
      figures['kill9AllWrittenCpuIdleS'] = cpuSeconds(current.pid);
    }
    await stopClean(current);
    current = null;
  } finally {
    if (current !== null) await kill9(current);
    rmSync(dataDir, { recursive: true, force: true });
  }
  for (const [k, v] of Object.entries(figures)) {
    figures[k] = round(v, k.endsWith('Mb') ? 1 : k.endsWith('S') ? 2 : 0);
    rows.push([k, figures[k] ?? null]);
  }
  const ts = new Date().toISOString().replace(/:/g, '-');
  const id = `partitions-restart-${ts}`;
  const file = writeBench(
    join(ROOT_DIR, 'compat/results'),
    {
      id,
      title: `Restart with ${PARTITIONS} partitions`,
      description:
        'node bin/gregor.js start --port 0 --data-dir D: CreateTopics of one wide topic, then a clean restart (SIGTERM) and a kill -9 restart, each spawn -> GREGOR_READY, with VmRSS.',
      headline: [
        `create ${figures['createMs']} ms, RSS ${figures['rssAfterCreateMb']} MB`,
        `clean restart ${figures['cleanRestartMs']} ms, kill -9 restart ${figures['kill9RestartMs']} ms, RSS ${figures['rssAfterCleanRestartMb']} / ${figures['rssAfterKill9RestartMb']} MB`,
        `kill -9 restart with every partition written ${figures['kill9AllWrittenRestartMs']} ms, RSS ${figures['rssAfterKill9AllWrittenRestartMb']} MB`,
      ],
      table: { columns: ['figure', 'value'], rows },
      notes: [
        `BENCH_PARTITIONS=${PARTITIONS}, BENCH_SETTLE_MS=${SETTLE_MS}, BENCH_IDLE_MS=${IDLE_MS}${CPU_PROF !== undefined ? `, CPU profiles in ${CPU_PROF}` : ''}.`,
      ],
    },
    { partitions: PARTITIONS, figures },
  );
  for (const [k, v] of rows) console.log(`${String(k).padEnd(32)} ${v}`);
  console.log(`written ${file}`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack : String(e));
  process.exit(1);
});
