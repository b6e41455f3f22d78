/**
 * Share-group offset admin and member release on a 3-broker cluster with a real etcd, with librdkafka
 * 2.15 share consumers (test/helpers/native/rdkafka-share.c) as members. librdkafka 2.15's admin has no
 * share-group offset calls, so the admin side speaks raw frames to the group coordinator:
 * - DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets and DeleteGroups of a
 *   group whose three share partitions are led by three different brokers (each partition's state read,
 *   initialised or deleted at its share coordinator, wherever that is);
 * - a member killed with kill -9 has its acquired records redelivered to another member at once, well
 *   before their acquisition lock (60 s) would expire.
 * Fails (never skips) when librdkafka is not built.
 */
import { expect } from 'chai';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { FindCoordinatorResponse } from '../../protocol/generated/find-coordinator.js';
import type { ReadShareGroupStateSummaryResponse } from '../../protocol/generated/read-share-group-state-summary.js';
import { partitionFor } from '../../lib/group/records.js';
import { clusterKafka, metadata, partitionOf, RF3_OVERRIDES, running, useCluster } from '../helpers/cluster.js';
import { until } from '../helpers/eos.js';
import { RawClient } from '../helpers/raw-client.js';
import type { DescribedOffsets, OffsetsChange } from '../helpers/share-admin.js';
import { librdkafkaMissing, ShareConsumer } from '../helpers/share-consumer.js';

const STATE_PARTITIONS = 3;
const LOCK_MS = 60_000;

