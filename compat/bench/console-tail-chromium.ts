/**
 * Chromium's CPU while one tab keeps tailing a busy topic (issue 19), the tab opened once and left
 * tailing as a user leaves it, so its rows pile up to the page's cap (console-tail-browser.ts opens
 * a new tab each round, whose rows do not). librdkafka produces CONSOLE_TPUT_RECORDS (default
 * 400,000) 1 KB records into a 4-partition topic, CONSOLE_TPUT_ROUNDS (default 3) times per build;
 * each round, started once Chromium is quiet (the other build's tab draws what its last rounds sent
 * for a few seconds after its producer stopped): the CPU of all Chromium processes over its wall
 * time (cores busy while tailing), the tailing tab's renderer alone (Performance.getMetrics
 * ProcessTime), and the rows shown. With CONSOLE_BASE_ROOT=<built checkout> that build's broker
 * and page are measured too, a round of each in turn (CONSOLE_ROOT: another checkout in place of
 * this one).
 *
 *   npm run build && node dist/compat/bench/console-tail-chromium.js
 *
 * Writes compat/results/console-tail-chromium-<ISO timestamp>.json.
 */
import type { CDPSession, Page } from 'playwright-core';
import {
  buildRoots,
  chromiumTotal,
  tabMetrics,
  type TailTarget,
  untilChromiumQuiet,
  valuePool,
  withBuilds,
} from './console-tail-browser.js';
import { loadAverage, median, writeResult } from './eos-common.js';
import { envInt, round, sleep, timedProduceRd } from './proc-stats.js';

async function main(): Promise<void> {
  const records = envInt('CONSOLE_TPUT_RECORDS', 400_000);
  const rounds = envInt('CONSOLE_TPUT_ROUNDS', 3);
  await withBuilds(async (b, targets) => {
    const brokers = targets.map((t) => t.brokerPid);
    const tabs = new Map<string, { page: Page; cdp: CDPSession }>();
    for (const target of targets) {
      const ctx = await b.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await ctx.newPage();
      const cdp = await ctx.newCDPSession(page);
      await cdp.send('Performance.enable');
      await page.goto(`${target.base}/ui#/topics/tput/messages`);
      await page.getByRole('button', { name: 'Live tail' }).click();
      await page.getByRole('button', { name: 'Stop live tail' }).waitFor();
      tabs.set(target.name, { page, cdp });
    }
    await sleep(3000);
    const big = valuePool();
    const out = new Map<string, { cores: number; tabCores: number; rows: number; recordsPerSec: number; load1: number }[]>();
    const round1 = async (t: TailTarget) => {
      const tab = tabs.get(t.name)!;
      // the other build's tab draws what its last rounds sent for a few seconds after its producer
      // stopped (a busy tail's rounds are 2 s apart): quiet for 3 s
      await untilChromiumQuiet(brokers, 15_000, 3000);
      const c0 = chromiumTotal(brokers);
      const m0 = await tabMetrics(tab.cdp);
      const t0 = performance.now();
      await timedProduceRd(t.bootstrap, {}, 'tput', null, records, (i) => big[i % big.length]!);
      const wall = (performance.now() - t0) / 1000;
      const cores = round((chromiumTotal(brokers) - c0) / wall, 3);
      const tabCores = round((((await tabMetrics(tab.cdp)).get('ProcessTime') ?? 0) - (m0.get('ProcessTime') ?? 0)) / wall, 3);
      const rows = await tab.page.locator('tbody tr').count();
      const x = { cores, tabCores, rows, recordsPerSec: Math.round(records / wall), load1: loadAverage()[0] ?? NaN };
      console.log(
        `${t.name}: Chromium ${cores} cores while tailing (the tab's renderer ${tabCores}), ${rows} rows, ${x.recordsPerSec} records/s, load ${x.load1}`,
      );
      out.set(t.name, [...(out.get(t.name) ?? []), x]);
    };
    for (let r = 0; r < rounds; r++) for (const target of targets) await round1(target);
    const builds = [...out].map(([name, rs]) => ({
      name,
      medianChromiumCores: median(rs.map((x) => x.cores)),
      medianTabCores: median(rs.map((x) => x.tabCores)),
      rounds: rs,
    }));
    for (const x of builds) console.log(`${x.name}: median ${x.medianChromiumCores} cores (the tab's renderer ${x.medianTabCores})`);
    const file = writeResult('console-tail-chromium', new Date().toISOString(), {
      id: 'console-tail-chromium',
      roots: buildRoots(),
      settings: { records, rounds, valueBytes: 1024, partitions: 4 },
      loadAverage: loadAverage(),
      node: process.version,
      builds,
    });
    console.log(`results in ${file}`);
  });
}

await main();
