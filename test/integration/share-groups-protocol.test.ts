/**
 * Share groups (KIP-932) on the wire, as Kafka 4.2 answers: ShareGroupHeartbeat membership (join,
 * epochs, fencing, leave, a partition shared by more members than it has), ShareGroupDescribe,
 * ListGroups with the share type, DeleteGroups; ShareFetch share sessions (epochs, unknown session),
 * acquired ranges, ShareAcknowledge refusing records another member holds, redelivery with delivery
 * count 2 after a lock expires, partitions forgotten by the request that acknowledges them; the order
 * a ShareFetch visits partitions in (rotated by the session epoch, as Kafka's round-robin
 * PartitionRotateStrategy, a member's own partitions first) and whole stored batches for the member a
 * partition was reassigned to while the old member's session still holds it.
 */
import { expect } from 'chai';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ShareGroupHeartbeatResponse } from '../../protocol/generated/share-group-heartbeat.js';
import type { ShareGroupDescribeResponse } from '../../protocol/generated/share-group-describe.js';
import type { ShareFetchResponse } from '../../protocol/generated/share-fetch.js';
import type { ShareAcknowledgeResponse } from '../../protocol/generated/share-acknowledge.js';
import type { ListGroupsResponse } from '../../protocol/generated/list-groups.js';
import type { DeleteGroupsResponse } from '../../protocol/generated/delete-groups.js';
import type { MetadataStore } from '../../lib/metadata/store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { RawClient } from '../helpers/raw-client.js';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const LOCK_MS = 1500;
/** records per stored batch in the partition-order test */
const BATCH = 10;

