/**
 * The follower's replica fetcher against a real single-node gregor leader (in process): follower
 * logs in a temp dir, fed by Fetch as replica 2, truncated by OffsetForLeaderEpoch, started over
 * after the leader's DeleteRecords; reconnection to a restarted leader; removal and the manager's
 * follow / unfollow / move.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import { startBroker, type Broker } from '../../../lib/broker.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { silentLogger } from '../../../lib/observability/logger.js';
import { ReplicaFetcher, ReplicaFetcherManager } from '../../../lib/replica/replica-fetcher.js';
import { startTestBroker, tempDir, type TestBroker } from '../../helpers/broker.js';
import { readAll, rmDir, v2 } from '../log/helpers.js';
import {
  TOPIC_CONFIGS,
  addressOf,
  copyUntil,
  expectReplicaOf,
  fetcherPartition,
  followerLog,
  kafkaFor,
  leaderAppend,
  leaderLog,
  offsets,
  produce,
  settings,
  waitFor,
  waitInStep,
  type KafkaJs,
} from './fetcher-helpers.js';

describe('lib/replica replica fetcher', function () {
  this.timeout(120_000);
  let b: TestBroker;
  let kafka: KafkaJs;
  let dir: string;
  const followers: PartitionLog[] = [];
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    b = await startTestBroker();
    kafka = kafkaFor(b.bootstrap);
  });
  after(async () => {
    await b.stop();
  });
  beforeEach(() => {
    dir = tempDir('gregor-follower-');
  });
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c().catch(() => undefined);
    for (const f of followers.splice(0)) await f.close().catch(() => undefined);
    rmDir(dir);
  });

  async function createTopic(topic: string, partitions: number): Promise<void> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: partitions, configEntries: TOPIC_CONFIGS }], waitForLeaders: true });
    } finally {
      await admin.disconnect();
    }
  }

  async function follower(topic: string, partition: number): Promise<PartitionLog> {
    const f = await followerLog(dir, topic, partition);
    followers.push(f);
    return f;
  }

  function fetcher(leader: Broker | (() => { host: string; port: number } | undefined), over = {}): ReplicaFetcher {
    const address = typeof leader === 'function' ? leader : () => addressOf(leader);
    const f = new ReplicaFetcher(1, address, settings(over));
    closers.push(() => f.close());
    return f;
  }

  it('catches up with a multi-partition topic and a second topic in one fetcher and stays in step (files, epochs, producers, HW)', async () => {
    await createTopic('fa', 3);
    await createTopic('fb', 1);
    for (let p = 0; p < 3; p++) await produce(kafka, 'fa', p, 25, { perSend: 1 + p, gzip: p === 1 });
    await produce(kafka, 'fb', 0, 10);
    const pairs: [PartitionLog, PartitionLog][] = [];
    for (const [t, p] of [
      ['fa', 0],
      ['fa', 1],
      ['fa', 2],
      ['fb', 0],
    ] as const)
      pairs.push([leaderLog(b.broker, t, p), await follower(t, p)]);
    const f = fetcher(b.broker);
    f.addPartitions(pairs.map(([, fl]) => fetcherPartition(b.broker, fl)));
    expect(f.partitionCount).to.equal(4);
    await waitInStep(pairs);
    expect((pairs[0] as [PartitionLog, PartitionLog])[0].segmentBaseOffsets.length).to.be.greaterThan(1);

    // more, while it follows: plain, idempotent, and transactions committed and aborted
    await produce(kafka, 'fa', 0, 10, { prefix: 'later' });
    const idem = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await idem.connect();
    for (let i = 0; i < 5; i++) await idem.send({ topic: 'fa', acks: -1, messages: [{ partition: 1, value: `idem-${i}` }] });
    await idem.disconnect();
    const tx = kafka.producer({ transactionalId: 'fetcher-tx', idempotent: true, maxInFlightRequests: 1 });
    await tx.connect();
    for (const commit of [true, false, true]) {
      const t = await tx.transaction();
      await t.send({ topic: 'fa', messages: [{ partition: 2, value: 'in-txn' }] });
      await t.send({ topic: 'fb', messages: [{ partition: 0, value: 'in-txn' }] });
      if (commit) await t.commit();
      else await t.abort();
    }
    await tx.disconnect();
    await waitInStep(pairs, 'the followers to follow the new data');
    for (const [l, fl] of pairs) await expectReplicaOf(l, fl);
  });

  /** Counts the requests of `apiKey` (default OffsetForLeaderEpoch) the leader gets (a fault rule that never applies). */
  function countRequests(apiKey: number = ApiKey.OffsetForLeaderEpoch): unknown[] {
    const asked: unknown[] = [];
    const rule = b.broker.faults.add({
      apiKey,
      action: 'error',
      errorCode: 6,
      match: (req) => (asked.push(req), false),
    });
    closers.push(() => {
      rule.remove();
      return Promise.resolve();
    });
    return asked;
  }

  it("truncates records of an epoch the leader ended elsewhere (a deposed leader's tail) before fetching", async () => {
    await createTopic('div', 1);
    await produce(kafka, 'div', 0, 5); // [0, 5) at epoch 0
    const leader = leaderLog(b.broker, 'div', 0);
    const fl = await follower('div', 0);
    await copyUntil(leader, fl, 5n);
    // the follower led epoch 1 for a while and wrote [5, 9) that nobody copied; the leader of epoch 2 wrote [5, 12)
    await (
      await fl.appendAsFollower(v2(4, { baseOffset: 5n, partitionLeaderEpoch: 1, prefix: 'deposed' }))
    ).written;
    await leaderAppend(leader, 3, 2, 'e2');
    await leaderAppend(leader, 4, 2, 'e2b');
    const asked = countRequests();
    fetcher(b.broker).addPartitions([fetcherPartition(b.broker, fl)]);
    await waitInStep([[leader, fl]]);
    expect(asked.length).to.equal(1);
    await expectReplicaOf(leader, fl);
    expect((await readAll(fl)).map((x) => x.toString('hex'))).to.deep.equal((await readAll(leader)).map((x) => x.toString('hex')));
  });

  it('truncates in rounds when the leader answers an epoch the follower does not have', async () => {
    await createTopic('rounds', 1);
    await produce(kafka, 'rounds', 0, 5, { perSend: 1 }); // [0, 5) at epoch 0
    const leader = leaderLog(b.broker, 'rounds', 0);
    const fl = await follower('rounds', 0);
    await copyUntil(leader, fl, 5n);
    // the follower: [5, 10) at epoch 2; the leader: [5, 8) at epoch 1, then [8, 12) at epoch 3
    await (
      await fl.appendAsFollower(v2(5, { baseOffset: 5n, partitionLeaderEpoch: 2, prefix: 'stale' }))
    ).written;
    await leaderAppend(leader, 3, 1, 'e1');
    await leaderAppend(leader, 4, 3, 'e3');
    // asked for epoch 2, the leader answers epoch 1 ending at 8; the follower knows no epoch 1: it cuts
    // to the end of its epoch 0 (5) and asks again for epoch 0
    const asked = countRequests();
    fetcher(b.broker).addPartitions([fetcherPartition(b.broker, fl)]);
    await waitInStep([[leader, fl]]);
    expect(asked.length).to.equal(2);
    await expectReplicaOf(leader, fl);
    expect(fl.endOffsetForEpoch(1)).to.deep.equal({ leaderEpoch: 1, endOffset: 8n });
  });

  it("starts a follower behind the leader's log start (DeleteRecords inside a batch) over at the leader's log start", async () => {
    await createTopic('dr', 1);
    await produce(kafka, 'dr', 0, 10, { perSend: 3 }); // batches [0-2] [3-5] ... [27-29]
    const leader = leaderLog(b.broker, 'dr', 0);
    const fl = await follower('dr', 0);
    for (let i = 0; i < 2; i++) {
      const r = await leader.read(fl.logEndOffset, 1, { minOneMessage: true });
      await (
        await fl.appendAsFollower(Buffer.concat(r.records))
      ).written;
    }
    expect(fl.logEndOffset).to.equal(6n);
    const admin = kafka.admin();
    await admin.connect();
    await admin.fetchTopicMetadata({ topics: ['dr'] });
    await admin.deleteTopicRecords({ topic: 'dr', partitions: [{ partition: 0, offset: '16' }] });
    await admin.disconnect();
    expect(leader.logStartOffset).to.equal(16n);

    fetcher(b.broker).addPartitions([fetcherPartition(b.broker, fl)]);
    await waitInStep([[leader, fl]]);
    expect(offsets(fl)).to.deep.equal({ logStartOffset: 16n, logEndOffset: 30n, highWatermark: 30n });
    const fromStart = async (log: PartitionLog) =>
      Buffer.concat((await log.read(16n, 1 << 20, { minOneMessage: true })).records).toString('hex');
    expect(await fromStart(fl)).to.equal(await fromStart(leader));
    // and it stays in step from there
    await produce(kafka, 'dr', 0, 3, { perSend: 2 });
    await waitInStep([[leader, fl]]);
  });

  it("cuts a follower whose log ends past the leader's (an unclean election) to the leader's end on OFFSET_OUT_OF_RANGE", async () => {
    await createTopic('unclean', 1);
    await produce(kafka, 'unclean', 0, 5);
    const leader = leaderLog(b.broker, 'unclean', 0);
    const fl = await follower('unclean', 0);
    await copyUntil(leader, fl, 5n);
    // an epoch the leader never had: it answers no end offset, and the fetch from 8 is out of its range
    await (
      await fl.appendAsFollower(v2(3, { baseOffset: 5n, partitionLeaderEpoch: 4, prefix: 'unclean' }))
    ).written;
    const listed = countRequests(ApiKey.ListOffsets);
    fetcher(b.broker).addPartitions([fetcherPartition(b.broker, fl)]);
    await waitInStep([[leader, fl]]);
    expect(listed.length).to.equal(1); // the leader's end (its log start came with the fetch response)
    await produce(kafka, 'unclean', 0, 2);
    await waitInStep([[leader, fl]]);
    await expectReplicaOf(leader, fl);
  });

  it('stops appending to removed partitions while the others go on', async () => {
    await createTopic('rm', 2);
    const pairs: [PartitionLog, PartitionLog][] = [];
    for (const p of [0, 1]) pairs.push([leaderLog(b.broker, 'rm', p), await follower('rm', p)]);
    const [[l0, f0], [l1, f1]] = pairs as [[PartitionLog, PartitionLog], [PartitionLog, PartitionLog]];
    const f = fetcher(b.broker);
    f.addPartitions(pairs.map(([, x]) => fetcherPartition(b.broker, x)));
    // remove partition 0 while data for it streams in (its response may be being applied)
    const streaming = produce(kafka, 'rm', 0, 40, { perSend: 5 });
    await waitFor('some data on the follower', () => f0.logEndOffset > 20n);
    await f.removePartitions([{ topic: 'rm', partition: 0 }]);
    const at = f0.logEndOffset;
    expect(f0.pendingAppends).to.equal(0);
    expect(f.partitionCount).to.equal(1);
    await streaming;
    await produce(kafka, 'rm', 1, 5);
    await waitInStep([[l1, f1]]);
    expect(f0.logEndOffset).to.equal(at);
    expect(l0.logEndOffset > at).to.equal(true);
    // removing what is not there is a no-op
    await f.removePartitions([{ topic: 'rm', partition: 0 }]);
  });

  it('delays a partition the leader does not have while the others keep going', async () => {
    await createTopic('known', 1);
    const leader = leaderLog(b.broker, 'known', 0);
    const fl = await follower('known', 0);
    const ghost = await follower('ghost', 0);
    fetcher(b.broker).addPartitions([
      fetcherPartition(b.broker, fl),
      { topic: 'ghost', topicId: randomBytes(16).toString('hex'), partition: 0, log: ghost, leaderEpoch: 0 },
    ]);
    await produce(kafka, 'known', 0, 5);
    await waitInStep([[leader, fl]]);
    await produce(kafka, 'known', 0, 5);
    await waitInStep([[leader, fl]]);
    expect(offsets(ghost)).to.deep.equal({ logStartOffset: 0n, logEndOffset: 0n, highWatermark: 0n });
  });

  it('reconnects to a leader stopped and restarted on the same port and catches up', async () => {
    const leaderDir = tempDir('gregor-leader-');
    let leaderBroker: Broker | null = await startBroker({ port: 0, dataDir: leaderDir, logger: silentLogger() });
    const port = leaderBroker.port;
    closers.push(async () => {
      await leaderBroker?.stop();
      rmDir(leaderDir);
    });
    const k = kafkaFor(`127.0.0.1:${port}`);
    const admin = k.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'rs', numPartitions: 1, configEntries: TOPIC_CONFIGS }], waitForLeaders: true });
    await admin.disconnect();
    await produce(k, 'rs', 0, 10, { perSend: 2 });
    const fl = await follower('rs', 0);
    const f = fetcher(() => ({ host: '127.0.0.1', port }));
    f.addPartitions([fetcherPartition(leaderBroker, fl)]);
    await waitInStep([[leaderLog(leaderBroker, 'rs', 0), fl]]);

    await leaderBroker.stop();
    leaderBroker = null;
    leaderBroker = await startBroker({ port, dataDir: leaderDir, logger: silentLogger() });
    await produce(kafkaFor(`127.0.0.1:${port}`), 'rs', 0, 10, { perSend: 3, prefix: 'after' });
    const leader = leaderLog(leaderBroker, 'rs', 0);
    await waitInStep([[leader, fl]], 'the follower to catch up after the restart');
    expect(fl.logEndOffset).to.equal(50n);
    await expectReplicaOf(leader, fl);
  });

  it('manager: follows, ignores the same epoch, re-truncates at a new epoch after unfollow, moves between leaders', async () => {
    await createTopic('mg', 1);
    await produce(kafka, 'mg', 0, 6, { perSend: 2 });
    const leader = leaderLog(b.broker, 'mg', 0);
    const fl = await follower('mg', 0);
    await copyUntil(leader, fl, 4n);
    const asked = countRequests();
    const m = new ReplicaFetcherManager((id) => (id === 1 ? addressOf(b.broker) : undefined), settings());
    closers.push(() => m.shutdown());

    // leader epoch -1: not fenced (a single-node leader is at epoch 0 and refuses a higher one)
    await m.follow(fetcherPartition(b.broker, fl, -1), 1);
    await waitInStep([[leader, fl]]);
    expect(m.leaders).to.deep.equal([1]);
    expect(m.partitionCount).to.equal(1);
    expect(asked.length).to.equal(1);
    // same leader and epoch: nothing restarts (a restart would ask the leader again before fetching more)
    await m.follow(fetcherPartition(b.broker, fl, -1), 1);
    await produce(kafka, 'mg', 0, 3);
    await waitInStep([[leader, fl]]);
    expect(asked.length).to.equal(1);
    // a new epoch: truncation first, then on
    await m.follow(fetcherPartition(b.broker, fl, 0), 1);
    await produce(kafka, 'mg', 0, 3);
    await waitInStep([[leader, fl]]);
    expect(asked.length).to.equal(2);

    // unfollowed, the follower leads epoch 1 for a moment and writes what nobody copies; the leader of
    // epoch 2 writes its own; followed again at epoch 2, the follower truncates its epoch 1 away
    await m.unfollow('mg', 0);
    expect(m.leaders).to.deep.equal([]);
    const end = fl.logEndOffset;
    await (
      await fl.appendAsFollower(v2(4, { baseOffset: end, partitionLeaderEpoch: 1, prefix: 'stale' }))
    ).written;
    await leaderAppend(leader, 2, 2, 'new');
    await m.follow(fetcherPartition(b.broker, fl, 0), 1);
    await waitInStep([[leader, fl]]);
    expect(asked.length).to.equal(3);
    await expectReplicaOf(leader, fl);

    // to another leader (unreachable here), and back
    await m.follow(fetcherPartition(b.broker, fl, 0), 7);
    expect(m.leaders).to.deep.equal([7]);
    expect(m.leaderOf('mg', 0)).to.equal(7);
    await m.follow(fetcherPartition(b.broker, fl, 0), 1);
    expect(m.leaders).to.deep.equal([1]);
    await leaderAppend(leader, 2, 2, 'back');
    await waitInStep([[leader, fl]]);
    expect(asked.length).to.equal(4);
    await expectReplicaOf(leader, fl);
    await m.shutdown();
    expect(m.leaders).to.deep.equal([]);
  });
});
