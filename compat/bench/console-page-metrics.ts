/**
 * One console page load in headless Chromium, split into what a busy machine cannot hide (issue 19):
 * - the broker's time per API call (its Server-Timing header, lib/console/timing.ts: wall and CPU
 *   from the request's arrival to the response headers) and the bytes of each call (Resource Timing);
 * - the browser's own work (Chromium's Performance.getMetrics over CDP: ScriptDuration,
 *   LayoutDuration + RecalcStyleDuration, TaskDuration, which a busy machine stretches, and the
 *   renderer's CPU time, ThreadTime and ProcessTime, which it does not);
 * - first contentful paint and the moment the page is usable (its main content is in the DOM,
 *   seen from inside the page by a MutationObserver installed before the page's scripts run), both
 *   from navigation start, so the test driver's round trips are not in them;
 * - the broker process's CPU over the whole load (/proc), and the wall time as seen from outside.
 */
import type { Browser, Page } from 'playwright-core';
import { cpuSeconds, round } from './proc-stats.js';

/** What shows that a page's content is there, checked inside the page. */
export type UsableCheck = { kind: 'stat'; label: string } | { kind: 'link'; href: string } | { kind: 'row'; region: string };

export interface PageSpec {
  name: string;
  hash: string;
  /** the same condition as `usable`, through playwright (the outside wall time ends here) */
  ready: (page: Page) => Promise<void>;
  usable: UsableCheck;
}

export interface ApiCall {
  path: string;
  startMs: number;
  endMs: number;
  /** the broker's wall and CPU time for the call (Server-Timing) */
  serverMs: number | null;
  serverCpuMs: number | null;
  bytes: number;
}

export interface PageLoad {
  wallMs: number;
  usableMs: number | null;
  firstContentfulPaintMs: number | null;
  scriptMs: number;
  layoutMs: number;
  taskMs: number;
  /** CPU time of the renderer's main thread and of its whole process (robust to a busy machine, unlike the durations) */
  rendererThreadCpuMs: number;
  rendererProcessCpuMs: number;
  brokerCpuMs: number;
  /** API calls finished by the time the page was usable (the ones it waited for, and any earlier) */
  apiCalls: ApiCall[];
  apiServerMs: number;
  apiBytes: number;
  assetBytes: number;
}

function probeScript(check: UsableCheck): string {
  return `(() => {
    const check = ${JSON.stringify(check)};
    const ok = () => {
      if (check.kind === 'stat')
        return [...document.querySelectorAll('.stat')].some((e) => e.textContent.includes(check.label) && /\\d/.test(e.querySelector('dd')?.textContent ?? ''));
      if (check.kind === 'link') return document.querySelector('a[href="' + check.href + '"]') !== null;
      return document.querySelector('[role="region"][aria-label="' + check.region + '"] tbody tr') !== null;
    };
    const obs = new MutationObserver(() => {
      if (window.__gregorUsable === undefined && ok()) {
        window.__gregorUsable = performance.now();
        obs.disconnect();
      }
    });
    obs.observe(document, { childList: true, subtree: true, characterData: true });
  })();`;
}

const COLLECT = `(() => {
  const timing = (e, n) => e.serverTiming?.find((s) => s.name === n)?.duration ?? null;
  const res = performance.getEntriesByType('resource');
  return {
    usable: window.__gregorUsable ?? null,
    fcp: performance.getEntriesByType('paint').find((p) => p.name === 'first-contentful-paint')?.startTime ?? null,
    api: res.filter((e) => e.name.includes('/ui/api/')).map((e) => ({
      path: new URL(e.name).pathname.slice('/ui/api'.length) + new URL(e.name).search,
      startMs: e.startTime,
      endMs: e.responseEnd,
      serverMs: timing(e, 'app'),
      serverCpuMs: timing(e, 'cpu'),
      bytes: e.encodedBodySize,
    })),
    assetBytes: res.filter((e) => e.name.includes('/ui/assets/')).reduce((n, e) => n + e.encodedBodySize, 0)
      + (performance.getEntriesByType('navigation')[0]?.encodedBodySize ?? 0),
  };
})()`;

interface Collected {
  usable: number | null;
  fcp: number | null;
  api: ApiCall[];
  assetBytes: number;
}

