import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Etcd3 } from 'etcd3';
import { nextState } from '../../../lib/cluster/controller.js';
import type { EtcdMetadataStore } from '../../../lib/metadata/etcd-store.js';
import type { PartitionState } from '../../../lib/metadata/store.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { expectWriteError, rejection, SESSION_MS, tempDir, until, useEtcd } from '../../helpers/etcd.js';

const topic = (name: string, assignments: number[][]) => ({
  name,
  partitions: -1,
  replicationFactor: -1,
  configs: {},
  internal: false,
  assignments,
});

function activeController(stores: readonly EtcdMetadataStore[]): EtcdMetadataStore | undefined {
  const active = stores.filter((s) => !s.isClosed() && s.isController());
  return active.length === 1 ? active[0] : undefined;
}

async function controllerOf(stores: readonly EtcdMetadataStore[]): Promise<EtcdMetadataStore> {
  await until(() => activeController(stores) !== undefined, 10_000, 'one active controller');
  return activeController(stores) as EtcdMetadataStore;
}

function states(store: EtcdMetadataStore, name: string): PartitionState[] {
  const n = store.topic(name)?.partitions ?? 0;
  return Array.from({ length: n }, (_, p) => store.partitionState(name, p) as PartitionState);
}

describe('lib/cluster Controller nextState', () => {
  const s = (leader: number, isr: number[], leaderEpoch = 0, partitionEpoch = 0): PartitionState => ({
    leader,
    leaderEpoch,
    replicas: [1, 2, 3],
    isr,
    partitionEpoch,
  });
  it('moves leadership to the first live ISR replica in assignment order, or to -1 keeping the last ISR', () => {
    expect(nextState(s(1, [1, 2, 3]), new Set([1, 2, 3]))).to.equal(undefined);
    expect(nextState(s(1, [1, 3, 2]), new Set([2, 3]))).to.deep.equal(s(2, [3, 2], 1, 1));
    expect(nextState(s(1, [1, 3]), new Set([2, 3]))).to.deep.equal(s(3, [3], 1, 1)); // 2 is not in the ISR
    expect(nextState(s(1, [1, 2, 3]), new Set([1, 3]))).to.deep.equal(s(1, [1, 3], 0, 1)); // ISR shrinks only
    expect(nextState(s(1, [1]), new Set([2, 3]))).to.deep.equal(s(-1, [1], 1, 1)); // no unclean election
    expect(nextState(s(-1, [1], 1, 1), new Set([2, 3]))).to.equal(undefined);
    expect(nextState(s(-1, [1], 1, 1), new Set([1, 2]))).to.deep.equal(s(1, [1], 2, 2));
  });

  it('with unclean.leader.election.enable, a partition whose whole ISR is down is led by its first live replica, alone in the ISR', () => {
    expect(nextState(s(1, [1]), new Set([2, 3]), true)).to.deep.equal(s(2, [2], 1, 1));
    expect(nextState(s(-1, [1], 1, 1), new Set([3]), true)).to.deep.equal(s(3, [3], 2, 2)); // offline before
    expect(nextState(s(1, [1, 3]), new Set([2, 3]), true)).to.deep.equal(s(3, [3], 1, 1)); // a clean choice first
    expect(nextState(s(-1, [1], 1, 1), new Set<number>(), true)).to.equal(undefined); // nothing live
    const adding: PartitionState = { ...s(1, [1]), replicas: [2, 3, 1], addingReplicas: [2], removingReplicas: [1] };
    expect(nextState(adding, new Set([2, 3]), true)?.leader, 'not a replica still being added').to.equal(3);
  });
});

