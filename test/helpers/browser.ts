/**
 * Headless Chromium (Debian's `chromium`, installed by scripts/setup-system.sh) driven by
 * playwright-core, and axe-core run inside the page, for the web console's browser tests.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Cleanup } from './cleanup.js';
import { PROJECT_ROOT } from './project.js';

export const CHROMIUM = process.env['GREGOR_CHROMIUM'] ?? '/usr/bin/chromium';

/** Where the browser tests write their screenshots (kept after the run, as test artifacts). */
export const SCREENSHOT_DIR = join(PROJECT_ROOT, 'compat/results/console-screenshots');

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM);
}

/**
 * Skips the calling suite (mocha's `this` in a before hook) with a note when there is no Chromium:
 * scripts/setup-system.sh installs it for `npm test`; a machine without it cannot run these.
 */
export function skipWithoutChromium(ctx: { skip(): void }): void {
  if (chromiumAvailable()) return;
  console.warn(`skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set GREGOR_CHROMIUM)`);
  ctx.skip();
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

/**
 * A page in a new context `width` px wide whose script errors, CSP violations and console errors
 * (those matching `ignore` aside) are collected in `errors`, for a test to expect none. The context
 * is closed by `cleanup`.
 */
export async function watchedPage(
  browser: Browser,
  cleanup: Cleanup,
  width: number,
  ignore?: RegExp,
): Promise<{ page: Page; errors: string[] }> {
  const ctx = await browser.newContext({ viewport: { width, height: 900 } });
  cleanup.add(ctx, (c) => c.close());
  const page = await ctx.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !(ignore?.test(m.text()) ?? false)) errors.push(m.text());
  });
  return { page, errors };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string | undefined }[];
}

let axeSource: string | null = null;

/**
 * Runs axe-core's WCAG 2.x A/AA rules on the page as it is. The script is evaluated through the
 * DevTools protocol, which the page's Content-Security-Policy (script-src 'self') does not stop.
 */
export async function axe(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const g = globalThis as unknown as {
      document: unknown;
      axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: AxeViolation[] }> };
    };
    const r = await g.axe.run(g.document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
    }));
  });
}

/** The serious and critical violations, described for an assertion message. */
export function seriousViolations(vs: readonly AxeViolation[]): string[] {
  return vs
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact}: ${v.id} (${v.help}) at ${v.nodes.map((n) => n.target.join(' ')).join('; ')}`);
}
