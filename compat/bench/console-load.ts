/**
 * The web console at scale (issue 19's figures), in headless Chromium (Debian's chromium, through
 * playwright-core) against one gregor child process:
 * 1. Page loads: a topic of CONSOLE_PARTITIONS (default 10,000) partitions holding CONSOLE_MESSAGES
 *    (default 1,000,000) 100-byte records from librdkafka, and a group with an offset committed on
 *    every partition (reset to the start: all of it is lag). Each page (overview, topics, the topic's
 *    page, the message browser's first page, groups, the group's page, requests) is opened
 *    CONSOLE_LOADS times (default 5) in a new tab; the time from navigation to its content being
 *    visible (a row of its main table) is measured, and the median reported. Goal: < 1 s each.
 * 2. Produce while tailing: librdkafka produces CONSOLE_TPUT_RECORDS (default 200,000) 1 KB records,
 *    acks=1, into a 4-partition topic, with no browser, then with a browser tab live-tailing that
 *    topic, alternating, CONSOLE_TPUT_ROUNDS (default 3) each; records/s and broker CPU per record.
 *    Goal: with the tail within 10% of without.
 *
 *   npm run build && node dist/compat/bench/console-load.js
 *
 * Writes compat/results/console-load-<ISO timestamp>.json.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { Browser, Page } from 'playwright-core';
import { startGregor } from '../lib/broker-process.js';
import { launchChromium } from '../../test/helpers/browser.js';
import { RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';
import { loadAverage, writeResult } from './eos-common.js';
import { confluentVersion, cpuSeconds, envInt, round, timedProduceRd } from './proc-stats.js';

/** a page not shown within this long counts as this long */
const LOAD_TIMEOUT_MS = 30_000;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function produce(bootstrap: string, topic: string, n: number, value: (i: number) => Buffer): Promise<number> {
  return timedProduceRd(bootstrap, {}, topic, null, n, value);
}

interface PageSpec {
  name: string;
  hash: string;
  /** what shows the page's content is there */
  ready: (page: Page) => Promise<void>;
}

async function timeLoad(browser: Browser, base: string, spec: PageSpec): Promise<number> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const page = await ctx.newPage();
    // the CSRF cookie and the assets are in the cache as they would be for a user who opened the console before
    await page.goto(`${base}/ui#/requests`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    await page.goto('about:blank');
    const t0 = performance.now();
    await page.goto(`${base}/ui${spec.hash}`, { waitUntil: 'commit' });
    await spec.ready(page);
    return performance.now() - t0;
  } finally {
    await ctx.close();
  }
}

