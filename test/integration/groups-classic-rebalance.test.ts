/**
 * Classic-protocol rebalances exactly as Kafka gives them, counted in real clients' rebalance
 * callbacks (issue 12). librdkafka 2.15 (@confluentinc/kafka-javascript, the node-rdkafka style
 * KafkaConsumer with `rebalance_cb: true`, so every ERR__ASSIGN_PARTITIONS / ERR__REVOKE_PARTITIONS
 * is seen): cooperative-sticky, 3 members on 6 partitions, one leaves (close) or unsubscribes → one
 * rebalance in which each remaining member gets one incremental assign of only the leaver's
 * partitions and revokes nothing; static membership (group.instance.id), range and cooperative-sticky:
 * a member restarting within session.timeout.ms gets its partitions back and nobody else sees a
 * rebalance, while a member that stops (librdkafka static members send no LeaveGroup on close) is
 * removed after its session timeout, not before, in one rebalance the others see (also once it has
 * been replaced by a restart). kafkajs 2.2.4 (no group.instance.id in its consumer API, so only
 * dynamic members): a leave is one rebalance.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import type { ClassicGroup } from '../../lib/group/classic-group.js';
import type { GroupCoordinator } from '../../lib/group/coordinator.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { asError } from '../../lib/as-error.js';

type Any = any;
const { KafkaConsumer, KafkaJS } = loadConfluent();
const require = createRequire(import.meta.url);
const kafkajs = require('kafkajs') as typeof import('kafkajs');

const ERR_ASSIGN = -175; // ERR__ASSIGN_PARTITIONS
const ERR_REVOKE = -174; // ERR__REVOKE_PARTITIONS
const PARTITIONS = 6;
const HEARTBEAT_MS = 500;
const SESSION_MS = 5000;
/** No callback for this long: the group has settled (10 heartbeat intervals on a shared box). */
const QUIET_MS = 2000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sorted = (xs: Iterable<number>) => [...xs].sort((a, b) => a - b);

async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await sleep(50);
  }
}

interface Callback {
  kind: 'assign' | 'revoke';
  partitions: number[];
  at: number;
}

/** One librdkafka consumer and every rebalance callback it got. */
class Member {
  readonly callbacks: Callback[] = [];
  private closed = false;

  private constructor(
    readonly name: string,
    private readonly consumer: Any,
  ) {}

  static async start(bootstrap: string, groupId: string, topic: string, name: string, config: Record<string, unknown>): Promise<Member> {
    const c = new KafkaConsumer(
      {
        'bootstrap.servers': bootstrap,
        'group.id': groupId,
        'client.id': name,
        'enable.auto.commit': false,
        'heartbeat.interval.ms': HEARTBEAT_MS,
        rebalance_cb: true,
        ...config,
      },
      { 'auto.offset.reset': 'earliest' },
    );
    const m = new Member(name, c);
    c.on('rebalance', (err: Any, tps: Any[]) => {
      const kind = err.code === ERR_ASSIGN ? 'assign' : err.code === ERR_REVOKE ? 'revoke' : null;
      if (kind === null) throw new Error(`${name}: unexpected rebalance error ${err.code}`);
      m.callbacks.push({ kind, partitions: sorted(tps.filter((tp) => tp.topic === topic).map((tp) => tp.partition)), at: Date.now() });
    });
    await new Promise<void>((resolve, reject) => c.connect({}, (e: unknown) => (e ? reject(asError(e)) : resolve())));
    c.subscribe([topic]);
    c.consume(() => undefined);
    return m;
  }

  /** The partitions this member holds now, as librdkafka reports them. */
  owned(): number[] {
    return this.closed ? [] : sorted((this.consumer.assignments() as { partition: number }[]).map((a) => a.partition));
  }

  since(mark: number): string[] {
    return this.callbacks.slice(mark).map((c) => `${c.kind} [${c.partitions.join(',')}]`);
  }

  unsubscribe(): void {
    this.consumer.unsubscribe();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await new Promise<void>((resolve) => this.consumer.disconnect(() => resolve()));
  }
}

const lastCallbackAt = (ms: Member[]) => Math.max(0, ...ms.flatMap((m) => m.callbacks.map((c) => c.at)));

