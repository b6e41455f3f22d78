/**
 * What a live tail of the web console costs the broker (issue 19: "the broker's produce throughput
 * while a browser tails a topic stays within 10% of its throughput without it"), without a browser:
 * console-load.ts measures the same with Chromium on the machine, whose own CPU then competes with
 * the broker's for the cores; here a Node reader (console-tail-client.ts, in a worker thread) opens
 * the tail stream exactly as the page does and reads it as the page does.
 *
 * librdkafka produces TAIL_RECORDS (default 300,000) 1 KB records, acks=1, into a 4-partition
 * topic, in TAIL_PAIRS (default 5) pairs of rounds, one without and one with a tail open (the order
 * swapped every other pair, so neither side always runs second). Per round: records/s, the broker's
 * CPU per record (whole process; main thread alone), the tail's records and skipped counts, and the
 * 1-minute load average. Summary: medians of each side, each pair's ratio (with / without) and
 * their median, and the broker's extra CPU per second of tail, from each pair.
 *
 *   npm run build && node dist/compat/bench/console-tail.js
 *
 * TAIL_ONLY=with|without runs rounds of one side only (to profile each: GREGOR_BENCH_NODE_ARGS=
 * "--cpu-prof --cpu-prof-dir=/tmp/prof"). TAIL_BUILD names the build in the result (e.g. "base").
 * Writes compat/results/console-tail-<ISO timestamp>.json.
 */
import { startGregor } from '../lib/broker-process.js';
import { createTopic, fixed, loadAverage, median, writeResult } from './eos-common.js';
import { pageTailQuery, startTailClient, type TailCounts } from './console-tail-client.js';
import {
  confluentVersion,
  connectRd,
  cpuSplit,
  disconnectRd,
  envInt,
  mainThreadCpuSeconds,
  produceAllRd,
  rdkafka,
  throughputProducerConfig,
} from './proc-stats.js';

interface Round {
  pair: number;
  tail: boolean;
  seconds: number;
  recordsPerSec: number;
  brokerCpuUsPerRecord: number;
  brokerMainCpuUsPerRecord: number;
  /** the part of brokerCpuUsPerRecord spent in the kernel (stime: socket and file I/O) */
  brokerSystemCpuUsPerRecord: number;
  /** broker CPU over the round, ms per second */
  brokerCpuMsPerSec: number;
  tailCounts: TailCounts | null;
  load1: number;
}

const TOPIC = 'tput';

async function main(): Promise<void> {
  const records = envInt('TAIL_RECORDS', 300_000);
  const pairs = envInt('TAIL_PAIRS', 5);
  const only = process.env['TAIL_ONLY'] ?? '';
  if (only !== '' && only !== 'with' && only !== 'without') throw new Error('TAIL_ONLY must be with or without');
  const startLoad = loadAverage();
  const g = await startGregor({ 'admin.listener': '127.0.0.1:0' });
  try {
    const admin = /"admin":"([^"]+)"/.exec(g.log())?.[1];
    if (admin === undefined) throw new Error('no admin address in the ready line');
    // TAIL_TOPIC=other tails an idle topic beside the produced one: the stream's fixed cost alone
    const tailTopic = process.env['TAIL_TOPIC'] ?? TOPIC;
    const tailUrl = `http://${admin}/ui/api/topics/${tailTopic}/tail?${pageTailQuery()}`;
    await createTopic(g.bootstrap, TOPIC, 4);
    if (tailTopic !== TOPIC) await createTopic(g.bootstrap, tailTopic, 4);
    const values = Array.from({ length: 256 }, () => Buffer.from(Array.from({ length: 1024 }, () => 65 + Math.floor(Math.random() * 26))));
    const value = (i: number) => values[i % values.length]!;
    const producer = new (rdkafka().Producer)(throughputProducerConfig(g.bootstrap, 1));
    await connectRd(producer);
    producer.setPollInterval(50);
    await produceAllRd(producer, TOPIC, null, 50_000, value); // warm-up (JIT, page cache, librdkafka's batches)
    const rounds: Round[] = [];
    try {
      for (let pair = 0; pair < pairs; pair++) {
        const order = only !== '' ? [only === 'with'] : pair % 2 === 0 ? [false, true] : [true, false];
        for (const tail of order) {
          const client = tail ? startTailClient(tailUrl) : null;
          await client?.ready;
          const split0 = cpuSplit(g.pid);
          const main0 = mainThreadCpuSeconds(g.pid);
          const t0 = performance.now();
          await produceAllRd(producer, TOPIC, null, records, value);
          const seconds = (performance.now() - t0) / 1000;
          const split = cpuSplit(g.pid);
          const system = split.system - split0.system;
          const cpu = split.user - split0.user + system;
          const mainCpu = mainThreadCpuSeconds(g.pid) - main0;
          const counts = (await client?.stop()) ?? null;
          if (counts?.error != null) throw new Error(`the tail failed: ${counts.error}`);
          const r: Round = {
            pair,
            tail,
            seconds: fixed(seconds, 3),
            recordsPerSec: Math.round(records / seconds),
            brokerCpuUsPerRecord: fixed((cpu * 1e6) / records, 2),
            brokerMainCpuUsPerRecord: fixed((mainCpu * 1e6) / records, 2),
            brokerSystemCpuUsPerRecord: fixed((system * 1e6) / records, 2),
            brokerCpuMsPerSec: fixed((cpu * 1000) / seconds, 1),
            tailCounts: counts,
            load1: loadAverage()[0] ?? NaN,
          };
          rounds.push(r);
          console.log(
            `pair ${pair} ${tail ? 'with tail   ' : 'without tail'}: ${r.recordsPerSec} records/s, broker ${r.brokerCpuUsPerRecord} µs CPU/record ` +
              `(main thread ${r.brokerMainCpuUsPerRecord}, kernel ${r.brokerSystemCpuUsPerRecord}), ${r.brokerCpuMsPerSec} ms CPU/s` +
              (counts !== null ? `, tail: ${counts.records} rows, ${counts.skipped} skipped, ${counts.events} events` : '') +
              `, load ${r.load1}`,
          );
        }
      }
    } finally {
      await disconnectRd(producer);
    }
    const summary = summarise(rounds);
    console.log(JSON.stringify(summary));
    const file = writeResult('console-tail', new Date().toISOString(), {
      id: 'console-tail',
      client: `librdkafka (@confluentinc/kafka-javascript ${confluentVersion()}) producing; a Node reader of the tail stream in a worker thread`,
      settings: {
        records,
        pairs,
        only: only === '' ? null : only,
        partitions: 4,
        valueBytes: 1024,
        acks: 1,
        tailQuery: pageTailQuery(),
        tailTopic: process.env['TAIL_TOPIC'] ?? TOPIC,
      },
      build: process.env['TAIL_BUILD'] ?? null,
      loadAverage: { start: startLoad, end: loadAverage() },
      node: process.version,
      summary,
      rounds,
    });
    console.log(`results in ${file}`);
  } finally {
    await g.stop();
  }
}

