/**
 * Produce throughput while headless Chromium live-tails the topic (issue 19's last goal: within 10%
 * of the throughput without it), and where the machine's CPU went in each round.
 *
 * librdkafka (in this process) produces CONSOLE_TPUT_RECORDS (default 100,000) 1 KB records, acks=1,
 * into a 4-partition topic, in rounds alternating without and with a browser tab live-tailing that
 * topic, CONSOLE_TPUT_ROUNDS (default 5) of each. Each round records:
 * - records/s, and the broker's CPU per record (process and main thread: what a busy machine does
 *   not stretch as it does the wall time);
 * - the producer's CPU (this process: librdkafka's threads and its JS loop; the playwright driver
 *   is idle meanwhile);
 * - the CPU of every Chromium process (the tree below this process, by `--type`: browser, renderer,
 *   gpu-process, utility, zygote), and for a tail round the page's own figures (Chromium's
 *   Performance.getMetrics: script, layout + style, task time, main-thread CPU) and the rows shown;
 * - the whole machine's busy CPU (/proc/stat) and the 1-minute load average, so that other work on
 *   the machine shows: `othersCpuSeconds` is what none of the three used.
 * The summary has the medians, the ratios of each tail round to the round before it, and the CPU
 * each side used against what 2 cores give in the wall time.
 *
 *   npm run build && node dist/compat/bench/console-tail-browser.js
 *
 * CONSOLE_ROOT=<another built checkout> runs that checkout's broker (and so its console page);
 * CONSOLE_BASE_ROOT=<a built checkout> runs its broker beside this one's, their rounds taken in
 * turn (a side-by-side of two builds on the same machine load; CONSOLE_BASE_BUILD and
 * CONSOLE_BUILD name them). A tail round starts once Chromium is quiet after opening the page.
 * console-load.ts runs the same rounds after its page loads.
 * Writes compat/results/console-tail-browser-<ISO timestamp>.json.
 */
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import type { Browser, CDPSession } from 'playwright-core';
import { startGregor } from '../lib/broker-process.js';
import { launchChromium } from '../../test/helpers/browser.js';
import { loadAverage, median, writeResult } from './eos-common.js';
import { confluentVersion, cpuSeconds, envInt, mainThreadCpuSeconds, round, sleep, timedProduceRd } from './proc-stats.js';
import { chromiumCpuByKind, descendantsCpu, machineCpu, threadsCpu, topThreads } from './proc-tree.js';

export interface TailRound {
  tail: boolean;
  wallSeconds: number;
  recordsPerSec: number;
  brokerCpuUsPerRecord: number;
  brokerMainThreadCpuUsPerRecord: number;
  brokerCpuSeconds: number;
  producerCpuSeconds: number;
  chromiumCpuSeconds: number;
  rendererCpuSeconds: number;
  chromiumByKind: Record<string, number>;
  /** Chromium's busiest threads in the round (`kind/thread name`: CPU seconds) */
  chromiumThreads: Record<string, number>;
  /** the page's figures (tail rounds): Chromium's Performance.getMetrics over the round, ms */
  page: { scriptMs: number; layoutMs: number; taskMs: number; threadCpuMs: number } | null;
  tailRows: number;
  /** how long Chromium took to be quiet after the tab opened (not in the round) */
  settleSeconds: number | null;
  /** CPU the whole machine was busy, and what the broker, producer and Chromium do not account for */
  machineBusyCpuSeconds: number;
  othersCpuSeconds: number;
  load1: number;
}

type Metrics = Map<string, number>;

/** A broker to run rounds against: its console's base URL, bootstrap and process. */
export interface TailTarget {
  name: string;
  base: string;
  bootstrap: string;
  brokerPid: number;
}

/** Chromium's processes (below this one, brokers excluded) */
export const chromiumProcs = (brokers: readonly number[]) => descendantsCpu(process.pid, brokers).filter((p) => p.kind !== '');
export const chromiumTotal = (brokers: readonly number[]) => chromiumProcs(brokers).reduce((n, p) => n + p.cpuSeconds, 0);

/**
 * Waits until Chromium is quiet (its CPU grew less than 10 ms in each 250 ms step for `quietMs`,
 * or `maxMs` passed): a tab opened, or a tail's last draws after its producer stopped, are not
 * counted in the next round. Returns the seconds waited.
 */
