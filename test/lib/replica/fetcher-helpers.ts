/** Helpers of the replica fetcher tests: a real gregor leader, follower logs in a temp dir, their comparison. */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { expect } from 'chai';
import type { Broker } from '../../../lib/broker.js';
import type { BrokerServices } from '../../../lib/services.js';
import { PartitionLog } from '../../../lib/log/partition-log.js';
import { silentLogger } from '../../../lib/observability/logger.js';
import type { FetcherPartition, ReplicaFetcherSettings } from '../../../lib/replica/replica-fetcher.js';
import { config, v2 } from '../log/helpers.js';
import { replicaState } from '../log/replication-helpers.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel, CompressionTypes } = require('kafkajs') as typeof import('kafkajs');
export type KafkaJs = InstanceType<typeof Kafka>;

/** Small segments and a dense index on both sides, so that rolls and index entries are compared too. */
export const SEGMENT_BYTES = 1500;
export const INDEX_INTERVAL = 256;
export const TOPIC_CONFIGS = [
  { name: 'segment.bytes', value: String(SEGMENT_BYTES) },
  { name: 'index.interval.bytes', value: String(INDEX_INTERVAL) },
];

export function kafkaFor(bootstrap: string): KafkaJs {
  return new Kafka({ clientId: 'fetcher-test', brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 10 } });
}

export function settings(over: Partial<ReplicaFetcherSettings> = {}): ReplicaFetcherSettings {
  return {
    replicaId: 2,
    clientId: 'gregor-replica-fetcher-2',
    maxWaitMs: 200,
    minBytes: 1,
    maxBytes: 10 << 20,
    partitionMaxBytes: 1 << 20,
    backoffMs: 50,
    requestTimeoutMs: 5000,
    logger: silentLogger(),
    ...over,
  };
}

export function servicesOf(b: Broker): BrokerServices {
  return (b as unknown as { services: BrokerServices }).services;
}

export function leaderLog(b: Broker, topic: string, partition: number): PartitionLog {
  const log = servicesOf(b).topics.partition(topic, partition);
  if (log === undefined) throw new Error(`the leader has no ${topic}-${partition}`);
  return log;
}

export function topicIdOf(b: Broker, topic: string): string {
  const t = servicesOf(b).metadata.topic(topic);
  if (t === undefined) throw new Error(`no topic ${topic}`);
  return t.topicId;
}

export function addressOf(b: Broker): { host: string; port: number } {
  return { host: '127.0.0.1', port: b.port };
}

/** A follower log (external high watermark) in `dir`, configured as the leader's topic. */
export async function followerLog(dir: string, topic: string, partition: number): Promise<PartitionLog> {
  const log = await PartitionLog.open(dir, topic, partition, config({ segmentBytes: SEGMENT_BYTES, indexIntervalBytes: INDEX_INTERVAL }), {
    recover: false,
  });
  log.useExternalHighWatermark();
  return log;
}

export function fetcherPartition(b: Broker, log: PartitionLog, leaderEpoch = 0): FetcherPartition {
  return { topic: log.topic, topicId: topicIdOf(b, log.topic), partition: log.partition, log, leaderEpoch };
}

