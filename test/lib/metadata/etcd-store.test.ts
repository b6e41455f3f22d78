import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { EtcdMetadataStore } from '../../../lib/metadata/etcd-store.js';
import { GregorMetadataErrorCode, type MetadataChange } from '../../../lib/metadata/store.js';
import { silentLogger } from '../../../lib/observability/logger.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import {
  brokerInfo,
  expectMetadataError,
  expectWriteError,
  newClusterId,
  rejection,
  SESSION_MS,
  tempDir,
  until,
  useEtcd,
} from '../../helpers/etcd.js';

const topic = (name: string, partitions: number, replicationFactor: number) => ({
  name,
  partitions,
  replicationFactor,
  configs: {},
  internal: false,
});

describe('lib/metadata EtcdMetadataStore (real etcd)', function () {
  this.timeout(30_000);
  const ctx = useEtcd();

  it('registers brokers under leases: every store lists them with their create revisions as brokerEpochs', async () => {
    const [a, b] = await ctx.openCluster(2);
    if (a === undefined || b === undefined) throw new Error('two stores');
    await until(() => a.brokers().length === 2 && b.brokers().length === 2, 5000, 'both brokers in both copies');
    expect(a.brokers()).to.deep.equal(b.brokers());
    const [one, two] = a.brokers();
    expect(one?.nodeId).to.equal(1);
    expect(one?.endpoints).to.deep.equal(brokerInfo(1).endpoints);
    expect(one?.brokerEpoch).to.be.greaterThan(0);
    expect(two?.brokerEpoch).to.be.greaterThan(one?.brokerEpoch ?? Infinity);
    expect(a.session.brokerEpoch()).to.equal(one?.brokerEpoch);
    // the lease's TTL is the session timeout
    const raw = new Etcd3({ hosts: ctx.etcd.endpoints });
    try {
      const kv = (await raw.kv.range({ key: Buffer.from(`/gregor/${ctx.clusterId}/brokers/1`) })).kvs[0];
      const ttl = await raw.leaseClient.leaseTimeToLive({ ID: kv?.lease ?? '0' });
      expect(Number(ttl.grantedTTL)).to.equal(SESSION_MS / 1000);
    } finally {
      raw.close();
    }
    // closing revokes the lease: the other store sees the broker leave at once
    await a.close();
    await until(() => b.brokers().length === 1, 5000, 'broker 1 gone');
    expect(b.brokers()[0]?.nodeId).to.equal(2);
  });

  it('refuses a node id a live broker holds (NODE_ID_IN_USE), and a data dir of another cluster or node (CLUSTER_ID)', async () => {
    const dir = await tempDir(ctx.each);
    const first = await ctx.openStore(1, { dataDir: dir });
    expect(JSON.parse(await readFile(join(dir, 'gregor-cluster.json'), 'utf8'))).to.include({ clusterId: ctx.clusterId, nodeId: 1 });
    const twin = await ctx.openStore(1, { register: false });
    const e = await rejection(twin.register(brokerInfo(1)));
    expectMetadataError(e, GregorMetadataErrorCode.NODE_ID_IN_USE);
    expect(first.brokers().map((b) => b.brokerEpoch)).to.deep.equal([first.session.brokerEpoch()]);

    const open = (dataDir: string, cluster: string, nodeId: number) =>
      EtcdMetadataStore.open({
        endpoints: [ctx.etcd.endpoints],
        clusterId: cluster,
        nodeId,
        sessionTimeoutMs: SESSION_MS,
        logger: silentLogger(),
        dataDir,
      });
    for (const [cluster, nodeId] of [
      [newClusterId(), 1],
      [ctx.clusterId, 2],
    ] as const) {
      expectMetadataError(await rejection(open(dir, cluster, nodeId)), GregorMetadataErrorCode.CLUSTER_ID);
    }
    expectMetadataError(await rejection(open(await tempDir(ctx.each), '', 1)), GregorMetadataErrorCode.CLUSTER_ID);
  });

  it('a broker restarted on its data dir within its session replaces its own registration (the lease it held is in the data dir)', async () => {
    const dir = await tempDir(ctx.each);
    const crashed = await ctx.openStore(1, { dataDir: dir, controller: false });
    const oldEpoch = crashed.session.brokerEpoch();
    const oldLease = crashed.session.leaseOf();
    expect((await readFile(join(dir, 'etcd-lease'), 'utf8')).trim()).to.equal(oldLease);
    // a crash: the client goes without revoking anything, the registration lives on until its TTL
    crashed.client.close();
    const watcher = await ctx.openStore(2, { controller: false });
    expect(watcher.brokers().map((b) => b.nodeId)).to.include(1);
    const restarted = await ctx.openStore(1, { dataDir: dir, controller: false });
    expect(restarted.session.brokerEpoch()).to.be.greaterThan(oldEpoch);
    expect(restarted.session.leaseOf()).to.not.equal(oldLease);
    await until(
      () => watcher.brokers().find((b) => b.nodeId === 1)?.brokerEpoch === restarted.session.brokerEpoch(),
      5000,
      'the new registration',
    );
  });

  it('creates a topic once when two brokers race: the loser gets TOPIC_ALREADY_EXISTS and both copies agree', async () => {
    const [a, b, c] = await ctx.openCluster(3);
    if (a === undefined || b === undefined || c === undefined) throw new Error('three stores');
    await until(() => a.brokers().length === 3 && b.brokers().length === 3, 5000, 'three brokers');
    const results = await Promise.allSettled([a.createTopic(topic('race', 6, 2)), b.createTopic(topic('race', 6, 2))]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).to.have.length(1);
    expect(lost).to.have.length(1);
    expectWriteError(lost[0]?.reason as Error, ErrorCode.TOPIC_ALREADY_EXISTS);
    // the write resolved after the writer's copy had it; the loser's copy holds the winner's topic
    const rec = a.topic('race');
    expect(rec).to.include({ partitions: 6, replicationFactor: 2 });
    expect(b.topic('race')).to.deep.equal(rec);
    expect(b.topicById(rec?.topicId ?? '')).to.deep.equal(rec);
    await until(() => c.topic('race') !== undefined, 5000, 'the third copy');
    for (let p = 0; p < 6; p++) {
      const s = c.partitionState('race', p);
      expect(s?.replicas).to.have.length(2);
      expect(s).to.deep.include({ leader: s?.replicas[0], leaderEpoch: 0, isr: s?.replicas, partitionEpoch: 0 });
    }
    expect(c.partitionState('race', 6)).to.equal(undefined);
    expectWriteError(await rejection(c.createTopic(topic('race', 1, 1))), ErrorCode.TOPIC_ALREADY_EXISTS);
  });

  it('propagates creations, growth, configs and deletions to the other stores, listeners firing after the copy', async () => {
    const [a, b] = await ctx.openCluster(2);
    if (a === undefined || b === undefined) throw new Error('two stores');
    await until(() => a.brokers().length === 2, 5000, 'two brokers');
    const heard: string[] = [];
    b.onChange((ch: MetadataChange) => {
      if (ch.kind !== 'topic') return;
      // the copy already reflects the change
      const t = b.topic(ch.topic);
      heard.push(`${ch.change}:${t?.partitions ?? '-'}:${t?.configs['retention.ms'] ?? '-'}`);
    });
    await a.createTopic(topic('t', 2, 2));
    await a.setPartitionCount('t', 5);
    expect(a.topic('t')?.partitions).to.equal(5);
    expect(a.partitionState('t', 4)?.replicas).to.have.length(2);
    await a.setConfigs('t', { 'retention.ms': '1000' });
    await a.setPartitionCount('t', 5); // no change
    await until(
      () => heard.length === 3,
      5000,
      () => `three changes, heard ${heard.join()}`,
    );
    expect(b.topic('t')).to.deep.equal(a.topic('t'));
    expect(await a.deleteTopic('t')).to.include({ name: 't', partitions: 5 });
    expect(a.topic('t')).to.equal(undefined);
    expect(await a.deleteTopic('t')).to.equal(undefined);
    await until(() => heard.length === 4, 5000, 'the deletion');
    expect(heard).to.deep.equal(['created:2:-', 'partitions:5:-', 'configs:5:1000', 'deleted:-:-']);
    expect(b.partitionState('t', 0)).to.equal(undefined);
    await a.persisted();
  });

  it('keeps group configs (ConfigResource GROUP) under group-configs/<group>: the other stores see them, an empty set removes them', async () => {
    const [a, b] = await ctx.openCluster(2);
    if (a === undefined || b === undefined) throw new Error('two stores');
    const heard: string[] = [];
    b.onChange((ch: MetadataChange) => {
      if (ch.kind === 'groupConfigs') heard.push(`${ch.group}:${b.groupConfigs(ch.group)['share.auto.offset.reset'] ?? '-'}`);
    });
    await a.setGroupConfigs('g/1', { 'share.auto.offset.reset': 'earliest' });
    await until(() => heard.length === 1, 5000, 'the group config at the other store');
    expect(b.groupConfigs('g/1')).to.deep.equal({ 'share.auto.offset.reset': 'earliest' });
    await a.setGroupConfigs('g/1', {});
    await until(() => heard.length === 2, 5000, 'the removal');
    expect(heard).to.deep.equal(['g/1:earliest', 'g/1:-']);
    expect(b.groupConfigs('g/1')).to.deep.equal({});
  });

  it('rejects bad writes with Kafka error codes', async () => {
    const [a] = await ctx.openCluster(2);
    if (a === undefined) throw new Error('a store');
    await until(() => a.brokers().length === 2, 5000, 'two brokers');
    const e = await rejection(a.createTopic(topic('big', 1, 3)));
    expectWriteError(e, ErrorCode.INVALID_REPLICATION_FACTOR);
    expect(e.message).to.equal('Replication factor: 3 larger than available brokers: 2.');
    expectWriteError(
      await rejection(a.createTopic({ ...topic('dup', 1, 2), assignments: [[1, 1]] })),
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    );
    expectWriteError(
      await rejection(a.createTopic({ ...topic('unknown', 1, 2), assignments: [[1, 7]] })),
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    );
    const manual = await a.createTopic({
      ...topic('manual', -1, -1),
      assignments: [
        [2, 1],
        [1, 2],
        [2, 1],
      ],
    });
    expect(manual).to.include({ partitions: 3, replicationFactor: 2 });
    expect(a.partitionState('manual', 1)).to.deep.include({ leader: 1, replicas: [1, 2] });
    expectWriteError(await rejection(a.setPartitionCount('manual', 2)), ErrorCode.INVALID_PARTITIONS);
    expectWriteError(await rejection(a.setPartitionCount('nope', 2)), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expectWriteError(await rejection(a.setConfigs('nope', {})), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  });

  it('keeps a 3,000-partition topic in one key (etcd caps transactions at 128 operations) and deletes its partition keys', async () => {
    const stores = await ctx.openCluster(3);
    const [a, b] = stores;
    if (a === undefined || b === undefined) throw new Error('stores');
    await until(() => a.brokers().length === 3, 5000, 'three brokers');
    await a.createTopic(topic('wide', 3000, 3));
    expect(a.partitionState('wide', 2999)?.isr).to.have.length(3);
    // the controller's first change of a partition creates its key; the topic's deletion removes it
    await until(() => stores.some((s) => s.isController()), 5000, 'a controller');
    const ctl = stores.find((s) => s.isController())?.controller;
    const st = a.partitionState('wide', 7);
    if (ctl === undefined || st === undefined) throw new Error('controller and partition');
    await ctl.alterPartition('wide', 7, { leaderEpoch: 0, partitionEpoch: 0, isr: [st.leader] });
    await until(() => b.partitionState('wide', 7)?.partitionEpoch === 1, 5000, 'the ISR change in the other copy');
    await a.deleteTopic('wide');
    const raw = new Etcd3({ hosts: ctx.etcd.endpoints });
    try {
      expect(await raw.getAll().prefix(`/gregor/${ctx.clusterId}/partitions/`).count()).to.equal(0);
    } finally {
      raw.close();
    }
    await until(() => b.topic('wide') === undefined, 5000, 'the deletion in the other copy');
  });

  it('keeps a watched copy: a store opened later loads what exists, and each of 20 concurrent creations is heard once', async () => {
    const [a] = await ctx.openCluster(1);
    if (a === undefined) throw new Error('a store');
    for (let i = 0; i < 5; i++) await a.createTopic(topic(`early-${i}`, 1, 1));
    const late = await ctx.openStore(2, { register: false });
    expect(
      late
        .topics()
        .map((t) => t.name)
        .sort(),
    ).to.deep.equal(['early-0', 'early-1', 'early-2', 'early-3', 'early-4']);
    const order: string[] = [];
    late.onChange((ch) => ch.kind === 'topic' && order.push(`${ch.change} ${ch.topic}`));
    await Promise.all(Array.from({ length: 20 }, (_, i) => a.createTopic(topic(`later-${i}`, 1, 1))));
    await until(() => late.topics().length === 25, 5000, '25 topics');
    expect(order).to.have.length(20);
    expect(new Set(order).size).to.equal(20);
    expect(late.brokers().map((b) => b.nodeId)).to.deep.equal([1]);
    expect(late.controllerId()).to.equal(1);
  });
});