export async function untilChromiumQuiet(brokers: readonly number[], maxMs: number, quietMs = 500): Promise<number> {
  const t0 = performance.now();
  for (let quiet = 0, last = chromiumTotal(brokers); quiet < quietMs / 250 && performance.now() - t0 < maxMs;) {
    await sleep(250);
    const now = chromiumTotal(brokers);
    quiet = now - last < 0.01 ? quiet + 1 : 0;
    last = now;
  }
  return round((performance.now() - t0) / 1000, 2);
}

/** Chromium's Performance.getMetrics of a tab, by name */
export const tabMetrics = async (cdp: CDPSession): Promise<Metrics> =>
  new Map((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));

/**
 * A tab on the topic's message page with the live tail on, once Chromium is quiet again: what a
 * page costs while it tails, not what opening it cost.
 */
async function openTail(browser: Browser, base: string, topic: string, brokers: readonly number[]) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('Performance.enable');
  await page.goto(`${base}/ui#/topics/${topic}/messages`);
  await page.getByRole('button', { name: 'Live tail' }).click();
  await page.getByRole('button', { name: 'Stop live tail' }).waitFor();
  const settleSeconds = await untilChromiumQuiet(brokers, 15_000);
  return { page, metrics: () => tabMetrics(cdp), settleSeconds };
}

export const valuePool = () =>
  Array.from({ length: 256 }, () => Buffer.from(Array.from({ length: 1024 }, () => 65 + Math.floor(Math.random() * 26))));

/** One round: `records` produced to `topic`, with or without a tab tailing it. */
async function runRound(
  browser: Browser,
  t: TailTarget,
  brokers: readonly number[],
  topic: string,
  records: number,
  tail: boolean,
  big: Buffer[],
) {
  const { base, bootstrap, brokerPid } = t;
  const tab = tail ? await openTail(browser, base, topic, brokers) : undefined;
  if (tab === undefined) await untilChromiumQuiet(brokers, 10_000); // the last round's tab closing
  const m0 = await tab?.metrics();
  const chrome0 = chromiumProcs(brokers);
  const threads0 = threadsCpu(chrome0);
  const machine0 = machineCpu();
  const b0 = cpuSeconds(brokerPid);
  const bm0 = mainThreadCpuSeconds(brokerPid);
  const p0 = process.cpuUsage();
  const t0 = performance.now();
  await timedProduceRd(bootstrap, {}, topic, null, records, (i) => big[i % big.length]!);
  const wall = (performance.now() - t0) / 1000;
  const p = process.cpuUsage(p0);
  const broker = cpuSeconds(brokerPid) - b0;
  const brokerMain = mainThreadCpuSeconds(brokerPid) - bm0;
  const machine = machineCpu().busySeconds - machine0.busySeconds;
  const chrome1 = chromiumProcs(brokers);
  const byKind = chromiumCpuByKind(chrome1, chrome0);
  const chromiumThreads = topThreads(threadsCpu(chrome1), threads0, 8);
  const m1 = await tab?.metrics();
  let tailRows = 0;
  let page: TailRound['page'] = null;
  if (tab !== undefined && m0 !== undefined && m1 !== undefined) {
    const d = (n: string) => round(((m1.get(n) ?? 0) - (m0.get(n) ?? 0)) * 1000, 0);
    page = {
      scriptMs: d('ScriptDuration'),
      layoutMs: d('LayoutDuration') + d('RecalcStyleDuration'),
      taskMs: d('TaskDuration'),
      threadCpuMs: d('ThreadTime'),
    };
    tailRows = await tab.page.getByRole('region', { name: 'Messages' }).locator('tbody tr').count();
    await tab.page.context().close();
  }
  const chromium = Object.values(byKind).reduce((a, b) => a + b, 0);
  const producer = (p.user + p.system) / 1e6;
  const x: TailRound = {
    tail,
    wallSeconds: round(wall, 2),
    recordsPerSec: Math.round(records / wall),
    brokerCpuUsPerRecord: round((broker * 1e6) / records, 2),
    brokerMainThreadCpuUsPerRecord: round((brokerMain * 1e6) / records, 2),
    brokerCpuSeconds: round(broker, 2),
    producerCpuSeconds: round(producer, 2),
    chromiumCpuSeconds: round(chromium, 2),
    rendererCpuSeconds: round(byKind['renderer'] ?? 0, 2),
    chromiumByKind: Object.fromEntries(Object.entries(byKind).map(([k, v]) => [k, round(v, 2)])),
    chromiumThreads,
    page,
    tailRows,
    settleSeconds: tab?.settleSeconds ?? null,
    machineBusyCpuSeconds: round(machine, 2),
    othersCpuSeconds: round(machine - broker - producer - chromium, 2),
    load1: round(loadavg()[0] ?? NaN, 2),
  };
  console.log(
    `${t.name} ${tail ? 'with tail   ' : 'without tail'}: ${x.recordsPerSec} records/s in ${x.wallSeconds} s, broker ${x.brokerCpuUsPerRecord} µs CPU/record ` +
      `(main ${x.brokerMainThreadCpuUsPerRecord}); CPU-s broker ${x.brokerCpuSeconds}, producer ${x.producerCpuSeconds}, ` +
      `chromium ${x.chromiumCpuSeconds} (renderer ${x.rendererCpuSeconds}), others ${x.othersCpuSeconds} of ${round(CORES * wall, 1)}; ` +
      `${page === null ? '' : `page script ${page.scriptMs} ms, layout ${page.layoutMs} ms, rows ${tailRows}; `}load ${x.load1}`,
  );
  return x;
}

