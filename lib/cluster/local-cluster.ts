/**
 * A cluster on this machine for development and tests (`gregor cluster start -n 3`): an etcd from the
 * Debian package in its own directory, and N brokers as child processes (`gregor start` with
 * metadata.store=etcd) on free ports, each with its data dir and log file under one directory.
 * Brokers can be killed (kill -9 included) and started again on the same port and data dir. A test
 * can place each broker in a network namespace of its own (`placement`), listening on that
 * namespace's address, with etcd on an address every namespace reaches (`etcdHost`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEtcd, type EtcdServer } from './etcd-server.js';

/** bin/gregor.js of this installation (dist/lib/cluster/ → the package root), or of the bundle's (dist/bundle/). */
const GREGOR_BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bin', 'gregor.js');
const READY_LINE = /^GREGOR_READY (\{.*\})$/m;
const START_TIMEOUT_MS = 30_000;

export interface LocalClusterOptions {
  /** Number of brokers (node ids 1..n). */
  brokers: number;
  /** Directory for etcd, the data dirs and the logs (a temporary one, removed on stop, when absent). */
  dir?: string;
  /** cluster.id (a new one when absent). */
  clusterId?: string;
  /** Broker config for every broker (Kafka keys). */
  overrides?: Record<string, string>;
  /** Broker config of one broker (its broker.rack, say), over `overrides`. */
  brokerOverrides?: (nodeId: number) => Record<string, string>;
  /** Extra node flags for the brokers' processes. */
  nodeFlags?: readonly string[];
  /** Environment for the brokers' processes (added to this process's). */
  env?: Record<string, string>;
  /** Where etcd's client URL listens (default 127.0.0.1). */
  etcdHost?: string;
  /** Where broker `nodeId` runs: its listener's (and admin listener's) host, and the network namespace to run it in (`ip netns exec`); 127.0.0.1 in this one when absent. */
  placement?: (nodeId: number) => BrokerPlacement;
}

export interface BrokerPlacement {
  host: string;
  netns?: string;
}

export interface LocalBroker {
  readonly nodeId: number;
  readonly dataDir: string;
  readonly logFile: string;
  /** host:port once started (the port is kept across restarts). */
  bootstrap: string;
  /** The admin HTTP listener's host:port, null when it has none. */
  admin: string | null;
  readonly running: boolean;
  /** The current process's id (undefined before the first start); benchmarks read its CPU from /proc. */
  readonly pid: number | undefined;
  /** Resolves with the exit code (null when killed by a signal) of the current process. */
  exited: Promise<number | null>;
  /** Starts the broker (again), on the port it had, and waits for its ready line. */
  start(): Promise<void>;
  /** Sends `signal` (SIGKILL: a crash) and waits for the process to end. */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface LocalCluster {
  readonly clusterId: string;
  readonly dir: string;
  readonly etcd: EtcdServer;
  readonly brokers: readonly LocalBroker[];
  /** The running brokers' host:port list, comma-separated (a client's bootstrap.servers). */
  bootstrap(): string;
  /** Stops the brokers (SIGTERM, then SIGKILL after 15 s) and etcd; removes a temporary dir. */
  stop(): Promise<void>;
}

/** A cluster id in Kafka's format: 16 random bytes, URL-safe base64 without padding. */
export function newClusterId(): string {
  return randomBytes(16).toString('base64url');
}

class ChildBrokerProcess implements LocalBroker {
  bootstrap = '';
  admin: string | null = null;
  exited: Promise<number | null> = Promise.resolve(null);
  private child: ChildProcess | null = null;
  private port = 0;
  private log: WriteStream | null = null;

