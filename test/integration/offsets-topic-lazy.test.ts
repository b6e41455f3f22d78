/**
 * `__consumer_offsets` is created on first use, as Kafka creates it: a fresh broker has none (start-up
 * does not pay for 50 partitions nobody may use); the first FindCoordinator for a group starts the
 * creation and answers at once (Kafka answers it at once too, COORDINATOR_NOT_AVAILABLE), every write
 * waits for the topic, and the first write of a client that never asked for the coordinator creates
 * it too. Of the new topic's fifty logs only those written to are made, each by its first write. Once
 * it exists, a restart replays it as before.
 */
import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { partitionFor } from '../../lib/group/index.js';
import { RawClient, rawCreateTopics } from '../helpers/raw-client.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';

const OFFSETS = '__consumer_offsets';

/** The `__consumer_offsets` partitions that have a directory in `dataDir`, sorted. */
function offsetsDirs(dataDir: string): number[] {
  return readdirSync(dataDir)
    .filter((d) => d.startsWith(`${OFFSETS}-`))
    .map((d) => Number(d.slice(OFFSETS.length + 1)))
    .sort((x, y) => x - y);
}

/** OffsetCommit v2 of one offset of partition 0 of `topic` for `groupId`, sent without waiting. */
function sendCommit(c: RawClient, groupId: string, topic: string, offset: bigint): Promise<number> {
  return c.send(8, 2, {
    groupId,
    generationIdOrMemberEpoch: -1,
    memberId: '',
    retentionTimeMs: -1n,
    topics: [{ name: topic, partitions: [{ partitionIndex: 0, committedOffset: offset, committedMetadata: null }] }],
  });
}

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

  it('the first FindCoordinator answers at once: a commit pipelined behind it waits for the topic and is stored, Metadata then lists 50 partitions; a broker stopped right after the answer restarts and serves every partition', async () => {
    const dataDir = tempDir();
    b = await startTestBroker({}, { dataDir });
    const c = await RawClient.connect(b.bootstrap);
    try {
      await rawCreateTopics(c, [{ name: 'lazy-pipe', partitions: 1 }]);
      // FindCoordinator, OffsetCommit and Metadata written at once, as a client pipelines them
      await c.send(10, 2, { key: 'pipe-g', keyType: 0 });
      await c.send(8, 2, {
        groupId: 'pipe-g',
        generationIdOrMemberEpoch: -1,
        memberId: '',
        retentionTimeMs: -1n,
        topics: [{ name: 'lazy-pipe', partitions: [{ partitionIndex: 0, committedOffset: 7n, committedMetadata: null }] }],
      });
      await c.send(3, 9, { topics: [{ name: OFFSETS }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false });
      await c.waitResponses(4, 30_000); // CreateTopics' and these three
      const found = c.decode(1, 10, 2).body as { errorCode: number; host: string; port: number };
      const commit = c.decode(2, 8, 2).body as { topics: { partitions: { errorCode: number }[] }[] };
      const md = c.decode(3, 3, 9).body as { topics: { name: string; errorCode: number; partitions: unknown[] }[] };
      expect(found.errorCode).to.equal(0);
      expect(`${found.host}:${found.port}`).to.equal(b.bootstrap);
      expect(commit.topics[0]?.partitions[0]?.errorCode).to.equal(0);
      expect(md.topics[0]).to.deep.include({ name: OFFSETS, errorCode: 0 });
      expect(md.topics[0]?.partitions).to.have.length(50);
    } finally {
      c.destroy();
    }

    // another fresh broker, stopped right after its first FindCoordinator answered (the creation may be
    // anywhere: record not yet stored, logs opening, done): it restarts and every partition takes a commit
    const dataDir2 = tempDir();
    const b2 = await startTestBroker({}, { dataDir: dataDir2 });
    const c2 = await RawClient.connect(b2.bootstrap);
    const found2 = await c2.request<{ errorCode: number }>(10, 2, { key: 'stop-g', keyType: 0 }, 30_000);
    c2.destroy();
    expect(found2.errorCode).to.equal(0);
    await b2.stop(); // its data dir was given, so kept
    const b3 = await startTestBroker({}, { dataDir: dataDir2 });
    try {
      const raw = await RawClient.connect(b3.bootstrap);
      try {
        await rawCreateTopics(raw, [{ name: 'after-stop', partitions: 1 }]);
        // 200 group ids hash to all fifty partitions: every one of them must take a commit
        for (let g = 0; g < 200; g++) {
          const r = await raw.request<{ topics: { partitions: { errorCode: number }[] }[] }>(
            8,
            2,
            {
              groupId: `stop-g${g}`,
              generationIdOrMemberEpoch: -1,
              memberId: '',
              retentionTimeMs: -1n,
              topics: [{ name: 'after-stop', partitions: [{ partitionIndex: 0, committedOffset: BigInt(g), committedMetadata: null }] }],
            },
            30_000,
          );
          expect(r.topics[0]?.partitions[0]?.errorCode, `group stop-g${g}`).to.equal(0);
        }
      } finally {
        raw.destroy();
      }
      const admin = new Kafka({ brokers: [b3.bootstrap], logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      const md = await admin.fetchTopicMetadata({ topics: [OFFSETS] });
      expect(md.topics[0]?.partitions).to.have.length(50);
      const offsets = await admin.fetchOffsets({ groupId: 'stop-g199', topics: ['after-stop'] });
      expect(offsets[0]?.partitions[0]?.offset).to.equal('199');
      await admin.disconnect();
    } finally {
      await b3.stop();
    }

    // the first broker's commit, pipelined behind the first FindCoordinator, survives its restart
    await b.broker.stop();
    b = await startTestBroker({}, { dataDir });
    const c3 = await RawClient.connect(b.bootstrap);
    try {
      const fetched = await c3.request<{ topics: { partitions: { committedOffset: bigint; errorCode: number }[] }[] }>(9, 2, {
        groupId: 'pipe-g',
        topics: [{ name: 'lazy-pipe', partitionIndexes: [0] }],
      });
      expect(fetched.topics[0]?.partitions[0]).to.deep.include({ committedOffset: 7n, errorCode: 0 });
    } finally {
      c3.destroy();
    }
  });

  it('a new topic makes only the logs written to: a commit makes its partition, pipelined commits keep their order, and a restart serves them and writes to partitions never made', async () => {
    const dataDir = tempDir();
    b = await startTestBroker({}, { dataDir });
    // three groups on three different partitions, and one more partition left for after the restart
    const groups: string[] = [];
    const used = new Set<number>();
    for (let g = 0; groups.length < 4; g++) {
      const p = partitionFor(`made-g${g}`, 50);
      if (used.has(p)) continue;
      used.add(p);
      groups.push(`made-g${g}`);
    }
    const [g0, g1, g2, later] = groups as [string, string, string, string];
    const c = await RawClient.connect(b.bootstrap);
    try {
      await rawCreateTopics(c, [{ name: 'made-t', partitions: 1 }]);
      // the first write creates the topic; its partition's log is made by the write, no other is
      await sendCommit(c, g0, 'made-t', 10n);
      await c.waitResponses(2, 30_000);
      expect(offsetsDirs(dataDir)).to.deep.equal([partitionFor(g0, 50)]);
      // two new partitions, each written twice at once: both logs are made, the later commits win
      for (const [g, offset] of [
        [g1, 20n],
        [g2, 30n],
        [g1, 21n],
        [g2, 31n],
      ] as const)
        await sendCommit(c, g, 'made-t', offset);
      await c.waitResponses(6, 30_000);
      for (let i = 2; i < 6; i++) {
        const r = c.decode(i, 8, 2).body as { topics: { partitions: { errorCode: number }[] }[] };
        expect(r.topics[0]?.partitions[0]?.errorCode, `commit ${i - 1}`).to.equal(0);
      }
      expect(offsetsDirs(dataDir)).to.deep.equal([g0, g1, g2].map((g) => partitionFor(g, 50)).sort((x, y) => x - y));
    } finally {
      c.destroy();
    }
    const md = new Kafka({ brokers: [b.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await md.connect();
    expect((await md.fetchTopicMetadata({ topics: [OFFSETS] })).topics[0]?.partitions).to.have.length(50);
    await md.disconnect();

    await b.broker.stop();
    b = await startTestBroker({}, { dataDir });
    const admin = new Kafka({ brokers: [b.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      for (const [g, offset] of [
        [g0, '10'],
        [g1, '21'],
        [g2, '31'],
      ] as const)
        expect((await admin.fetchOffsets({ groupId: g, topics: ['made-t'] }))[0]?.partitions[0]?.offset, g).to.equal(offset);
      const raw = await RawClient.connect(b.bootstrap);
      try {
        await sendCommit(raw, later, 'made-t', 40n);
        const [r] = await raw.waitResponses(1, 30_000);
        expect(r).to.not.equal(undefined);
        const body = raw.decode(0, 8, 2).body as { topics: { partitions: { errorCode: number }[] }[] };
        expect(body.topics[0]?.partitions[0]?.errorCode).to.equal(0);
      } finally {
        raw.destroy();
      }
      expect((await admin.fetchOffsets({ groupId: later, topics: ['made-t'] }))[0]?.partitions[0]?.offset).to.equal('40');
      expect(offsetsDirs(dataDir)).to.include(partitionFor(later, 50));
    } finally {
      await admin.disconnect();
    }
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
