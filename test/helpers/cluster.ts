/** Shared by the cluster tests (lib/cluster/local-cluster.ts clusters): polling with a deadline, raw Metadata, a running broker, a replica's log bytes. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { MetadataResponse } from '../../protocol/generated/metadata.js';
import type { LocalBroker, LocalCluster } from '../../lib/cluster/local-cluster.js';
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

/** The partition's .log files of one broker, concatenated in offset order (replicas in step hold the same bytes). */
export function logBytes(b: LocalBroker, topic: string, partition: number): Buffer {
  const dir = join(b.dataDir, `${topic}-${partition}`);
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .sort();
  return Buffer.concat(files.map((f) => readFileSync(join(dir, f))));
}
