import { expect } from 'chai';
import type { ConsumerGroupHeartbeatRequest } from '../../../protocol/generated/consumer-group-heartbeat.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { ConsumerGroup } from '../../../lib/group/consumer-group.js';
import { testCoordinator, type TestCoordinator } from './memory-log.js';

const id = (c: string) => c.repeat(32);
const TOPICS: [string, { topicId: string; partitions: number }][] = [
  ['re-a', { topicId: id('a'), partitions: 3 }],
  ['re-b', { topicId: id('b'), partitions: 2 }],
  ['other', { topicId: id('c'), partitions: 4 }],
  ['__consumer_offsets', { topicId: id('d'), partitions: 4 }],
];

type Hb = Awaited<ReturnType<TestCoordinator['coordinator']['consumer']['heartbeat']>>;

function hb(t: TestCoordinator, o: Partial<ConsumerGroupHeartbeatRequest>): Promise<Hb> {
  return t.coordinator.consumer.heartbeat(
    {
      groupId: 'rg',
      memberId: 'A',
      memberEpoch: 0,
      instanceId: null,
      rackId: null,
      rebalanceTimeoutMs: 30000,
      subscribedTopicNames: [],
      subscribedTopicRegex: '^re-.*',
      serverAssignor: null,
      topicPartitions: [],
      ...o,
    },
    1,
    'client',
    '/127.0.0.1',
  );
}
/** A regular heartbeat reporting `owned` (what the member holds after the previous response). */
const next = (t: TestCoordinator, memberId: string, r: Hb, owned = r.assignment?.topicPartitions ?? []) =>
  hb(t, {
    memberId,
    memberEpoch: r.memberEpoch,
    rebalanceTimeoutMs: -1,
    subscribedTopicNames: null,
    subscribedTopicRegex: null,
    topicPartitions: owned,
  });
const names = (t: TestCoordinator, r: Hb) =>
  (r.assignment?.topicPartitions ?? [])
    .flatMap((tp) => tp.partitions.map((p) => `${[...t.topics].find(([, v]) => v.topicId === tp.topicId)?.[0]}-${p}`))
    .sort();
const group = (t: TestCoordinator) => t.coordinator.groups.get('rg') as ConsumerGroup;
const changed = (t: TestCoordinator) => t.coordinator.consumer.subscriptions.topicsChanged(t.coordinator.groups.values());

