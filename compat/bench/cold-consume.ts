/**
 * The first consume on a fresh broker, as `npm run bench` measures it (every round starts fresh
 * brokers): two gregor trees and the librdkafka mock. Its consume is the broker's first Fetch and, as
 * the C consumer has a group id, its first FindCoordinator, which creates `__consumer_offsets` (50
 * partitions) on a fresh gregor. Each of BENCH_ROUNDS (5) rounds starts a fresh gregor of
 * `--before DIR` (another built checkout), one of this tree and a mock, in a rotating order, one at a
 * time; each takes BENCH_RECORDS (1M) 100-byte records (+50,000 warm-up) with acks=1, then is
 * consumed from the start twice: the cold consume (the first on that broker) and a warm one. Per
 * consume: records/s and the time to the first record delivered. Per gregor tree and round, another
 * fresh broker times a group's first use: its first FindCoordinator, after a CreateTopics, then an
 * ApiVersions and a Metadata on the connection it uses (so the connection and those first requests
 * are not counted), then the first OffsetCommit (which waits for `__consumer_offsets`), and the broker CPU
 * the two cost, counted until 300 ms after the commit's answer (work left in the background included).
 *
 *   node dist/compat/bench/cold-consume.js --before /path/to/other/checkout [--out DIR]
 *
 * Writes compat/results/cold-consume-<time>.json (or into --out).
 */
import { createOnePartitionTopics, startGregor, startMock, type Target } from './mock-vs-gregor-brokers.js';
import { startNativeConsumer, startNativeProducer, THROUGHPUT_PRODUCER_CONFIG } from './native-producer.js';
import { cpuMs, envInt, round, ROOT_DIR, sleep, writeBench } from './proc-stats.js';
import { median, parseTreeArgs } from './tree-args.js';
import { RawClient } from '../../test/helpers/raw-client.js';

const RECORDS = envInt('BENCH_RECORDS', 1_000_000);
const WARMUP = envInt('BENCH_WARMUP_RECORDS', 50_000);
const ROUNDS = envInt('BENCH_ROUNDS', 5);
const TOPIC = 'cold-consume';

type Name = 'before' | 'after' | 'mock';
const NAMES: readonly Name[] = ['before', 'after', 'mock'];
interface Consume {
  recordsPerSec: number;
  firstRecordMs: number;
}
interface Run {
  round: number;
  broker: Name;
  cold: Consume;
  warm: Consume;
  /** gregor: a group's first use on another fresh broker of the tree */
  firstGroupUse: GroupUse | null;
}
interface GroupUse {
  /** ms from sending the first FindCoordinator (a group key) to its answer */
  findCoordinatorMs: number;
  /** ms from sending the first OffsetCommit, right after that answer, to its answer */
  commitMs: number;
  /** broker CPU (all threads) from the FindCoordinator until 300 ms after the commit's answer */
  cpuMs: number;
}

async function consumeOnce(t: Target, name: Name): Promise<Consume> {
  const c = await startNativeConsumer(t.bootstrap, TOPIC, 1, {});
  const r = await c.timed();
  await c.end();
  if (r.records !== WARMUP + RECORDS) throw new Error(`${name}: consumed ${r.records} records, expected ${WARMUP + RECORDS}`);
  return { recordsPerSec: Math.round(r.records / r.seconds), firstRecordMs: round(r.secondsToFirst * 1000, 2) };
}

/** A group's first use on a fresh broker: FindCoordinator, then OffsetCommit (see GroupUse). */
async function firstGroupUse(root: string | undefined): Promise<GroupUse> {
  const t = await startGregor(root);
  try {
    if (t.pid === null) throw new Error('no broker process');
    await createOnePartitionTopics(t.bootstrap, [TOPIC]);
    const c = await RawClient.connect(t.bootstrap);
    try {
      await c.request(18, 3, { clientSoftwareName: 'cold-consume', clientSoftwareVersion: '1' });
      await c.request(3, 9, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false });
      await sleep(300);
      const cpu0 = cpuMs(t.pid);
      const t0 = performance.now();
      const found = await c.request<{ errorCode: number }>(10, 2, { key: 'cold-consume', keyType: 0 }, 30_000);
      const t1 = performance.now();
      if (found.errorCode !== 0) throw new Error(`FindCoordinator answered error ${found.errorCode}`);
      const commit = await c.request<{ topics: { partitions: { errorCode: number }[] }[] }>(
        8,
        2,
        {
          groupId: 'cold-consume',
          generationIdOrMemberEpoch: -1,
          memberId: '',
          retentionTimeMs: -1n,
          topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, committedOffset: 1n, committedMetadata: null }] }],
        },
        30_000,
      );
      const t2 = performance.now();
      const code = commit.topics[0]?.partitions[0]?.errorCode;
      if (code !== 0) throw new Error(`OffsetCommit answered error ${code}`);
      await sleep(300);
      return { findCoordinatorMs: round(t1 - t0, 2), commitMs: round(t2 - t1, 2), cpuMs: round(cpuMs(t.pid) - cpu0, 1) };
    } finally {
      c.destroy();
    }
  } finally {
    await t.stop();
  }
}