export async function waitFor(what: string, cond: () => boolean, timeoutMs = 30000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Offsets the follower must share with its leader once caught up. */
export function offsets(log: PartitionLog): { logStartOffset: bigint; logEndOffset: bigint; highWatermark: bigint } {
  return { logStartOffset: log.logStartOffset, logEndOffset: log.logEndOffset, highWatermark: log.highWatermark };
}

export function inStep(leader: PartitionLog, follower: PartitionLog): boolean {
  return (
    follower.logEndOffset === leader.logEndOffset &&
    follower.highWatermark === leader.highWatermark &&
    follower.logStartOffset === leader.logStartOffset &&
    follower.pendingAppends === 0
  );
}

export async function waitInStep(pairs: readonly [PartitionLog, PartitionLog][], what = 'the followers to catch up'): Promise<void> {
  await waitFor(what, () => pairs.every(([l, f]) => inStep(l, f)));
  for (const [l, f] of pairs) expect(offsets(f), `${f.topic}-${f.partition}`).to.deep.equal(offsets(l));
}

/**
 * Segment data files and leader epochs byte for byte, and the offset indexes (flushed first: the
 * active segment's index reaches its file at a roll, flush or truncation; a missing one is empty).
 */
export async function expectSameLogFiles(leader: PartitionLog, follower: PartitionLog, opts: { indexes?: boolean } = {}): Promise<void> {
  await leader.flush();
  await follower.flush();
  const what = `${follower.topic}-${follower.partition}`;
  const pick = (dir: string, ok: (n: string) => boolean) => fs.readdirSync(dir).filter(ok).sort();
  const data = (n: string) => n.endsWith('.log') || n === 'leader-epoch-checkpoint';
  const names = pick(leader.dir, data);
  expect(pick(follower.dir, data), `${what} files`).to.deep.equal(names);
  const read = (dir: string, n: string) => (fs.existsSync(path.join(dir, n)) ? fs.readFileSync(path.join(dir, n)) : Buffer.alloc(0));
  for (const n of names) expect(read(follower.dir, n).equals(read(leader.dir, n)), `${what}/${n} differs`).to.equal(true);
  if (opts.indexes === false) return;
  const indexes = new Set([...pick(leader.dir, (n) => n.endsWith('.index')), ...pick(follower.dir, (n) => n.endsWith('.index'))]);
  for (const n of indexes) expect(read(follower.dir, n).equals(read(leader.dir, n)), `${what}/${n} differs`).to.equal(true);
}

/** Everything a follower shares with its leader: offsets, files, leader epochs, producers, aborted transactions. */
export async function expectReplicaOf(leader: PartitionLog, follower: PartitionLog): Promise<void> {
  expect(offsets(follower)).to.deep.equal(offsets(leader));
  expect(replicaState(follower)).to.deep.equal(replicaState(leader));
  for (const e of [-1, 0, 1, 2]) expect(follower.endOffsetForEpoch(e)).to.deep.equal(leader.endOffsetForEpoch(e));
  await expectSameLogFiles(leader, follower);
}

/** `count` sends of `perSend` records each to `partition` (one batch per send). */
export async function produce(
  kafka: KafkaJs,
  topic: string,
  partition: number,
  count: number,
  opts: { perSend?: number; prefix?: string; gzip?: boolean } = {},
): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    for (let i = 0; i < count; i++) {
      await producer.send({
        topic,
        acks: -1,
        ...(opts.gzip === true ? { compression: CompressionTypes.GZIP } : {}),
        messages: Array.from({ length: opts.perSend ?? 1 }, (_, k) => ({
          partition,
          key: `k${i}`,
          value: `${opts.prefix ?? 'v'}-${i}-${k}-${'x'.repeat(40)}`,
        })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}

/**
 * Appends `n` records straight to the leader's log at `leaderEpoch`, as a leader of that epoch would
 * (a single node stamps every produce with epoch 0; this gives its log the epochs of a cluster's).
 */
export async function leaderAppend(log: PartitionLog, n: number, leaderEpoch: number, prefix: string): Promise<void> {
  await log.open();
  await log.append(v2(n, { prefix }), { leaderEpoch }).written;
}

/** Copies the leader's entries to the follower until the follower's log ends at `until` (an entry boundary). */
export async function copyUntil(leader: PartitionLog, follower: PartitionLog, until: bigint): Promise<void> {
  while (follower.logEndOffset < until) {
    const r = await leader.read(follower.logEndOffset, 1, { minOneMessage: true });
    await (
      await follower.appendAsFollower(Buffer.concat(r.records))
    ).written;
  }
  expect(follower.logEndOffset).to.equal(until);
}