describe('KIP-848 regex subscriptions (broker-side resolution)', () => {
  let t: TestCoordinator;
  beforeEach(async () => {
    t = testCoordinator({}, { topics: new Map(TOPICS) });
    await t.coordinator.startup();
    await t.coordinator.whenLoaded();
  });
  afterEach(() => t.coordinator.shutdown());

  it('a member subscribing to a regex is assigned the partitions of the matching topics, never internal ones', async () => {
    const r = await hb(t, {});
    expect(r).to.include({ errorCode: ErrorCode.NONE, memberEpoch: 1 });
    expect(names(t, r)).to.deep.equal(['re-a-0', 're-a-1', 're-a-2', 're-b-0', 're-b-1']);
    const all = await hb(t, { memberId: 'B', subscribedTopicRegex: '.*' });
    expect(all.errorCode).to.equal(ErrorCode.NONE);
    expect(group(t).resolvedRegexes.get('.*')).to.deep.equal(new Set(['re-a', 're-b', 'other']));
  });

  it('the subscription is the union of names and regex matches, shared between members', async () => {
    const a = await hb(t, { subscribedTopicNames: ['other'] });
    expect(names(t, a)).to.have.length(9);
    const b = await hb(t, { memberId: 'B', subscribedTopicNames: ['other'] });
    // A gives up half, B gets what A released.
    const a2 = await next(t, 'A', a, a.assignment?.topicPartitions);
    const a3 = await next(t, 'A', a2);
    await next(t, 'B', b);
    expect(a3.memberEpoch).to.equal(2);
    const held = (m: string) => names(t, { ...a3, assignment: { topicPartitions: assigned(group(t), m) } });
    expect([...held('A'), ...held('B')].sort()).to.deep.equal(names(t, a));
    expect([held('A').length, held('B').length].sort()).to.deep.equal([4, 5]);
    expect(group(t).state).to.equal('Stable');
  });

  it('a topic created or deleted that changes what the regex matches moves the group epoch; others do not', async () => {
    const r = await hb(t, {});
    t.topics.set('zzz', { topicId: id('e'), partitions: 2 });
    changed(t);
    expect(group(t).groupEpoch).to.equal(1); // no match: no rebalance
    t.topics.set('re-c', { topicId: id('f'), partitions: 2 });
    changed(t);
    expect(group(t).groupEpoch).to.equal(2);
    const r2 = await next(t, 'A', r);
    expect(r2.memberEpoch).to.equal(2);
    expect(names(t, r2)).to.include.members(['re-c-0', 're-c-1']);
    t.topics.delete('re-a');
    changed(t);
    expect(group(t).groupEpoch).to.equal(3);
    const r3 = await next(t, 'A', r2);
    expect(names(t, r3)).to.deep.equal(['re-b-0', 're-b-1', 're-c-0', 're-c-1']); // re-a revoked
    const r4 = await next(t, 'A', r3);
    expect(r4.memberEpoch).to.equal(3);
  });

  it('a member changing its regex is re-resolved at once; an empty regex unsubscribes', async () => {
    const r = await hb(t, {});
    const r2 = await hb(t, {
      memberEpoch: r.memberEpoch,
      subscribedTopicRegex: 'oth.r',
      subscribedTopicNames: null,
      topicPartitions: r.assignment?.topicPartitions ?? [],
    });
    expect(names(t, r2)).to.deep.equal([]); // revoking re-*
    const r3 = await next(t, 'A', r2);
    expect(names(t, r3)).to.deep.equal(['other-0', 'other-1', 'other-2', 'other-3']);
    expect([...group(t).resolvedRegexes.keys()]).to.deep.equal(['oth.r']);
    const r4 = await hb(t, {
      memberEpoch: r3.memberEpoch,
      subscribedTopicRegex: '',
      subscribedTopicNames: null,
      topicPartitions: r3.assignment?.topicPartitions ?? [],
    });
    const r5 = await next(t, 'A', r4);
    expect(names(t, r5)).to.deep.equal([]);
    expect(group(t).resolvedRegexes.size).to.equal(0);
  });

  it('an invalid regex gets INVALID_REGULAR_EXPRESSION (128) with Kafka message, and changes nothing', async () => {
    const bad = await hb(t, { subscribedTopicRegex: '^re-(?=x)' });
    expect(bad.errorCode).to.equal(128);
    expect(bad.errorMessage).to.equal(
      'SubscribedTopicRegex `^re-(?=x)` is not a valid regular expression: invalid or unsupported Perl syntax.',
    );
    expect(t.coordinator.groups.has('rg')).to.equal(false);
    const r = await hb(t, {});
    const bad2 = await hb(t, { memberEpoch: r.memberEpoch, subscribedTopicRegex: '[', subscribedTopicNames: null, topicPartitions: null });
    expect(bad2.errorCode).to.equal(ErrorCode.INVALID_REGULAR_EXPRESSION);
    expect(group(t).members.get('A')?.subscribedTopicRegex).to.equal('^re-.*');
    expect(group(t).groupEpoch).to.equal(1);
  });

  it('joining with an empty subscription is accepted, as Kafka 4 does', async () => {
    expect((await hb(t, { subscribedTopicRegex: '' })).errorCode).to.equal(ErrorCode.NONE);
    expect((await hb(t, { memberId: 'B', subscribedTopicRegex: null, subscribedTopicNames: [] })).errorCode).to.equal(ErrorCode.NONE);
    expect((await hb(t, { memberId: 'C', subscribedTopicRegex: null, subscribedTopicNames: null })).errorCode).to.equal(
      ErrorCode.INVALID_REQUEST,
    );
  });

  it('after a reload the regex is resolved again from the persisted member record', async () => {
    const r = await hb(t, {});
    t.coordinator.shutdown();
    const t2 = testCoordinator({}, { logs: t.logs, topics: t.topics });
    await t2.coordinator.startup();
    await t2.coordinator.whenLoaded();
    try {
      const g = t2.coordinator.groups.get('rg') as ConsumerGroup;
      expect(g.members.get('A')?.subscribedTopicRegex).to.equal('^re-.*');
      expect(g.resolvedRegexes.get('^re-.*')).to.deep.equal(new Set(['re-a', 're-b'])); // at load, before any heartbeat
      const r2 = await next(t2, 'A', r);
      expect([r2.errorCode, r2.memberEpoch, g.groupEpoch]).to.deep.equal([ErrorCode.NONE, r.memberEpoch, 1]); // nothing changed: no rebalance
      expect(names(t2, { ...r2, assignment: { topicPartitions: assigned(g, 'A') } })).to.deep.equal(names(t, r));
    } finally {
      t2.coordinator.shutdown();
    }
  });
});

function assigned(g: ConsumerGroup, memberId: string) {
  return [...(g.members.get(memberId)?.assignedPartitions ?? [])].map(([topicId, s]) => ({ topicId, partitions: [...s] }));
}
