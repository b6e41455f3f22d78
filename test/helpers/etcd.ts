/**
 * Helpers for the etcd metadata tests: one real etcd per test file (lib/cluster/etcd-server.ts), stores
 * opened on a cluster id of their own per test, and waiting for a condition with a deadline.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEtcd, type EtcdServer } from '../../lib/cluster/etcd-server.js';
import { EtcdMetadataStore } from '../../lib/metadata/etcd-store.js';
import { MetadataError, MetadataWriteError, type BrokerInfo, type GregorMetadataErrorCode } from '../../lib/metadata/store.js';
import { silentLogger } from '../../lib/observability/logger.js';
import { Cleanup } from './cleanup.js';

export { until } from './eos.js';

/** Session timeout of the test brokers: short, so lease expiry tests stay quick (etcd's floor is 2 s). */
export const SESSION_MS = 2000;

export function newClusterId(): string {
  return `test-${randomBytes(6).toString('hex')}`;
}

export function brokerInfo(nodeId: number, rack: string | null = null): Omit<BrokerInfo, 'brokerEpoch'> {
  return { nodeId, rack, endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9000 + nodeId }] };
}

export async function tempDir(cleanup: Cleanup): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gregor-etcd-store-'));
  cleanup.add(dir, (d) => rm(d, { recursive: true, force: true }));
  return dir;
}

export interface OpenOptions {
  dataDir?: string;
  register?: boolean;
  rack?: string | null;
  controller?: boolean;
}

/** Opens (and, unless told otherwise, registers) a store; closed by `cleanup`. */
export async function openStore(
  etcd: EtcdServer,
  cleanup: Cleanup,
  clusterId: string,
  nodeId: number,
  opts: OpenOptions = {},
): Promise<EtcdMetadataStore> {
  const dataDir = opts.dataDir ?? (await tempDir(cleanup));
  const store = await EtcdMetadataStore.open({
    endpoints: [etcd.endpoints],
    clusterId,
    nodeId,
    sessionTimeoutMs: SESSION_MS,
    logger: silentLogger(),
    dataDir,
    ...(opts.controller !== undefined ? { controller: opts.controller } : {}),
  });
  cleanup.add(store, (s) => s.close());
  if (opts.register !== false) await store.register(brokerInfo(nodeId, opts.rack ?? null));
  return store;
}

/** Opens and registers brokers 1..n. */
export async function openCluster(etcd: EtcdServer, cleanup: Cleanup, clusterId: string, n: number): Promise<EtcdMetadataStore[]> {
  const stores: EtcdMetadataStore[] = [];
  for (let id = 1; id <= n; id++) stores.push(await openStore(etcd, cleanup, clusterId, id));
  return stores;
}

/** What useEtcd gives a suite's tests. */
export interface EtcdSuite {
  /** The suite's etcd, started in its before() and stopped in its after(). */
  readonly etcd: EtcdServer;
  /** A new cluster id for each test: the tests share the etcd and nothing else. */
  readonly clusterId: string;
  /** Released after each test (stores, directories, clients). */
  readonly each: Cleanup;
  /** openStore in this test's cluster, closed after the test. */
  openStore(nodeId: number, opts?: OpenOptions): Promise<EtcdMetadataStore>;
  /** openCluster (brokers 1..n) in this test's cluster, closed after the test. */
  openCluster(n: number): Promise<EtcdMetadataStore[]>;
}

/** A real etcd for a mocha suite, and a cluster id of its own and a Cleanup for each of its tests. */
export function useEtcd(): EtcdSuite {
  const suite = new Cleanup();
  const each = new Cleanup();
  let etcd: EtcdServer | undefined;
  let clusterId = '';
  before(async () => {
    etcd = suite.add(await startEtcd(), (e) => e.stop());
  });
  after(() => suite.run());
  beforeEach(() => (clusterId = newClusterId()));
  afterEach(() => each.run());
  const server = (): EtcdServer => {
    if (etcd === undefined) throw new Error('no etcd: the suite has not started it');
    return etcd;
  };
  return {
    get etcd() {
      return server();
    },
    get clusterId() {
      return clusterId;
    },
    each,
    openStore: (nodeId, opts) => openStore(server(), each, clusterId, nodeId, opts),
    openCluster: (n) => openCluster(server(), each, clusterId, n),
  };
}

/** Awaits a promise expected to reject, and returns its error. */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

/** Checks that `e` is a MetadataWriteError with the Kafka error `code`. */
export function expectWriteError(e: unknown, code: number): void {
  if (!(e instanceof MetadataWriteError)) throw e;
  expect(e.errorCode, e.message).to.equal(code);
}

/** Checks that `e` is a MetadataError with the store's `code`. */
export function expectMetadataError(e: unknown, code: GregorMetadataErrorCode): void {
  if (!(e instanceof MetadataError)) throw e;
  expect(e.code, e.message).to.equal(code);
}
