/**
 * Replication.generation, what a follower's fetch session checks its kept leader state against
 * (lib/handlers/fetch-replica.ts): it moves with every metadata change, so a follower record looked up
 * before a leader epoch bump or a lost leadership is never used after it; a lookup after the change
 * finds the new leadership's record (or none). Stand-ins for the store, the topic manager and the
 * fetchers; the replication layer is the real one.
 */
import { expect } from 'chai';
import pino from 'pino';
import type { BrokerConfig } from '../../../lib/config.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import type { MetadataChange, MetadataStore, PartitionState } from '../../../lib/metadata/store.js';
import { Purgatory } from '../../../lib/replica/purgatory.js';
import { type Followers, Replication } from '../../../lib/replica/replication.js';
import type { TopicManager } from '../../../lib/topics.js';

const TOPIC = 'led';

function setup() {
  let state: PartitionState = { leader: 1, leaderEpoch: 5, replicas: [1, 2], isr: [1, 2], partitionEpoch: 0 };
  let listener: (c: MetadataChange) => void = () => undefined;
  const metadata = {
    nodeId: 1,
    onChange: (l: (c: MetadataChange) => void) => (listener = l),
    topics: () => [{ name: TOPIC, partitions: 1, topicId: 'a'.repeat(32) }],
    topic: (name: string) => (name === TOPIC ? { name, partitions: 1, topicId: 'a'.repeat(32) } : undefined),
    partitionState: (t: string, p: number) => (t === TOPIC && p === 0 ? state : undefined),
  } as unknown as MetadataStore;
  const log = { isOpen: false, open: () => new Promise(() => undefined), logEndOffset: 0n, highWatermark: 0n } as unknown as PartitionLog;
  const topics = { onPartitionOpened: () => undefined, onReplicaRemoved: () => undefined, replica: () => log } as unknown as TopicManager;
  const done = () => Promise.resolve();
  const followers: Followers = { follow: done, unfollow: done, shutdown: done };
  const replication = new Replication({
    metadata,
    topics,
    purgatory: new Purgatory(),
    followers,
    config: { long: () => undefined } as unknown as BrokerConfig,
    logger: pino({ level: 'silent' }),
  });
  replication.start();
  const change = (next: PartitionState) => {
    state = next;
    listener({ kind: 'partition', topic: TOPIC, partition: 0 } as MetadataChange);
  };
  return { replication, change, state: () => state };
}

describe('Replication.generation (what a fetch session kept is checked against)', () => {
  it('moves with a leader epoch bump, after which the follower is looked up in the new leadership', async () => {
    const s = setup();
    const before = s.replication.generation;
    const kept = s.replication.follower(TOPIC, 0, 2);
    expect(kept).to.not.equal(undefined);
    s.change({ ...s.state(), leaderEpoch: 6 });
    expect(s.replication.generation).to.be.above(before);
    const now = s.replication.follower(TOPIC, 0, 2);
    expect(now?.led, 'a new leadership').to.not.equal(kept?.led);
    await s.replication.stop();
  });

  it('moves with an ISR change of the same leadership and with a lost leadership (then no follower is found)', async () => {
    const s = setup();
    let g = s.replication.generation;
    s.change({ ...s.state(), isr: [1] });
    expect(s.replication.generation).to.be.above(g);
    g = s.replication.generation;
    s.change({ ...s.state(), leader: 2, leaderEpoch: 6 });
    expect(s.replication.generation).to.be.above(g);
    expect(s.replication.follower(TOPIC, 0, 2)).to.equal(undefined);
    await s.replication.stop();
  });

  it('a replica dropped from the partition is no longer a follower', async () => {
    const s = setup();
    const g = s.replication.generation;
    s.change({ ...s.state(), replicas: [1], isr: [1] });
    expect(s.replication.generation).to.be.above(g);
    expect(s.replication.follower(TOPIC, 0, 2)).to.equal(undefined);
    await s.replication.stop();
  });
});
