/**
 * Shared by the cluster tests (lib/cluster/local-cluster.ts clusters): a suite's cluster
 * (useCluster), polling with a deadline, raw Metadata, a running broker, a replica's log bytes,
 * follower fetch counts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { MetadataResponse } from '../../protocol/generated/metadata.js';
import { type LocalBroker, type LocalCluster, type LocalClusterOptions, startLocalCluster } from '../../lib/cluster/local-cluster.js';
import { Cleanup } from './cleanup.js';
import { RawClient } from './raw-client.js';

/** Polls `probe` every `everyMs` until it gives a value (errors count as "not yet"); rejects after `timeoutMs` naming `what`. */
export async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Metadata v12 from one broker: `topics` by name, or null for every topic. */
export async function metadata(bootstrap: string, topics: string[] | null): Promise<MetadataResponse> {
  const c = await RawClient.connect(bootstrap);
  try {
    return await c.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: topics === null ? null : topics.map((name) => ({ topicId: '0'.repeat(32), name })),
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
  } finally {
    c.destroy();
  }
}

/** The first running broker of the cluster. */
export function running(cluster: LocalCluster): LocalBroker {
  const b = cluster.brokers.find((x) => x.running);
  if (b === undefined) throw new Error('no running broker');
  return b;
}

/**
 * The follower Fetches the running brokers served, by fetch session context (their /metrics'
 * kafka_server_fetchsessioncache_fetches_total, summed), and the follower sessions open on them.
 */
export async function followerFetches(
  cluster: LocalCluster,
): Promise<{ full: number; incremental: number; sessionless: number; error: number; sessions: number }> {
  const sum = { full: 0, incremental: 0, sessionless: 0, error: 0, sessions: 0 };
  for (const b of cluster.brokers) {
    if (!b.running || b.admin === null) continue;
    const text = await (await fetch(`http://${b.admin}/metrics`)).text();
    for (const m of text.matchAll(/^kafka_server_fetchsessioncache_fetches_total\{fetcher="follower",context="(\w+)"\} (\S+)$/gm))
      sum[m[1] as 'full' | 'incremental' | 'sessionless' | 'error'] += Number(m[2]);
    const open = /^kafka_server_fetchsessioncache_sessions\{kind="follower"\} (\S+)$/m.exec(text);
    sum.sessions += Number(open?.[1] ?? 0);
  }
  return sum;
}

/** Starts `brokers` brokers with `overrides` (stopped by `cleanup`) and waits until a broker lists them all. */
export async function startCluster(cleanup: Cleanup, brokers: number, overrides: Record<string, string>): Promise<LocalCluster> {
  const cluster = cleanup.add(await startLocalCluster({ brokers, overrides }), (c) => c.stop());
  await until(
    async () => ((await metadata(running(cluster).bootstrap, [])).brokers.length === brokers ? true : undefined),
    15_000,
    `${brokers} brokers`,
  );
  return cluster;
}

/** The partition's state as a running broker reports it (Metadata v12). */
export async function partitionOf(cluster: LocalCluster, topic: string, partition: number) {
  const m = await metadata(running(cluster).bootstrap, [topic]);
  const p = m.topics[0]?.partitions.find((x) => x.partitionIndex === partition);
  if (p === undefined) throw new Error(`no ${topic}-${partition}`);
  return p;
}

/** For a timed-out wait: each broker's last `n` warn and error log lines. */
export function brokerWarnings(cluster: LocalCluster, n = 10): string {
  return cluster.brokers
    .map((b) => {
      let lines: string[] = [];
      try {
        lines = readFileSync(b.logFile, 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('{"level":"warn"') || l.startsWith('{"level":"error"'));
      } catch {
        // no log yet
      }
      return `broker ${b.nodeId}: ${
        lines.length === 0
          ? 'no warnings'
          : lines
              .slice(-n)
              .map((l) => l.slice(0, 400))
              .join('\n')
      }`;
    })
    .join('\n');
}

/** The partition's .log files of one broker, concatenated in offset order (replicas in step hold the same bytes; empty when it holds no replica). */
export function logBytes(b: LocalBroker, topic: string, partition: number): Buffer {
  const dir = join(b.dataDir, `${topic}-${partition}`);
  if (!existsSync(dir)) return Buffer.alloc(0);
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .sort();
  return Buffer.concat(files.map((f) => readFileSync(join(dir, f))));
}

export interface UseClusterOptions extends Omit<LocalClusterOptions, 'brokers' | 'overrides'> {
  /** How many brokers (3). */
  brokers?: number;
  /** Whether before() waits until a broker's Metadata lists every broker (true). */
  waitForBrokers?: boolean;
  /** Runs in after() before the cluster stops (e.g. to thaw a frozen etcd). */
  beforeStop?: (cluster: LocalCluster) => unknown;
}

/**
 * The cluster of a mocha suite: started in the suite's before() with `overrides` (every broker's
 * config), stopped (with its etcd and directory) in its after(). Returns a getter for the tests,
 * which run only once before() succeeded.
 */
export function useCluster(overrides: Record<string, string>, opts: UseClusterOptions = {}): () => LocalCluster {
  const { brokers = 3, waitForBrokers = true, beforeStop, ...rest } = opts;
  const cleanup = new Cleanup();
  let cluster: LocalCluster | undefined;
  before(async function () {
    this.timeout(60_000);
    const c = cleanup.add(await startLocalCluster({ ...rest, brokers, overrides }), async (x) => {
      await beforeStop?.(x);
      await x.stop();
    });
    cluster = c;
    if (waitForBrokers)
      await until(
        async () => ((await metadata(running(c).bootstrap, [])).brokers.length === brokers ? true : undefined),
        15_000,
        `${brokers} brokers`,
      );
  });
  after(() => cleanup.run());
  return () => {
    if (cluster === undefined) throw new Error('no cluster: the suite has not started it');
    return cluster;
  };
}

/** Broker config of the replication-factor-3 suites: min.insync.replicas 2, ISR changes within seconds. */
export const RF3_OVERRIDES: Readonly<Record<string, string>> = {
  'default.replication.factor': '3',
  'min.insync.replicas': '2',
  'replica.lag.time.max.ms': '4000',
  'replica.fetch.backoff.ms': '200',
};

/** A kafkajs client of the cluster, retrying long enough to ride out leader moves. */
export function clusterKafka(cluster: LocalCluster, clientId: string): Kafka {
  return new Kafka({
    clientId,
    brokers: cluster.bootstrap().split(','),
    logLevel: logLevel.NOTHING,
    retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 },
  });
}

/** Creates a replication-factor-3 topic through kafkajs and waits for its leaders. */
export async function createRf3Topic(kafka: Kafka, topic: string, numPartitions: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions, replicationFactor: 3 }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}
