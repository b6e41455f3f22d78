/**
 * Several log.dirs in a cluster (two brokers on a real etcd, child processes): broker 2 has two log
 * dirs. Replicas a reassignment brings to it are placed by the rule of a new partition (the dir with
 * the fewest partitions, the first on a tie), each dir keeps its own replication-offset-checkpoint,
 * and DescribeLogDirs on broker 2 reports each moved replica in its dir with the size the leader
 * had (the follower copied every byte).
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DescribeLogDirsResponse } from '../../protocol/generated/describe-log-dirs.js';
import { startLocalCluster, type LocalBroker, type LocalCluster } from '../../lib/cluster/local-cluster.js';
import { tempDir } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { metadata, partitionOf, running, until } from '../helpers/cluster.js';
import { RawClient } from '../helpers/raw-client.js';

/** [dir, partition, size] of topic `topic` as `broker` describes its log dirs. */
async function logDirsOf(broker: LocalBroker, topic: string): Promise<[string, number, bigint][]> {
  const c = await RawClient.connect(broker.bootstrap);
  try {
    const res = await c.request<DescribeLogDirsResponse>(ApiKey.DescribeLogDirs, 4, { topics: null }, 15_000);
    return res.results.flatMap((r) =>
      r.topics
        .filter((t) => t.name === topic)
        .flatMap((t) => t.partitions.map((p) => [r.logDir, p.partitionIndex, p.partitionSize] as [string, number, bigint])),
    );
  } finally {
    c.destroy();
  }
}

describe('cluster: a reassignment onto a broker with two log dirs', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let cluster: LocalCluster;
  let root: string;
  let dirs: [string, string];

  before(async function () {
    this.timeout(60_000);
    root = cleanup.add(tempDir('gregor-cluster-logdirs-'), (d) => rmSync(d, { recursive: true, force: true }));
    dirs = [join(root, 'broker-2-x'), join(root, 'broker-2-y')];
    cluster = cleanup.add(
      await startLocalCluster({
        brokers: 2,
        dir: join(root, 'cluster'),
        overrides: {
          'broker.session.timeout.ms': '3000',
          'replica.fetch.backoff.ms': '200',
          'replica.high.watermark.checkpoint.interval.ms': '200',
        },
        brokerOverrides: (id) => (id === 2 ? { 'log.dirs': dirs.join(',') } : {}),
      }),
      (c) => c.stop(),
    );
    await until(
      async () => ((await metadata(running(cluster).bootstrap, [])).brokers.length === 2 ? true : undefined),
      15_000,
      '2 brokers',
    );
  });
  after(() => cleanup.run());

  it('places each new replica on the emptier dir and reports it there with every byte', async () => {
    const [b1, b2] = cluster.brokers as [LocalBroker, LocalBroker];
    const kafka = new Kafka({
      brokers: cluster.bootstrap().split(','),
      clientId: 'cluster-logdirs',
      logLevel: logLevel.NOTHING,
      retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 },
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      // one partition already on broker 2 (in its first dir), three on broker 1
      await admin.createTopics({
        topics: [
          { topic: 'here', replicaAssignment: [{ partition: 0, replicas: [2] }] },
          { topic: 'r', replicaAssignment: [0, 1, 2].map((partition) => ({ partition, replicas: [1] })) },
        ],
        waitForLeaders: true,
      });
      const producer = kafka.producer();
      await producer.connect();
      for (const partition of [0, 1, 2])
        await producer.send({
          topic: 'r',
          acks: -1,
          messages: Array.from({ length: 20 }, (_, i) => ({ partition, value: `r${partition}-${i}` })),
        });
      await producer.send({ topic: 'here', acks: -1, messages: [{ partition: 0, value: 'h' }] });
      await producer.disconnect();
      expect((await logDirsOf(b2, 'here')).map(([d]) => d)).to.deep.equal([dirs[0]]);
      const sizes = new Map((await logDirsOf(b1, 'r')).map(([, p, size]) => [p, size]));
      expect([...sizes.values()].every((s) => s > 0n)).to.equal(true);

      // one at a time: x=1 y=0 → r-0 to y; x=1 y=1 → r-1 to x (the first on a tie); x=2 y=1 → r-2 to y
      const expected = [dirs[1], dirs[0], dirs[1]];
      for (const partition of [0, 1, 2]) {
        await admin.alterPartitionReassignments({ topics: [{ topic: 'r', partitionAssignment: [{ partition, replicas: [2] }] }] });
        await until(
          async () => {
            const p = await partitionOf(cluster, 'r', partition);
            if (p.replicaNodes.join() !== '2' || p.leaderId !== 2) return undefined;
            const row = (await logDirsOf(b2, 'r')).find(([, i]) => i === partition);
            return row !== undefined && row[2] === sizes.get(partition) ? row : undefined;
          },
          30_000,
          `r-${partition} on broker 2 with ${sizes.get(partition)} bytes`,
        );
        expect((await logDirsOf(b2, 'r')).find(([, i]) => i === partition)?.[0], `r-${partition}`).to.equal(expected[partition]);
        expect(existsSync(join(expected[partition] as string, `r-${partition}`)), `r-${partition} on disk`).to.equal(true);
      }
      expect(await logDirsOf(b1, 'r')).to.deep.equal([]);
      // each dir's replication-offset-checkpoint lists the replicas of that dir
      await until(
        () => {
          const listed = dirs.map((d) => {
            const f = join(d, 'replication-offset-checkpoint');
            return existsSync(f)
              ? readFileSync(f, 'utf8')
                  .split('\n')
                  .slice(2, -1)
                  .map((l) => l.split(' ').slice(0, 2).join('-'))
                  .sort()
              : [];
          });
          return Promise.resolve(listed[0]?.join() === 'here-0,r-1' && listed[1]?.join() === 'r-0,r-2' ? true : undefined);
        },
        10_000,
        'per-dir replication-offset-checkpoints',
      );
    } finally {
      await admin.disconnect();
    }
  });
});
