/**
 * Rebalance time of three librdkafka 2.15 members (@confluentinc/kafka-javascript, KafkaJS-style
 * consumers) under the KIP-848 consumer protocol beside the classic protocol (range and
 * cooperative-sticky), against a child gregor: a 6-partition topic; members join one after another;
 * measured from the third member's subscribe() to every member holding its final assignment (as
 * the clients report it: each consumer's assignment(), polled every 5 ms; complete, disjoint, two
 * partitions each), then from one member's disconnect() to the other two holding all six.
 * Two settings per protocol: the defaults (classic heartbeat.interval.ms 3000; broker
 * group.consumer.heartbeat.interval.ms 5000) and fast ones (500 / 500). Rounds interleave the
 * protocols; medians are reported with every round.
 *   npx tsc -p tsconfig.json && node dist/compat/bench/rebalance-protocols.js
 * Knobs: BENCH_REBALANCE_ROUNDS (5).
 */
import { rmSync } from 'node:fs';
import { startChildBroker, tempDir } from '../../test/helpers/broker.js';
import { loadConfluent } from '../lib/confluent-module.js';
import { createTopic, envNumber, fixed, loadAverage, median, textTable, writeResult } from './eos-common.js';

type Any = any;

const ROUNDS = envNumber('BENCH_REBALANCE_ROUNDS', 5);
const PARTITIONS = 6;
const PROTOCOLS = ['classic-range', 'classic-cooperative-sticky', 'consumer'] as const;
type Protocol = (typeof PROTOCOLS)[number];
const SETTINGS = ['defaults', 'fast'] as const;
type Setting = (typeof SETTINGS)[number];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function clientConfig(protocol: Protocol, setting: Setting): Record<string, unknown> {
  if (protocol === 'consumer') return { 'group.protocol': 'consumer' };
  const strategy = protocol === 'classic-range' ? 'range' : 'cooperative-sticky';
  return { 'partition.assignment.strategy': strategy, ...(setting === 'fast' ? { 'heartbeat.interval.ms': 500 } : {}) };
}

/** Each consumer's partitions, as the clients see them. */
function assignments(consumers: Any[], topic: string): number[][] {
  return consumers.map((c) =>
    (c.assignment() as { topic: string; partition: number }[])
      .filter((a) => a.topic === topic)
      .map((a) => a.partition)
      .sort((x, y) => x - y),
  );
}

/** Every partition held exactly once, spread as evenly as the member count allows. */
function settled(parts: number[][]): boolean {
  const all = parts.flat();
  if (all.length !== PARTITIONS || new Set(all).size !== PARTITIONS) return false;
  const even = Math.floor(PARTITIONS / parts.length);
  return parts.every((p) => p.length >= even && p.length <= even + 1);
}

async function waitSettled(consumers: Any[], topic: string, timeoutMs: number): Promise<number> {
  const start = performance.now();
  while (!settled(assignments(consumers, topic))) {
    if (performance.now() - start > timeoutMs)
      throw new Error(`no settled assignment after ${timeoutMs} ms: ${JSON.stringify(assignments(consumers, topic))}`);
    await sleep(5);
  }
  return performance.now() - start;
}

async function round(bootstrap: string, protocol: Protocol, setting: Setting, tag: string): Promise<{ joinMs: number; leaveMs: number }> {
  const ck = loadConfluent();
  const topic = `rebalance-${tag}`;
  await createTopic(bootstrap, topic, PARTITIONS);
  const kafka = new ck.KafkaJS.Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: ck.KafkaJS.logLevel.NOTHING } });
  const consumers: Any[] = [];
  try {
    let joinMs = 0;
    for (let i = 0; i < 3; i++) {
      const c = kafka.consumer({ kafkaJS: { groupId: `g-${tag}`, fromBeginning: true }, ...clientConfig(protocol, setting) });
      await c.connect();
      consumers.push(c);
      if (i === 2) {
        const started = performance.now();
        await c.subscribe({ topics: [topic] });
        await c.run({ eachMessage: () => Promise.resolve() });
        await waitSettled(consumers, topic, 60_000);
        joinMs = performance.now() - started;
      } else {
        await c.subscribe({ topics: [topic] });
        await c.run({ eachMessage: () => Promise.resolve() });
        await waitSettled(consumers, topic, 60_000);
      }
    }
    const leaver = consumers.pop();
    const left = performance.now();
    await leaver.disconnect();
    await waitSettled(consumers, topic, 60_000);
    return { joinMs, leaveMs: performance.now() - left };
  } finally {
    await Promise.all(consumers.map((c) => c.disconnect().catch(() => undefined)));
  }
}

