/**
 * DeleteRecords in a cluster (Kafka's DelayedDeleteRecords): three brokers on a real etcd, a topic
 * with replication factor 3 and small segments. The answer waits until every replica on a live broker
 * moved its log start offset (the low watermark) to the requested offset: the followers take the
 * leader's from their Fetch responses, delete their whole segments below it, and report it in their
 * next Fetch. A follower that died but is still registered (its session has not expired) keeps the
 * low watermark down: the request times out with REQUEST_TIMED_OUT. Once its session expired it no
 * longer counts (Kafka counts live brokers only); restarted, it catches up the leader's log start.
 * A leadership that ends under a waiting request answers it with NOT_LEADER_OR_FOLLOWER.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DeleteRecordsResponse } from '../../protocol/generated/delete-records.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { LocalBroker } from '../../lib/cluster/local-cluster.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { clusterKafka, metadata, RF3_OVERRIDES, running, until, useCluster } from '../helpers/cluster.js';
import { RawClient } from '../helpers/raw-client.js';

type Any = any;
const { KafkaJS } = loadConfluent();
const SESSION_TIMEOUT_MS = 6000;
const TOPIC = 'trimmed';

/** Base offsets of a broker's live segments of the partition (files being deleted end in .deleted). */
function segmentBases(b: LocalBroker, topic: string, partition: number): bigint[] {
  return readdirSync(join(b.dataDir, `${topic}-${partition}`))
    .filter((f) => f.endsWith('.log'))
    .map((f) => BigInt(f.slice(0, -4)))
    .sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
}

/** Whether the broker deleted every whole segment below `offset` (its first segment holds `offset`). */
function trimmedTo(b: LocalBroker, offset: bigint): boolean {
  const bases = segmentBases(b, TOPIC, 0);
  return bases.length >= 1 && (bases[0] ?? 0n) <= offset && (bases.length === 1 || (bases[1] ?? 0n) > offset);
}

/** DeleteRecords v2 of partition 0 straight to `leader`, with the request's timeout_ms. */
async function rawDeleteRecords(leader: LocalBroker, offset: bigint, timeoutMs: number) {
  const c = await RawClient.connect(leader.bootstrap);
  try {
    const res = await c.request<DeleteRecordsResponse>(
      ApiKey.DeleteRecords,
      2,
      {
        topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, offset }] }],
        timeoutMs,
      },
      timeoutMs + 5000,
    );
    const p = res.topics[0]?.partitions[0];
    if (p === undefined) throw new Error('no partition result');
    return p;
  } finally {
    c.destroy();
  }
}

