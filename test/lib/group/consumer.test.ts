import { expect } from 'chai';
import type { ConsumerGroupHeartbeatRequest } from '../../../protocol/generated/consumer-group-heartbeat.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { type Assignment, rangeAssignor, uniformAssignor } from '../../../lib/group/assignors.js';
import type { ConsumerGroup } from '../../../lib/group/consumer-group.js';
import { testCoordinator, type TestCoordinator } from './memory-log.js';

const T = 'a'.repeat(32);
const sizes = (m: Map<string, Assignment>) => [...m.values()].map((a) => [...a.values()].reduce((n, s) => n + s.size, 0)).sort();

describe('KIP-848 assignors', () => {
  const member = (memberId: string, current: Assignment = new Map()) => ({ memberId, subscribedTopicIds: new Set([T]), current });
  it('range: contiguous ranges in member id order', () => {
    const out = rangeAssignor.assign([member('b'), member('a')], new Map([[T, 5]]));
    expect([...(out.get('a')?.get(T) ?? [])]).to.deep.equal([0, 1, 2]);
    expect([...(out.get('b')?.get(T) ?? [])]).to.deep.equal([3, 4]);
  });
  it('uniform: balanced, and sticky to previous owners', () => {
    const first = uniformAssignor.assign([member('a')], new Map([[T, 6]]));
    expect(sizes(first)).to.deep.equal([6]);
    const second = uniformAssignor.assign([member('a', first.get('a')), member('b')], new Map([[T, 6]]));
    expect(sizes(second)).to.deep.equal([3, 3]);
    const kept = [...(second.get('a')?.get(T) ?? [])];
    for (const p of kept) expect(first.get('a')?.get(T)?.has(p)).to.equal(true);
    const all = new Set([...kept, ...(second.get('b')?.get(T) ?? [])]);
    expect(all.size).to.equal(6);
  });
});

function hb(t: TestCoordinator, o: Partial<ConsumerGroupHeartbeatRequest>) {
  return t.coordinator.consumer.heartbeat(
    {
      groupId: 'cg',
      memberId: '',
      memberEpoch: 0,
      instanceId: null,
      rackId: null,
      rebalanceTimeoutMs: 30000,
      subscribedTopicNames: ['t'],
      subscribedTopicRegex: null,
      serverAssignor: null,
      topicPartitions: [],
      ...o,
    },
    1,
    'client',
    '/127.0.0.1',
  );
}
const parts = (r: Awaited<ReturnType<typeof hb>>) => r.assignment?.topicPartitions.flatMap((tp) => tp.partitions) ?? [];

describe('KIP-848 ConsumerGroupHeartbeat', () => {
  let t: TestCoordinator;
  beforeEach(async () => {
    t = testCoordinator();
    await t.coordinator.startup();
    await t.coordinator.whenLoaded();
  });
  afterEach(() => t.coordinator.shutdown());

  it('join, then a second member: revoke first, assign once released, epochs move forward', async () => {
    const a = await hb(t, { memberId: 'A' });
    expect(a).to.include({ errorCode: ErrorCode.NONE, memberId: 'A', memberEpoch: 1 });
    expect(parts(a)).to.deep.equal([0, 1, 2, 3, 4, 5]);
    const b = await hb(t, { memberId: 'B' });
    expect(b.memberEpoch).to.equal(2);
    expect(parts(b)).to.deep.equal([]); // its partitions are still owned by A
    const a2 = await hb(t, {
      memberId: 'A',
      memberEpoch: 1,
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: null,
      topicPartitions: [{ topicId: T, partitions: [0, 1, 2, 3, 4, 5] }],
    });
    expect(a2.memberEpoch).to.equal(1); // still revoking
    expect(parts(a2)).to.have.length(3);
    const kept = parts(a2);
    const a3 = await hb(t, {
      memberId: 'A',
      memberEpoch: 1,
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: null,
      topicPartitions: [{ topicId: T, partitions: kept }],
    });
    expect(a3.memberEpoch).to.equal(2);
    const b2 = await hb(t, { memberId: 'B', memberEpoch: 2, rebalanceTimeoutMs: -1, subscribedTopicNames: null, topicPartitions: [] });
    expect(parts(b2).concat(kept).sort()).to.deep.equal([0, 1, 2, 3, 4, 5]);
    expect((t.coordinator.groups.get('cg') as ConsumerGroup).state).to.equal('Stable');
  });

  it('fences bad epochs, unknown members, unknown assignors; a live consumer group refuses classic requests it cannot serve', async () => {
    await hb(t, { memberId: 'A' });
    expect((await hb(t, { memberId: 'A', memberEpoch: 9, topicPartitions: null })).errorCode).to.equal(ErrorCode.FENCED_MEMBER_EPOCH);
    expect((await hb(t, { memberId: 'Z', memberEpoch: 1, topicPartitions: null })).errorCode).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await hb(t, { memberId: 'C', serverAssignor: 'nope' })).errorCode).to.equal(ErrorCode.UNSUPPORTED_ASSIGNOR);
    expect((await hb(t, { memberId: 'C', rebalanceTimeoutMs: -1 })).errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    const join = (o: object) =>
      t.coordinator.classic.joinGroup({
        groupId: 'cg',
        memberId: '',
        groupInstanceId: null,
        requireKnownMemberId: false,
        supportSkippingAssignment: false,
        clientId: 'c',
        clientHost: 'h',
        rebalanceTimeoutMs: 10000,
        sessionTimeoutMs: 10000,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
        reason: null,
        ...o,
      });
    // Kafka serves classic members in a consumer group, but only of the consumer protocol type and with a readable subscription.
    expect((await join({ protocolType: 'connect' })).errorCode).to.equal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect((await join({})).errorCode).to.equal(ErrorCode.UNKNOWN_SERVER_ERROR);
    expect((t.coordinator.groups.get('cg') as ConsumerGroup).members.size).to.equal(1);
    // A member using the consumer protocol is unknown to the classic Heartbeat.
    expect(t.coordinator.classic.heartbeat('cg', 'A', null, 1)).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  it('leaving with epoch -1 frees the partitions for the others', async () => {
    await hb(t, { memberId: 'A' });
    await hb(t, { memberId: 'B' });
    const left = await hb(t, { memberId: 'A', memberEpoch: -1, topicPartitions: null });
    expect(left).to.include({ errorCode: ErrorCode.NONE, memberEpoch: -1 });
    const b = await hb(t, { memberId: 'B', memberEpoch: 2, rebalanceTimeoutMs: -1, subscribedTopicNames: null, topicPartitions: [] });
    expect(parts(b)).to.deep.equal([0, 1, 2, 3, 4, 5]);
  });
});
