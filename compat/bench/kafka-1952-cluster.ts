/**
 * kafka-1952.ts's view of the cluster through Kafka's own APIs: a topic's leaders and ISRs in
 * Metadata v12 (polled from each broker until a condition holds), topic creation, and the restart of
 * a broker (kill → its ISRs shrink → spawn → ready → its ISRs full again).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { MetadataResponse } from '../../protocol/generated/metadata.js';
import type { LocalBroker, LocalCluster } from '../../lib/cluster/local-cluster.js';
import { RawClient } from '../../test/helpers/raw-client.js';
import { cpuSeconds, round, sleep } from './proc-stats.js';

export const ISR_TIMEOUT_MS = 600_000;

export async function metadataOf(bootstrap: string, topics: string[]): Promise<MetadataResponse> {
  const c = await RawClient.connect(bootstrap);
  try {
    return await c.request<MetadataResponse>(
      ApiKey.Metadata,
      12,
      {
        topics: topics.map((name) => ({ topicId: '0'.repeat(32), name })),
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false,
      },
      30_000,
    );
  } finally {
    c.destroy();
  }
}

export interface TopicState {
  partitions: number;
  withLeader: number;
  /** partitions whose ISR holds `isrSize` replicas */
  fullIsr: number;
  /** partitions whose ISR does not hold `without` */
  isrWithout: number;
  leaders: Record<string, number>;
}

export async function topicState(bootstrap: string, topic: string, isrSize: number, without = -1): Promise<TopicState> {
  const md = await metadataOf(bootstrap, [topic]);
  const t = md.topics.find((x) => x.name === topic);
  const s: TopicState = { partitions: 0, withLeader: 0, fullIsr: 0, isrWithout: 0, leaders: {} };
  if (t === undefined || t.errorCode !== 0) return s;
  for (const p of t.partitions) {
    if (p.errorCode !== 0) continue;
    s.partitions++;
    if (p.leaderId >= 0) {
      s.withLeader++;
      s.leaders[p.leaderId] = (s.leaders[p.leaderId] ?? 0) + 1;
    }
    if (p.leaderId >= 0 && p.isrNodes.length === isrSize) s.fullIsr++;
    if (p.leaderId >= 0 && !p.isrNodes.includes(without)) s.isrWithout++;
  }
  return s;
}

/** Polls Metadata (every 100 ms, from each of `brokers`) until `done` holds for all; ms from `since`, or NaN on timeout. */
export async function waitState(
  brokers: readonly LocalBroker[],
  topic: string,
  isrSize: number,
  done: (s: TopicState) => boolean,
  since: number,
  timeoutMs: number,
  without = -1,
): Promise<{ ms: number; last: TopicState[] }> {
  let last: TopicState[] = [];
  for (;;) {
    try {
      last = await Promise.all(brokers.map((b) => topicState(b.bootstrap, topic, isrSize, without)));
      if (last.every(done)) return { ms: performance.now() - since, last };
    } catch {
      // a broker not answering yet: poll again
    }
    if (performance.now() - since > timeoutMs) return { ms: NaN, last };
    await sleep(100);
  }
}

export async function createTopic(bootstrap: string, name: string, partitions: number): Promise<void> {
  const c = await RawClient.connect(bootstrap);
  try {
    const res = await c.request<{ topics: { name: string; errorCode: number; errorMessage?: string | null }[] }>(
      ApiKey.CreateTopics,
      4,
      {
        topics: [{ name, numPartitions: partitions, replicationFactor: 2, assignments: [], configs: [] }],
        timeoutMs: 60_000,
        validateOnly: false,
      },
      120_000,
    );
    for (const t of res.topics)
      if (t.errorCode !== 0) throw new Error(`CreateTopics ${t.name}: error ${t.errorCode} ${t.errorMessage ?? ''}`);
  } finally {
    c.destroy();
  }
}

// ---- restarts -----------------------------------------------------------------------------------

export interface RestartResult {
  signal: string;
  broker: number;
  /** kill → the process exited */
  exitMs: number;
  /** kill → every partition's ISR without the broker (Metadata from the other one) */
  isrShrunkMs: number;
  /** spawn → GREGOR_READY */
  readyMs: number;
  /** spawn → every partition's ISR at 2 again, in Metadata from both brokers */
  isrFullMs: number;
  /** the restarted broker's CPU seconds from spawn to full ISR */
  restartedCpuS: number;
  /** the other broker's CPU seconds over the same time */
  otherCpuS: number;
  leadersAfter: Record<string, number>;
}

/** Kills `victim` with `signal`, waits for `topic`'s ISRs (all `partitions`) without it, then restarts it and waits for them full again. */
export async function restart(
  cluster: LocalCluster,
  victim: LocalBroker,
  signal: NodeJS.Signals,
  topic: string,
  partitions: number,
): Promise<RestartResult> {
  const others = cluster.brokers.filter((b) => b !== victim);
  const t0 = performance.now();
  await victim.kill(signal);
  const exitMs = performance.now() - t0;
  const shrunk = await waitState(
    others,
    topic,
    1,
    (s) => s.partitions === partitions && s.isrWithout === partitions,
    t0,
    120_000,
    victim.nodeId,
  );
  if (Number.isNaN(shrunk.ms))
    console.log(`  ${signal}: after 120 s, ${shrunk.last[0]?.isrWithout ?? '?'} of ${partitions} ISRs without broker ${victim.nodeId}`);
  const otherCpu0 = others.map((b) => cpuSeconds(b.pid ?? -1));
  const t1 = performance.now();
  await victim.start();
  const readyMs = performance.now() - t1;
  const full = await waitState(
    cluster.brokers,
    topic,
    2,
    (s) => s.partitions === partitions && s.fullIsr === partitions,
    t1,
    ISR_TIMEOUT_MS,
  );
  const restartedCpuS = cpuSeconds(victim.pid ?? -1);
  const otherCpuS = others.reduce((a, b, i) => a + cpuSeconds(b.pid ?? -1) - (otherCpu0[i] ?? 0), 0);
  return {
    signal,
    broker: victim.nodeId,
    exitMs: Math.round(exitMs),
    isrShrunkMs: Math.round(shrunk.ms),
    readyMs: Math.round(readyMs),
    isrFullMs: Math.round(full.ms),
    restartedCpuS: round(restartedCpuS, 2),
    otherCpuS: round(otherCpuS, 2),
    leadersAfter: full.last[0]?.leaders ?? {},
  };
}
