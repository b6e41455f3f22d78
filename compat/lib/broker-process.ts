/** Runs `gregor start` as a child process with a fresh data dir and a free port, for the suite. */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './paths.js';

/**
 * What the suite's main gregor runs with: no initial rebalance delay (groups form at once), and for the
 * KIP-848 consumer protocol, whose timings the broker dictates, a 500 ms heartbeat interval (members
 * learn of new assignments within it, as with the classic members' heartbeat.interval.ms=500) and a
 * 6000 ms session (the static-membership-consumer cell waits for one session; 6000 ms is also the
 * classic members' session.timeout.ms and Kafka's group.min.session.timeout.ms).
 */
export const SUITE_BROKER_OVERRIDES: Readonly<Record<string, string>> = {
  'group.initial.rebalance.delay.ms': '0',
  'group.consumer.heartbeat.interval.ms': '500',
  'group.consumer.session.timeout.ms': '6000',
};

export interface GregorProcess {
  bootstrap: string;
  pid: number;
  dataDir: string;
  overrides: Record<string, string>;
  /** the broker's stdout+stderr so far (pino JSON lines) */
  log(): string;
  stop(): Promise<void>;
}

/** opts.root: another checkout (built) to run gregor from, e.g. a base commit for a side-by-side benchmark. */
export async function startGregor(
  overrides: Record<string, string> = {},
  opts: { keepData?: boolean; root?: string } = {},
): Promise<GregorProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gregor-compat-'));
  // GREGOR_BENCH_NODE_ARGS: node flags for the broker process (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof")
  const nodeArgs = (process.env.GREGOR_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const args = [...nodeArgs, join(opts.root ?? ROOT, 'bin/gregor.js'), 'start', '--data-dir', dataDir, '--port', '0'];
  for (const [k, v] of Object.entries(overrides)) args.push('--override', `${k}=${v}`);
  const child: ChildProcess = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'info' },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let out = '';
  const append = (d: Buffer) => {
    out += d.toString();
    if (out.length > 4 << 20) out = out.slice(-(2 << 20));
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const bootstrap = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gregor did not start within 20 s:\n${out.slice(-2000)}`)), 20000);
    const onData = () => {
      const m = /"bootstrap":"([^"]+)"/.exec(out);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gregor exited with ${code} before listening:\n${out.slice(-2000)}`));
    });
  });
  return {
    bootstrap,
    pid: child.pid ?? -1,
    dataDir,
    overrides,
    log: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 10000);
        await exited;
        clearTimeout(t);
      }
      if (opts.keepData !== true) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** gregor's package version and the checkout's commit (with "+dirty" for uncommitted changes). */
export function gregorVersion(): { version: string; commit: string } {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no', 'lib', 'protocol', 'bin'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
    if (dirty !== '') commit += '+dirty';
  } catch {
    // not a git checkout
  }
  return { version, commit };
}