async function main(): Promise<void> {
  const dirs: string[] = [];
  const brokers: Record<Setting, Awaited<ReturnType<typeof startChildBroker>>> = {} as never;
  for (const s of SETTINGS) {
    const dir = tempDir('gregor-rebalance-');
    dirs.push(dir);
    brokers[s] = await startChildBroker(dir, 0, {
      'group.initial.rebalance.delay.ms': '0',
      ...(s === 'fast' ? { 'group.consumer.heartbeat.interval.ms': '500' } : {}),
    });
  }
  const started = Date.now();
  const timestamp = new Date().toISOString();
  const runs: { round: number; protocol: Protocol; setting: Setting; joinMs: number; leaveMs: number }[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < PROTOCOLS.length; k++) {
        const protocol = PROTOCOLS[(k + r) % PROTOCOLS.length] as Protocol;
        for (const setting of SETTINGS) {
          const res = await round(brokers[setting].bootstrap, protocol, setting, `${protocol}-${setting}-${r}`);
          runs.push({ round: r, protocol, setting, ...res });
          console.log(
            `rebalance-protocols: round ${r + 1}/${ROUNDS}, ${protocol}, ${setting}: join ${Math.round(res.joinMs)} ms, leave ${Math.round(res.leaveMs)} ms`,
          );
        }
      }
    }
  } finally {
    for (const s of SETTINGS) {
      brokers[s].child.kill('SIGTERM');
      await brokers[s].exited;
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
  const rows = SETTINGS.flatMap((setting) =>
    PROTOCOLS.map((protocol) => {
      const mine = runs.filter((x) => x.protocol === protocol && x.setting === setting);
      return {
        setting,
        protocol,
        joinMsMedian: fixed(median(mine.map((x) => x.joinMs)), 0),
        leaveMsMedian: fixed(median(mine.map((x) => x.leaveMs)), 0),
        joinMs: mine.map((x) => Math.round(x.joinMs)),
        leaveMs: mine.map((x) => Math.round(x.leaveMs)),
      };
    }),
  );
  const table = textTable(
    ['setting', 'protocol', 'join ms (median)', 'leave ms (median)', 'join ms per round', 'leave ms per round'],
    rows.map((r) => [r.setting, r.protocol, r.joinMsMedian, r.leaveMsMedian, r.joinMs.join(' / '), r.leaveMs.join(' / ')]),
  );
  console.log(
    `\nRebalance time, 3 librdkafka members, ${PARTITIONS} partitions, ${ROUNDS} rounds (${Math.round((Date.now() - started) / 1000)} s)\n\n${table}`,
  );
  const report = {
    schema: 'gregor-bench/1',
    id: 'rebalance-protocols',
    title: 'Issue 12: rebalance time of 3 members, consumer protocol (KIP-848) beside the classic protocol',
    description:
      'librdkafka 2.15 KafkaJS-style consumers; the third member joins (subscribe → every member holds its final assignment as assignment() reports it) and one leaves (disconnect → the other two hold all partitions). defaults: classic heartbeat.interval.ms 3000, broker group.consumer.heartbeat.interval.ms 5000; fast: 500 / 500.',
    machine: { node: process.version, loadavg: loadAverage() },
    headline: rows.map((r) => `${r.setting}, ${r.protocol}: join ${r.joinMsMedian} ms, leave ${r.leaveMsMedian} ms (medians)`),
    table: {
      columns: ['setting', 'protocol', 'join ms', 'leave ms'],
      rows: rows.map((r) => [r.setting, r.protocol, r.joinMsMedian, r.leaveMsMedian]),
    },
    rows,
    runs,
  };
  console.log(`wrote ${writeResult('rebalance-protocols', timestamp, report)}`);
}

await main();
