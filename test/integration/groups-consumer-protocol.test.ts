/**
 * librdkafka 2.15 (@confluentinc/kafka-javascript) with `group.protocol=consumer` (KIP-848) against a real
 * gregor: regex subscriptions resolved on the broker (existing topics, a topic created later, one that does
 * not match, one deleted, two members sharing), static members (`group.instance.id`) leaving with epoch -2
 * and coming back within the session timeout or not, and an invalid regex refused with
 * INVALID_REGULAR_EXPRESSION (128) — seen by librdkafka as a fatal error, and on the wire.
 */
import { expect } from 'chai';
import type { ConsumerGroup } from '../../lib/group/consumer-group.js';
import type { GroupCoordinator } from '../../lib/group/coordinator.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawClient } from '../helpers/raw-client.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { Cleanup } from '../helpers/cleanup.js';
import { asError } from '../../lib/as-error.js';

type Any = any;
const confluent = loadConfluent();
const { KafkaJS } = confluent;

const SESSION_MS = 6000;
const HEARTBEAT_MS = 500;

async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: () => string): Promise<number> {
  const started = Date.now();
  while (!(await cond())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return Date.now() - started;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sorted = (s: Iterable<string>) => [...s].sort();

interface Member {
  c: Any;
  /** "topic-partition" currently assigned, from the rebalance callbacks (incremental in KIP-848 mode). */
  owned: Set<string>;
  assigns: number;
  revokes: number;
  /** "topic/value" of every record consumed. */
  seen: Set<string>;
}

describe('librdkafka 2.15 group.protocol=consumer: regex subscriptions and static members', function () {
  this.timeout(180_000);
  let b: TestBroker;
  let kafka: Any;
  let admin: Any;
  const live: Member[] = [];
  const coordinator = () => (b.broker as unknown as { services: { groups: GroupCoordinator } }).services.groups;
  const group = (id: string) => coordinator().groups.get(id) as ConsumerGroup | undefined;

  const cleanup = new Cleanup();

  before(async () => {
    b = cleanup.add(
      await startTestBroker({ 'group.consumer.session.timeout.ms': SESSION_MS, 'group.consumer.heartbeat.interval.ms': HEARTBEAT_MS }),
      (t) => t.stop(),
    );
    kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: [b.bootstrap], clientId: 'kip848', logLevel: KafkaJS.logLevel.NOTHING } });
    admin = cleanup.add(kafka.admin(), (a) => a.disconnect());
    await admin.connect();
  });
  afterEach(async () => {
    await Promise.all(live.splice(0).map((m) => m.c.disconnect().catch(() => undefined)));
  });
  after(() => cleanup.run());

  async function produce(topic: string, partitions: number, n: number): Promise<void> {
    const p = kafka.producer();
    await p.connect();
    await p.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ value: `${topic}:${i}`, partition: i % partitions })) });
    await p.disconnect();
  }

  async function start(groupId: string, topics: (string | RegExp)[], conf: Record<string, unknown> = {}): Promise<Member> {
    const m: Member = { c: undefined, owned: new Set(), assigns: 0, revokes: 0, seen: new Set() };
    m.c = kafka.consumer({
      // The KafkaJS layer asks for topic auto-creation by default (as kafkajs does): a member that still
      // fetches a topic the test deleted would have the broker create it again, as Kafka would.
      kafkaJS: { groupId, fromBeginning: true, allowAutoTopicCreation: false },
      'group.protocol': 'consumer',
      'topic.metadata.refresh.interval.ms': 1000,
      rebalance_cb: (err: Any, tps: Any[]) => {
        const keys = tps.map((tp) => `${tp.topic}-${tp.partition}`);
        if (err.code === -175) {
          m.assigns++;
          for (const k of keys) m.owned.add(k);
        } else if (err.code === -174) {
          m.revokes++;
          for (const k of keys) m.owned.delete(k);
        }
      },
      ...conf,
    });
    await m.c.connect();
    await m.c.subscribe({ topics });
    await m.c.run({
      eachMessage: ({ topic, message }: Any) => {
        m.seen.add(`${topic}/${message.value.toString()}`);
        return Promise.resolve();
      },
    });
    live.push(m);
    return m;
  }

  async function stop(m: Member): Promise<void> {
    live.splice(live.indexOf(m), 1);
    await m.c.disconnect();
  }

  it('a regex subscription gets the matching topics, picks up one created later, ignores one that does not match, drops one deleted; two members share', async () => {
    const groupId = 'kip848-regex';
    await admin.createTopics({
      topics: [
        { topic: 're-a', numPartitions: 2 },
        { topic: 're-b', numPartitions: 1 },
        { topic: 'nore-x', numPartitions: 2 },
      ],
    });
    await Promise.all([produce('re-a', 2, 10), produce('re-b', 1, 10), produce('nore-x', 2, 10)]);

    const m1 = await start(groupId, [/^re-.*/]);
    await until(
      () => m1.seen.size === 20,
      30_000,
      () => `re-a and re-b consumed (have ${m1.seen.size}, owned ${sorted(m1.owned).join(',')})`,
    );
    expect(sorted(m1.owned)).to.deep.equal(['re-a-0', 're-a-1', 're-b-0']);
    expect([...(group(groupId)?.members.values() ?? [])].map((m) => m.subscribedTopicRegex)).to.deep.equal(['(^re-.*)']); // as librdkafka sends it

    // A matching topic created after the member joined: assigned at the next heartbeat, its records consumed.
    await admin.createTopics({
      topics: [
        { topic: 're-c', numPartitions: 2 },
        { topic: 'zz-nomatch', numPartitions: 1 },
      ],
    });
    const pickedUp = await until(
      () => m1.owned.has('re-c-0') && m1.owned.has('re-c-1'),
      10_000,
      () => `re-c assigned (owned ${sorted(m1.owned).join(',')})`,
    );
    console.log(`      re-c assigned ${pickedUp} ms after CreateTopics`);
    expect(pickedUp).to.be.below(3000); // the broker bumps the group epoch at once; the next heartbeats carry it
    await Promise.all([produce('re-c', 2, 10), produce('zz-nomatch', 1, 10)]);
    await until(
      () => [...m1.seen].filter((s) => s.startsWith('re-c/')).length === 10,
      20_000,
      () => `re-c consumed (have ${m1.seen.size})`,
    );
    await sleep(1000);
    expect([...m1.seen].filter((s) => !s.startsWith('re-'))).to.deep.equal([]); // nore-x, zz-nomatch never
    expect(sorted(m1.owned)).to.deep.equal(['re-a-0', 're-a-1', 're-b-0', 're-c-0', 're-c-1']);

    // A second member with the same regex: the five partitions are shared, each owned once.
    const m2 = await start(groupId, [/^re-.*/]);
    await until(
      () => m2.owned.size > 0 && m1.owned.size + m2.owned.size === 5,
      30_000,
      () => `shared (m1 ${sorted(m1.owned).join(',')}, m2 ${sorted(m2.owned).join(',')})`,
    );
    expect(sorted([...m1.owned, ...m2.owned])).to.deep.equal(['re-a-0', 're-a-1', 're-b-0', 're-c-0', 're-c-1']);
    expect([m1.owned.size, m2.owned.size].sort()).to.deep.equal([2, 3]);

    // A deleted topic's partitions go away from whoever held them.
    await admin.deleteTopics({ topics: ['re-a'] });
    await until(
      () => ![...m1.owned, ...m2.owned].some((k) => k.startsWith('re-a-')),
      15_000,
      () => `re-a revoked (m1 ${sorted(m1.owned).join(',')}, m2 ${sorted(m2.owned).join(',')})`,
    );
    await until(
      () => m1.owned.size + m2.owned.size === 3,
      15_000,
      () => `rebalanced without re-a (m1 ${sorted(m1.owned).join(',')}, m2 ${sorted(m2.owned).join(',')})`,
    );
    expect(sorted([...m1.owned, ...m2.owned])).to.deep.equal(['re-b-0', 're-c-0', 're-c-1']);
    const topics = (b.broker as unknown as { services: { metadata: { topics(): { name: string }[] } } }).services.metadata.topics();
    expect(topics.map((t) => t.name).filter((n) => n.startsWith('re-'))).to.have.members(['re-b', 're-c'], 're-a stays deleted');
    expect(group(groupId)?.resolvedRegexes.get('(^re-.*)')).to.deep.equal(new Set(['re-b', 're-c']));
  });

  /** A (instance ia) and B (instance ib) Stable on a 4-partition topic, 2 partitions each. */
  async function staticPair(groupId: string, topic: string): Promise<[Member, Member]> {
    await admin.createTopics({ topics: [{ topic, numPartitions: 4 }] });
    const a = await start(groupId, [topic], { 'group.instance.id': 'ia' });
    await until(
      () => a.owned.size === 4,
      30_000,
      () => `A assigned (${sorted(a.owned).join(',')})`,
    );
    const bb = await start(groupId, [topic], { 'group.instance.id': 'ib' });
    await until(
      () => a.owned.size === 2 && bb.owned.size === 2 && group(groupId)?.state === 'Stable',
      30_000,
      () => `A and B share (A ${sorted(a.owned).join(',')}, B ${sorted(bb.owned).join(',')}, ${group(groupId)?.state})`,
    );
    await sleep(1000);
    return [a, bb];
  }

  it('static member closed (epoch -2) and restarted within the session timeout gets its partitions back; the other member notices nothing', async () => {
    const groupId = 'kip848-static-back';
    const [a, bb] = await staticPair(groupId, 'static-back');
    const epoch = group(groupId)?.groupEpoch;
    const before = { aOwned: sorted(a.owned), aAssigns: a.assigns, aRevokes: a.revokes, bOwned: sorted(bb.owned) };
    const oldB = [...(group(groupId)?.members.values() ?? [])].find((m) => m.instanceId === 'ib');
    await stop(bb);
    expect(oldB?.memberEpoch).to.equal(-2); // left temporarily, still holding its partitions
    const b2 = await start(groupId, ['static-back'], { 'group.instance.id': 'ib' });
    const back = await until(
      () => b2.owned.size === 2,
      20_000,
      () => `B back (${sorted(b2.owned).join(',')})`,
    );
    console.log(`      B assigned ${back} ms after restarting`);
    await sleep(2 * HEARTBEAT_MS + 1000);
    expect(sorted(b2.owned)).to.deep.equal(before.bOwned);
    expect([sorted(a.owned), a.assigns, a.revokes]).to.deep.equal([before.aOwned, before.aAssigns, before.aRevokes]);
    expect(group(groupId)?.groupEpoch).to.equal(epoch);
    expect(b2.assigns).to.equal(1);
    const members = [...(group(groupId)?.members.values() ?? [])];
    expect(members.map((m) => m.instanceId).sort()).to.deep.equal(['ia', 'ib']);
    expect(members.some((m) => m.memberId === oldB?.memberId)).to.equal(false);
  });

  it('static member closed and not restarted: after the session timeout the other member is assigned its partitions', async () => {
    const groupId = 'kip848-static-gone';
    const [a, bb] = await staticPair(groupId, 'static-gone');
    const aAssigns = a.assigns;
    const stoppedAt = Date.now();
    await stop(bb);
    await sleep(SESSION_MS / 2);
    expect(a.owned.size).to.equal(2); // B's partitions wait for B during its session
    expect(a.assigns).to.equal(aAssigns);
    await until(
      () => a.owned.size === 4,
      SESSION_MS + 10_000,
      () => `A gets B's partitions (${sorted(a.owned).join(',')})`,
    );
    const after = Date.now() - stoppedAt;
    console.log(`      A assigned B's partitions ${after} ms after B closed (session timeout ${SESSION_MS} ms)`);
    expect(after).to.be.at.least(SESSION_MS - 2 * HEARTBEAT_MS);
    expect(a.assigns).to.equal(aAssigns + 1); // A's rebalance callback fired once, with B's two partitions
    expect([...(group(groupId)?.members.values() ?? [])].map((m) => m.instanceId)).to.deep.equal(['ia']);
  });

  it('an invalid regex: librdkafka gets a fatal INVALID_REGULAR_EXPRESSION error and no assignment', async () => {
    const groupId = 'kip848-invalid';
    const logs: string[] = [];
    // The node-rdkafka-style API shows librdkafka's fatal error (the KafkaJS-style one only retries).
    const c = new confluent.KafkaConsumer(
      { 'bootstrap.servers': b.bootstrap, 'group.id': groupId, 'group.protocol': 'consumer', log_level: 3, event_cb: true },
      {},
    );
    c.on('event.log', (l: Any) => logs.push(String(l.message)));
    await new Promise<void>((resolve, reject) => c.connect({}, (e: Any) => (e ? reject(asError(e)) : resolve())));
    try {
      // A backreference: POSIX regcomp (librdkafka's check) accepts it, RE2 does not.
      c.subscribe(['^(re)-\\1']);
      c.consume(() => undefined);
      await until(
        () => logs.some((l) => /fatal/i.test(l)),
        20_000,
        () => `a fatal error (logs ${logs.join(' | ')})`,
      );
      // librdkafka's text for error 128: "Fatal error: Broker: The regular expression is not valid: ConsumerGroupHeartbeat fatal error: …"
      expect(logs.find((l) => /fatal/i.test(l))).to.contain('Broker: The regular expression is not valid');
      expect(c.assignments()).to.deep.equal([]);
      expect(group(groupId)).to.equal(undefined);
    } finally {
      await new Promise((r) => c.disconnect(r));
    }
  });

  it('ConsumerGroupHeartbeat v1 answers 128 for an invalid regex, at join and on a change', async () => {
    const raw = await RawClient.connect(b.bootstrap);
    try {
      const join = {
        groupId: 'kip848-raw',
        memberId: 'raw-member-1',
        memberEpoch: 0,
        instanceId: null,
        rackId: null,
        rebalanceTimeoutMs: 30000,
        subscribedTopicNames: [],
        subscribedTopicRegex: '[',
        serverAssignor: null,
        topicPartitions: [],
      };
      const r = await raw.request<Any>(68, 1, join);
      expect([r.errorCode, r.errorMessage]).to.deep.equal([
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        'SubscribedTopicRegex `[` is not a valid regular expression: missing closing ].',
      ]);
      expect(r.errorCode).to.equal(128);
      const ok = await raw.request<Any>(68, 1, { ...join, subscribedTopicRegex: 're-.*' });
      expect([ok.errorCode, ok.memberEpoch]).to.deep.equal([0, 1]);
      const change = await raw.request<Any>(68, 1, {
        ...join,
        memberEpoch: 1,
        rebalanceTimeoutMs: -1,
        subscribedTopicNames: null,
        subscribedTopicRegex: 're-(?!a)',
        topicPartitions: null,
      });
      expect(change.errorCode).to.equal(128);
      expect(change.errorMessage).to.contain('invalid or unsupported Perl syntax');
      const left = await raw.request<Any>(68, 1, {
        ...join,
        memberEpoch: -1,
        rebalanceTimeoutMs: -1,
        subscribedTopicNames: null,
        subscribedTopicRegex: null,
        topicPartitions: null,
      });
      expect(left.errorCode).to.equal(0);
    } finally {
      raw.destroy();
    }
  });
});
