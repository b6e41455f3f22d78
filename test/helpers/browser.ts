/**
 * Headless Chromium (Debian's `chromium`, installed by scripts/setup-system.sh) driven by
 * playwright-core, and axe-core run inside the page, for the web console's browser tests.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { PROJECT_ROOT } from './project.js';

export const CHROMIUM = process.env['GREGOR_CHROMIUM'] ?? '/usr/bin/chromium';

/** Where the browser tests write their screenshots (kept after the run, as test artifacts). */
export const SCREENSHOT_DIR = join(PROJECT_ROOT, 'compat/results/console-screenshots');

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM);
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
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
