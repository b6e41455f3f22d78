import { expect } from 'chai';
import {
  cancelReassignment,
  completeReassignment,
  isReassigning,
  preferredElection,
  rebalanceCandidates,
  startReassignment,
  targetError,
  uncleanElection,
} from '../../../lib/cluster/partition-changes.js';
import { EtcdKeys, EtcdState } from '../../../lib/metadata/etcd-state.js';
import type { PartitionState } from '../../../lib/metadata/store.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';

const st = (leader: number, replicas: number[], isr: number[], more: Partial<PartitionState> = {}): PartitionState => ({
  leader,
  leaderEpoch: 3,
  replicas,
  isr,
  partitionEpoch: 7,
  ...more,
});
const live = (...ids: number[]) => new Set(ids);

describe('lib/cluster partition-changes: reassignment state machine', () => {
  it('starts as Kafka does: replicas = target then the leaving ones, adding = target − current, removing = current − target', () => {
    const next = startReassignment(st(1, [1, 2], [1, 2]), [2, 3], live(1, 2, 3));
    expect(next).to.deep.equal({
      leader: 1,
      leaderEpoch: 3,
      replicas: [2, 3, 1],
      isr: [1, 2],
      partitionEpoch: 8,
      addingReplicas: [3],
      removingReplicas: [1],
    });
    expect(isReassigning(next)).to.equal(true);
  });

  it('stays in progress until every adding replica is in the ISR, then completes: replicas = target, ISR ∩ target, leader moved off a removed broker', () => {
    const started = startReassignment(st(1, [1, 2], [1, 2]), [2, 3], live(1, 2, 3));
    expect(completeReassignment(started, live(1, 2, 3))).to.equal(undefined);
    const caughtUp = { ...started, isr: [1, 2, 3], partitionEpoch: started.partitionEpoch + 1 };
    const done = completeReassignment(caughtUp, live(1, 2, 3));
    expect(done).to.deep.equal({ leader: 2, leaderEpoch: 4, replicas: [2, 3], isr: [2, 3], partitionEpoch: 10 });
    expect(isReassigning(done as PartitionState)).to.equal(false);
  });

  it('keeps the leader (and its epoch) when it stays a replica', () => {
    const started = startReassignment(st(2, [1, 2], [1, 2]), [2, 3], live(1, 2, 3));
    const done = completeReassignment({ ...started, isr: [2, 1, 3] }, live(1, 2, 3));
    expect(done).to.include({ leader: 2, leaderEpoch: 3 });
    expect(done?.replicas).to.deep.equal([2, 3]);
    expect(done?.isr).to.deep.equal([2, 3]);
  });

  it('completes at once when nothing is added (shrinking, or reordering, the replicas)', () => {
    expect(startReassignment(st(1, [1, 2, 3], [1, 2, 3]), [3, 2], live(1, 2, 3))).to.deep.equal({
      leader: 3,
      leaderEpoch: 4,
      replicas: [3, 2],
      isr: [2, 3],
      partitionEpoch: 8,
    });
    expect(startReassignment(st(1, [1, 2], [1, 2]), [2, 1], live(1, 2))).to.deep.equal(st(1, [2, 1], [1, 2], { partitionEpoch: 8 }));
  });

  it('a new target during a reassignment starts from the original replicas, dropping adding replicas it no longer names', () => {
    const first = startReassignment(st(1, [1, 2], [1, 2]), [2, 3], live(1, 2, 3, 4));
    const withIsr = { ...first, isr: [1, 2, 3] };
    const second = startReassignment(withIsr, [2, 4], live(1, 2, 3, 4));
    expect(second.replicas).to.deep.equal([2, 4, 1]);
    expect(second.addingReplicas).to.deep.equal([4]);
    expect(second.removingReplicas).to.deep.equal([1]);
    expect(second.isr).to.deep.equal([1, 2]);
  });

  it('cancelling reverts to the original replicas; without a reassignment it is NO_REASSIGNMENT_IN_PROGRESS', () => {
    const started = startReassignment(st(1, [1, 2], [1, 2]), [2, 3], live(1, 2, 3));
    const reverted = cancelReassignment({ ...started, isr: [1, 2, 3] }, live(1, 2, 3));
    expect(reverted.errorCode).to.equal(ErrorCode.NONE);
    // the merged list [2,3,1] without the adding replica 3, as Kafka's revert leaves it
    expect(reverted.state).to.deep.equal({ leader: 1, leaderEpoch: 3, replicas: [2, 1], isr: [1, 2], partitionEpoch: 9 });
    expect(cancelReassignment(st(1, [1, 2], [1, 2]), live(1, 2)).errorCode).to.equal(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS);
  });

  it('refuses empty, duplicate and unregistered targets', () => {
    expect(targetError([], live(1))).to.be.a('string');
    expect(targetError([1, 1], live(1))).to.be.a('string');
    expect(targetError([1, 9], live(1))).to.match(/broker 9/);
    expect(targetError([1], live(1))).to.equal(undefined);
  });
});

