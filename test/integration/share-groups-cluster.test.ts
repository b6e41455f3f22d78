/**
 * Share groups (KIP-932) on a 3-broker cluster with a real etcd, driven by librdkafka 2.15's share
 * consumer (test/helpers/native/rdkafka-share.c): FindCoordinator answers the group coordinator (key
 * type GROUP) and the share coordinator (key type SHARE, "group:topicId:partition": the leader of the
 * key's `__share_group_state` partition, created with replication factor 3); partition leaders keep
 * their share partitions' state at share coordinators on other brokers (WriteShareGroupState, acks=all);
 * and a kill -9 of a partition leader or of a share coordinator loses no accepted record and redelivers
 * the acquired ones from the new leader; a kill -9 of the group coordinator keeps the members (their ids,
 * epochs and the group epoch come back from `__consumer_offsets` at the new coordinator, and their next
 * heartbeats are accepted). Fails (never skips) when librdkafka is not built.
 */
import { expect } from 'chai';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { FindCoordinatorResponse } from '../../protocol/generated/find-coordinator.js';
import type { ShareGroupDescribeResponse } from '../../protocol/generated/share-group-describe.js';
import { partitionFor } from '../../lib/group/records.js';
import type { LocalBroker } from '../../lib/cluster/local-cluster.js';
import {
  brokerWarnings,
  clusterKafka,
  createRf3Topic,
  metadata,
  partitionOf,
  RF3_OVERRIDES,
  running,
  until,
  useCluster,
} from '../helpers/cluster.js';
import { until as untilTrue } from '../helpers/eos.js';
import { RawClient } from '../helpers/raw-client.js';
import { describeShareMembers, librdkafkaMissing, ShareConsumer } from '../helpers/share-consumer.js';

const SESSION_TIMEOUT_MS = 3000;
const STATE_PARTITIONS = 3;
const STATE_TOPIC = '__share_group_state';