describe('classic-protocol rebalances counted in the clients (issue 12)', function () {
  this.timeout(120_000);
  let b: TestBroker;
  let admin: Any;
  let seq = 0;
  const live: Member[] = [];

  const cleanup = new Cleanup();

  before(async () => {
    // Session timeouts of 5 s (Kafka's default minimum is 6 s).
    b = cleanup.add(await startTestBroker({ 'group.min.session.timeout.ms': 1000 }), (t) => t.stop());
    admin = cleanup.add(
      new KafkaJS.Kafka({
        kafkaJS: { brokers: [b.bootstrap], clientId: 'classic-rebalance', logLevel: KafkaJS.logLevel.NOTHING },
      }).admin(),
      (a) => a.disconnect(),
    );
    await admin.connect();
  });
  after(() => cleanup.run());
  afterEach(async () => {
    await Promise.all(live.splice(0).map((m) => m.close()));
  });

  const coordinator = () => (b.broker as unknown as { services: { groups: GroupCoordinator } }).services.groups;
  const groupOf = (groupId: string) => coordinator().groups.get(groupId) as ClassicGroup | undefined;

  async function newTopic(prefix: string): Promise<{ topic: string; groupId: string }> {
    const topic = `${prefix}-${++seq}`;
    await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }] });
    return { topic, groupId: `g-${topic}` };
  }

  /** Starts members one after another, then waits until the group is Stable, split 2/2/2, and quiet. */
  async function startGroup(
    topic: string,
    groupId: string,
    names: string[],
    config: (name: string) => Record<string, unknown>,
  ): Promise<Member[]> {
    const members: Member[] = [];
    for (const name of names) {
      const m = await Member.start(b.bootstrap, groupId, topic, name, config(name));
      members.push(m);
      live.push(m);
    }
    const split = () => members.map((m) => m.owned().join(',')).join(' | ');
    await until(
      () => {
        const g = groupOf(groupId);
        const owned = members.map((m) => m.owned());
        return (
          g?.state === 'Stable' &&
          g.size === names.length &&
          owned.every((o) => o.length === 2) &&
          new Set(owned.flat()).size === PARTITIONS
        );
      },
      45_000,
      () => `Stable with 2 partitions each (${split()})`,
    );
    await until(
      () => Date.now() - lastCallbackAt(members) >= QUIET_MS,
      30_000,
      () => 'no more rebalance callbacks',
    );
    return members;
  }

  for (const how of ['close', 'unsubscribe'] as const) {
    it(`cooperative-sticky, 3 members on 6 partitions, one ${how === 'close' ? 'leaves (close)' : 'unsubscribes'}: one rebalance, each remaining member gets one incremental assign of only the leaver's partitions`, async () => {
      const { topic, groupId } = await newTopic(`coop-${how}`);
      const members = await startGroup(topic, groupId, ['m1', 'm2', 'm3'], () => ({
        'partition.assignment.strategy': 'cooperative-sticky',
        'session.timeout.ms': 10_000,
      }));
      const g = groupOf(groupId) as ClassicGroup;
      const generation = g.generationId;
      const leader = g.leaderId;
      // The leader leaves for close (a new leader must run the assignor), a follower unsubscribes.
      const leaver =
        how === 'close' ? (members.find((m) => g.members.get(leader ?? '')?.clientId === m.name) as Member) : (members[2] as Member);
      const stay = members.filter((m) => m !== leaver);
      const before = new Map(members.map((m) => [m, m.owned()]));
      const marks = new Map(members.map((m) => [m, m.callbacks.length]));
      const freed = before.get(leaver) as number[];
      if (how === 'close') await leaver.close();
      else leaver.unsubscribe();
      await until(
        () => stay.every((m) => m.callbacks.length > (marks.get(m) as number)),
        20_000,
        () => 'the remaining members to see the rebalance',
      );
      await until(
        () => Date.now() - lastCallbackAt(members) >= QUIET_MS,
        30_000,
        () => 'no more rebalance callbacks',
      );

      // The leaver revokes all it had, once, and (unsubscribed) gets nothing back.
      expect(leaver.since(marks.get(leaver) as number), `${leaver.name}'s callbacks`).to.deep.equal([`revoke [${freed.join(',')}]`]);
      // Each remaining member: exactly one callback, an incremental assign of some of the freed partitions.
      const gained: number[][] = [];
      for (const m of stay) {
        const cbs = m.callbacks.slice(marks.get(m));
        expect(m.since(marks.get(m) as number), `${m.name}'s callbacks`).to.have.length(1);
        expect(cbs[0]?.kind).to.equal('assign');
        expect(freed, `${m.name} gains only freed partitions`).to.include.members(cbs[0]?.partitions ?? []);
        gained.push(cbs[0]?.partitions ?? []);
        // Nothing it held moved: it holds what it had plus what it gained.
        expect(m.owned(), `${m.name}'s partitions`).to.deep.equal(sorted([...(before.get(m) as number[]), ...(cbs[0]?.partitions ?? [])]));
      }
      expect(sorted(gained.flat())).to.deep.equal(freed);
      expect(gained.map((x) => x.length)).to.deep.equal([1, 1]);
      // One rebalance on the broker too.
      expect(g.generationId).to.equal(generation + 1);
      expect(g.state).to.equal('Stable');
      expect(g.size).to.equal(2);
    });
  }

  for (const strategy of ['range', 'cooperative-sticky'] as const) {
    const staticConfig = (name: string) => ({
      'partition.assignment.strategy': strategy,
      'group.instance.id': `inst-${name}`,
      'session.timeout.ms': SESSION_MS,
    });

    it(`static membership, ${strategy}: a member restarting within session.timeout.ms gets its partitions back and nobody sees a rebalance; stopped for good, it is removed after its session timeout`, async () => {
      const { topic, groupId } = await newTopic(`static-restart-${strategy}`);
      const members = await startGroup(topic, groupId, ['s1', 's2', 's3'], staticConfig);
      const g = groupOf(groupId) as ClassicGroup;
      const generation = g.generationId;
      // The leader restarts: the hardest case (its replacement must not run a useless assignment).
      const restarting = members.find((m) => g.members.get(g.leaderId ?? '')?.clientId === m.name) as Member;
      const others = members.filter((m) => m !== restarting);
      const instance = `inst-${restarting.name}`;
      const oldMemberId = g.staticMembers.get(instance);
      const held = restarting.owned();
      const marks = new Map(others.map((m) => [m, m.callbacks.length]));
      const closedAt = Date.now();
      await restarting.close();
      // A static member sends no LeaveGroup on close: it is still in the group.
      expect(g.staticMembers.get(instance)).to.equal(oldMemberId);
      expect(g.size).to.equal(3);
      const again = await Member.start(b.bootstrap, groupId, topic, restarting.name, staticConfig(restarting.name));
      live.push(again);
      await until(
        () => again.callbacks.length > 0,
        20_000,
        () => 'the restarted member to be assigned',
      );
      expect(Date.now() - closedAt, 'restarted within the session timeout').to.be.lessThan(SESSION_MS);
      // Past the old instance's session deadline (plus headroom): still no rebalance anywhere.
      await sleep(Math.max(0, closedAt + SESSION_MS + 2000 - Date.now()));
      expect(again.since(0), 'the restarted member').to.deep.equal([`assign [${held.join(',')}]`]);
      for (const m of others) expect(m.since(marks.get(m) as number), `${m.name}'s callbacks`).to.deep.equal([]);
      expect(again.owned()).to.deep.equal(held);
      expect(g.generationId).to.equal(generation);
      expect(g.state).to.equal('Stable');
      expect(g.size).to.equal(3);
      expect(g.staticMembers.get(instance)).to.not.equal(oldMemberId);
      expect(g.leaderId).to.equal(g.staticMembers.get(instance));

      // The restarted member (a replaced one, with a new member id) then stops for good: removed after its session timeout.
      const stoppedAt = Date.now();
      await again.close();
      await until(
        () => others.every((m) => m.callbacks.length > (marks.get(m) as number)),
        SESSION_MS + 15_000,
        () => 'the others to see the rebalance',
      );
      const firstAt = Math.min(...others.map((m) => m.callbacks[marks.get(m) as number]?.at ?? Infinity));
      expect(firstAt - stoppedAt, 'ms from the second close to the rebalance').to.be.at.least(SESSION_MS - 2 * HEARTBEAT_MS);
      await until(
        () => Date.now() - lastCallbackAt(others) >= QUIET_MS,
        30_000,
        () => 'no more rebalance callbacks',
      );
      expect(sorted(others.flatMap((m) => m.owned()))).to.deep.equal([0, 1, 2, 3, 4, 5]);
      expect(g.generationId, 'one rebalance').to.equal(generation + 1);
      expect(g.hasStaticMember(instance)).to.equal(false);
    });

    it(`static membership, ${strategy}: a member that stops is removed after its session timeout, not before, in one rebalance the others see`, async () => {
      const { topic, groupId } = await newTopic(`static-stop-${strategy}`);
      const members = await startGroup(topic, groupId, ['s1', 's2', 's3'], staticConfig);
      const g = groupOf(groupId) as ClassicGroup;
      const generation = g.generationId;
      const stopping = members[1] as Member;
      const stay = members.filter((m) => m !== stopping);
      const instance = `inst-${stopping.name}`;
      const before = new Map(stay.map((m) => [m, m.owned()]));
      const freed = stopping.owned();
      const marks = new Map(stay.map((m) => [m, m.callbacks.length]));
      const closedAt = Date.now();
      await stopping.close();
      await sleep(SESSION_MS / 2);
      expect(g.hasStaticMember(instance), 'still a member at half its session timeout').to.equal(true);
      for (const m of stay) expect(m.since(marks.get(m) as number), `${m.name} before the session timeout`).to.deep.equal([]);
      await until(
        () => stay.every((m) => m.callbacks.length > (marks.get(m) as number)),
        SESSION_MS + 15_000,
        () => 'the remaining members to see the rebalance',
      );
      const firstAt = Math.min(...stay.map((m) => m.callbacks[marks.get(m) as number]?.at ?? Infinity));
      // Its last heartbeat was at most one interval before the close.
      expect(firstAt - closedAt, 'ms from the close to the rebalance').to.be.at.least(SESSION_MS - 2 * HEARTBEAT_MS);
      await until(
        () => Date.now() - lastCallbackAt(stay) >= QUIET_MS,
        30_000,
        () => 'no more rebalance callbacks',
      );

      expect(g.hasStaticMember(instance)).to.equal(false);
      expect(g.generationId, 'one rebalance').to.equal(generation + 1);
      expect(g.state).to.equal('Stable');
      expect(g.size).to.equal(2);
      const after = stay.map((m) => m.owned());
      expect(sorted(after.flat())).to.deep.equal([0, 1, 2, 3, 4, 5]);
      expect(after.map((o) => o.length)).to.deep.equal([3, 3]);
      for (const m of stay) {
        const cbs = m.callbacks.slice(marks.get(m));
        const mine = before.get(m) as number[];
        if (strategy === 'range') {
          // Eager: revoke everything once, then one assign of the new share.
          expect(m.since(marks.get(m) as number), `${m.name}'s callbacks`).to.deep.equal([
            `revoke [${mine.join(',')}]`,
            `assign [${m.owned().join(',')}]`,
          ]);
        } else {
          // Cooperative: one incremental assign of freed partitions, nothing revoked.
          expect(m.since(marks.get(m) as number), `${m.name}'s callbacks`).to.have.length(1);
          expect(cbs[0]?.kind).to.equal('assign');
          expect(freed).to.include.members(cbs[0]?.partitions ?? []);
          expect(m.owned()).to.deep.equal(sorted([...mine, ...(cbs[0]?.partitions ?? [])]));
        }
      }
    });
  }

  it('kafkajs 2.2.4, 3 members: one leaves, the others rejoin once (one GROUP_JOIN each, one generation)', async () => {
    const { topic, groupId } = await newTopic('kjs-leave');
    const kafka = new kafkajs.Kafka({ brokers: [b.bootstrap], clientId: 'classic-rebalance-kjs', logLevel: kafkajs.logLevel.NOTHING });
    const joins = new Map<number, { generation: number; partitions: number[] }[]>();
    const consumers: import('kafkajs').Consumer[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const c = kafka.consumer({ groupId, heartbeatInterval: HEARTBEAT_MS, sessionTimeout: 10_000, maxWaitTimeInMs: 200 });
        joins.set(i, []);
        c.on(c.events.GROUP_JOIN, (e) =>
          joins
            .get(i)
            ?.push({ generation: groupOf(groupId)?.generationId ?? -1, partitions: sorted(e.payload.memberAssignment[topic] ?? []) }),
        );
        await c.connect();
        await c.subscribe({ topic });
        await c.run({ eachMessage: () => Promise.resolve() });
        consumers.push(c);
      }
      const current = () => [0, 1, 2].map((i) => joins.get(i)?.at(-1));
      await until(
        () => {
          const g = groupOf(groupId);
          const last = current();
          return (
            g?.state === 'Stable' &&
            g.size === 3 &&
            last.every((j) => j?.generation === g.generationId) &&
            new Set(last.flatMap((j) => j?.partitions ?? [])).size === PARTITIONS
          );
        },
        45_000,
        () => 'kafkajs members Stable',
      );
      await sleep(QUIET_MS);
      const g = groupOf(groupId) as ClassicGroup;
      const generation = g.generationId;
      const marks = [0, 1, 2].map((i) => joins.get(i)?.length ?? 0);
      await consumers[2]?.disconnect();
      await until(
        () => [0, 1].every((i) => (joins.get(i)?.length ?? 0) > (marks[i] ?? 0)),
        20_000,
        () => 'the remaining kafkajs members to rejoin',
      );
      await sleep(QUIET_MS);
      for (const i of [0, 1])
        expect(
          joins
            .get(i)
            ?.slice(marks[i])
            .map((j) => j.generation),
          `member ${i}'s GROUP_JOINs`,
        ).to.deep.equal([generation + 1]);
      expect(sorted([0, 1].flatMap((i) => joins.get(i)?.at(-1)?.partitions ?? []))).to.deep.equal([0, 1, 2, 3, 4, 5]);
      expect(g.generationId).to.equal(generation + 1);
      expect(g.state).to.equal('Stable');
    } finally {
      await Promise.all(consumers.slice(0, 2).map((c) => c.disconnect()));
    }
  });
});