describe('lib/cluster partition-changes: elections', () => {
  it('PREFERRED elects the first replica when it is live and in the ISR', () => {
    expect(preferredElection(st(2, [1, 2], [1, 2]), live(1, 2)).state).to.deep.equal(
      st(1, [1, 2], [1, 2], { leaderEpoch: 4, partitionEpoch: 8 }),
    );
    expect(preferredElection(st(1, [1, 2], [1, 2]), live(1, 2)).errorCode).to.equal(ErrorCode.ELECTION_NOT_NEEDED);
    expect(preferredElection(st(2, [1, 2], [2]), live(1, 2)).errorCode).to.equal(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE);
    expect(preferredElection(st(2, [1, 2], [1, 2]), live(2)).errorCode).to.equal(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE);
  });

  it('UNCLEAN is for a partition without a live leader: a live ISR member first, else any live replica alone in the ISR', () => {
    expect(uncleanElection(st(1, [1, 2], [1, 2]), live(1, 2)).errorCode).to.equal(ErrorCode.ELECTION_NOT_NEEDED);
    expect(uncleanElection(st(-1, [1, 2, 3], [1]), live(2, 3)).state).to.deep.equal(
      st(2, [1, 2, 3], [2], { leaderEpoch: 4, partitionEpoch: 8 }),
    );
    expect(uncleanElection(st(-1, [1, 2, 3], [1, 3]), live(2, 3)).state).to.include({ leader: 3 });
    expect(uncleanElection(st(-1, [1, 2], [1]), live(3)).errorCode).to.equal(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE);
  });

  it('auto rebalance picks the partitions of brokers whose imbalance is above the percentage', () => {
    const parts = [
      { topic: 't', partition: 0, state: st(2, [1, 2], [1, 2]) },
      { topic: 't', partition: 1, state: st(2, [2, 1], [1, 2]) },
      { topic: 't', partition: 2, state: st(1, [1, 2], [1, 2]) },
      { topic: 't', partition: 3, state: st(2, [1, 2], [2]) }, // preferred not in the ISR: cannot move
    ];
    // broker 1 is preferred for 3, leads 1: 2/3 imbalanced
    expect(rebalanceCandidates(parts, live(1, 2), 10).map((p) => p.partition)).to.deep.equal([0]);
    expect(rebalanceCandidates(parts, live(1, 2), 70)).to.deep.equal([]);
    expect(rebalanceCandidates(parts, live(2), 10)).to.deep.equal([]); // broker 1 is down
  });
});

describe('lib/metadata EtcdState: partition keys with and without a reassignment', () => {
  const keys = new EtcdKeys('c1');
  const kv = (key: string, value: unknown, rev: number) => ({
    key,
    value: Buffer.from(JSON.stringify(value)),
    createRevision: rev,
    modRevision: rev,
    lease: '0',
  });

  it('reads keys written before reassignments existed (no adding/removing fields), and keys in the middle of one', () => {
    const state = new EtcdState(keys);
    state.apply(
      kv(
        keys.topic('t'),
        {
          topicId: 'a'.repeat(32),
          partitions: 2,
          replicationFactor: 2,
          configs: {},
          internal: false,
          replicas: [
            [1, 2],
            [1, 2],
          ],
        },
        1,
      ),
      false,
    );
    const old = { leader: 1, leaderEpoch: 2, replicas: [1, 2], isr: [1, 2], partitionEpoch: 3 };
    state.apply(kv(keys.partition('t', 0), old, 2), false);
    expect(state.partition('t', 0)?.state).to.deep.equal(old);
    expect(isReassigning(state.partition('t', 0)?.state as PartitionState)).to.equal(false);
    const moving = { ...old, replicas: [2, 3, 1], addingReplicas: [3], removingReplicas: [1] };
    state.apply(kv(keys.partition('t', 1), moving, 3), false);
    expect(state.partition('t', 1)?.state).to.deep.equal(moving);
    // what the store writes (JSON of the state) reads back the same
    const done = completeReassignment({ ...moving, isr: [1, 2, 3] }, live(1, 2, 3)) as PartitionState;
    state.apply(kv(keys.partition('t', 1), JSON.parse(JSON.stringify(done)) as unknown, 4), false);
    expect(state.partition('t', 1)?.state).to.deep.equal({ leader: 2, leaderEpoch: 3, replicas: [2, 3], isr: [2, 3], partitionEpoch: 4 });
    expect(() => state.apply(kv(keys.partition('t', 1), { ...old, addingReplicas: 'x' }, 5), false)).to.throw(/addingReplicas/);
  });
});