async function main(): Promise<void> {
  const partitions = envInt('CONSOLE_PARTITIONS', 10_000);
  const messages = envInt('CONSOLE_MESSAGES', 1_000_000);
  const loads = envInt('CONSOLE_LOADS', 5);
  const tputRecords = envInt('CONSOLE_TPUT_RECORDS', 200_000);
  const tputRounds = envInt('CONSOLE_TPUT_ROUNDS', 3);
  const g = await startGregor({ 'admin.listener': '127.0.0.1:0', 'group.initial.rebalance.delay.ms': '0' });
  let browser: Browser | undefined;
  try {
    const admin = /"admin":"([^"]+)"/.exec(g.log())?.[1];
    if (admin === undefined) throw new Error('no admin address in the ready line');
    const base = `http://${admin}`;
    const c = await RawClient.connect(g.bootstrap);
    await rawCreateTopics(c, [
      { name: 'big', partitions },
      { name: 'tput', partitions: 4 },
    ]);
    c.destroy();
    const small = Array.from({ length: 64 }, (_, i) => Buffer.from(JSON.stringify({ id: i, pad: 'x'.repeat(70) })));
    const loadSecs = await produce(g.bootstrap, 'big', messages, (i) => small[i % small.length]!);
    console.log(`loaded ${messages} records into ${partitions} partitions in ${round(loadSecs, 1)} s`);

    // a group with a committed offset (0: everything is lag) on every partition
    const kafka = new Kafka({ clientId: 'console-load', brokers: [g.bootstrap], logLevel: logLevel.NOTHING });
    const kadmin = kafka.admin();
    await kadmin.connect();
    await kadmin.setOffsets({
      groupId: 'load-g',
      topic: 'big',
      partitions: Array.from({ length: partitions }, (_, partition) => ({ partition, offset: '0' })),
    });
    await kadmin.disconnect();

    browser = await launchChromium();
    const row = (page: Page, region: string) => page.getByRole('region', { name: region }).locator('tbody tr').first().waitFor();
    const specs: PageSpec[] = [
      { name: 'overview', hash: '#/', ready: (p) => p.locator('.stat', { hasText: 'Partitions' }).getByText(/\d/).first().waitFor() },
      { name: 'topics', hash: '#/topics', ready: (p) => p.getByRole('link', { name: 'big', exact: true }).waitFor() },
      { name: 'topic', hash: '#/topics/big', ready: (p) => row(p, 'Partitions') },
      { name: 'messages', hash: '#/topics/big/messages', ready: (p) => row(p, 'Messages') },
      { name: 'groups', hash: '#/groups', ready: (p) => p.getByRole('link', { name: 'load-g' }).waitFor() },
      { name: 'group', hash: '#/groups/load-g', ready: (p) => row(p, 'Lag per partition') },
      { name: 'requests', hash: '#/requests', ready: (p) => row(p, 'Recent requests') },
    ];
    const pageLoads: { page: string; ms: number[]; medianMs: number }[] = [];
    for (const spec of specs) {
      const ms: number[] = [];
      for (let i = 0; i < loads; i++)
        ms.push(
          round(
            await timeLoad(browser, base, spec).catch((e: unknown) => {
              console.log(`${spec.name}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
              return LOAD_TIMEOUT_MS;
            }),
            1,
          ),
        );
      pageLoads.push({ page: spec.name, ms, medianMs: median(ms) });
      console.log(`${spec.name}: median ${median(ms)} ms (${ms.join(', ')})`);
    }

    // produce throughput, alternating without and with a browser tab live-tailing the topic
    const big = Array.from({ length: 256 }, () => Buffer.from(Array.from({ length: 1024 }, () => 65 + Math.floor(Math.random() * 26))));
    await produce(g.bootstrap, 'tput', 20_000, (i) => big[i % big.length]!); // warm-up
    const rounds: { tail: boolean; recordsPerSec: number; brokerCpuUsPerRecord: number; tailRows: number }[] = [];
    for (let r = 0; r < tputRounds * 2; r++) {
      const tail = r % 2 === 1;
      let page: Page | undefined;
      if (tail) {
        const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        page = await ctx.newPage();
        await page.goto(`${base}/ui#/topics/tput/messages`);
        await page.getByRole('button', { name: 'Live tail' }).click();
        await page.getByRole('button', { name: 'Stop live tail' }).waitFor();
      }
      const cpu0 = cpuSeconds(g.pid);
      const secs = await produce(g.bootstrap, 'tput', tputRecords, (i) => big[i % big.length]!);
      const cpu = cpuSeconds(g.pid) - cpu0;
      let tailRows = 0;
      if (page !== undefined) {
        tailRows = await page.getByRole('region', { name: 'Messages' }).locator('tbody tr').count();
        await page.context().close();
      }
      const x = {
        tail,
        recordsPerSec: Math.round(tputRecords / secs),
        brokerCpuUsPerRecord: round((cpu * 1e6) / tputRecords, 2),
        tailRows,
      };
      rounds.push(x);
      console.log(
        `${tail ? 'with tail   ' : 'without tail'}: ${x.recordsPerSec} records/s, broker ${x.brokerCpuUsPerRecord} µs CPU/record, rows shown ${tailRows}`,
      );
    }
    const med = (tail: boolean, k: 'recordsPerSec' | 'brokerCpuUsPerRecord') =>
      median(rounds.filter((x) => x.tail === tail).map((x) => x[k]));
    const summary = {
      pagesUnder1s: pageLoads.every((p) => p.medianMs < 1000),
      slowestPage: [...pageLoads].sort((a, b) => b.medianMs - a.medianMs)[0],
      withoutTailRecordsPerSec: med(false, 'recordsPerSec'),
      withTailRecordsPerSec: med(true, 'recordsPerSec'),
      tailOverNoTail: round(med(true, 'recordsPerSec') / med(false, 'recordsPerSec'), 3),
      withoutTailBrokerCpuUsPerRecord: med(false, 'brokerCpuUsPerRecord'),
      withTailBrokerCpuUsPerRecord: med(true, 'brokerCpuUsPerRecord'),
    };
    console.log(JSON.stringify(summary));
    const file = writeResult('console-load', new Date().toISOString(), {
      id: 'console-load',
      client: `librdkafka (@confluentinc/kafka-javascript ${confluentVersion()}), headless chromium (playwright-core)`,
      settings: { partitions, messages, loads, tputRecords, tputRounds, tputValueBytes: 1024, acks: 1 },
      loadAverage: loadAverage(),
      node: process.version,
      summary,
      pageLoads,
      rounds,
    });
    console.log(`results in ${file}`);
  } finally {
    await browser?.close();
    await g.stop();
  }
}

await main();