async function main(): Promise<void> {
  const args = parseTreeArgs(process.argv.slice(2));
  const roots: Record<Name, string | undefined> = { before: args.before, after: undefined, mock: undefined };
  const runs: Run[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    for (let k = 0; k < NAMES.length; k++) {
      const name = NAMES[(i + k) % NAMES.length] as Name;
      const t = name === 'mock' ? await startMock([`${TOPIC}:1`]) : await startGregor(roots[name]);
      let cold: Consume;
      let warm: Consume;
      try {
        if (name !== 'mock') await createOnePartitionTopics(t.bootstrap, [TOPIC]);
        const p = await startNativeProducer(t.bootstrap, TOPIC, WARMUP, RECORDS, 1, {
          ...THROUGHPUT_PRODUCER_CONFIG,
          'request.required.acks': 1,
        });
        const pr = await p.timed();
        await p.end();
        if (pr.failed > 0) throw new Error(`${name}: ${pr.failed} records failed`);
        await sleep(2000);
        cold = await consumeOnce(t, name);
        await sleep(1000);
        warm = await consumeOnce(t, name);
      } finally {
        await t.stop();
      }
      const use = name === 'mock' ? null : await firstGroupUse(roots[name]);
      const run: Run = { round: i + 1, broker: name, cold, warm, firstGroupUse: use };
      runs.push(run);
      process.stderr.write(
        `round ${run.round} ${name}: cold ${cold.recordsPerSec} records/s, first record after ${cold.firstRecordMs} ms; warm ${warm.recordsPerSec}, ${warm.firstRecordMs} ms; first FindCoordinator ${use?.findCoordinatorMs ?? '-'} ms, first commit ${use?.commitMs ?? '-'} ms, their broker CPU ${use?.cpuMs ?? '-'} ms\n`,
      );
    }
  }
  const of = (n: Name) => runs.filter((r) => r.broker === n);
  const med = (n: Name, f: (r: Run) => number) => median(of(n).map(f));
  const summary = (n: Name) => {
    const cold = med(n, (r) => r.cold.recordsPerSec);
    const warm = med(n, (r) => r.warm.recordsPerSec);
    return (
      `${n}: cold ${cold} records/s (${round(cold / med('mock', (r) => r.cold.recordsPerSec), 3)}x the mock's), first record after ${med(n, (r) => r.cold.firstRecordMs)} ms; ` +
      `warm ${warm} (${round(warm / med('mock', (r) => r.warm.recordsPerSec), 3)}x), ${med(n, (r) => r.warm.firstRecordMs)} ms`
    );
  };
  const useOf = (n: Name, f: (u: GroupUse) => number) => med(n, (r) => (r.firstGroupUse === null ? NaN : f(r.firstGroupUse)));
  const groupUse = (n: Name) =>
    `${n}: first FindCoordinator ${useOf(n, (u) => u.findCoordinatorMs)} ms, first OffsetCommit ${useOf(n, (u) => u.commitMs)} ms, broker CPU ${useOf(n, (u) => u.cpuMs)} ms`;
  const path = writeBench(
    args.out,
    {
      id: `cold-consume-${new Date().toISOString().replace(/:/g, '-')}`,
      title: 'The first consume on a fresh broker: two gregor trees and the librdkafka mock',
      description: `${RECORDS + WARMUP} records of 100 bytes, one partition, librdkafka C consumer with its defaults (and a group id); ${ROUNDS} rounds, a fresh broker per tree and round, in a rotating order. before: ${args.before}; after: ${ROOT_DIR}.`,
      headline: [
        summary('before'),
        summary('after'),
        summary('mock'),
        `a group's first use on a fresh gregor (medians): ${groupUse('before')}; ${groupUse('after')}`,
      ],
      table: {
        columns: [
          'round',
          'broker',
          'cold records/s',
          'cold first record (ms)',
          'warm records/s',
          'warm first record (ms)',
          'first FindCoordinator (ms)',
          'first OffsetCommit (ms)',
          'their broker CPU (ms)',
        ],
        rows: runs.map((r) => [
          r.round,
          r.broker,
          r.cold.recordsPerSec,
          r.cold.firstRecordMs,
          r.warm.recordsPerSec,
          r.warm.firstRecordMs,
          r.firstGroupUse?.findCoordinatorMs ?? null,
          r.firstGroupUse?.commitMs ?? null,
          r.firstGroupUse?.cpuMs ?? null,
        ]),
      },
      notes: [`BENCH_RECORDS=${RECORDS}, BENCH_WARMUP_RECORDS=${WARMUP}, BENCH_ROUNDS=${ROUNDS}.`],
    },
    { runs },
  );
  process.stdout.write(`${path}\n`);
}

await main();