describe('cluster DeleteRecords: the low watermark over all replicas', function () {
  this.timeout(120_000);
  const cluster = useCluster({
    ...RF3_OVERRIDES,
    'broker.session.timeout.ms': String(SESSION_TIMEOUT_MS),
    'offsets.topic.replication.factor': '3',
    'replica.fetch.wait.max.ms': '200',
  });
  const kafka = () => clusterKafka(cluster(), 'delete-records');

  async function partitionState() {
    const m = await metadata(running(cluster()).bootstrap, [TOPIC]);
    const p = m.topics[0]?.partitions[0];
    if (p === undefined) throw new Error(`no ${TOPIC}-0`);
    return p;
  }

  async function leaderOf(): Promise<LocalBroker> {
    const id = (await partitionState()).leaderId;
    const b = cluster().brokers.find((x) => x.nodeId === id && x.running);
    if (b === undefined) throw new Error(`leader ${id} not running`);
    return b;
  }

  async function earliest(): Promise<string | undefined> {
    const admin = kafka().admin();
    await admin.connect();
    try {
      return (await admin.fetchTopicOffsets(TOPIC)).find((o) => o.partition === 0)?.low;
    } finally {
      await admin.disconnect();
    }
  }

  async function isrOfThree(): Promise<void> {
    await until(async () => ((await partitionState()).isrNodes.length === 3 ? true : undefined), 20_000, 'an ISR of three');
  }

  it('answers once every replica moved its log start offset (librdkafka and kafkajs admins); a new leader starts there too', async () => {
    const admin = kafka().admin();
    await admin.connect();
    try {
      await admin.createTopics({
        topics: [{ topic: TOPIC, numPartitions: 1, replicationFactor: 3, configEntries: [{ name: 'segment.bytes', value: '2048' }] }],
        waitForLeaders: true,
      });
    } finally {
      await admin.disconnect();
    }
    const producer = kafka().producer();
    await producer.connect();
    try {
      for (let i = 0; i < 30; i++)
        await producer.send({
          topic: TOPIC,
          acks: -1,
          messages: Array.from({ length: 10 }, (_, j) => ({ value: `record-${i}-${j}-${'x'.repeat(60)}` })),
        });
    } finally {
      await producer.disconnect();
    }
    await isrOfThree();
    for (const b of cluster().brokers) expect(segmentBases(b, TOPIC, 0).length, `segments on broker ${b.nodeId}`).to.be.greaterThan(4);

    const ck = new KafkaJS.Kafka({ kafkaJS: { brokers: cluster().bootstrap().split(','), logLevel: KafkaJS.logLevel.NOTHING } });
    const rd = ck.admin();
    await rd.connect();
    try {
      const results: Any[] = await rd.deleteTopicRecords({
        topic: TOPIC,
        partitions: [{ partition: 0, offset: '200' }],
        operationTimeout: 15_000,
      });
      expect(results.map((r: Any) => [r.partition, Number(r.lowWatermark), r.error ?? null])).to.deep.equal([[0, 200, null]]);
    } finally {
      await rd.disconnect();
    }
    const admin2 = kafka().admin();
    await admin2.connect();
    try {
      await admin2.fetchTopicMetadata({ topics: [TOPIC] }); // deleteTopicRecords finds the leader in loaded metadata
      await admin2.deleteTopicRecords({ topic: TOPIC, partitions: [{ partition: 0, offset: '250' }] });
    } finally {
      await admin2.disconnect();
    }
    expect(await earliest()).to.equal('250');
    // every replica deleted its whole segments below 250 (the renames to .deleted follow the answer)
    await until(
      () => Promise.resolve(cluster().brokers.every((b) => trimmedTo(b, 250n)) ? true : undefined),
      10_000,
      'every replica trimmed',
    );

    // a controlled shutdown hands leadership to a follower: its log starts at 250 as well
    const old = await leaderOf();
    expect(await old.kill('SIGTERM')).to.equal(0);
    const next = await until(
      async () => {
        const p = await partitionState();
        return p.leaderId >= 0 && p.leaderId !== old.nodeId ? p.leaderId : undefined;
      },
      15_000,
      'a new leader',
    );
    expect(next).to.not.equal(old.nodeId);
    expect(await earliest()).to.equal('250');
    await old.start();
    await isrOfThree();
  });

  it('a dead follower still registered: REQUEST_TIMED_OUT; once its session expired it no longer counts; restarted, it catches up', async () => {
    const leader = await leaderOf();
    const follower = cluster().brokers.find((b) => b.nodeId !== leader.nodeId && b.running);
    if (follower === undefined) throw new Error('no follower');
    const rd = new KafkaJS.Kafka({ kafkaJS: { brokers: [leader.bootstrap], logLevel: KafkaJS.logLevel.NOTHING } }).admin();
    await rd.connect();
    try {
      await follower.kill('SIGKILL');
      // Its registration lives on for the session timeout: the leader waits for its log start, then
      // gives up. (The raw request: both admins retry REQUEST_TIMED_OUT instead of reporting it.)
      const timedOut = await rawDeleteRecords(leader, 270n, 1000);
      // Kafka answers a timed-out partition with the low watermark of the delete: the dead follower's 250
      expect([timedOut.errorCode, timedOut.lowWatermark]).to.deep.equal([ErrorCode.REQUEST_TIMED_OUT, 250n]);
      expect(
        (await metadata(leader.bootstrap, [])).brokers.map((b) => b.nodeId),
        'still registered',
      ).to.include(follower.nodeId);
      // the leader's own log start moved (Kafka deletes locally first)
      expect(await earliest()).to.equal('270');

      // librdkafka retries until the dead broker's session expired; then it no longer counts
      const results: Any[] = await rd.deleteTopicRecords({
        topic: TOPIC,
        partitions: [{ partition: 0, offset: '280' }],
        operationTimeout: 1000,
        timeout: SESSION_TIMEOUT_MS * 4,
      });
      expect(results.map((r: Any) => [r.partition, Number(r.lowWatermark), r.error ?? null])).to.deep.equal([[0, 280, null]]);
      expect(
        (await metadata(leader.bootstrap, [])).brokers.map((b) => b.nodeId),
        'unregistered',
      ).to.not.include(follower.nodeId);
    } finally {
      await rd.disconnect();
    }

    // back, it catches up the leader's log start; alive again, it counts in the low watermark
    await follower.start();
    await isrOfThree();
    await until(() => Promise.resolve(trimmedTo(follower, 280n) ? true : undefined), 10_000, 'the returned follower trimmed');
    const again = await until(
      async () => {
        const r = await rawDeleteRecords(await leaderOf(), 280n, 1000);
        return r.errorCode === ErrorCode.NONE ? r : undefined;
      },
      10_000,
      'the low watermark with the returned follower',
    );
    expect(again.lowWatermark).to.equal(280n);
  });

  it('a waiting DeleteRecords whose leader hands over leadership (SIGTERM) answers NOT_LEADER_OR_FOLLOWER', async () => {
    const leader = await leaderOf();
    const follower = cluster().brokers.find((b) => b.nodeId !== leader.nodeId && b.running);
    if (follower === undefined) throw new Error('no follower');
    await follower.kill('SIGKILL'); // still registered: the delete waits for it
    const pending = rawDeleteRecords(leader, 290n, 30_000);
    // the local delete is done: the request waits in the leader's purgatory
    await until(async () => ((await earliest()) === '290' ? true : undefined), 5000, "the leader's log start at 290");
    const [answer, exit] = await Promise.all([pending, leader.kill('SIGTERM')]);
    expect(exit).to.equal(0);
    expect([answer.errorCode, answer.lowWatermark]).to.deep.equal([ErrorCode.NOT_LEADER_OR_FOLLOWER, -1n]);
    await Promise.all([follower.start(), leader.start()]);
    await isrOfThree();
  });
});
