/**
 * Issue 14: spawn -> `GREGOR_READY` of `gregor start` for several checkouts, side by side with a bare
 * `node -e 0`, in one loop that alternates them (so drifting load hits every side alike). Each checkout
 * is a built root (bin/gregor.js, dist/); each start gets a fresh data dir, `--port 0` and no admin
 * listener. One warm-up start per root first (it writes the V8 code cache). Reports each side's median
 * and its ratio to bare node. A benchmark, not a test.
 *
 *   node dist/compat/bench/startup-compare.js [ROOT...]      (default: this checkout)
 *   BENCH_STARTUP_RUNS=15 (default), BENCH_OUT=compat/results (default)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { envInt, ROOT_DIR, round, writeBench } from './proc-stats.js';

const BARE = 'node -e 0';

/** ms from spawn to the ready line (or, for bare node, to its exit). */
function startOnce(root: string): Promise<number> {
  return new Promise((done, fail) => {
    const t0 = performance.now();
    if (root === BARE) {
      spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' }).once('exit', () => done(performance.now() - t0));
      return;
    }
    const dataDir = mkdtempSync(join(tmpdir(), 'gregor-startup-compare-'));
    const args = [join(root, 'bin/gregor.js'), 'start', '--port', '0', '--data-dir', dataDir, '--override', 'admin.listener=none'];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LOG_LEVEL: 'warn' } });
    let out = '';
    let ready: number | undefined;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (ready === undefined && out.includes('GREGOR_READY ')) {
        ready = performance.now() - t0;
        child.kill('SIGTERM');
      }
    });
    child.once('exit', (code) => {
      rmSync(dataDir, { recursive: true, force: true });
      if (ready === undefined) fail(new Error(`${root}: exited with ${String(code)} before GREGOR_READY:\n${out}`));
      else done(ready);
    });
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

const roots = process.argv.length > 2 ? process.argv.slice(2).map((r) => resolve(r)) : [ROOT_DIR];
const sides = [BARE, ...roots];
const runs = envInt('BENCH_STARTUP_RUNS', 15);
const times = new Map<string, number[]>(sides.map((s) => [s, []]));
for (const root of roots) await startOnce(root); // warm-up: code cache, page cache
for (let i = 0; i < runs; i++) for (const side of sides) times.get(side)?.push(await startOnce(side));
const bare = median(times.get(BARE) ?? []);
const rows = sides.map((s) => {
  const m = median(times.get(s) ?? []);
  return [s, round(m, 1), round(m / bare, 2)];
});
for (const r of rows) console.log(`${String(r[0])}: median ${String(r[1])} ms, ${String(r[2])}x bare node`);
const file = writeBench(process.env['BENCH_OUT'] ?? join(ROOT_DIR, 'compat/results'), {
  id: 'startup-compare',
  title: 'spawn -> GREGOR_READY beside node -e 0',
  headline: rows.slice(1).map((r) => `${String(r[0])}: ${String(r[1])} ms = ${String(r[2])}x node -e 0 (${String(rows[0]?.[1])} ms)`),
  table: { columns: ['side', 'median ms', 'x bare node'], rows },
  notes: [`${runs} alternating runs per side after one warm-up start per root; fresh data dir, --port 0, admin.listener=none.`],
});
console.log(`wrote ${file}`);