describe('share groups in a 3-broker cluster: offset admin everywhere, members released at once', function () {
  this.timeout(240_000);
  const cluster = useCluster({
    ...RF3_OVERRIDES,
    'offsets.topic.num.partitions': '3',
    'offsets.topic.replication.factor': '3',
    'share.coordinator.state.topic.num.partitions': String(STATE_PARTITIONS),
    'group.share.record.lock.duration.ms': String(LOCK_MS),
    'group.share.max.record.lock.duration.ms': String(LOCK_MS),
  });
  const consumers: ShareConsumer[] = [];
  const raws: RawClient[] = [];
  before(() => {
    const missing = librdkafkaMissing();
    if (missing !== null) throw new Error(missing);
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.kill()));
    for (const r of raws.splice(0)) r.destroy();
  });

  const kafka = () => clusterKafka(cluster(), 'share-cluster-admin');
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
  const raw = async (bootstrap: string) => {
    const c = await RawClient.connect(bootstrap);
    raws.push(c);
    return c;
  };
  const brokerOf = (nodeId: number) => {
    const b = cluster().brokers.find((x) => x.nodeId === nodeId);
    if (b === undefined) throw new Error(`no broker ${nodeId}`);
    return b;
  };
  /** A raw connection to the group's coordinator (FindCoordinator key type GROUP). */
  const groupCoordinator = async (group: string) => {
    const any = await raw(running(cluster()).bootstrap);
    const res = await any.request<FindCoordinatorResponse>(ApiKey.FindCoordinator, 6, { keyType: 0, coordinatorKeys: [group] });
    const node = res.coordinators?.[0]?.nodeId ?? -1;
    expect(node, 'group coordinator').to.be.at.least(0);
    return raw(brokerOf(node).bootstrap);
  };

  it('describe, alter, delete share offsets and DeleteGroups of a group whose partitions three brokers lead', async () => {
    const nodes = cluster().brokers.map((b) => b.nodeId);
    const admin = kafka().admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        {
          topic: 'adm',
          numPartitions: -1,
          replicationFactor: -1,
          // partition p led by the p-th broker
          replicaAssignment: [0, 1, 2].map((p) => ({ partition: p, replicas: [0, 1, 2].map((i) => nodes[(p + i) % 3] ?? -1) })),
        },
      ],
      waitForLeaders: true,
    });
    await admin.disconnect();
    const leaders = await Promise.all([0, 1, 2].map(async (p) => (await partitionOf(cluster(), 'adm', p)).leaderId));
    expect(new Set(leaders).size, `leaders ${leaders.join(',')}`).to.equal(3);
    const group = 'g-adm';
    const gc = await groupCoordinator(group);
    const describe = async (topics: { topicName: string; partitions: number[] }[] | null) =>
      (await gc.request<DescribedOffsets>(ApiKey.DescribeShareGroupOffsets, 1, { groups: [{ groupId: group, topics }] })).groups[0];
    const startOffsets = async () =>
      ((await describe([{ topicName: 'adm', partitions: [0, 1, 2] }]))?.topics[0]?.partitions ?? []).map((p) => p.startOffset);
    const alter = (startOffset: bigint) =>
      gc.request<OffsetsChange>(ApiKey.AlterShareGroupOffsets, 0, {
        groupId: group,
        topics: [{ topicName: 'adm', partitions: [0, 1, 2].map((partitionIndex) => ({ partitionIndex, startOffset })) }],
      });

    // one member takes every partition's records and accepts them, then leaves
    const a = consumer(group, 'adm');
    await until(
      async () => {
        await Promise.all([0, 1, 2].map((p) => produce('adm', ['probe'], p)));
        await new Promise((r) => setTimeout(r, 500));
        return [0, 1, 2].every((p) => a.deliveries.some((d) => d.partition === p));
      },
      90_000,
      'a member receiving from the three partitions',
    );
    // while it is in the group: NON_EMPTY_GROUP
    expect((await alter(0n)).errorCode).to.equal(ErrorCode.NON_EMPTY_GROUP);
    expect(
      (await gc.request<OffsetsChange>(ApiKey.DeleteShareGroupOffsets, 0, { groupId: group, topics: [{ topicName: 'adm' }] })).errorCode,
    ).to.equal(ErrorCode.NON_EMPTY_GROUP);
    await Promise.all([0, 1, 2].map((p) => produce('adm', ['x1', 'x2', 'x3'], p)));
    const offsetsAdmin = kafka().admin();
    await offsetsAdmin.connect();
    const high = await offsetsAdmin.fetchTopicOffsets('adm');
    await offsetsAdmin.disconnect();
    const ends = [0, 1, 2].map((p) => BigInt(high.find((o) => o.partition === p)?.high ?? '-1'));
    await until(
      () => [0, 1, 2].every((p) => a.deliveries.some((d) => d.partition === p && BigInt(d.offset) === (ends[p] ?? 0n) - 1n)),
      60_000,
      () => `every record up to ${ends.join(',')}`,
    );
    await a.close();

    // every start offset, read at its share coordinator: past what was accepted (the log end)
    await until(async () => (await startOffsets()).every((o, p) => o === ends[p]), 30_000, `start offsets ${ends.join(',')}`);
    expect(((await describe([{ topicName: 'adm', partitions: [0, 1, 2] }]))?.topics[0]?.partitions ?? []).map((p) => p.lag)).to.deep.equal([
      0n,
      0n,
      0n,
    ]);
    const all = await describe(null);
    expect(all?.errorCode).to.equal(ErrorCode.NONE);
    expect(all?.topics.map((t) => t.topicName)).to.deep.equal(['adm']);
    expect(all?.topics[0]?.partitions.map((p) => p.startOffset).sort()).to.deep.equal([...ends].sort());

    // alter to 0: every share partition's state at its share coordinator, and the next member starts there
    const altered = await alter(0n);
    expect(altered.errorCode).to.equal(ErrorCode.NONE);
    expect(altered.responses[0]?.partitions?.map((p) => p.errorCode)).to.deep.equal([0, 0, 0]);
    expect(await startOffsets()).to.deep.equal([0n, 0n, 0n]);
    // v1's lag: every record from 0 to the high watermark, for the partitions led elsewhere too
    expect(((await describe([{ topicName: 'adm', partitions: [0, 1, 2] }]))?.topics[0]?.partitions ?? []).map((p) => p.lag)).to.deep.equal(
      ends,
    );
    // the state coordinators' own answer (ReadShareGroupStateSummary, as the group coordinator asks it)
    const topicId = (await metadata(running(cluster()).bootstrap, ['adm'])).topics[0]?.topicId ?? '';
    for (const p of [0, 1, 2]) {
      const sc = (await partitionOf(cluster(), '__share_group_state', partitionFor(`${group}:${topicId}:${p}`, STATE_PARTITIONS))).leaderId;
      const c = await raw(brokerOf(sc).bootstrap);
      const res = await c.request<ReadShareGroupStateSummaryResponse>(ApiKey.ReadShareGroupStateSummary, 0, {
        groupId: group,
        topics: [{ topicId, partitions: [{ partition: p, leaderEpoch: -1 }] }],
      });
      expect(res.results[0]?.partitions[0], `share partition ${p} at broker ${sc}`).to.include({ errorCode: 0, startOffset: 0n });
      expect(res.results[0]?.partitions[0]?.stateEpoch).to.be.greaterThan(0);
    }
    const b = consumer(group, 'adm');
    await until(
      () => [0, 1, 2].every((p) => b.deliveries.some((d) => d.partition === p && d.offset === 0)),
      90_000,
      () => `offset 0 of every partition again: ${JSON.stringify(b.deliveries.slice(0, 20))}`,
    );
    await until(() => b.deliveries.length >= ends.reduce((n, e) => n + Number(e), 0), 60_000, 'every record again');
    await b.close();

    // delete the topic's offsets: no state left anywhere, the next member starts at the log end (latest)
    const deleted = await gc.request<OffsetsChange>(ApiKey.DeleteShareGroupOffsets, 0, { groupId: group, topics: [{ topicName: 'adm' }] });
    expect(deleted.errorCode).to.equal(ErrorCode.NONE);
    expect(deleted.responses[0]?.errorCode).to.equal(ErrorCode.NONE);
    expect(await startOffsets()).to.deep.equal([-1n, -1n, -1n]);
    expect((await describe(null))?.topics).to.deep.equal([]);
    // per-partition errors of an alter: unknown topic or partition, a negative start offset
    const bad = await gc.request<OffsetsChange>(ApiKey.AlterShareGroupOffsets, 0, {
      groupId: group,
      topics: [
        { topicName: 'no-such-topic', partitions: [{ partitionIndex: 0, startOffset: 0n }] },
        {
          topicName: 'adm',
          partitions: [
            { partitionIndex: 7, startOffset: 0n },
            { partitionIndex: 1, startOffset: -5n },
          ],
        },
      ],
    });
    expect(bad.errorCode).to.equal(ErrorCode.NONE);
    expect(bad.responses.map((t) => t.partitions?.map((p) => p.errorCode))).to.deep.equal([
      [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_REQUEST],
    ]);
    expect(await startOffsets()).to.deep.equal([-1n, -1n, -1n]);
    // a group the coordinator does not know
    const other = await gc.request<OffsetsChange>(ApiKey.DeleteShareGroupOffsets, 0, {
      groupId: 'never-seen',
      topics: [{ topicName: 'adm' }],
    });
    expect(other.errorCode).to.equal(ErrorCode.GROUP_ID_NOT_FOUND);

    // DeleteGroups of the (empty) share group: gone, its state too
    const c = consumer(group, 'adm');
    await until(
      async () => {
        await Promise.all([0, 1, 2].map((p) => produce('adm', ['late'], p)));
        await new Promise((r) => setTimeout(r, 500));
        return [0, 1, 2].every((p) => c.deliveries.some((d) => d.partition === p));
      },
      90_000,
      'a new member receiving',
    );
    for (const d of c.deliveries) expect(d.offset, `partition ${d.partition}`).to.be.at.least(Number(ends[d.partition]));
    await c.close();
    await until(async () => (await startOffsets()).every((o) => o >= 0n), 30_000, 'state written again');
    const dg = await gc.request<{ results: { groupId: string; errorCode: number }[] }>(ApiKey.DeleteGroups, 2, { groupsNames: [group] });
    expect(dg.results[0]?.errorCode).to.equal(ErrorCode.NONE);
    expect((await describe(null))?.errorCode).to.equal(ErrorCode.GROUP_ID_NOT_FOUND);
    for (const p of [0, 1, 2]) {
      const sc = (await partitionOf(cluster(), '__share_group_state', partitionFor(`${group}:${topicId}:${p}`, STATE_PARTITIONS))).leaderId;
      const res = await (
        await raw(brokerOf(sc).bootstrap)
      ).request<ReadShareGroupStateSummaryResponse>(ApiKey.ReadShareGroupStateSummary, 0, {
        groupId: group,
        topics: [{ topicId, partitions: [{ partition: p, leaderEpoch: -1 }] }],
      });
      expect(res.results[0]?.partitions[0], `share partition ${p} after DeleteGroups`).to.include({ errorCode: 0, startOffset: -1n });
    }
  });

  it('kill -9 of a member: its acquired records go to another member at once, not after the 60 s lock', async () => {
    const admin = kafka().admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'kl', numPartitions: 1, replicationFactor: 3 }], waitForLeaders: true });
    await admin.disconnect();
    const group = 'g-kill';
    const h = consumer(group, 'kl');
    await until(
      async () => {
        if (h.deliveries.length === 0) await produce('kl', ['hold-a', 'b', 'c']);
        await new Promise((r) => setTimeout(r, 500));
        return h.deliveries.length > 0;
      },
      90_000,
      'member h holding records',
    );
    const held = h.deliveries.filter((d) => d.ack === 'H').map((d) => d.offset);
    expect(held.length).to.be.greaterThan(0);
    const o = consumer(group, 'kl');
    await until(
      async () => {
        await produce('kl', ['probe']);
        await new Promise((r) => setTimeout(r, 500));
        return o.deliveries.length > 0;
      },
      90_000,
      'member o receiving',
    );
    expect(
      o.deliveries.some((d) => held.includes(d.offset)),
      'held records stay with h while it lives',
    ).to.equal(false);
    await h.kill();
    await until(
      () => held.every((x) => o.deliveries.some((d) => d.offset === x)),
      LOCK_MS / 4, // a quarter of the lock: released at the disconnection, not by the lock expiring
      () => `redelivery of ${held.join(',')} to o: ${JSON.stringify(o.deliveries)}`,
    );
    for (const x of held) expect(o.deliveries.find((d) => d.offset === x)?.deliveryCount, `offset ${x}`).to.equal(2);
    await o.close();
  });
});
