/**
 * What a consumer Fetch reads where (KIP-392), decided from the broker's view of a partition: its
 * state (leader, ISR), the brokers alive with their racks, and the leader's view of its followers.
 * The view is a small stand-in here; test/integration/cluster-follower-fetch.test.ts runs it on brokers.
 */
import { expect } from 'chai';
import { BrokerConfig } from '../../../lib/config.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import type { PartitionState } from '../../../lib/metadata/store.js';
import { consumerReads } from '../../../lib/replica/follower-reads.js';
import type { BrokerServices } from '../../../lib/services.js';

const log = (name: string) => ({ name, logEndOffset: 100n }) as unknown as PartitionLog;
const req = (...partitions: number[]) =>
  partitions.map((partition) => ({
    partition,
    currentLeaderEpoch: -1,
    fetchOffset: 50n,
    lastFetchedEpoch: -1,
    logStartOffset: -1n,
    partitionMaxBytes: 1 << 20,
  }));

/** Broker 1 of racks 1:a 2:b 3:c; it leads partition 0 of `t` and follows partitions 1 (in the ISR) and 2 (out of it). */
function services(
  over: { selector?: string; alive?: number[]; candidates?: { nodeId: number; logEndOffset: bigint }[] } = {},
): BrokerServices {
  const led = [log('t-0')];
  const replicas = [log('t-0'), log('t-1'), log('t-2')];
  const states: PartitionState[] = [
    { leader: 1, leaderEpoch: 0, replicas: [1, 2, 3], isr: [1, 2, 3], partitionEpoch: 0 },
    { leader: 2, leaderEpoch: 0, replicas: [1, 2, 3], isr: [1, 2, 3], partitionEpoch: 0 },
    { leader: 2, leaderEpoch: 0, replicas: [1, 2, 3], isr: [2, 3], partitionEpoch: 0 },
  ];
  const racks: Record<number, string> = { 1: 'a', 2: 'b', 3: 'c' };
  const s = {
    nodeId: 1,
    config: new BrokerConfig({ overrides: over.selector === undefined ? {} : { 'replica.selector.class': over.selector } }),
    topics: { clustered: true, logsOf: () => led, replica: (_: string, p: number) => replicas[p] },
    metadata: {
      partitionState: (_: string, p: number) => states[p],
      brokers: () => (over.alive ?? [1, 2, 3]).map((nodeId) => ({ nodeId, rack: racks[nodeId] ?? null, endpoints: [], brokerEpoch: 1 })),
    },
    replication: {
      readCandidates: () =>
        (
          over.candidates ?? [
            { nodeId: 2, logEndOffset: 100n },
            { nodeId: 3, logEndOffset: 100n },
          ]
        ).map((c) => ({ ...c, timeSinceCaughtUpMs: 0 })),
    },
  };
  return s as unknown as BrokerServices;
}

const names = (logs: readonly (PartitionLog | undefined)[] | undefined) =>
  (logs ?? []).map((l) => (l as unknown as { name: string } | undefined)?.name);

describe('lib/replica follower reads (KIP-392)', () => {
  it('v11+: the partitions it leads, and those it follows while in the ISR; older versions: those it leads only', () => {
    const s = services();
    const v11 = consumerReads(s, 11, 't', req(0, 1, 2), '').logs;
    expect(names(v11)).to.deep.equal(['t-0', 't-1']);
    expect(v11?.[2]).to.equal(undefined); // out of the ISR: NOT_LEADER_OR_FOLLOWER (the handler's notHere)
    expect(names(consumerReads(s, 10, 't', req(0, 1, 2), '').logs)).to.deep.equal(['t-0']);
    // nothing followed asked for: the led logs as they are (no copy)
    const only = consumerReads(s, 12, 't', req(0), 'b');
    expect(names(only.logs)).to.deep.equal(['t-0']);
    expect(only.readReplicas).to.equal(undefined); // no selector configured
  });

  it('with the selector, a leader sends a consumer in another rack to the follower there; its own rack, none or an unknown one read here', () => {
    const s = services({ selector: 'rack-aware' });
    expect([...(consumerReads(s, 11, 't', req(0, 1), 'b').readReplicas ?? [])]).to.deep.equal([[0, 2]]);
    expect([...(consumerReads(s, 11, 't', req(0), 'c').readReplicas ?? [])]).to.deep.equal([[0, 3]]);
    for (const rack of ['a', '', 'z']) expect(consumerReads(s, 11, 't', req(0), rack).readReplicas, rack).to.equal(undefined);
    expect(consumerReads(s, 10, 't', req(0), 'b').readReplicas).to.equal(undefined);
  });

  it('only a live in-sync follower holding the fetch offset: one not registered, or not a candidate, is passed over', () => {
    expect(consumerReads(services({ selector: 'rack-aware', alive: [1, 3] }), 11, 't', req(0), 'b').readReplicas).to.equal(undefined);
    const behind = services({ selector: 'rack-aware', candidates: [{ nodeId: 3, logEndOffset: 60n }] });
    expect(consumerReads(behind, 11, 't', req(0), 'b').readReplicas).to.equal(undefined);
    expect([...(consumerReads(behind, 11, 't', req(0), 'c').readReplicas ?? [])]).to.deep.equal([[0, 3]]);
  });
});
