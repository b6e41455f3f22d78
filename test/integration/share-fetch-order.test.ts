/**
 * Which partitions a ShareFetch acquires from, and how much (KIP-932, as Kafka 4.2's
 * SharePartitionManager): the session's partitions are visited in turn, rotated by the share session
 * epoch (Kafka's round-robin PartitionRotateStrategy), so a partition that always has records does not
 * starve the others; a member alone on its partition takes whole stored batches even while another
 * member's session still holds that partition (it was reassigned, and that member has not heartbeated
 * since); that other member visits its own partitions first and takes at most MaxRecords from the one
 * it lost.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ShareFetchResponse } from '../../protocol/generated/share-fetch.js';
import type { ShareGroupHeartbeatResponse } from '../../protocol/generated/share-group-heartbeat.js';
import type { MetadataStore } from '../../lib/metadata/store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { RawClient } from '../helpers/raw-client.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const BATCH = 10;

describe('ShareFetch: partition order and batch acquisition (KIP-932)', function () {
  this.timeout(60_000);
  const cleanup = new Cleanup();
  let b: TestBroker;
  let raw: RawClient;
  let topicId: string;

  before(async () => {
    b = cleanup.add(await startTestBroker({}), (t) => t.stop());
    const admin = new Kafka({ brokers: [b.bootstrap], clientId: 'share-order', logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'so', numPartitions: 2 }] });
    await admin.disconnect();
    const metadata = (b.broker as unknown as { services: { metadata: MetadataStore } }).services.metadata;
    topicId = metadata.topic('so')?.topicId ?? '';
    raw = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
  });
  after(() => cleanup.run());

  const heartbeat = (memberId: string) =>
    raw.request<ShareGroupHeartbeatResponse>(ApiKey.ShareGroupHeartbeat, 1, {
      groupId: 'order',
      memberId,
      memberEpoch: 0,
      rackId: null,
      subscribedTopicNames: ['so'],
    });

  /** One ShareFetch of `memberId` (MaxRecords 5) naming `partitions`; what it acquired as "partition:first-last". */
  const fetch = async (memberId: string, epoch: number, partitions: number[]): Promise<string[]> => {
    const r = await raw.request<ShareFetchResponse>(ApiKey.ShareFetch, 1, {
      groupId: 'order',
      memberId,
      shareSessionEpoch: epoch,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      maxRecords: 5,
      batchSize: 5,
      topics:
        partitions.length > 0
          ? [{ topicId, partitions: partitions.map((partitionIndex) => ({ partitionIndex, acknowledgementBatches: [] })) }]
          : [],
      forgottenTopicsData: [],
    });
    expect(r.errorCode).to.equal(ErrorCode.NONE);
    const got: string[] = [];
    for (const t of r.responses)
      for (const p of t.partitions) for (const a of p.acquiredRecords) got.push(`${p.partitionIndex}:${a.firstOffset}-${a.lastOffset}`);
    return got;
  };

  it('rotates the partitions by session epoch; a reassigned partition goes to its new member in whole batches', async () => {
    const a = await heartbeat('member-a');
    expect(a.assignment?.topicPartitions).to.deep.equal([{ topicId, partitions: [0, 1] }]);
    // three stored batches of BATCH records in each partition, produced after the group began (it starts at the log end)
    const producer = new Kafka({ brokers: [b.bootstrap], clientId: 'share-order', logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    for (let i = 0; i < 3; i++)
      for (const partition of [0, 1])
        await producer.send({
          topic: 'so',
          messages: Array.from({ length: BATCH }, (_, k) => ({ partition, value: `${partition}-${i}-${k}` })),
        });
    await producer.disconnect();

    // alone on both partitions: a whole batch per fetch (MaxRecords 5 is soft), the first partition in turn
    expect(await fetch('member-a', 0, [0, 1])).to.deep.equal(['0:0-9']);
    expect(await fetch('member-a', 1, [])).to.deep.equal(['1:0-9']);

    // member-b joins: the coordinator gives it partition 1, while member-a's session (no heartbeat since) still holds it
    const joined = await heartbeat('member-b');
    expect(joined.assignment?.topicPartitions).to.deep.equal([{ topicId, partitions: [1] }]);
    // member-b is alone on partition 1 in the assignment: a whole batch, not MaxRecords
    expect(await fetch('member-b', 0, [1])).to.deep.equal(['1:10-19']);
    // member-a takes its own partition first whatever the rotation, and then at most MaxRecords of the one it lost
    expect(await fetch('member-a', 2, [])).to.deep.equal(['0:10-19']);
    expect(await fetch('member-a', 3, [])).to.deep.equal(['0:20-29']);
    expect(await fetch('member-a', 4, [])).to.deep.equal(['1:20-24']);
    expect(await fetch('member-b', 1, [])).to.deep.equal(['1:25-29']);
  });
});