describe('share groups in a 3-broker cluster', function () {
  this.timeout(240_000);
  const cluster = useCluster({
    ...RF3_OVERRIDES,
    'broker.session.timeout.ms': String(SESSION_TIMEOUT_MS),
    'offsets.topic.num.partitions': '3',
    'offsets.topic.replication.factor': '3',
    'share.coordinator.state.topic.num.partitions': String(STATE_PARTITIONS),
    'share.coordinator.snapshot.update.records.per.snapshot': '2',
    'group.share.min.record.lock.duration.ms': '1000',
    'group.share.record.lock.duration.ms': '30000',
  });
  const consumers: ShareConsumer[] = [];
  before(() => {
    const missing = librdkafkaMissing();
    if (missing !== null) throw new Error(missing);
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.kill()));
    // every broker runs again for the next test
    await Promise.all(
      cluster()
        .brokers.filter((b) => !b.running)
        .map((b) => b.start()),
    );
  });

  const kafka = () => clusterKafka(cluster(), 'share-cluster');
  const produce = async (topic: string, values: string[], partition = 0) => {
    const p = kafka().producer();
    await p.connect();
    try {
      await p.send({ topic, acks: -1, messages: values.map((value) => ({ value, partition })) });
    } finally {
      await p.disconnect();
    }
  };
  const consumer = (group: string, topic: string) => {
    const c = new ShareConsumer(cluster().bootstrap(), group, topic);
    consumers.push(c);
    return c;
  };
  const topicIdOf = async (topic: string) => {
    const m = await metadata(running(cluster()).bootstrap, [topic]);
    const id = m.topics[0]?.topicId;
    if (id === undefined) throw new Error(`no ${topic}`);
    return id;
  };
  /** `__share_group_state` with a leader for each partition (a FindCoordinator of key type SHARE creates it on first use). */
  const stateTopic = async () => {
    const c = await RawClient.connect(running(cluster()).bootstrap);
    try {
      await c.request<FindCoordinatorResponse>(ApiKey.FindCoordinator, 6, { keyType: 2, coordinatorKeys: [`probe:${'0'.repeat(32)}:0`] });
    } finally {
      c.destroy();
    }
    await until(
      async () => {
        const ps = (await metadata(running(cluster()).bootstrap, [STATE_TOPIC])).topics[0]?.partitions ?? [];
        return ps.length === STATE_PARTITIONS && ps.every((p) => p.leaderId >= 0) ? true : undefined;
      },
      30_000,
      STATE_TOPIC,
    );
  };
  /** The broker leading the state partition of the share partition (its share coordinator). */
  const coordinatorOf = async (group: string, topicId: string, p: number) => {
    await stateTopic();
    return (await partitionOf(cluster(), STATE_TOPIC, partitionFor(`${group}:${topicId}:${p}`, STATE_PARTITIONS))).leaderId;
  };
  const broker = (nodeId: number): LocalBroker => {
    const b = cluster().brokers.find((x) => x.nodeId === nodeId);
    if (b === undefined) throw new Error(`no broker ${nodeId}`);
    return b;
  };
  /** A group name whose share coordinator for `topic`-0 is another broker than the partition's leader. */
  const groupAwayFromLeader = async (prefix: string, topicId: string, leader: number) => {
    for (let i = 0; ; i++) {
      const g = `${prefix}-${i}`;
      if ((await coordinatorOf(g, topicId, 0)) !== leader) return g;
    }
  };
  /** Produces probes until the consumer gets one (share groups start at the log end): it then fetches from the leader. */
  const receiving = async (c: ShareConsumer, topic: string) => {
    await untilTrue(
      async () => {
        await produce(topic, ['probe']);
        await new Promise((r) => setTimeout(r, 300));
        return c.deliveries.length > 0;
      },
      60_000,
      `${topic}: consumer receiving`,
    );
  };
  const newLeader = async (topic: string, p: number, old: number) =>
    until(
      async () => {
        const q = await partitionOf(cluster(), topic, p);
        return q.leaderId >= 0 && q.leaderId !== old ? q.leaderId : undefined;
      },
      SESSION_TIMEOUT_MS * 10,
      `a new leader of ${topic}-${p}`,
    );

  /** The group coordinator of `group` (FindCoordinator key type GROUP) and its ShareGroupDescribe; undefined while it answers an error. */
  const groupCoordinatorOf = async (group: string): Promise<number> => {
    const c = await RawClient.connect(running(cluster()).bootstrap);
    try {
      const f = await c.request<FindCoordinatorResponse>(ApiKey.FindCoordinator, 6, { keyType: 0, coordinatorKeys: [group] });
      const found = f.coordinators?.[0];
      return found === undefined || found.errorCode !== ErrorCode.NONE ? -1 : (found.nodeId ?? -1);
    } finally {
      c.destroy();
    }
  };
  const describeAtCoordinator = async (group: string) => {
    const nodeId = await groupCoordinatorOf(group);
    if (nodeId < 0) return undefined;
    const b = broker(nodeId);
    if (!b.running) return undefined;
    const raw = await RawClient.connect(b.bootstrap);
    try {
      const d = await raw.request<ShareGroupDescribeResponse>(ApiKey.ShareGroupDescribe, 1, {
        groupIds: [group],
        includeAuthorizedOperations: false,
      });
      const g = d.groups[0];
      return g === undefined || g.errorCode !== ErrorCode.NONE ? undefined : { nodeId, group: g };
    } finally {
      raw.destroy();
    }
  };
  const membership = (g: ShareGroupDescribeResponse['groups'][number]) => g.members.map((m) => `${m.memberId}@${m.memberEpoch}`).sort();

  it('FindCoordinator: GROUP answers the group coordinator, SHARE the leader of the key’s replicated __share_group_state partition', async () => {
    await createRf3Topic(kafka(), 'fc', 2);
    const topicId = await topicIdOf('fc');
    const base64 = Buffer.from(topicId, 'hex').toString('base64url');
    const keys = ['g-fc:' + base64 + ':0', 'g-fc:' + base64 + ':1', 'other:' + topicId + ':1'];
    for (const b of cluster().brokers) {
      const c = await RawClient.connect(b.bootstrap);
      try {
        const share = await c.request<FindCoordinatorResponse>(ApiKey.FindCoordinator, 6, {
          keyType: 2,
          coordinatorKeys: [...keys, 'not-a-share-key'],
        });
        const group = await c.request<FindCoordinatorResponse>(ApiKey.FindCoordinator, 6, { keyType: 0, coordinatorKeys: ['g-fc'] });
        const found = share.coordinators ?? [];
        expect(found.map((x) => x.errorCode)).to.deep.equal([ErrorCode.NONE, ErrorCode.NONE, ErrorCode.NONE, ErrorCode.INVALID_REQUEST]);
        for (const [i, key] of keys.entries()) {
          const [g, , p] = key.split(':');
          const expected = await coordinatorOf(g ?? '', topicId, Number(p));
          expect(found[i]?.nodeId, key).to.equal(expected);
          expect(found[i]?.port).to.equal(Number(broker(expected).bootstrap.split(':')[1]));
        }
        const gc = (await partitionOf(cluster(), '__consumer_offsets', partitionFor('g-fc', 3))).leaderId;
        expect(group.coordinators?.[0]?.nodeId).to.equal(gc);
      } finally {
        c.destroy();
      }
    }
    // created on first use with Kafka's share.coordinator.state.topic.replication.factor (3)
    const m = await metadata(running(cluster()).bootstrap, [STATE_TOPIC]);
    expect(m.topics[0]?.partitions).to.have.length(STATE_PARTITIONS);
    for (const p of m.topics[0]?.partitions ?? []) {
      expect(p.replicaNodes).to.have.length(3);
      expect(p.isrNodes).to.have.length(3);
    }
  });

  it('three members on a 3-partition topic: every record accepted exactly once, state kept at share coordinators on other brokers', async () => {
    await createRf3Topic(kafka(), 'jobs', 3);
    const topicId = await topicIdOf('jobs');
    const leaders = await Promise.all([0, 1, 2].map(async (p) => (await partitionOf(cluster(), 'jobs', p)).leaderId));
    // a group with at least one share partition whose coordinator is not its leader (the remote persister path)
    let group = '';
    for (let i = 0; group === ''; i++) {
      const g = `g-jobs-${i}`;
      const coords = await Promise.all([0, 1, 2].map((p) => coordinatorOf(g, topicId, p)));
      if (coords.some((c, p) => c !== leaders[p])) group = g;
    }
    const members = [consumer(group, 'jobs'), consumer(group, 'jobs'), consumer(group, 'jobs')];
    // Probes on each partition until every member received one and every partition delivered one. A
    // share partition starts at the log end (share.auto.offset.reset=latest) when it is first fetched:
    // one no member has fetched yet would start after the records below and never deliver them (a
    // CI run saw that: partition 2 delivered none of its 1,000, with no error anywhere).
    const probed = () => new Set(members.flatMap((m) => m.deliveries.map((d) => d.partition)));
    await untilTrue(
      async () => {
        await Promise.all([0, 1, 2].map((p) => produce('jobs', ['probe'], p)));
        await new Promise((r) => setTimeout(r, 500));
        return members.every((m) => m.deliveries.length > 0) && probed().size === 3;
      },
      90_000,
      'three members receiving',
    );
    const before = members.reduce((n, m) => n + m.deliveries.length, 0);
    const skip = members.map((m) => m.deliveries.length);
    const N = 3000;
    const p = kafka().producer();
    await p.connect();
    for (let i = 0; i < N; i += 500)
      await p.send({
        topic: 'jobs',
        acks: -1,
        messages: Array.from({ length: 500 }, (_, j) => ({ value: `v${i + j}`, partition: (i + j) % 3 })),
      });
    await p.disconnect();
    await untilTrue(
      () => members.reduce((n, m) => n + m.deliveries.length, 0) >= before + N,
      120_000,
      () =>
        `${N} records (${members.reduce((n, m) => n + m.deliveries.length, 0) - before})\n${describeShareMembers(members, skip)}\n` +
        `probes received: ${describeShareMembers(members.map((m, i) => ({ deliveries: m.deliveries.slice(0, skip[i]), errors: [] })))}\n` +
        brokerWarnings(cluster()),
    );
    await Promise.all(members.map((m) => m.close()));
    const seen = new Set<string>();
    for (const d of members.flatMap((m) => m.deliveries)) {
      const k = `${d.partition}:${d.offset}`;
      expect(seen.has(k), `${k} delivered twice`).to.equal(false);
      expect(d.ack).to.equal('A');
      seen.add(k);
    }
    expect(seen.size).to.be.at.least(before + N);
    // the state records went to the coordinators and through replication: every replica of a written state partition has them
    const admin = kafka().admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(STATE_TOPIC);
    await admin.disconnect();
    for (let q = 0; q < 3; q++) {
      const sp = partitionFor(`${group}:${topicId}:${q}`, STATE_PARTITIONS);
      expect(Number(offsets.find((o) => o.partition === sp)?.high), `${STATE_TOPIC}-${sp}`).to.be.greaterThan(0);
    }
  });

  it('kill -9 of the partition leader: accepted records never again, acquired ones redelivered by the new leader', async () => {
    await createRf3Topic(kafka(), 'fo', 1);
    const topicId = await topicIdOf('fo');
    const leader = (await partitionOf(cluster(), 'fo', 0)).leaderId;
    const group = await groupAwayFromLeader('g-fo', topicId, leader);
    const a = consumer(group, 'fo');
    await receiving(a, 'fo');
    await produce(
      'fo',
      Array.from({ length: 500 }, (_, i) => `v${i}`),
    );
    await untilTrue(
      () => a.deliveries.length >= 501,
      60_000,
      () => `500 records at a (${a.deliveries.length})`,
    );
    await a.close(); // its last acknowledgements are answered
    const accepted = new Set(a.deliveries.filter((d) => d.ack === 'A').map((d) => d.offset));
    const h = consumer(group, 'fo');
    await untilTrue(
      async () => {
        if (h.deliveries.length === 0) await produce('fo', ['hold-a', 'b', 'c']);
        await new Promise((r) => setTimeout(r, 500));
        return h.deliveries.length > 0;
      },
      60_000,
      'consumer h holding records',
    );
    const held = h.deliveries.filter((d) => d.ack === 'H').map((d) => d.offset);
    expect(held.length).to.be.greaterThan(0);
    await broker(leader).kill('SIGKILL');
    await h.kill();
    const next = await newLeader('fo', 0, leader);
    expect(next).to.not.equal(leader);
    const c = consumer(group, 'fo');
    await untilTrue(
      () => held.every((o) => c.deliveries.some((d) => d.offset === o)),
      90_000,
      () => `redelivery of ${held.join(',')}: ${JSON.stringify(c.deliveries)}`,
    );
    await produce('fo', ['after-1', 'after-2']);
    await untilTrue(() => c.deliveries.filter((d) => d.offset > Math.max(...held)).length >= 2, 60_000, 'records produced after the kill');
    await c.close();
    for (const d of c.deliveries) expect(accepted.has(d.offset), `offset ${d.offset} was accepted before the kill`).to.equal(false);
    for (const o of held) expect(c.deliveries.find((d) => d.offset === o)?.deliveryCount).to.equal(2);
  });

  it('kill -9 of the share coordinator mid-run: the members go on, no record is lost, accepted ones come back only as new deliveries', async () => {
    await createRf3Topic(kafka(), 'co', 1);
    const topicId = await topicIdOf('co');
    const leader = (await partitionOf(cluster(), 'co', 0)).leaderId;
    const group = await groupAwayFromLeader('g-co', topicId, leader);
    const coordinator = await coordinatorOf(group, topicId, 0);
    const c = consumer(group, 'co');
    await receiving(c, 'co');
    const produced: string[] = [];
    const run = { stop: false };
    const writer = (async () => {
      for (let i = 0; !run.stop; i++) {
        const values = Array.from({ length: 50 }, (_, j) => `r${i}-${j}`);
        await produce('co', values);
        produced.push(...values);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await untilTrue(() => c.deliveries.length > 300, 60_000, 'records flowing');
    await broker(coordinator).kill('SIGKILL');
    const moved = await newLeader(STATE_TOPIC, partitionFor(`${group}:${topicId}:0`, STATE_PARTITIONS), coordinator);
    expect(moved).to.not.equal(coordinator);
    const at = c.deliveries.length;
    await untilTrue(() => c.deliveries.length > at + 300, 90_000, 'records flowing after the coordinator moved');
    run.stop = true;
    await writer;
    const admin = kafka().admin();
    await admin.connect();
    const end = Number((await admin.fetchTopicOffsets('co'))[0]?.high);
    await admin.disconnect();
    const first = Math.min(...c.deliveries.map((d) => d.offset));
    expect(end - first).to.be.greaterThan(produced.length);
    // every record from the first one the member got up to the end, whatever broker died meanwhile
    await untilTrue(
      () => new Set(c.deliveries.map((d) => d.offset)).size >= end - first,
      90_000,
      () => `offsets ${first}..${end - 1} (${new Set(c.deliveries.map((d) => d.offset)).size} delivered)`,
    );
    await c.close();
    // a record comes back only as a new delivery (its count raised by the broker), never the same delivery twice
    const byOffset = new Map<number, number[]>();
    for (const d of c.deliveries) byOffset.set(d.offset, [...(byOffset.get(d.offset) ?? []), d.deliveryCount]);
    for (const [offset, counts] of byOffset) expect(new Set(counts).size, `offset ${offset}: ${counts.join(',')}`).to.equal(counts.length);
    expect(c.errors.filter((e) => !/timed out|transport|coordinator/i.test(e))).to.deep.equal([]);

    // what was written through the new coordinator is where a new partition leader starts: records
    // produced with no member attached come next, none of the accepted ones again
    const accepted = new Set(c.deliveries.filter((d) => d.ack === 'A').map((d) => d.offset));
    await produce('co', ['pending-1', 'pending-2', 'pending-3']);
    await broker(coordinator).start();
    await untilTrue(async () => (await partitionOf(cluster(), 'co', 0)).isrNodes.length === 3, 60_000, 'co-0 back to 3 in-sync replicas');
    await broker(leader).kill('SIGKILL');
    await newLeader('co', 0, leader);
    const d = consumer(group, 'co');
    await untilTrue(
      () => [end, end + 1, end + 2].every((o) => d.deliveries.some((x) => x.offset === o)),
      90_000,
      () => `pending records at ${end}.. (${JSON.stringify(d.deliveries)})`,
    );
    await d.close();
    for (const x of d.deliveries) expect(accepted.has(x.offset), `offset ${x.offset} was accepted before`).to.equal(false);
  });

  it('kill -9 of the group coordinator: members keep their ids and epochs, the group epoch goes on, every record accepted once', async () => {
    await createRf3Topic(kafka(), 'gc', 1);
    const leader = (await partitionOf(cluster(), 'gc', 0)).leaderId;
    // a group whose coordinator is not the partition's leader: the records keep flowing from the leader meanwhile
    let group = '';
    for (let i = 0; group === ''; i++) {
      const g = `g-gc-${i}`;
      const node = await until(
        async () => {
          const n = await groupCoordinatorOf(g);
          return n >= 0 ? n : undefined;
        },
        30_000,
        g,
      );
      if (node !== leader) group = g;
    }
    const members = [consumer(group, 'gc'), consumer(group, 'gc')];
    await untilTrue(
      async () => {
        await produce('gc', ['probe', 'probe']);
        await new Promise((r) => setTimeout(r, 500));
        return members.every((m) => m.deliveries.length > 0);
      },
      90_000,
      'both members receiving',
    );
    // a third member joins and leaves: the group epoch (4) is beyond what two members joining anew would reach
    const third = consumer(group, 'gc');
    const sized = (n: number) => async () => {
      const d = await describeAtCoordinator(group);
      // every member caught up with the assignment (its epoch moves only at its next heartbeat)
      const settled =
        d !== undefined && d.group.members.length === n && d.group.members.every((m) => m.memberEpoch === d.group.assignmentEpoch);
      return settled ? d : undefined;
    };
    await until(sized(3), 60_000, 'three members');
    await third.close();
    const before = await until(sized(2), 60_000, 'two members');
    expect(before.group.groupEpoch).to.be.at.least(4);
    expect(before.nodeId).to.not.equal(leader);
    const produceMany = async (prefix: string, n: number) => {
      const p = kafka().producer();
      await p.connect();
      await p.send({ topic: 'gc', acks: -1, messages: Array.from({ length: n }, (_, i) => ({ value: `${prefix}${i}` })) });
      await p.disconnect();
    };
    const all = [...members, third];
    const delivered = () => all.reduce((n, m) => n + m.deliveries.length, 0);
    const N = 500;
    let expected = delivered() + N;
    await produceMany('a', N);
    await untilTrue(
      () => delivered() >= expected,
      60_000,
      () => `${N} records before the kill (${delivered()})`,
    );

    await broker(before.nodeId).kill('SIGKILL');
    const offsetsPartition = partitionFor(group, 3);
    await newLeader('__consumer_offsets', offsetsPartition, before.nodeId);
    // the new coordinator replayed the group: the same members at the same epochs, the same group epoch
    const after = await until(() => describeAtCoordinator(group), 60_000, `${group} at its new coordinator`);
    expect(after.nodeId).to.not.equal(before.nodeId);
    expect(after.group.groupEpoch).to.equal(before.group.groupEpoch);
    expect(membership(after.group)).to.deep.equal(membership(before.group));
    expect(after.group.members.every((m) => m.assignment.topicPartitions.length === 1)).to.equal(true);
    // records keep flowing while the members heartbeat the new coordinator (every 5 s): all accepted once
    expected = delivered() + N;
    await produceMany('b', N);
    await untilTrue(
      () => delivered() >= expected,
      60_000,
      () => `${N} records after the kill (${delivered()})`,
    );
    await new Promise((r) => setTimeout(r, 11_000)); // two heartbeat intervals at the new coordinator
    const later = await until(() => describeAtCoordinator(group), 30_000, `${group} after heartbeats`);
    // no member was fenced or rejoined (either would move the group epoch)
    expect(later.group.groupEpoch).to.equal(before.group.groupEpoch);
    expect(membership(later.group)).to.deep.equal(membership(before.group));
    await Promise.all(members.map((m) => m.close()));
    const seen = new Set<number>();
    for (const d of all.flatMap((m) => m.deliveries)) {
      expect(seen.has(d.offset), `offset ${d.offset} delivered twice`).to.equal(false);
      expect(d.ack).to.equal('A');
      seen.add(d.offset);
    }
    expect(seen.size).to.be.at.least(2 * N);
    for (const m of members)
      expect(
        m.errors.filter((e) => /fenced|unknown member/i.test(e)),
        'member errors',
      ).to.deep.equal([]);
  });
});