const CORES = 2;

/**
 * Rounds without and with a tailing tab, alternating, `rounds` of each per target; with several
 * targets (builds side by side) each takes its pair of rounds in turn, so all see about the same machine.
 */
export async function tailRounds(opts: {
  browser: Browser;
  targets: readonly TailTarget[];
  topic: string;
  records: number;
  rounds: number;
}) {
  const { browser, targets, topic, records } = opts;
  const brokers = targets.map((t) => t.brokerPid);
  const big = valuePool();
  for (const t of targets) await timedProduceRd(t.bootstrap, {}, topic, null, 20_000, (i) => big[i % big.length]!); // warm-up
  const rounds = new Map<string, TailRound[]>(targets.map((t) => [t.name, []]));
  for (let r = 0; r < opts.rounds; r++)
    for (const t of targets)
      for (const tail of [false, true]) rounds.get(t.name)!.push(await runRound(browser, t, brokers, topic, records, tail, big));
  return targets.map((t) => ({ name: t.name, rounds: rounds.get(t.name)!, summary: summariseTail(rounds.get(t.name)!, CORES) }));
}

type Num = { [K in keyof TailRound]: TailRound[K] extends number ? K : never }[keyof TailRound];

export function summariseTail(rounds: readonly TailRound[], cores: number) {
  const series = (tail: boolean, k: Num) => rounds.filter((x) => x.tail === tail).map((x) => x[k]);
  const spread = (xs: number[]) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
  const ratio = (k: Num) => round(median(series(true, k)) / median(series(false, k)), 3);
  // rounds next to each other see about the same machine: their ratios
  const pairs = (k: Num) => rounds.flatMap((x, i) => (x.tail && rounds[i - 1] !== undefined ? [round(x[k] / rounds[i - 1]![k], 3)] : []));
  const side = (tail: boolean) => {
    const rs = rounds.filter((x) => x.tail === tail);
    const sum = (f: (x: TailRound) => number) => rs.reduce((n, x) => n + f(x), 0);
    const wall = sum((x) => x.wallSeconds);
    return {
      recordsPerSec: spread(series(tail, 'recordsPerSec')),
      brokerCpuUsPerRecord: spread(series(tail, 'brokerCpuUsPerRecord')),
      brokerMainThreadCpuUsPerRecord: spread(series(tail, 'brokerMainThreadCpuUsPerRecord')),
      chromiumCpuSecondsPerRound: spread(series(tail, 'chromiumCpuSeconds')),
      rendererCpuSecondsPerRound: spread(series(tail, 'rendererCpuSeconds')),
      load1: spread(series(tail, 'load1')),
      /** the share of `cores` x wall (all rounds of the side) that each used */
      shareOfCores: {
        broker: round(sum((x) => x.brokerCpuSeconds) / (cores * wall), 3),
        producer: round(sum((x) => x.producerCpuSeconds) / (cores * wall), 3),
        chromium: round(sum((x) => x.chromiumCpuSeconds) / (cores * wall), 3),
        others: round(sum((x) => x.othersCpuSeconds) / (cores * wall), 3),
        machineBusy: round(sum((x) => x.machineBusyCpuSeconds) / (cores * wall), 3),
      },
    };
  };
  return {
    withoutTail: side(false),
    withTail: side(true),
    tailOverNoTail: ratio('recordsPerSec'),
    tailOverNoTailPairs: pairs('recordsPerSec'),
    cpuPerRecordTailOverNoTail: ratio('brokerCpuUsPerRecord'),
    cpuPerRecordPairs: pairs('brokerCpuUsPerRecord'),
    withinTenPercent: ratio('recordsPerSec') >= 0.9,
  };
}

