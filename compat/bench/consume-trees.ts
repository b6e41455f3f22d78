/**
 * Issue 14's consume workload on two gregor trees and the librdkafka mock, side by side: an A/B of a
 * change to the Fetch path. Each broker (a fresh gregor of `--before DIR`, another checkout that has
 * been built; a fresh gregor of this tree; the mock) gets the same BENCH_RECORDS (1M) 100-byte records
 * (+50,000 warm-up) with acks=1 from the C producer of `npm run bench`; then BENCH_ROUNDS (9) rounds
 * each consume them all from the start with the C consumer (librdkafka's defaults), the three brokers
 * in a rotating order, all three running throughout. Per consume: records/s and the broker's CPU-s per
 * 1M records, and how the time splits: to the first record delivered (the start: the consumer's
 * ListOffsets and first fetches on a fresh connection) and the rate from then on. Medians, and
 * before/after against the mock.
 *
 *   node dist/compat/bench/consume-trees.js --before /path/to/other/checkout [--out DIR]
 *
 * Writes compat/results/consume-trees-<time>.json (or into --out).
 */
import { createOnePartitionTopics, brokerCpu, startGregor, startMock, type Target } from './mock-vs-gregor-brokers.js';
import { startNativeConsumer, startNativeProducer, THROUGHPUT_PRODUCER_CONFIG } from './native-producer.js';
import { envInt, round, ROOT_DIR, sleep, writeBench } from './proc-stats.js';
import { median, parseTreeArgs } from './tree-args.js';

const RECORDS = envInt('BENCH_RECORDS', 1_000_000);
const WARMUP = envInt('BENCH_WARMUP_RECORDS', 50_000);
const ROUNDS = envInt('BENCH_ROUNDS', 9);
const TOPIC = 'consume-trees';

type Name = 'before' | 'after' | 'mock';
interface Run {
  round: number;
  broker: Name;
  recordsPerSec: number;
  brokerCpuSPerM: number | null;
  /** from the assign to the first record delivered */
  firstRecordMs: number;
  /** records/s from the first record delivered to the last */
  afterFirstPerSec: number;
}

async function main(): Promise<void> {
  const args = parseTreeArgs(process.argv.slice(2));
  const brokers: [Name, Target][] = [];
  try {
    brokers.push(['before', await startGregor(args.before)], ['after', await startGregor()], ['mock', await startMock([`${TOPIC}:1`])]);
    for (const [name, t] of brokers) {
      if (name !== 'mock') await createOnePartitionTopics(t.bootstrap, [TOPIC]);
      const p = await startNativeProducer(t.bootstrap, TOPIC, WARMUP, RECORDS, 1, {
        ...THROUGHPUT_PRODUCER_CONFIG,
        'request.required.acks': 1,
      });
      const r = await p.timed();
      await p.end();
      if (r.failed > 0) throw new Error(`${name}: ${r.failed} records failed`);
    }
    await sleep(2000);
    const runs: Run[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      for (let k = 0; k < brokers.length; k++) {
        const [name, t] = brokers[(i + k) % brokers.length] as [Name, Target];
        const c = await startNativeConsumer(t.bootstrap, TOPIC, 1, {});
        const c0 = brokerCpu(t);
        const r = await c.timed();
        const c1 = brokerCpu(t);
        await c.end();
        if (r.records !== WARMUP + RECORDS) throw new Error(`${name}: consumed ${r.records} records, expected ${WARMUP + RECORDS}`);
        const run: Run = {
          round: i + 1,
          broker: name,
          recordsPerSec: Math.round(r.records / r.seconds),
          brokerCpuSPerM: c0 === null || c1 === null ? null : round(((c1 - c0) / r.records) * 1e6, 3),
          firstRecordMs: round(r.secondsToFirst * 1000, 2),
          afterFirstPerSec: Math.round(r.records / (r.seconds - r.secondsToFirst)),
        };
        runs.push(run);
        process.stderr.write(
          `round ${run.round} ${name}: ${run.recordsPerSec} records/s, ${run.brokerCpuSPerM ?? '-'} CPU-s/M, first record after ${run.firstRecordMs} ms, then ${run.afterFirstPerSec} records/s\n`,
        );
      }
    }
    const of = (n: Name) => runs.filter((r) => r.broker === n);
    const med = (n: Name) => median(of(n).map((r) => r.recordsPerSec));
    const cpu = (n: Name) => median(of(n).map((r) => r.brokerCpuSPerM ?? NaN));
    const first = (n: Name) => round(median(of(n).map((r) => r.firstRecordMs)), 2);
    const after = (n: Name) => median(of(n).map((r) => r.afterFirstPerSec));
    const split = (n: Name) =>
      `first record after ${first(n)} ms, then ${after(n)} records/s (${round(after(n) / after('mock'), 3)}x the mock's)`;
    const faster = of('after').filter((r, i) => r.recordsPerSec > (of('before')[i]?.recordsPerSec ?? Infinity)).length;
    const path = writeBench(
      args.out,
      {
        id: `consume-trees-${new Date().toISOString().replace(/:/g, '-')}`,
        title: 'Consume from the start: two gregor trees and the librdkafka mock',
        description: `${RECORDS + WARMUP} records of 100 bytes, one partition, librdkafka C consumer with its defaults; ${ROUNDS} rounds, the three brokers in a rotating order. before: ${args.before}; after: ${ROOT_DIR}.`,
        headline: [
          `before ${med('before')} records/s (${round(cpu('before'), 3)} CPU-s/M), ${round(med('before') / med('mock'), 3)}x the mock`,
          `after ${med('after')} records/s (${round(cpu('after'), 3)} CPU-s/M), ${round(med('after') / med('mock'), 3)}x the mock`,
          `mock ${med('mock')} records/s (${round(cpu('mock'), 3)} CPU-s/M); after faster than before in ${faster} of ${ROUNDS} rounds`,
          `before: ${split('before')}; after: ${split('after')}; mock: first record after ${first('mock')} ms, then ${after('mock')} records/s`,
        ],
        table: {
          columns: ['round', 'broker', 'records/s', 'broker CPU-s per 1M', 'first record (ms)', 'records/s after the first'],
          rows: runs.map((r) => [r.round, r.broker, r.recordsPerSec, r.brokerCpuSPerM, r.firstRecordMs, r.afterFirstPerSec]),
        },
        notes: [`BENCH_RECORDS=${RECORDS}, BENCH_WARMUP_RECORDS=${WARMUP}, BENCH_ROUNDS=${ROUNDS}.`],
      },
      { runs },
    );
    process.stdout.write(`${path}\n`);
  } finally {
    for (const [, t] of brokers) await t.stop();
  }
}

await main();
