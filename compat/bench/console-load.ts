/**
 * The web console at scale (issue 19's figures), in headless Chromium (Debian's chromium, through
 * playwright-core) against one gregor child process:
 * 1. Page loads: a topic of CONSOLE_PARTITIONS (default 10,000) partitions holding CONSOLE_MESSAGES
 *    (default 1,000,000) 100-byte records from librdkafka, and a group with an offset committed on
 *    every partition (reset to the start: all of it is lag). Each page (overview, topics, the topic's
 *    page, the message browser's first page, groups, the group's page, requests) is opened
 *    CONSOLE_LOADS times (default 5) in a new tab; the time from navigation to its content being
 *    visible (a row of its main table) is measured, and the median reported. Goal: < 1 s each.
 *    Each load is split (console-page-metrics.ts) into the broker's time and bytes per API call,
 *    the browser's script/layout/task time, first contentful paint and the in-page usable time;
 *    then each API is called CONSOLE_API_CALLS times (default 5) without a browser, for the
 *    broker's own time per call (Server-Timing) with nothing else running.
 * 2. Produce while tailing (console-tail-browser.ts, which also runs alone): librdkafka produces
 *    CONSOLE_TPUT_RECORDS (default 100,000) 1 KB records, acks=1, into a 4-partition topic, with no
 *    browser, then with a browser tab live-tailing that topic, alternating, CONSOLE_TPUT_ROUNDS
 *    (default 5) each; records/s, broker CPU per record, the producer's and each Chromium process's
 *    CPU and the load of each round. Goal: with the tail within 10% of without.
 *
 *   npm run build && node dist/compat/bench/console-load.js
 *
 * Writes compat/results/console-load-<ISO timestamp>.json.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { Browser, Page } from 'playwright-core';
import { startGregor } from '../lib/broker-process.js';
import { launchChromium } from '../../test/helpers/browser.js';
import { measureLoad, type PageLoad, type PageSpec, summarise } from './console-page-metrics.js';
import { loadAverage, writeResult } from './eos-common.js';
import { confluentVersion, envInt, round, timedProduceRd } from './proc-stats.js';
import { tailRounds } from './console-tail-browser.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function produce(bootstrap: string, topic: string, n: number, value: (i: number) => Buffer): Promise<number> {
  return timedProduceRd(bootstrap, {}, topic, null, n, value);
}

/** The broker's time for each of the pages' main API calls, from Node with no browser running. */
async function apiTimings(base: string, calls: number) {
  const paths = ['/overview', '/history?seconds=900', '/topics', '/topics/big', '/topics/big/history?seconds=900'];
  paths.push('/topics/big/messages?partition=all&from=end&limit=50&q=&filter=', '/groups', '/groups/load-g', '/requests?limit=200');
  const out = [];
  for (const path of paths) {
    const server: number[] = [];
    const cpu: number[] = [];
    const wall: number[] = [];
    let bytes = 0;
    for (let i = 0; i < calls; i++) {
      const t0 = performance.now();
      const res = await fetch(`${base}/ui/api${path}`);
      const body = await res.arrayBuffer();
      wall.push(performance.now() - t0);
      bytes = body.byteLength;
      const st = res.headers.get('server-timing') ?? '';
      const app = /app;dur=([\d.]+)/.exec(st)?.[1];
      const c = /cpu;dur=([\d.]+)/.exec(st)?.[1];
      if (app !== undefined) server.push(Number(app));
      if (c !== undefined) cpu.push(Number(c));
    }
    const x = {
      path,
      medianServerMs: server.length > 0 ? round(median(server), 2) : null,
      medianServerCpuMs: cpu.length > 0 ? round(median(cpu), 2) : null,
      medianWallMs: round(median(wall), 1),
      bytes,
    };
    out.push(x);
    console.log(
      `  ${path}: server ${x.medianServerMs ?? '-'} ms (cpu ${x.medianServerCpuMs ?? '-'}), wall ${x.medianWallMs} ms, ${bytes} B`,
    );
  }
  return out;
}