describe('lib/cluster Controller (real etcd)', function () {
  this.timeout(60_000);
  const ctx = useEtcd();

  it('elects exactly one controller among three brokers, and every copy names it', async () => {
    const stores = await ctx.openCluster(3);
    const ctl = await controllerOf(stores);
    await until(() => stores.every((s) => s.controllerId() === ctl.nodeId), 5000, 'every copy naming the controller');
    expect(stores.filter((s) => s.isController())).to.deep.equal([ctl]);
    expect(ctl.controller?.currentFence()?.epoch).to.equal(1);
    expect(stores.filter((s) => s !== ctl).map((s) => s.controller?.currentFence())).to.deep.equal([undefined, undefined]);
  });

  it("re-elects the leaders of a closed broker's partitions and drops it from ISRs; then the closed controller's successor does", async () => {
    const stores = await ctx.openCluster(4);
    const [first] = stores;
    if (first === undefined) throw new Error('stores');
    await until(() => first.brokers().length === 4, 5000, 'four brokers');
    const assignments = [
      [1, 2, 3],
      [2, 3, 4],
      [3, 4, 1],
      [4, 1, 2],
      [1, 3, 4],
      [2, 4, 3],
    ];
    await first.createTopic(topic('r', assignments));
    for (let round = 0; round < 2; round++) {
      const ctl = await controllerOf(stores);
      // round 0: a broker that is not the controller; round 1: the controller itself
      const victim = round === 0 ? (stores.find((s) => !s.isClosed() && s !== ctl) as EtcdMetadataStore) : ctl;
      const watcher = stores.find((s) => !s.isClosed() && s !== victim) as EtcdMetadataStore;
      const before = states(watcher, 'r');
      await victim.close();
      const dead = victim.nodeId;
      await until(
        () => states(watcher, 'r').every((s) => s.leader !== dead && !s.isr.includes(dead)),
        10_000,
        `broker ${dead} gone from every partition`,
      );
      const live = new Set(watcher.brokers().map((b) => b.nodeId));
      states(watcher, 'r').forEach((after, p) => {
        const was = before[p] as PartitionState;
        if (!was.isr.includes(dead)) return expect(after, `partition ${p}`).to.deep.equal(was);
        const leader = was.leader === dead ? was.replicas.find((r) => r !== dead && live.has(r) && was.isr.includes(r)) : was.leader;
        expect(after, `partition ${p}`).to.deep.equal({
          leader,
          leaderEpoch: was.leaderEpoch + (was.leader === dead ? 1 : 0),
          replicas: was.replicas,
          isr: was.isr.filter((r) => r !== dead),
          partitionEpoch: was.partitionEpoch + 1,
        });
      });
    }
    // the successor of the closed controller won a new epoch
    expect((await controllerOf(stores)).controller?.currentFence()?.epoch).to.equal(2);
  });

  it("writes a failover of 600 partitions in transactions under etcd's 128-operation cap", async () => {
    const stores = await ctx.openCluster(3);
    const [one] = stores;
    const three = stores[2];
    if (one === undefined || three === undefined) throw new Error('stores');
    await until(() => one.brokers().length === 3, 5000, 'three brokers');
    await one.createTopic({ name: 'many', partitions: 600, replicationFactor: 2, configs: {}, internal: false });
    await controllerOf(stores.slice(0, 2));
    const led = states(one, 'many').filter((s) => s.isr.includes(3)).length;
    expect(led).to.be.greaterThan(128);
    await three.close();
    await until(() => states(one, 'many').every((s) => !s.isr.includes(3)), 10_000, 'broker 3 out of all 600 partitions');
    expect(states(one, 'many').filter((s) => s.partitionEpoch === 1)).to.have.length(led);
    expect(states(one, 'many').every((s) => s.leader === 1 || s.leader === 2)).to.equal(true);
  });

  it('leaves a partition without leader (its ISR kept) when its only ISR replica dies, and elects it when it returns', async () => {
    const stores = await ctx.openCluster(3);
    const [one] = stores;
    const three = stores[2];
    if (one === undefined || three === undefined) throw new Error('stores');
    await until(() => one.brokers().length === 3, 5000, 'three brokers');
    await one.createTopic(topic('solo', [[3], [1]]));
    await controllerOf(stores.slice(0, 2)); // broker 1 registered first: the controller is 1 or 2, never 3
    await three.close();
    await until(() => one.partitionState('solo', 0)?.leader === -1, 10_000, 'solo-0 offline');
    expect(one.partitionState('solo', 0)).to.deep.equal({ leader: -1, leaderEpoch: 1, replicas: [3], isr: [3], partitionEpoch: 1 });
    expect(one.partitionState('solo', 1)).to.deep.equal({ leader: 1, leaderEpoch: 0, replicas: [1], isr: [1], partitionEpoch: 0 });
    const back = await ctx.openStore(3);
    await until(() => one.partitionState('solo', 0)?.leader === 3, 10_000, 'solo-0 led by 3 again');
    expect(one.partitionState('solo', 0)).to.deep.equal({ leader: 3, leaderEpoch: 2, replicas: [3], isr: [3], partitionEpoch: 2 });
    await until(() => back.partitionState('solo', 0)?.leader === 3, 5000, "the returning broker's copy");
  });

  it('moves the partitions of a broker whose lease expires (frozen process), which registers anew when it wakes', async () => {
    const stores = await ctx.openCluster(2);
    const [one] = stores;
    if (one === undefined) throw new Error('stores');
    const script = fileURLToPath(new URL('../../helpers/etcd-broker.js', import.meta.url));
    const opts = {
      endpoints: [ctx.etcd.endpoints],
      clusterId: ctx.clusterId,
      nodeId: 3,
      sessionTimeoutMs: SESSION_MS,
      dataDir: await tempDir(ctx.each),
    };
    const child = spawn(process.execPath, [script, JSON.stringify(opts)], { stdio: ['ignore', 'pipe', 'inherit'] });
    ctx.each.add(child, (c) => c.exitCode === null && c.signalCode === null && (c.kill('SIGCONT'), c.kill('SIGKILL')));
    const [line] = (await once(child.stdout, 'data')) as [Buffer];
    expect(line.toString()).to.match(/^READY \d+/);
    await until(() => one.brokers().length === 3, 5000, 'broker 3 registered');
    const epoch = one.brokers().find((b) => b.nodeId === 3)?.brokerEpoch ?? 0;
    await one.createTopic(
      topic('frozen', [
        [3, 1],
        [3, 2],
        [1, 3],
      ]),
    );
    await controllerOf(stores);

    child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    await until(() => !one.brokers().some((b) => b.nodeId === 3), 10_000, 'broker 3 expired');
    expect(Date.now() - stoppedAt).to.be.greaterThan(SESSION_MS / 2);
    await until(
      () => one.partitionState('frozen', 0)?.leader === 1 && one.partitionState('frozen', 2)?.partitionEpoch === 1,
      5000,
      'leaders moved',
    );
    expect(states(one, 'frozen')).to.deep.equal([
      { leader: 1, leaderEpoch: 1, replicas: [3, 1], isr: [1], partitionEpoch: 1 },
      { leader: 2, leaderEpoch: 1, replicas: [3, 2], isr: [2], partitionEpoch: 1 },
      { leader: 1, leaderEpoch: 0, replicas: [1, 3], isr: [1], partitionEpoch: 1 },
    ]);

    child.kill('SIGCONT');
    await until(
      () => (one.brokers().find((b) => b.nodeId === 3)?.brokerEpoch ?? 0) > epoch,
      10_000,
      'broker 3 registered again with a new epoch',
    );
    // coming back changes no leader: ISR growth is the leaders' business (alterPartition)
    expect(one.partitionState('frozen', 0)?.leader).to.equal(1);
  });

  it('changes ISRs through alterPartition, checking epochs, membership and liveness', async () => {
    const stores = await ctx.openCluster(3);
    const [one, two] = stores;
    const three = stores[2];
    if (one === undefined || two === undefined || three === undefined) throw new Error('stores');
    await until(() => one.brokers().length === 3, 5000, 'three brokers');
    await one.createTopic(topic('a', [[1, 2, 3]]));
    const ctl = await controllerOf(stores);
    const other = stores.find((s) => s !== ctl) as EtcdMetadataStore;
    expectWriteError(
      await rejection(other.controller?.alterPartition('a', 0, { leaderEpoch: 0, partitionEpoch: 0, isr: [1, 2] }) ?? Promise.resolve()),
      ErrorCode.NOT_CONTROLLER,
    );
    const c = ctl.controller;
    if (c === undefined) throw new Error('controller');
    const shrunk = await c.alterPartition('a', 0, { leaderEpoch: 0, partitionEpoch: 0, isr: [1, 2] });
    expect(shrunk).to.deep.equal({ leader: 1, leaderEpoch: 0, replicas: [1, 2, 3], isr: [1, 2], partitionEpoch: 1 });
    expect(ctl.partitionState('a', 0)).to.deep.equal(shrunk);
    await until(() => other.partitionState('a', 0)?.partitionEpoch === 1, 5000, 'the change in another copy');
    expectWriteError(
      await rejection(c.alterPartition('a', 0, { leaderEpoch: 0, partitionEpoch: 0, isr: [1, 2, 3] })),
      ErrorCode.INVALID_UPDATE_VERSION,
    );
    expectWriteError(
      await rejection(c.alterPartition('a', 0, { leaderEpoch: 3, partitionEpoch: 1, isr: [1, 2, 3] })),
      ErrorCode.FENCED_LEADER_EPOCH,
    );
    expectWriteError(
      await rejection(c.alterPartition('a', 0, { leaderEpoch: 0, partitionEpoch: 1, isr: [2, 3] })),
      ErrorCode.INVALID_REQUEST,
    );
    expectWriteError(
      await rejection(c.alterPartition('a', 0, { leaderEpoch: 0, partitionEpoch: 1, isr: [1, 4] })),
      ErrorCode.INVALID_REQUEST,
    );
    expectWriteError(
      await rejection(c.alterPartition('a', 1, { leaderEpoch: 0, partitionEpoch: 0, isr: [1] })),
      ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    );
    const grown = await c.alterPartition('a', 0, { leaderEpoch: 0, partitionEpoch: 1, isr: [1, 2, 3] });
    expect(grown.partitionEpoch).to.equal(2);
    if (ctl !== three) {
      await three.close();
      await until(() => ctl.partitionState('a', 0)?.partitionEpoch === 3, 5000, 'broker 3 out of the ISR');
      expectWriteError(
        await rejection(c.alterPartition('a', 0, { leaderEpoch: 0, partitionEpoch: 3, isr: [1, 2, 3] })),
        ErrorCode.INELIGIBLE_REPLICA,
      );
    }
  });

  it('fences a stale controller: once another won, a write with the old election revision and epoch changes nothing', async () => {
    const stores = await ctx.openCluster(3);
    const [one] = stores;
    if (one === undefined) throw new Error('stores');
    await until(() => one.brokers().length === 3, 5000, 'three brokers');
    await one.createTopic(topic('f', [[1, 2, 3]]));
    const old = await controllerOf(stores);
    const oldFence = old.controller?.currentFence();
    if (oldFence === undefined || old.controller === undefined) throw new Error('fence');
    const topicRevision = old.state.topics.get('f')?.createRevision ?? 0;
    const change = { topic: 'f', partition: 0, modRevision: 0, topicCreateRevision: topicRevision };
    const moved: PartitionState = { leader: 3, leaderEpoch: 1, replicas: [1, 2, 3], isr: [3], partitionEpoch: 1 };

    // The election key vanishes as if the old controller's lease had expired unnoticed; a new election follows.
    const raw = new Etcd3({ hosts: ctx.etcd.endpoints });
    ctx.each.add(raw, (r) => r.close());
    await raw.delete().key(`/gregor/${ctx.clusterId}/controller`);
    await until(() => stores.some((s) => (s.controller?.currentFence()?.epoch ?? 0) === oldFence.epoch + 1), 10_000, 'a new controller');
    const fresh = activeController(stores);
    expect(fresh?.controller?.currentFence()?.createRevision).to.be.greaterThan(oldFence.createRevision);

    expect(await old.controller.writePartitions([{ ...change, state: moved }], oldFence)).to.equal(false);
    expect(await raw.get(`/gregor/${ctx.clusterId}/partitions/f/0`).string()).to.equal(null);
    expect(stores.map((s) => s.partitionState('f', 0)?.leader)).to.deep.equal([1, 1, 1]);
    // a fence with the new revision but the old epoch fails too, and so does the new epoch with the old revision
    const newFence = fresh?.controller?.currentFence();
    if (newFence === undefined || fresh?.controller === undefined) throw new Error('new fence');
    expect(await old.controller.writePartitions([{ ...change, state: moved }], { ...newFence, epoch: oldFence.epoch })).to.equal(false);
    expect(await old.controller.writePartitions([{ ...change, state: moved }], { ...oldFence, epoch: newFence.epoch })).to.equal(false);
    expect(await raw.get(`/gregor/${ctx.clusterId}/partitions/f/0`).string()).to.equal(null);
    // the new controller's own fence writes
    expect(await fresh.controller.writePartitions([{ ...change, state: moved }], newFence)).to.equal(true);
    expect(fresh.partitionState('f', 0)).to.deep.equal(moved);
  });

  it('survives etcd stopping for 5 s: sessions come back, the copies converge, and one controller acts', async () => {
    const stores = await ctx.openCluster(3);
    const [one] = stores;
    if (one === undefined) throw new Error('stores');
    await until(() => one.brokers().length === 3, 5000, 'three brokers');
    await one.createTopic(
      topic('o', [
        [1, 2, 3],
        [2, 3, 1],
        [3, 1, 2],
      ]),
    );
    await controllerOf(stores);
    const epochs = one.brokers().map((b) => b.brokerEpoch);
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, stores.filter((s) => s.controller?.currentFence() !== undefined).length)), 20);
    ctx.each.defer(() => clearInterval(sampler));

    ctx.etcd.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 5000)); // the outage itself: nothing to wait for
    await ctx.etcd.restart();

    const converged = (): boolean => {
      const ctl = activeController(stores);
      const brokers = JSON.stringify(one.brokers());
      return (
        ctl !== undefined &&
        stores.every((s) => s.controllerId() === ctl.nodeId && s.brokers().length === 3 && JSON.stringify(s.brokers()) === brokers)
      );
    };
    await until(
      converged,
      20_000,
      () => `convergence: ${stores.map((s) => `${s.nodeId}:${s.controllerId()}/${s.brokers().length}`).join(' ')}`,
    );
    expect(most).to.be.at.most(1);
    const after = activeController(stores);
    const fence = after?.controller?.currentFence();
    const raw = new Etcd3({ hosts: ctx.etcd.endpoints });
    ctx.each.add(raw, (r) => r.close());
    expect(await raw.get(`/gregor/${ctx.clusterId}/controller-epoch`).string()).to.equal(String(fence?.epoch));
    // the sessions were lost (TTL 2 s < outage): every broker registered anew, and a controller was elected again
    expect(one.brokers().map((b, i) => b.brokerEpoch > (epochs[i] ?? Infinity))).to.deep.equal([true, true, true]);
    expect(fence?.epoch).to.be.at.least(2);
    // writes work again and reach every copy
    await one.createTopic(topic('after', [[2]]));
    await until(() => stores.every((s) => s.topic('after') !== undefined), 5000, 'the new topic everywhere');
    for (const s of stores) for (const st of states(s, 'o')) expect(st.leader).to.be.oneOf([1, 2, 3]);
  });
});