  constructor(
    readonly nodeId: number,
    readonly dataDir: string,
    readonly logFile: string,
    private readonly overrides: Record<string, string>,
    private readonly nodeFlags: readonly string[],
    private readonly env: Record<string, string>,
    private readonly placement: BrokerPlacement | undefined,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(): Promise<void> {
    if (this.running) return;
    const args = [...this.nodeFlags, GREGOR_BIN, 'start', '--data-dir', this.dataDir, '--port', String(this.port)];
    const host = this.placement?.host;
    // the admin listener on the same address, open to the clients that reach it (the test's, in the root namespace)
    const placed =
      host === undefined
        ? {}
        : { listeners: `PLAINTEXT://${host}:${this.port}`, 'admin.listener': `${host}:0`, 'admin.listener.allow.remote': 'true' };
    for (const [k, v] of Object.entries({ 'node.id': String(this.nodeId), ...this.overrides, ...placed }))
      args.push('--override', `${k}=${v}`);
    this.log ??= createWriteStream(this.logFile, { flags: 'a' });
    const log = this.log;
    // `ip netns exec` execs the command in place: the child's pid is the broker's
    const netns = this.placement?.netns;
    const [cmd, argv] = netns === undefined ? [process.execPath, args] : ['ip', ['netns', 'exec', netns, process.execPath, ...args]];
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...this.env } });
    this.child = child;
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    let out = '';
    const ready = await new Promise<{ bootstrap: string; admin: string | null }>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`broker ${this.nodeId} did not start within ${START_TIMEOUT_MS} ms:\n${out.slice(-4000)}`)),
        START_TIMEOUT_MS,
      );
      const seen = (d: Buffer) => {
        log.write(d);
        if (out.length < 1 << 20) out += d.toString();
        const m = READY_LINE.exec(out);
        if (m?.[1] !== undefined) {
          clearTimeout(timer);
          resolve(JSON.parse(m[1]) as { bootstrap: string; admin: string | null });
        }
      };
      child.stdout.on('data', seen);
      child.stderr.on('data', (d: Buffer) => {
        log.write(d);
        if (out.length < 1 << 20) out += d.toString();
      });
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`broker ${this.nodeId} exited (${code ?? signal}) before it was ready:\n${out.slice(-4000)}`));
      });
    });
    this.bootstrap = ready.bootstrap;
    this.admin = ready.admin;
    this.port = Number(ready.bootstrap.split(':').pop());
  }

  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const child = this.child;
    if (child === null || !this.running) return this.exited;
    child.kill(signal);
    return this.exited;
  }

  closeLog(): void {
    this.log?.end();
    this.log = null;
  }
}

export async function startLocalCluster(opts: LocalClusterOptions): Promise<LocalCluster> {
  if (!Number.isInteger(opts.brokers) || opts.brokers < 1) throw new Error(`a cluster needs at least one broker, got ${opts.brokers}`);
  const temporary = opts.dir === undefined;
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'gregor-cluster-'));
  mkdirSync(dir, { recursive: true });
  const clusterId = opts.clusterId ?? newClusterId();
  const etcd = await startEtcd({ dataDir: join(dir, 'etcd'), ...(opts.etcdHost === undefined ? {} : { host: opts.etcdHost }) });
  const brokers: ChildBrokerProcess[] = [];
  const stop = async () => {
    await Promise.all(
      brokers.map(async (b) => {
        const timer = setTimeout(() => void b.kill('SIGKILL'), 15_000);
        await b.kill('SIGTERM');
        clearTimeout(timer);
        b.closeLog();
      }),
    );
    await etcd.stop();
    if (temporary) rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let id = 1; id <= opts.brokers; id++) {
      const overrides = {
        'metadata.store': 'etcd',
        'etcd.endpoints': etcd.endpoints,
        'cluster.id': clusterId,
        'admin.listener': '127.0.0.1:0',
        ...(opts.overrides ?? {}),
        ...(opts.brokerOverrides?.(id) ?? {}),
      };
      brokers.push(
        new ChildBrokerProcess(
          id,
          join(dir, `broker-${id}`),
          join(dir, `broker-${id}.log`),
          overrides,
          opts.nodeFlags ?? [],
          opts.env ?? {},
          opts.placement?.(id),
        ),
      );
    }
    await Promise.all(brokers.map((b) => b.start()));
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    clusterId,
    dir,
    etcd,
    brokers,
    bootstrap: () =>
      brokers
        .filter((b) => b.running)
        .map((b) => b.bootstrap)
        .join(','),
    stop,
  };
}
