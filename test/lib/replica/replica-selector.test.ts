/** KIP-392's rack-aware replica selector and the replica.selector.class setting. */
import { expect } from 'chai';
import { BrokerConfig, ConfigError } from '../../../lib/config.js';
import { rackAwareSelector, replicaSelectorFrom, type ReplicaView } from '../../../lib/replica/replica-selector.js';

const view = (nodeId: number, rack: string | null, logEndOffset: bigint, timeSinceCaughtUpMs = 0): ReplicaView => ({
  nodeId,
  rack,
  logEndOffset,
  timeSinceCaughtUpMs,
});

describe('lib/replica replica selector (KIP-392)', () => {
  const leader = view(1, 'a', 100n);

  it('the leader when the client names no rack, or no candidate is in its rack', () => {
    const followers = [view(2, 'b', 100n), view(3, 'c', 100n)];
    expect(rackAwareSelector('', leader, followers).nodeId).to.equal(1);
    expect(rackAwareSelector('z', leader, followers).nodeId).to.equal(1);
    expect(rackAwareSelector('b', leader, []).nodeId).to.equal(1);
    // a broker without a rack is in no rack
    expect(rackAwareSelector('b', leader, [view(2, null, 100n)]).nodeId).to.equal(1);
  });

  it('the leader when it is in the rack, even if a follower there is as far along', () => {
    expect(rackAwareSelector('a', leader, [view(2, 'a', 100n), view(3, 'b', 100n)]).nodeId).to.equal(1);
  });

  it('otherwise the follower in the rack: the furthest along, then the one caught up most recently', () => {
    expect(rackAwareSelector('b', leader, [view(2, 'b', 90n), view(3, 'c', 100n)]).nodeId).to.equal(2);
    expect(rackAwareSelector('b', leader, [view(2, 'b', 90n), view(4, 'b', 95n), view(3, 'c', 100n)]).nodeId).to.equal(4);
    expect(rackAwareSelector('b', leader, [view(2, 'b', 95n, 300), view(4, 'b', 95n, 20)]).nodeId).to.equal(4);
    expect(rackAwareSelector('b', leader, [view(4, 'b', 95n, 20), view(2, 'b', 95n, 300)]).nodeId).to.equal(4);
  });

  it('replica.selector.class: none by default (leader only); Kafka class name or the alias rack-aware; anything else refused', () => {
    expect(replicaSelectorFrom(new BrokerConfig({ overrides: {} }))).to.equal(null);
    const kafkaName = 'org.apache.kafka.common.replica.RackAwareReplicaSelector';
    expect(replicaSelectorFrom(new BrokerConfig({ overrides: { 'replica.selector.class': kafkaName } }))).to.equal(rackAwareSelector);
    expect(replicaSelectorFrom(new BrokerConfig({ overrides: { 'replica.selector.class': 'rack-aware' } }))).to.equal(rackAwareSelector);
    expect(() => new BrokerConfig({ overrides: { 'replica.selector.class': 'com.example.Closest' } })).to.throw(
      ConfigError,
      /replica.selector.class.*unknown replica selector com.example.Closest/,
    );
  });
});