type Figure = 'recordsPerSec' | 'brokerCpuUsPerRecord' | 'brokerMainCpuUsPerRecord' | 'brokerSystemCpuUsPerRecord';

/** Medians per side, per-pair ratios (with / without) and their medians, the tail's extra broker CPU per second. */
function summarise(rounds: readonly Round[]) {
  const side = (tail: boolean, k: Figure) => rounds.filter((r) => r.tail === tail).map((r) => r[k]);
  const both = [...new Set(rounds.map((r) => r.pair))].flatMap((pair) => {
    const w = rounds.find((r) => r.pair === pair && r.tail);
    const wo = rounds.find((r) => r.pair === pair && !r.tail);
    return w !== undefined && wo !== undefined ? [{ w, wo }] : [];
  });
  const pairRatios = (k: Figure) => both.map(({ w, wo }) => fixed(w[k] / wo[k], 3));
  const stats = (xs: number[]) => ({ median: fixed(median(xs), 2), min: Math.min(...xs), max: Math.max(...xs) });
  // what the tail added, in broker CPU ms per second of tail: the per-record difference at the tail round's rate
  const extraMsPerSec = both.map(({ w, wo }) => fixed(((w.brokerCpuUsPerRecord - wo.brokerCpuUsPerRecord) * w.recordsPerSec) / 1000, 1));
  return {
    withoutTail: {
      recordsPerSec: stats(side(false, 'recordsPerSec')),
      brokerCpuUsPerRecord: stats(side(false, 'brokerCpuUsPerRecord')),
      brokerMainCpuUsPerRecord: stats(side(false, 'brokerMainCpuUsPerRecord')),
      brokerSystemCpuUsPerRecord: stats(side(false, 'brokerSystemCpuUsPerRecord')),
    },
    withTail: {
      recordsPerSec: stats(side(true, 'recordsPerSec')),
      brokerCpuUsPerRecord: stats(side(true, 'brokerCpuUsPerRecord')),
      brokerMainCpuUsPerRecord: stats(side(true, 'brokerMainCpuUsPerRecord')),
      brokerSystemCpuUsPerRecord: stats(side(true, 'brokerSystemCpuUsPerRecord')),
    },
    pairs: {
      recordsPerSec: { perPair: pairRatios('recordsPerSec'), median: fixed(median(pairRatios('recordsPerSec')), 3) },
      brokerCpuUsPerRecord: { perPair: pairRatios('brokerCpuUsPerRecord'), median: fixed(median(pairRatios('brokerCpuUsPerRecord')), 3) },
      brokerMainCpuUsPerRecord: {
        perPair: pairRatios('brokerMainCpuUsPerRecord'),
        median: fixed(median(pairRatios('brokerMainCpuUsPerRecord')), 3),
      },
      brokerSystemCpuUsPerRecord: {
        perPair: pairRatios('brokerSystemCpuUsPerRecord'),
        median: fixed(median(pairRatios('brokerSystemCpuUsPerRecord')), 3),
      },
      tailExtraBrokerCpuMsPerSec: { perPair: extraMsPerSec, median: fixed(median(extraMsPerSec), 1) },
    },
    load1: {
      median: fixed(median(rounds.map((r) => r.load1)), 2),
      min: Math.min(...rounds.map((r) => r.load1)),
      max: Math.max(...rounds.map((r) => r.load1)),
    },
  };
}

await main();
