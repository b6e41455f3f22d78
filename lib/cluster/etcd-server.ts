/**
 * Starts a single-member etcd on 127.0.0.1 or a given address (tests, and `gregor cluster start`): free ports for the
 * client and peer URLs, a data dir (temporary unless given), and a promise that resolves once the
 * member answers a linearizable read through its /health endpoint.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { GregorMetadataErrorCode, MetadataError } from '../metadata/store.js';

export interface EtcdServerOptions {
  /** Kept on stop() when given; a temporary directory (removed on stop()) otherwise. */
  dataDir?: string;
  /** The address the client URL listens on (default 127.0.0.1; e.g. a bridge's address that brokers in network namespaces reach). */
  host?: string;
  /** 0 or absent: a free port. */
  clientPort?: number;
  /** 0 or absent: a free port. */
  peerPort?: number;
  /** The etcd executable (default: findEtcdBinary()). */
  binary?: string;
  /** How long start and restart wait for the member to answer (default 20 s). */
  readyTimeoutMs?: number;
}

export interface EtcdServer {
  /** The client URL, e.g. `http://127.0.0.1:2379`. */
  readonly endpoints: string;
  readonly dataDir: string;
  /** The member's process id while it runs (benchmarks read its CPU from /proc). */
  readonly pid: number | undefined;
  /** Stops the member (SIGTERM, then SIGKILL after 5 s) and removes a temporary data dir. */
  stop(): Promise<void>;
  /** Sends a signal to the member (SIGKILL to crash it, SIGSTOP/SIGCONT to freeze it); no waiting. */
  kill(signal?: NodeJS.Signals): void;
  /** Stops the member if it runs and starts it again on the same ports and data dir. */
  restart(): Promise<void>;
}

const CANDIDATES = ['/usr/bin/etcd', '/usr/local/bin/etcd'];
const STOP_GRACE_MS = 5000;
/** Lines of the member's output kept for the error of a start that failed. */
const TAIL_LINES = 20;

/** The etcd binary: the first executable of `candidates` (default: known install paths, then `etcd` on PATH). */
export function findEtcdBinary(candidates?: readonly string[]): string {
  const onPath = (process.env['PATH'] ?? '')
    .split(delimiter)
    .filter((d) => d !== '')
    .map((d) => join(d, 'etcd'));
  for (const candidate of candidates ?? [...CANDIDATES, ...onPath]) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  throw new MetadataError(
    GregorMetadataErrorCode.ETCD,
    'etcd',
    'etcd binary not found: install the Debian package etcd-server or run scripts/setup-system.sh',
  );
}

/** A port that was free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Members still running when this process exits are killed with it. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of running) c.kill('SIGKILL');
    });
  }
}

export async function startEtcd(opts: EtcdServerOptions = {}): Promise<EtcdServer> {
  const binary = findEtcdBinary(opts.binary === undefined ? undefined : [opts.binary]);
  const ownDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'gregor-etcd-')));
  const clientPort = opts.clientPort !== undefined && opts.clientPort !== 0 ? opts.clientPort : await freePort();
  const peerPort = opts.peerPort !== undefined && opts.peerPort !== 0 ? opts.peerPort : await freePort();
  const readyTimeoutMs = opts.readyTimeoutMs ?? 20_000;
  const name = `gregor-${process.pid}-${randomBytes(4).toString('hex')}`;
  const clientUrl = `http://${opts.host ?? '127.0.0.1'}:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const args = [
    `--name=${name}`,
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=${name}=${peerUrl}`,
    `--initial-cluster-token=${name}`,
    '--initial-cluster-state=new',
    '--logger=zap',
    '--log-level=warn',
  ];

  let child: ChildProcess | undefined;
  let tail: string[] = [];

  const launch = async (): Promise<void> => {
    tail = [];
    const c = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    track(c);
    const keep = (chunk: Buffer): void => {
      tail.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      if (tail.length > TAIL_LINES) tail = tail.slice(-TAIL_LINES);
    };
    c.stdout.on('data', keep);
    c.stderr.on('data', keep);
    let exited: string | undefined;
    c.once('exit', (code, signal) => (exited = `exited (${signal ?? code})`));
    c.once('error', (e) => (exited = `failed to start: ${e.message}`));
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (exited !== undefined) {
        throw new MetadataError(GregorMetadataErrorCode.ETCD, 'etcd', `etcd ${exited}: ${tail.join(' | ')}`);
      }
      if (await healthy(clientUrl)) return;
      if (Date.now() > deadline) {
        c.kill('SIGKILL');
        throw new MetadataError(GregorMetadataErrorCode.ETCD, 'etcd', `etcd not ready after ${readyTimeoutMs} ms: ${tail.join(' | ')}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const halt = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGCONT'); // a frozen member cannot handle SIGTERM
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), STOP_GRACE_MS);
    await gone;
    clearTimeout(timer);
  };

  await launch();
  return {
    endpoints: clientUrl,
    dataDir,
    get pid() {
      return child?.pid;
    },
    async stop() {
      await halt();
      if (ownDir) await rm(dataDir, { recursive: true, force: true });
    },
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      child?.kill(signal);
    },
    async restart() {
      await halt();
      await launch();
    },
  };
}

async function healthy(clientUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
    if (!res.ok) return false;
    const body = (await res.json()) as { health?: unknown };
    return body.health === 'true' || body.health === true;
  } catch {
    return false;
  }
}
