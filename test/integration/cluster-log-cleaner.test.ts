/**
 * The log cleaner in a cluster (issue 16): every replica cleans its own copy, as Kafka's do. Three
 * brokers on a real etcd, a compacted topic with replication factor 3: once each broker's
 * cleaner-offset-checkpoint shows the partition cleaned, the leader is killed (kill -9), and the new
 * leader's cleaned copy serves one record per key, the latest value at its original offset.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { LocalBroker } from '../../lib/cluster/local-cluster.js';
import { KafkajsPartitionReader } from '../helpers/kafkajs-reader.js';
import { clusterKafka, partitionOf, RF3_OVERRIDES, until, useCluster } from '../helpers/cluster.js';

const TOPIC = 'cluster-compacted';
const KEYS = 200;

/** The first dirty offset a broker's cleaner checkpointed for partition 0 (-1 when none). */
function checkpointed(b: LocalBroker): bigint {
  try {
    const line = readFileSync(join(b.dataDir, 'cleaner-offset-checkpoint'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${TOPIC} 0 `));
    return line === undefined ? -1n : BigInt(line.split(' ')[2] ?? '-1');
  } catch {
    return -1n;
  }
}

describe('cluster log cleaner: followers clean their own copy', function () {
  this.timeout(120_000);
  const cluster = useCluster({ ...RF3_OVERRIDES, 'log.cleaner.backoff.ms': '200', 'replica.fetch.wait.max.ms': '200' });

  it('after every replica cleaned, the new leader of a killed one serves one record per key, the latest at its offset', async () => {
    const kafka = clusterKafka(cluster(), 'cluster-cleaner');
    const admin = kafka.admin();
    await admin.connect();
    const configs = { 'cleanup.policy': 'compact', 'segment.bytes': '16384', 'segment.ms': '1000', 'min.cleanable.dirty.ratio': '0.01' };
    await admin.createTopics({
      topics: [
        {
          topic: TOPIC,
          numPartitions: 1,
          replicationFactor: 3,
          configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })),
        },
      ],
      waitForLeaders: true,
    });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    let seq = 0;
    for (let s = 0; s < 20; s++) {
      const messages = Array.from({ length: 250 }, () => {
        const n = seq++;
        return { key: `key-${(n * 7919) % KEYS}`, value: `${n}:${'c'.repeat(40)}` };
      });
      await producer.send({ topic: TOPIC, acks: -1, messages });
    }
    // past segment.ms: the last record rolls every replica's segment, so all the rest can be cleaned
    await new Promise((r) => setTimeout(r, 1100));
    const [end] = await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'end', value: 'end' }] });
    await producer.disconnect();
    const endOffset = BigInt(end?.baseOffset ?? '-1');
    const reader = new KafkajsPartitionReader(cluster().bootstrap().split(','));
    await reader.connect(TOPIC);
    const want = new Map<string, string>();
    for (const m of await reader.readAll(TOPIC, 0, 0n, endOffset + 1n)) want.set(String(m.key), `${m.offset}=${String(m.value)}`);
    await reader.disconnect();
    expect(want.size).to.equal(KEYS + 1);
    await until(
      () => Promise.resolve(cluster().brokers.every((b) => checkpointed(b) >= endOffset) ? true : undefined),
      60_000,
      'every replica to clean the partition',
    );
    const leaderId = (await partitionOf(cluster(), TOPIC, 0)).leaderId;
    const leader = cluster().brokers.find((b) => b.nodeId === leaderId);
    if (leader === undefined) throw new Error(`no broker ${leaderId}`);
    await leader.kill('SIGKILL');
    try {
      await until(
        async () => {
          const p = await partitionOf(cluster(), TOPIC, 0);
          return p.leaderId !== leaderId && p.leaderId >= 0 ? true : undefined;
        },
        30_000,
        'a new leader',
      );
      const r2 = new KafkajsPartitionReader(cluster().bootstrap().split(','));
      await r2.connect(TOPIC);
      try {
        const got = await r2.readAll(TOPIC, 0, 0n, endOffset + 1n);
        const keys = got.map((m) => String(m.key));
        expect(new Set(keys).size, 'one record per key').to.equal(keys.length);
        expect(new Map(got.map((m) => [String(m.key), `${m.offset}=${String(m.value)}`]))).to.deep.equal(want);
      } finally {
        await r2.disconnect();
      }
    } finally {
      await leader.start();
    }
  });
});