const metricsOf = (r: { metrics: { name: string; value: number }[] }): Map<string, number> =>
  new Map(r.metrics.map((m) => [m.name, m.value]));

export async function measureLoad(browser: Browser, base: string, spec: PageSpec, brokerPid: number): Promise<PageLoad> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    // the CSRF cookie and the assets as a user who opened the console before has them
    const warm = await ctx.newPage();
    await warm.goto(`${base}/ui#/requests`);
    await warm.getByRole('heading', { level: 1 }).first().waitFor();
    await warm.close();
    const page = await ctx.newPage();
    await page.addInitScript({ content: probeScript(spec.usable) });
    const cdp = await ctx.newCDPSession(page);
    await cdp.send('Performance.enable');
    const m0 = metricsOf(await cdp.send('Performance.getMetrics'));
    const cpu0 = cpuSeconds(brokerPid);
    const t0 = performance.now();
    await page.goto(`${base}/ui${spec.hash}`, { waitUntil: 'commit' });
    await spec.ready(page);
    const wallMs = performance.now() - t0;
    const brokerCpuMs = (cpuSeconds(brokerPid) - cpu0) * 1000;
    const m1 = metricsOf(await cdp.send('Performance.getMetrics'));
    const c = await page.evaluate<Collected>(COLLECT);
    // a renderer swapped on navigation starts its counters again
    const d = (name: string) => {
      const a = m0.get(name) ?? 0;
      const b = m1.get(name) ?? 0;
      return round((b >= a ? b - a : b) * 1000, 1);
    };
    const until = c.usable ?? Infinity;
    const apiCalls = c.api
      .filter((x) => x.endMs <= until)
      .map((x) => ({
        ...x,
        startMs: round(x.startMs, 1),
        endMs: round(x.endMs, 1),
      }));
    return {
      wallMs: round(wallMs, 1),
      usableMs: c.usable === null ? null : round(c.usable, 1),
      firstContentfulPaintMs: c.fcp === null ? null : round(c.fcp, 1),
      scriptMs: d('ScriptDuration'),
      layoutMs: round(d('LayoutDuration') + d('RecalcStyleDuration'), 1),
      taskMs: d('TaskDuration'),
      rendererThreadCpuMs: d('ThreadTime'),
      rendererProcessCpuMs: d('ProcessTime'),
      brokerCpuMs: round(brokerCpuMs, 0),
      apiCalls,
      apiServerMs: round(
        apiCalls.reduce((n, x) => n + (x.serverMs ?? 0), 0),
        1,
      ),
      apiBytes: apiCalls.reduce((n, x) => n + x.bytes, 0),
      assetBytes: c.assetBytes,
    };
  } finally {
    await ctx.close();
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** The medians of a page's loads, and the one the medians say: browser task time + broker time on its API calls. */
export function summarise(name: string, loads: PageLoad[]) {
  const m = (f: (l: PageLoad) => number | null) => round(median(loads.map(f).filter((x): x is number => x !== null)), 1);
  return {
    page: name,
    medianWallMs: m((l) => l.wallMs),
    medianUsableMs: m((l) => l.usableMs),
    medianFirstContentfulPaintMs: m((l) => l.firstContentfulPaintMs),
    medianTaskMs: m((l) => l.taskMs),
    medianScriptMs: m((l) => l.scriptMs),
    medianLayoutMs: m((l) => l.layoutMs),
    medianApiServerMs: m((l) => l.apiServerMs),
    medianApiBytes: m((l) => l.apiBytes),
    medianBrokerCpuMs: m((l) => l.brokerCpuMs),
    medianRendererThreadCpuMs: m((l) => l.rendererThreadCpuMs),
    medianRendererProcessCpuMs: m((l) => l.rendererProcessCpuMs),
    /** CPU the load cost, the renderer's main thread and the broker: what an idle 1-core share would take, about */
    medianRendererPlusBrokerCpuMs: m((l) => l.rendererThreadCpuMs + l.brokerCpuMs),
    /** what the page costs on an idle machine, about: the browser's main-thread work and the broker's */
    medianTaskPlusServerMs: m((l) => l.taskMs + l.apiServerMs),
  };
}