async function startTarget(name: string, root: string | undefined): Promise<{ target: TailTarget; stop: () => Promise<void> }> {
  const g = await startGregor({ 'admin.listener': '127.0.0.1:0' }, root === undefined ? {} : { root });
  try {
    const admin = /"admin":"([^"]+)"/.exec(g.log())?.[1];
    if (admin === undefined) throw new Error('no admin address in the ready line');
    const kafka = new Kafka({ clientId: 'console-tail-browser', brokers: [g.bootstrap], logLevel: logLevel.NOTHING });
    const kadmin = kafka.admin();
    await kadmin.connect();
    await kadmin.createTopics({ topics: [{ topic: 'tput', numPartitions: 4 }] });
    await kadmin.disconnect();
    return { target: { name, base: `http://${admin}`, bootstrap: g.bootstrap, brokerPid: g.pid }, stop: () => g.stop() };
  } catch (e) {
    await g.stop();
    throw e;
  }
}

/**
 * Starts the brokers the environment names (CONSOLE_BASE_ROOT's beside CONSOLE_ROOT's or this
 * checkout's, named by CONSOLE_BASE_BUILD and CONSOLE_BUILD) and Chromium, runs `f`, stops them all.
 */
export async function withBuilds<T>(f: (browser: Browser, targets: TailTarget[]) => Promise<T>): Promise<T> {
  const root = process.env['CONSOLE_ROOT'];
  const baseRoot = process.env['CONSOLE_BASE_ROOT'];
  const started: { target: TailTarget; stop: () => Promise<void> }[] = [];
  let browser: Browser | undefined;
  try {
    if (baseRoot !== undefined) started.push(await startTarget(process.env['CONSOLE_BASE_BUILD'] ?? 'base', baseRoot));
    started.push(await startTarget(process.env['CONSOLE_BUILD'] ?? root ?? 'this', root));
    browser = await launchChromium();
    return await f(
      browser,
      started.map((s) => s.target),
    );
  } finally {
    await browser?.close();
    for (const s of started) await s.stop();
  }
}

/** The checkouts measured, for the result file. */
export const buildRoots = () => ({ base: process.env['CONSOLE_BASE_ROOT'] ?? null, this: process.env['CONSOLE_ROOT'] ?? 'this checkout' });

async function main(): Promise<void> {
  const records = envInt('CONSOLE_TPUT_RECORDS', 100_000);
  const rounds = envInt('CONSOLE_TPUT_ROUNDS', 5);
  await withBuilds(async (browser, targets) => {
    const loadStart = loadAverage();
    const builds = await tailRounds({ browser, targets, topic: 'tput', records, rounds });
    for (const b of builds) console.log(`${b.name}: ${JSON.stringify(b.summary)}`);
    const file = writeResult('console-tail-browser', new Date().toISOString(), {
      id: 'console-tail-browser',
      client: `librdkafka (@confluentinc/kafka-javascript ${confluentVersion()}), headless chromium (playwright-core)`,
      roots: buildRoots(),
      settings: { records, rounds, valueBytes: 1024, acks: 1, partitions: 4 },
      loadAverages: { start: loadStart, end: loadAverage() },
      node: process.version,
      builds,
    });
    console.log(`results in ${file}`);
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
