import { expect } from 'chai';
import {
  consumerGroupMetadataRecord,
  decodeCoordinatorRecord,
  groupMetadataRecord,
  javaStringHashCode,
  offsetCommitRecord,
  partitionFor,
} from '../../../lib/group/records.js';

describe('group records (__consumer_offsets layouts)', () => {
  it("hashes group ids like Java's String.hashCode and Kafka's partitionFor", () => {
    expect(javaStringHashCode('hello')).to.equal(99162322);
    expect(javaStringHashCode('')).to.equal(0);
    // "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs maps it to 0.
    expect(javaStringHashCode('polygenelubricants')).to.equal(-2147483648);
    expect(partitionFor('polygenelubricants', 50)).to.equal(0);
    expect(javaStringHashCode('Aa')).to.equal(javaStringHashCode('BB'));
    expect(partitionFor('test-group', 50)).to.equal(Math.abs(javaStringHashCode('test-group')) % 50);
    expect(partitionFor('my-group', 50)).to.be.within(0, 49);
  });

  it('offset commits are key v1 / value v3 (v1 when an expire timestamp is set), tombstones have no value', () => {
    const r = offsetCommitRecord('g', 't', 3, {
      offset: 42n,
      leaderEpoch: 7,
      metadata: 'm',
      commitTimestamp: 1000n,
      expireTimestamp: null,
    });
    expect(r.key.readInt16BE(0)).to.equal(1);
    expect(r.value?.readInt16BE(0)).to.equal(3);
    expect(decodeCoordinatorRecord(r.key, r.value)).to.deep.equal({
      type: 'offset',
      group: 'g',
      topic: 't',
      partition: 3,
      value: { offset: 42n, leaderEpoch: 7, metadata: 'm', commitTimestamp: 1000n, expireTimestamp: null },
    });
    const v1 = offsetCommitRecord('g', 't', 3, { offset: 1n, leaderEpoch: -1, metadata: '', commitTimestamp: 5n, expireTimestamp: 9n });
    expect(v1.value?.readInt16BE(0)).to.equal(1);
    expect(decodeCoordinatorRecord(v1.key, v1.value)).to.have.nested.property('value.expireTimestamp', 9n);
    const tomb = offsetCommitRecord('g', 't', 3, null);
    expect(tomb.value).to.equal(null);
    expect(decodeCoordinatorRecord(tomb.key, null)).to.deep.equal({ type: 'offset', group: 'g', topic: 't', partition: 3, value: null });
  });

  it('group metadata is key v2 / value v3 and round-trips members', () => {
    const value = {
      protocolType: 'consumer',
      generation: 4,
      protocol: 'range',
      leader: 'm1',
      currentStateTimestamp: 123n,
      members: [
        {
          memberId: 'm1',
          groupInstanceId: 'i1',
          clientId: 'c',
          clientHost: '/127.0.0.1',
          rebalanceTimeout: 300,
          sessionTimeout: 100,
          subscription: Buffer.from([1]),
          assignment: Buffer.from([2]),
        },
      ],
    };
    const r = groupMetadataRecord('g', value);
    expect(r.key.readInt16BE(0)).to.equal(2);
    expect(r.value?.readInt16BE(0)).to.equal(3);
    expect(decodeCoordinatorRecord(r.key, r.value)).to.deep.equal({ type: 'group', group: 'g', value });
  });

  it('KIP-848 records use key versions 3..8', () => {
    const r = consumerGroupMetadataRecord('g', 5);
    expect(r.key.readInt16BE(0)).to.equal(3);
    expect(decodeCoordinatorRecord(r.key, r.value)).to.deep.equal({ type: 'consumer-group', group: 'g', epoch: 5 });
    const unknown = Buffer.from([0, 42, 0, 0]);
    expect(decodeCoordinatorRecord(unknown, null)).to.deep.equal({ type: 'unknown', keyVersion: 42 });
  });
});