async function main(): Promise<void> {
  const partitions = envInt('CONSOLE_PARTITIONS', 10_000);
  const messages = envInt('CONSOLE_MESSAGES', 1_000_000);
  const loads = envInt('CONSOLE_LOADS', 5);
  const apiCalls = envInt('CONSOLE_API_CALLS', 5);
  const tputRecords = envInt('CONSOLE_TPUT_RECORDS', 100_000);
  const tputRounds = envInt('CONSOLE_TPUT_ROUNDS', 5);
  const loadAverages: Record<string, number[]> = { start: loadAverage() };
  const g = await startGregor({ 'admin.listener': '127.0.0.1:0', 'group.initial.rebalance.delay.ms': '0' });
  let browser: Browser | undefined;
  try {
    const admin = /"admin":"([^"]+)"/.exec(g.log())?.[1];
    if (admin === undefined) throw new Error('no admin address in the ready line');
    const base = `http://${admin}`;
    // a request may write 10,000 metadata records at most (Kafka's controller limit): the big topic
    // is created with half its partitions and grown to the rest
    const kafka = new Kafka({ clientId: 'console-load', brokers: [g.bootstrap], logLevel: logLevel.NOTHING });
    const kadmin = kafka.admin();
    await kadmin.connect();
    const half = Math.ceil(partitions / 2);
    await kadmin.createTopics({
      topics: [
        { topic: 'big', numPartitions: half },
        { topic: 'tput', numPartitions: 4 },
      ],
      timeout: 600_000,
    });
    if (partitions > half) await kadmin.createPartitions({ topicPartitions: [{ topic: 'big', count: partitions }], timeout: 600_000 });
    const small = Array.from({ length: 64 }, (_, i) => Buffer.from(JSON.stringify({ id: i, pad: 'x'.repeat(70) })));
    const loadSecs = await produce(g.bootstrap, 'big', messages, (i) => small[i % small.length]!);
    console.log(`loaded ${messages} records into ${partitions} partitions in ${round(loadSecs, 1)} s`);

    // a group with a committed offset (0: everything is lag) on every partition
    await kadmin.setOffsets({
      groupId: 'load-g',
      topic: 'big',
      partitions: Array.from({ length: partitions }, (_, partition) => ({ partition, offset: '0' })),
    });
    await kadmin.disconnect();

    browser = await launchChromium();
    const row = (page: Page, region: string) => page.getByRole('region', { name: region }).locator('tbody tr').first().waitFor();
    const specs: PageSpec[] = [
      {
        name: 'overview',
        hash: '#/',
        ready: (p) => p.locator('.stat', { hasText: 'Partitions' }).getByText(/\d/).first().waitFor(),
        usable: { kind: 'stat', label: 'Partitions' },
      },
      {
        name: 'topics',
        hash: '#/topics',
        ready: (p) => p.getByRole('link', { name: 'big', exact: true }).waitFor(),
        usable: { kind: 'link', href: '#/topics/big' },
      },
      { name: 'topic', hash: '#/topics/big', ready: (p) => row(p, 'Partitions'), usable: { kind: 'row', region: 'Partitions' } },
      { name: 'messages', hash: '#/topics/big/messages', ready: (p) => row(p, 'Messages'), usable: { kind: 'row', region: 'Messages' } },
      {
        name: 'groups',
        hash: '#/groups',
        ready: (p) => p.getByRole('link', { name: 'load-g' }).waitFor(),
        usable: { kind: 'link', href: '#/groups/load-g' },
      },
      {
        name: 'group',
        hash: '#/groups/load-g',
        ready: (p) => row(p, 'Lag per partition'),
        usable: { kind: 'row', region: 'Lag per partition' },
      },
      { name: 'requests', hash: '#/requests', ready: (p) => row(p, 'Recent requests'), usable: { kind: 'row', region: 'Recent requests' } },
    ];
    loadAverages['pages'] = loadAverage();
    const pageLoads: (ReturnType<typeof summarise> & { loads: PageLoad[]; failures: number })[] = [];
    for (const spec of specs) {
      const done: PageLoad[] = [];
      let failures = 0;
      for (let i = 0; i < loads; i++) {
        try {
          done.push(await measureLoad(browser, base, spec, g.pid));
        } catch (e) {
          failures++;
          console.log(`${spec.name}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
        }
      }
      const s = summarise(spec.name, done);
      pageLoads.push({ ...s, failures, loads: done });
      console.log(
        `${spec.name}: wall ${s.medianWallMs} ms, usable ${s.medianUsableMs} ms (FCP ${s.medianFirstContentfulPaintMs}), browser task ${s.medianTaskMs} ms ` +
          `(script ${s.medianScriptMs}, layout ${s.medianLayoutMs}; CPU ${s.medianRendererThreadCpuMs}), broker ${s.medianApiServerMs} ms on ${s.medianApiBytes} B of API, ` +
          `broker CPU ${s.medianBrokerCpuMs} ms${failures > 0 ? `, ${failures} failed` : ''}`,
      );
    }
    loadAverages['api'] = loadAverage();
    console.log('API calls without a browser:');
    const apis = await apiTimings(base, apiCalls);
    const routeTimings = await fetch(`${base}/ui/api/timings`)
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null);

    // produce throughput, alternating without and with a browser tab live-tailing the topic
    loadAverages['tput'] = loadAverage();
    const [tail] = await tailRounds({
      browser,
      targets: [{ name: 'this', base, bootstrap: g.bootstrap, brokerPid: g.pid }],
      topic: 'tput',
      records: tputRecords,
      rounds: tputRounds,
    });
    loadAverages['end'] = loadAverage();
    const summary = {
      pagesUnder1s: pageLoads.every((p) => p.medianWallMs < 1000),
      pagesUnder1sByTaskPlusServer: pageLoads.every((p) => p.medianTaskPlusServerMs < 1000),
      pagesUnder1sByCpu: pageLoads.every((p) => p.medianRendererPlusBrokerCpuMs < 1000),
      slowestPage: [...pageLoads].sort((a, b) => b.medianWallMs - a.medianWallMs)[0]?.page,
      tail: tail?.summary,
    };
    console.log(JSON.stringify(summary));
    const file = writeResult('console-load', new Date().toISOString(), {
      id: 'console-load',
      client: `librdkafka (@confluentinc/kafka-javascript ${confluentVersion()}), headless chromium (playwright-core)`,
      settings: { partitions, messages, loads, apiCalls, tputRecords, tputRounds, tputValueBytes: 1024, acks: 1 },
      build: process.env['CONSOLE_BUILD'] ?? null,
      loadAverage: loadAverage(),
      loadAverages,
      node: process.version,
      summary,
      pageLoads,
      apiTimings: apis,
      routeTimings,
      rounds: tail?.rounds,
    });
    console.log(`results in ${file}`);
  } finally {
    await browser?.close();
    await g.stop();
  }
}

await main();
