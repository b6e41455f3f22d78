/**
 * Online migration between the group protocols with real clients (issue 12), librdkafka 2.15
 * (@confluentinc/kafka-javascript), while a producer keeps producing and every member commits what it
 * consumes:
 * - range: a 3-member classic group is upgraded member by member to group.protocol=consumer (after the
 *   first restart it is a consumer group: ListGroups v5 type, ConsumerGroupDescribe), then downgraded
 *   back the same way (a classic group again once its last consumer-protocol member is gone);
 * - cooperative-sticky: a 3-member consumer group is downgraded member by member to classic
 *   cooperative-sticky members; its upgrade is then refused as Kafka 4.0 refuses it (KAFKA-18134:
 *   librdkafka's sticky assignors put user data in every assignment, which a consumer group cannot keep).
 * Across each whole sequence every record is consumed exactly once: per partition the offsets consumed by
 * all the member instances together are 0..end-1, each once (a restarted member resumes at the committed
 * offsets), and the commits end at the log end. What each member instance consumed is printed.
 */
import { expect } from 'chai';
import type { GroupCoordinator } from '../../lib/group/coordinator.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawClient } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';

type Any = any;
const { KafkaJS } = loadConfluent();

const PARTITIONS = 6;
const SESSION_MS = 6000;
const HEARTBEAT_MS = 500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: () => string): Promise<number> {
  const started = Date.now();
  while (!(await cond())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what()}`);
    await sleep(100);
  }
  return Date.now() - started;
}

type Protocol = 'classic' | 'consumer';

interface Member {
  name: string;
  protocol: Protocol;
  c: Any;
  /** Records consumed by this member instance. */
  count: number;
}

/** One restart: the member comes back with `to`; then the group is of `type` with `classic` classic members. */
interface Restart {
  name: string;
  to: Protocol;
  type: Protocol;
  classic: number;
}

describe('librdkafka 2.15: online migration of a live group between the classic and the consumer protocol', function () {
  this.timeout(300_000);
  let b: TestBroker;
  let kafka: Any;
  let admin: Any;
  let raw: RawClient;
  const coordinator = () => (b.broker as unknown as { services: { groups: GroupCoordinator } }).services.groups;

  const cleanup = new Cleanup();

  before(async () => {
    b = cleanup.add(
      await startTestBroker({ 'group.consumer.session.timeout.ms': SESSION_MS, 'group.consumer.heartbeat.interval.ms': HEARTBEAT_MS }),
      (t) => t.stop(),
    );
    kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: [b.bootstrap], clientId: 'migration', logLevel: KafkaJS.logLevel.NOTHING } });
    admin = cleanup.add(kafka.admin(), (a) => a.disconnect());
    await admin.connect();
    raw = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
  });
  after(() => cleanup.run());

  /** ListGroups v5: the group's type and state. */
  async function listed(groupId: string): Promise<{ groupType: string; groupState: string } | undefined> {
    const r = await raw.request<Any>(16, 5, { statesFilter: [], typesFilter: [] });
    return r.groups.find((g: Any) => g.groupId === groupId);
  }

  /** ConsumerGroupDescribe v0: error code and member count. */
  async function described(groupId: string): Promise<{ errorCode: number; members: number }> {
    const r = await raw.request<Any>(69, 0, { groupIds: [groupId], includeAuthorizedOperations: false });
    return { errorCode: r.groups[0].errorCode, members: r.groups[0].members.length };
  }

  /** Runs the restarts with 3 members starting with `initial`, records flowing; checks exactly-once at the end. */
  async function scenario(
    strategy: string,
    initial: Protocol,
    restarts: Restart[],
    afterwards: (groupId: string) => Promise<void> = async () => {},
  ): Promise<void> {
    const topic = `migrate-${strategy}`;
    const groupId = `migrate-${strategy}`;
    await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }] });
    /** partition → offset → member instances that consumed it. */
    const consumed = new Map<number, Map<string, string[]>>();
    const live = new Map<string, Member>();
    const history: Member[] = [];
    const lost: string[] = [];
    let commitRetries = 0;

    const producer = kafka.producer();
    await producer.connect();
    let produced = 0;
    let producing = true;
    // A named function, not an IIFE: TypeScript follows an IIFE's body as straight-line code and would
    // take `producing` for always true, while the scenario below clears it as the loop awaits.
    const produce = async () => {
      while (producing) {
        const from = produced;
        await producer.send({
          topic,
          messages: Array.from({ length: 30 }, (_, i) => ({ value: `r${from + i}`, partition: (from + i) % PARTITIONS })),
        });
        produced += 30;
        await sleep(100);
      }
    };
    const producerLoop = produce();

    /**
     * A commit the member knows landed. Through its KafkaJS API librdkafka resolves commitOffsets even when
     * the partition was refused (STALE_MEMBER_EPOCH while a heartbeat moves the member epoch,
     * REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION around a classic rejoin: Kafka answers the same), and does
     * not retry a manual commit; so the member checks the committed offset and commits again, as an
     * application whose commitSync throws would. It owns the partition meanwhile: a revocation and a close
     * wait for the message being processed.
     */
    const commit = async (m: Member, partition: number, next: bigint) => {
      const landed = () => (coordinator().offsets.get(groupId, topic, partition)?.offset ?? -1n) >= next;
      for (let attempt = 0; ; attempt++) {
        await m.c.commitOffsets([{ topic, partition, offset: String(next) }]);
        // The promise may resolve before the broker answered: give the commit a moment to land.
        for (let waited = 0; !landed() && waited < 300; waited += 5) await sleep(5);
        if (landed()) return;
        if (attempt === 50) return void lost.push(`${m.name}/${m.protocol} p${partition}=${next}`);
        commitRetries++;
      }
    };

    const start = async (name: string, protocol: Protocol): Promise<void> => {
      const conf =
        protocol === 'consumer'
          ? { 'group.protocol': 'consumer' }
          : { 'partition.assignment.strategy': strategy, 'session.timeout.ms': SESSION_MS, 'heartbeat.interval.ms': HEARTBEAT_MS };
      const c = kafka.consumer({
        kafkaJS: { groupId, fromBeginning: true, autoCommit: false },
        'client.id': `${name}-${protocol}`,
        ...conf,
      });
      const m: Member = { name, protocol, c, count: 0 };
      await c.connect();
      await c.subscribe({ topics: [topic] });
      await c.run({
        eachMessage: async ({ partition, message }: Any) => {
          const byOffset = consumed.get(partition) ?? new Map<string, string[]>();
          consumed.set(partition, byOffset);
          byOffset.set(message.offset, [...(byOffset.get(message.offset) ?? []), `${name}/${protocol}`]);
          m.count++;
          await commit(m, partition, BigInt(message.offset) + 1n);
        },
      });
      live.set(name, m);
      history.push(m);
    };
    const stop = async (name: string) => {
      const m = live.get(name);
      live.delete(name);
      await m?.c.disconnect();
    };
    const total = () => [...consumed.values()].reduce((n, byOffset) => n + byOffset.size, 0);

    /** The group is of `type` with 3 members (`classic` of them classic), Stable, each assigned; consumption caught up. */
    const settled = async (what: string, type: Protocol, classic: number) => {
      const took = await until(
        () => {
          const g = coordinator().groups.get(groupId);
          if (g === undefined || g.type !== type || g.members.size !== 3 || g.state !== 'Stable') return false;
          if (g.type === 'consumer')
            return (
              [...g.members.values()].filter((m) => m.useClassicProtocol).length === classic &&
              [...g.members.values()].every((m) => m.assignedPartitions.size > 0)
            );
          return true;
        },
        60_000,
        () => {
          const g = coordinator().groups.get(groupId);
          return `${what}: ${type} group Stable with 3 members (is ${g?.type} ${g?.state} with ${g?.members.size})`;
        },
      );
      const mark = produced;
      await until(
        () => total() >= mark,
        30_000,
        () => `${what}: consumption to catch up with ${mark} (at ${total()})`,
      );
      console.log(`      ${what}: settled in ${took} ms; ${total()} consumed of ${produced} produced`);
      const l = await listed(groupId);
      expect([l?.groupType, l?.groupState], `${what}: ListGroups`).to.deep.equal([type, 'Stable']);
      // ConsumerGroupDescribe knows a consumer group (with its classic members too), and no classic group.
      expect(await described(groupId), `${what}: ConsumerGroupDescribe`).to.deep.equal(
        type === 'consumer' ? { errorCode: ErrorCode.NONE, members: 3 } : { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, members: 0 },
      );
    };

    try {
      for (const name of ['m1', 'm2', 'm3']) await start(name, initial);
      await settled(`3 ${initial} members`, initial, initial === 'classic' ? 3 : 0);
      for (const r of restarts) {
        await stop(r.name);
        await start(r.name, r.to);
        await settled(`${r.name} restarted with the ${r.to} protocol`, r.type, r.classic);
      }
      await afterwards(groupId);
      producing = false;
      await producerLoop;
      await until(
        () => total() >= produced,
        60_000,
        () => `all ${produced} records consumed (have ${total()})`,
      );
      await sleep(1000);
    } finally {
      producing = false;
      await producerLoop.catch(() => undefined);
      await producer.disconnect();
      await Promise.all([...live.keys()].map((n) => stop(n)));
    }

    console.log(
      `      ${strategy}: ${produced} produced, ${commitRetries} commits retried; consumed per member instance: ${history.map((m) => `${m.name}/${m.protocol}=${m.count}`).join(' ')}`,
    );
    expect(lost, 'commits that never landed').to.deep.equal([]);
    // Exactly once: per partition, offsets 0..end-1 each consumed once.
    const ends = await admin.fetchTopicOffsets(topic);
    const end = (p: number) => Number(ends.find((e: Any) => e.partition === p).high);
    for (let p = 0; p < PARTITIONS; p++) {
      const byOffset = consumed.get(p) ?? new Map<string, string[]>();
      const dups = [...byOffset].filter(([, who]) => who.length > 1).map(([o, who]) => `${o} by ${who.join(' and ')}`);
      const gaps = Array.from({ length: end(p) }, (_, o) => String(o)).filter((o) => !byOffset.has(o));
      expect({ partition: p, dups: dups.slice(0, 5), gaps: gaps.slice(0, 5) }).to.deep.equal({ partition: p, dups: [], gaps: [] });
    }
    expect(Array.from({ length: PARTITIONS }, (_, p) => end(p)).reduce((a, x) => a + x, 0)).to.equal(produced);
    expect(history.reduce((n, m) => n + m.count, 0)).to.equal(produced);
    // The commits end at the log end.
    const committed = (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions.map((p: Any) => [
      p.partition,
      Number(p.offset),
    ]);
    expect(committed.sort((x: number[], y: number[]) => (x[0] as number) - (y[0] as number))).to.deep.equal(
      Array.from({ length: PARTITIONS }, (_, p) => [p, end(p)]),
    );
  }

  it('range: 3 classic members restarted one by one with group.protocol=consumer, then back; every record once', async () => {
    await scenario('range', 'classic', [
      { name: 'm1', to: 'consumer', type: 'consumer', classic: 2 },
      { name: 'm2', to: 'consumer', type: 'consumer', classic: 1 },
      { name: 'm3', to: 'consumer', type: 'consumer', classic: 0 },
      { name: 'm1', to: 'classic', type: 'consumer', classic: 1 },
      { name: 'm2', to: 'classic', type: 'consumer', classic: 2 },
      { name: 'm3', to: 'classic', type: 'classic', classic: 3 },
    ]);
  });

  it('cooperative-sticky: 3 consumer-protocol members restarted one by one as classic members, downgraded with the last; the upgrade back is refused as Kafka 4.0 does (KAFKA-18134); every record once', async () => {
    await scenario(
      'cooperative-sticky',
      'consumer',
      [
        { name: 'm1', to: 'classic', type: 'consumer', classic: 1 },
        { name: 'm2', to: 'classic', type: 'consumer', classic: 2 },
        { name: 'm3', to: 'classic', type: 'classic', classic: 3 },
      ],
      async (groupId) => {
        // A consumer-protocol member joining now: the sticky assignor's user data cannot be kept.
        const r = await raw.request<Any>(68, 1, {
          groupId,
          memberId: 'upgrader0000000000000A',
          memberEpoch: 0,
          instanceId: null,
          rackId: null,
          rebalanceTimeoutMs: 30_000,
          subscribedTopicNames: [groupId],
          subscribedTopicRegex: null,
          serverAssignor: null,
          topicPartitions: [],
        });
        expect([r.errorCode, r.errorMessage]).to.deep.equal([
          ErrorCode.GROUP_ID_NOT_FOUND,
          `Cannot upgrade classic group ${groupId} to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.`,
        ]);
        expect((await listed(groupId))?.groupType).to.equal('classic');
        await sleep(500);
        expect(coordinator().groups.get(groupId)?.state).to.equal('Stable'); // the classic members did not notice
      },
    );
  });
});