describe('share groups on the wire (KIP-932)', function () {
  this.timeout(60_000);
  const cleanup = new Cleanup();
  let b: TestBroker;
  let raw: RawClient;
  let topicId: string;

  before(async () => {
    b = cleanup.add(
      await startTestBroker({ 'group.share.min.record.lock.duration.ms': 1000, 'group.share.record.lock.duration.ms': LOCK_MS }),
      (t) => t.stop(),
    );
    await createTopic('sw', 1);
    topicId = topicIdOf('sw');
    raw = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
  });
  after(() => cleanup.run());

  const createTopic = async (topic: string, numPartitions: number) => {
    const admin = new Kafka({ brokers: [b.bootstrap], clientId: 'share-wire', logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions }] });
    await admin.disconnect();
  };
  const topicIdOf = (topic: string) =>
    (b.broker as unknown as { services: { metadata: MetadataStore } }).services.metadata.topic(topic)?.topicId ?? '';

  const heartbeat = (groupId: string, memberId: string, memberEpoch: number, topics: string[] | null = ['sw']) =>
    raw.request<ShareGroupHeartbeatResponse>(ApiKey.ShareGroupHeartbeat, 1, {
      groupId,
      memberId,
      memberEpoch,
      rackId: null,
      subscribedTopicNames: topics,
    });

  it('members join with epochs, share the one partition, are fenced on a stale epoch, leave; describe, list and delete', async () => {
    const a = await heartbeat('sg', 'member-a', 0);
    expect(a.errorCode).to.equal(ErrorCode.NONE);
    expect(a.memberId).to.equal('member-a');
    expect(a.memberEpoch).to.equal(1);
    expect(a.heartbeatIntervalMs).to.equal(5000);
    expect(a.assignment?.topicPartitions).to.deep.equal([{ topicId, partitions: [0] }]);
    const c = await heartbeat('sg', 'member-b', 0);
    expect(c.memberEpoch).to.equal(2);
    expect(c.assignment?.topicPartitions).to.deep.equal([{ topicId, partitions: [0] }]); // more members than partitions: shared
    // member-a is behind the group epoch: it gets epoch 2 and its (unchanged) assignment again
    const a2 = await heartbeat('sg', 'member-a', 1, null);
    expect([a2.errorCode, a2.memberEpoch]).to.deep.equal([ErrorCode.NONE, 2]);
    const a3 = await heartbeat('sg', 'member-a', 2, null);
    expect(a3.assignment).to.equal(null); // nothing new
    expect((await heartbeat('sg', 'member-a', 1, null)).errorCode).to.equal(ErrorCode.FENCED_MEMBER_EPOCH);
    expect((await heartbeat('sg', 'nobody', 3, null)).errorCode).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await heartbeat('sg', 'member-c', 0, [])).errorCode).to.equal(ErrorCode.INVALID_REQUEST);

    const d = await raw.request<ShareGroupDescribeResponse>(ApiKey.ShareGroupDescribe, 1, {
      groupIds: ['sg', 'missing'],
      includeAuthorizedOperations: false,
    });
    const [sg, missing] = d.groups;
    expect(sg?.errorCode).to.equal(ErrorCode.NONE);
    expect(sg?.groupState).to.equal('Stable');
    expect(sg?.assignorName).to.equal('simple');
    expect(sg?.members.map((m) => m.memberId).sort()).to.deep.equal(['member-a', 'member-b']);
    expect(sg?.members[0]?.assignment.topicPartitions).to.deep.equal([{ topicId, topicName: 'sw', partitions: [0] }]);
    expect(missing?.errorCode).to.equal(ErrorCode.GROUP_ID_NOT_FOUND);

    const listed = await raw.request<ListGroupsResponse>(ApiKey.ListGroups, 5, { statesFilter: [], typesFilter: ['share'] });
    expect(listed.groups).to.deep.equal([{ groupId: 'sg', protocolType: 'share', groupState: 'Stable', groupType: 'share' }]);
    const consumerOnly = await raw.request<ListGroupsResponse>(ApiKey.ListGroups, 5, { statesFilter: [], typesFilter: ['consumer'] });
    expect(consumerOnly.groups.map((g) => g.groupId)).to.not.include('sg');

    const busy = await raw.request<DeleteGroupsResponse>(ApiKey.DeleteGroups, 2, { groupsNames: ['sg'] });
    expect(busy.results).to.deep.equal([{ groupId: 'sg', errorCode: ErrorCode.NON_EMPTY_GROUP }]);
    expect((await heartbeat('sg', 'member-a', -1, null)).memberEpoch).to.equal(-1);
    expect((await heartbeat('sg', 'member-b', -1, null)).memberEpoch).to.equal(-1);
    const emptied = await raw.request<ListGroupsResponse>(ApiKey.ListGroups, 5, { statesFilter: ['Empty'], typesFilter: ['share'] });
    expect(emptied.groups.map((g) => g.groupId)).to.deep.equal(['sg']);
    const deleted = await raw.request<DeleteGroupsResponse>(ApiKey.DeleteGroups, 2, { groupsNames: ['sg'] });
    expect(deleted.results).to.deep.equal([{ groupId: 'sg', errorCode: ErrorCode.NONE }]);
  });

  it('share sessions, acquired ranges, acknowledgements of another member refused, redelivery after the lock expires', async () => {
    expect((await heartbeat('sf', 'm1', 0)).errorCode).to.equal(ErrorCode.NONE);
    expect((await heartbeat('sf', 'm2', 0)).errorCode).to.equal(ErrorCode.NONE);
    const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'share-wire', logLevel: logLevel.NOTHING });
    const p = kafka.producer();
    await p.connect();
    await p.send({ topic: 'sw', messages: ['a', 'b', 'c'].map((value) => ({ value })) });
    await p.disconnect();
    const fetch = (
      memberId: string,
      epoch: number,
      acks: { firstOffset: bigint; lastOffset: bigint; acknowledgeTypes: number[] }[] = [],
      maxRecords = 2,
    ) =>
      raw.request<ShareFetchResponse>(ApiKey.ShareFetch, 1, {
        groupId: 'sf',
        memberId,
        shareSessionEpoch: epoch,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 1 << 20,
        maxRecords,
        batchSize: maxRecords,
        topics: [{ topicId, partitions: [{ partitionIndex: 0, acknowledgementBatches: acks }] }],
        forgottenTopicsData: [],
      });
    expect((await fetch('m1', 1)).errorCode).to.equal(ErrorCode.SHARE_SESSION_NOT_FOUND);
    const f1 = await fetch('m1', 0);
    expect(f1.errorCode).to.equal(ErrorCode.NONE);
    expect(f1.acquisitionLockTimeoutMs).to.equal(LOCK_MS);
    // the group started at the log end when it was created; the records came after
    expect(f1.responses[0]?.partitions[0]?.acquiredRecords).to.deep.equal([{ firstOffset: 0n, lastOffset: 1n, deliveryCount: 1 }]);
    expect((await fetch('m1', 5)).errorCode).to.equal(ErrorCode.INVALID_SHARE_SESSION_EPOCH);
    const f2 = await fetch('m2', 0);
    expect(f2.responses[0]?.partitions[0]?.acquiredRecords).to.deep.equal([{ firstOffset: 2n, lastOffset: 2n, deliveryCount: 1 }]);
    // m2 may not acknowledge what m1 holds
    const wrong = await raw.request<ShareAcknowledgeResponse>(ApiKey.ShareAcknowledge, 1, {
      groupId: 'sf',
      memberId: 'm2',
      shareSessionEpoch: 1,
      topics: [
        {
          topicId,
          partitions: [{ partitionIndex: 0, acknowledgementBatches: [{ firstOffset: 0n, lastOffset: 0n, acknowledgeTypes: [1] }] }],
        },
      ],
    });
    expect(wrong.responses[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.INVALID_RECORD_STATE);
    // m1 accepts offset 0 (piggy-backed on its next fetch) and never acknowledges offset 1: after the lock duration m2 gets it again
    const f3 = await fetch('m1', 1, [{ firstOffset: 0n, lastOffset: 0n, acknowledgeTypes: [1] }]);
    expect(f3.responses[0]?.partitions[0]?.acknowledgeErrorCode).to.equal(ErrorCode.NONE);
    const redelivered = await raw.request<ShareFetchResponse>(
      ApiKey.ShareFetch,
      1,
      {
        groupId: 'sf',
        memberId: 'm2',
        shareSessionEpoch: 2,
        maxWaitMs: LOCK_MS * 4,
        minBytes: 1,
        maxBytes: 1 << 20,
        maxRecords: 10,
        batchSize: 10,
        topics: [
          {
            topicId,
            partitions: [{ partitionIndex: 0, acknowledgementBatches: [{ firstOffset: 2n, lastOffset: 2n, acknowledgeTypes: [1] }] }],
          },
        ],
        forgottenTopicsData: [],
      },
      LOCK_MS * 6,
    );
    expect(redelivered.responses[0]?.partitions[0]?.acquiredRecords).to.deep.equal([{ firstOffset: 1n, lastOffset: 1n, deliveryCount: 2 }]);
    // closing m2's session (epoch -1) releases what it holds
    const closed = await raw.request<ShareAcknowledgeResponse>(ApiKey.ShareAcknowledge, 1, {
      groupId: 'sf',
      memberId: 'm2',
      shareSessionEpoch: -1,
      topics: [],
    });
    expect(closed.errorCode).to.equal(ErrorCode.NONE);
    expect((await fetch('m2', 3)).errorCode).to.equal(ErrorCode.SHARE_SESSION_NOT_FOUND);
    const f4 = await fetch('m1', 2, [], 10);
    expect(f4.responses[0]?.partitions[0]?.acquiredRecords).to.deep.equal([{ firstOffset: 1n, lastOffset: 1n, deliveryCount: 3 }]);
  });

  it('a partition forgotten by the request that carries its last acknowledgements leaves the share session', async () => {
    expect((await heartbeat('sforget', 'f1', 0)).errorCode).to.equal(ErrorCode.NONE);
    const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'share-wire', logLevel: logLevel.NOTHING });
    const p = kafka.producer();
    await p.connect();
    // two stored batches: a member alone on the partition takes a whole batch
    for (const value of ['x', 'y']) await p.send({ topic: 'sw', messages: [{ value }] });
    await p.disconnect();
    const fetch = (
      memberId: string,
      epoch: number,
      partitions: {
        partitionIndex: number;
        acknowledgementBatches: { firstOffset: bigint; lastOffset: bigint; acknowledgeTypes: number[] }[];
      }[],
      forget: number[] = [],
    ) =>
      raw.request<ShareFetchResponse>(ApiKey.ShareFetch, 1, {
        groupId: 'sforget',
        memberId,
        shareSessionEpoch: epoch,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 1 << 20,
        maxRecords: 1,
        batchSize: 1,
        topics: partitions.length > 0 ? [{ topicId, partitions }] : [],
        forgottenTopicsData: forget.length > 0 ? [{ topicId, partitions: forget }] : [],
      });
    const first = await fetch('f1', 0, [{ partitionIndex: 0, acknowledgementBatches: [] }]);
    const got = first.responses[0]?.partitions[0]?.acquiredRecords[0];
    expect(got?.lastOffset).to.equal(got?.firstOffset);
    const offset = got?.firstOffset ?? -1n;
    // librdkafka's request after a reassignment: the partition's acknowledgements, and the partition forgotten
    const leaving = await fetch(
      'f1',
      1,
      [{ partitionIndex: 0, acknowledgementBatches: [{ firstOffset: offset, lastOffset: offset, acknowledgeTypes: [1] }] }],
      [0],
    );
    expect(leaving.errorCode).to.equal(ErrorCode.NONE);
    expect(leaving.responses[0]?.partitions[0]?.acknowledgeErrorCode).to.equal(ErrorCode.NONE);
    expect(leaving.responses[0]?.partitions[0]?.acquiredRecords).to.deep.equal([]);
    // the session has no partition left: nothing is acquired for f1, the next record stays for others
    const after = await fetch('f1', 2, []);
    expect(after.responses).to.deep.equal([]);
    expect((await heartbeat('sforget', 'f2', 0)).errorCode).to.equal(ErrorCode.NONE);
    const other = await fetch('f2', 0, [{ partitionIndex: 0, acknowledgementBatches: [] }]);
    expect(other.responses[0]?.partitions[0]?.acquiredRecords).to.deep.equal([
      { firstOffset: offset + 1n, lastOffset: offset + 1n, deliveryCount: 1 },
    ]);
  });

  /** One ShareFetch of `memberId` (MaxRecords 5) naming `partitions`; what it acquired as "partition:first-last". */
  const fetchOrder = async (memberId: string, epoch: number, partitions: number[]): Promise<string[]> => {
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
          ? [{ topicId: topicIdOf('so'), partitions: partitions.map((partitionIndex) => ({ partitionIndex, acknowledgementBatches: [] })) }]
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
    await createTopic('so', 2);
    const soId = topicIdOf('so');
    const a = await heartbeat('order', 'member-a', 0, ['so']);
    expect(a.assignment?.topicPartitions).to.deep.equal([{ topicId: soId, partitions: [0, 1] }]);
    // three stored batches of BATCH records in each partition, produced after the group began (it starts at the log end)
    const producer = new Kafka({ brokers: [b.bootstrap], clientId: 'share-wire', logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    for (let i = 0; i < 3; i++)
      for (const partition of [0, 1])
        await producer.send({
          topic: 'so',
          messages: Array.from({ length: BATCH }, (_, k) => ({ partition, value: `${partition}-${i}-${k}` })),
        });
    await producer.disconnect();

    // alone on both partitions: a whole batch per fetch (MaxRecords 5 is soft), the first partition in turn
    expect(await fetchOrder('member-a', 0, [0, 1])).to.deep.equal(['0:0-9']);
    expect(await fetchOrder('member-a', 1, [])).to.deep.equal(['1:0-9']);

    // member-b joins: the coordinator gives it partition 1, while member-a's session (no heartbeat since) still holds it
    const joined = await heartbeat('order', 'member-b', 0, ['so']);
    expect(joined.assignment?.topicPartitions).to.deep.equal([{ topicId: soId, partitions: [1] }]);
    // member-b is alone on partition 1 in the assignment: a whole batch, not MaxRecords
    expect(await fetchOrder('member-b', 0, [1])).to.deep.equal(['1:10-19']);
    // member-a takes its own partition first whatever the rotation, and then at most MaxRecords of the one it lost
    expect(await fetchOrder('member-a', 2, [])).to.deep.equal(['0:10-19']);
    expect(await fetchOrder('member-a', 3, [])).to.deep.equal(['0:20-29']);
    expect(await fetchOrder('member-a', 4, [])).to.deep.equal(['1:20-24']);
    expect(await fetchOrder('member-b', 1, [])).to.deep.equal(['1:25-29']);
  });
});
