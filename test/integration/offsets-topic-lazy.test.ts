/**
 * `__consumer_offsets` is created on first use, as Kafka creates it: a fresh broker has none (start-up
 * does not pay for 50 partitions nobody may use), the first FindCoordinator for a group creates it
 * before answering, and so does the first write of a client that never asked for the coordinator.
 * Once it exists, a restart replays it as before.
 */
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { RawClient, rawCreateTopics } from '../helpers/raw-client.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';

const OFFSETS = '__consumer_offsets';

async function topicNames(bootstrap: string): Promise<string[]> {
  const c = await RawClient.connect(bootstrap);
  try {
    const md = await c.request<{ topics: { name: string | null; isInternal: boolean }[] }>(3, 9, {
      topics: null,
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    return md.topics.map((t) => t.name ?? '');
  } finally {
    c.destroy();
  }
}

describe('__consumer_offsets created on first use', function () {
  this.timeout(60_000);
  let b: TestBroker | undefined;
  afterEach(async () => {
    await b?.stop();
    b = undefined;
  });

  it('a fresh broker has none; a kafkajs group creates it through FindCoordinator and its commits survive a restart', async () => {
    const dataDir = tempDir();
    b = await startTestBroker({}, { dataDir });
    expect(await topicNames(b.bootstrap)).to.not.include(OFFSETS);

    const kafka = new Kafka({ brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'lazy-t', numPartitions: 1 }] });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'lazy-t', messages: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] });
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: 'lazy-g' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'lazy-t', fromBeginning: true });
    let seen = 0;
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: () => {
            if (++seen === 3) resolve();
            return Promise.resolve();
          },
        })
        .catch(reject);
    });
    await consumer.disconnect(); // commits what it read
    const names = await topicNames(b.bootstrap);
    expect(names).to.include(OFFSETS);
    const md = await admin.fetchTopicMetadata({ topics: [OFFSETS] });
    expect(md.topics[0]?.partitions).to.have.length(50);
    await admin.disconnect();

    await b.broker.stop();
    b = await startTestBroker({}, { dataDir });
    const admin2 = new Kafka({ brokers: [b.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin2.connect();
    const offsets = await admin2.fetchOffsets({ groupId: 'lazy-g', topics: ['lazy-t'] });
    expect(offsets[0]?.partitions[0]?.offset).to.equal('3');
    await admin2.disconnect();
  });

  it('an OffsetCommit from a client that never asked FindCoordinator creates it and is stored', async () => {
    b = await startTestBroker();
    const c = await RawClient.connect(b.bootstrap);
    try {
      await rawCreateTopics(c, [{ name: 'lazy-raw', partitions: 2 }]);
      expect(await topicNames(b.bootstrap)).to.not.include(OFFSETS);
      const commit = await c.request<{ topics: { partitions: { partitionIndex: number; errorCode: number }[] }[] }>(
        8,
        2,
        {
          groupId: 'raw-g',
          generationIdOrMemberEpoch: -1,
          memberId: '',
          retentionTimeMs: -1n,
          topics: [{ name: 'lazy-raw', partitions: [{ partitionIndex: 1, committedOffset: 42n, committedMetadata: 'm' }] }],
        },
        30_000,
      );
      expect(commit.topics[0]?.partitions[0]).to.deep.include({ partitionIndex: 1, errorCode: 0 });
      expect(await topicNames(b.bootstrap)).to.include(OFFSETS);
      const fetched = await c.request<{
        topics: { partitions: { partitionIndex: number; committedOffset: bigint; errorCode: number }[] }[];
      }>(9, 2, { groupId: 'raw-g', topics: [{ name: 'lazy-raw', partitionIndexes: [1] }] });
      expect(fetched.topics[0]?.partitions[0]).to.deep.include({ partitionIndex: 1, committedOffset: 42n, errorCode: 0 });
    } finally {
      c.destroy();
    }
  });
});
