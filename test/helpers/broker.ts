/** Starts real gregor brokers for integration tests: in-process, or as a child process that can be killed. */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { type Broker, startBroker } from '../../lib/broker.js';
import type { ConfigValue } from '../../lib/config.js';
import { silentLogger, createLogger } from '../../lib/observability/logger.js';
import { PROJECT_ROOT } from './project.js';
import { makeTempDir } from './temp-dirs.js';

export function tempDir(prefix = 'gregor-test-'): string {
  return makeTempDir(prefix);
}

export interface TestBroker {
  broker: Broker;
  bootstrap: string;
  dataDir: string;
  stop(): Promise<void>;
}

/** An in-process broker on a free port with a fresh data dir (removed on stop unless keepData). */
export async function startTestBroker(
  config: Record<string, string | ConfigValue> = {},
  opts: { dataDir?: string; keepData?: boolean } = {},
): Promise<TestBroker> {
  const dataDir = opts.dataDir ?? tempDir();
  const logger = process.env['TEST_LOG'] !== undefined ? createLogger({ level: process.env['TEST_LOG'] }) : silentLogger();
  const broker = await startBroker({ port: 0, dataDir, config: { 'group.initial.rebalance.delay.ms': 0, ...config }, logger });
  return {
    broker,
    bootstrap: broker.bootstrapServers,
    dataDir,
    async stop() {
      await broker.stop();
      if (opts.keepData !== true && opts.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ChildBroker {
  child: ChildProcess;
  bootstrap: string;
  port: number;
  /** host:port of the admin HTTP listener, null when it has none (from the GREGOR_READY line) */
  admin: string | null;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/** SIGTERM to a child broker still running; resolves once it has exited. */
export async function stopChildBroker(b: ChildBroker): Promise<void> {
  if (b.child.exitCode === null && b.child.signalCode === null) b.child.kill('SIGTERM');
  await b.exited;
}

/**
 * Runs `gregor start` as a child process on `port` (0: pick one) and waits for its GREGOR_READY line.
 * GREGOR_CHILD_NODE_FLAGS (space-separated) goes to the child's node, e.g. to profile a benchmark's
 * broker: `GREGOR_CHILD_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof"` (NODE_OPTIONS refuses those).
 */
export async function startChildBroker(
  dataDir: string,
  port = 0,
  overrides: Record<string, string> = {},
  env: Record<string, string> = {},
  extraArgs: readonly string[] = [],
): Promise<ChildBroker & { output(): string }> {
  const nodeFlags = (process.env['GREGOR_CHILD_NODE_FLAGS'] ?? '').split(' ').filter((f) => f !== '');
  const args = [...nodeFlags, join(PROJECT_ROOT, 'bin/gregor.js'), 'start', ...extraArgs, '--data-dir', dataDir, '--port', String(port)];
  for (const [k, v] of Object.entries(overrides)) args.push('--override', `${k}=${v}`);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'info', ...env } });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let out = '';
  const ready = await new Promise<{ bootstrap: string; admin: string | null }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`broker did not start:\n${out}`)), 20000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^GREGOR_READY (\{.*\})$/m.exec(out);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(JSON.parse(m[1]) as { bootstrap: string; admin: string | null });
      }
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => reject(new Error(`broker exited with ${code}:\n${out}`)));
  });
  return {
    child,
    bootstrap: ready.bootstrap,
    admin: ready.admin,
    port: Number(ready.bootstrap.split(':').pop()),
    exited,
    output: () => out,
  };
}
