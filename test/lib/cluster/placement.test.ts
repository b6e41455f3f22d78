import { expect } from 'chai';
import { interleaveRacks, placeReplicas, validateAssignments, type PlacementBroker } from '../../../lib/cluster/placement.js';
import { MetadataWriteError } from '../../../lib/metadata/store.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';

const plain = (...ids: number[]): PlacementBroker[] => ids.map((nodeId) => ({ nodeId, rack: null }));

function thrown(fn: () => unknown): MetadataWriteError {
  try {
    fn();
  } catch (e) {
    expect(e).to.be.instanceOf(MetadataWriteError);
    return e as MetadataWriteError;
  }
  throw new Error('expected a MetadataWriteError');
}

/** A seeded [0, 1) source (mulberry32). */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('lib/cluster placement', () => {
  it('places round-robin with followers shifting every n partitions (5 brokers, 10 partitions, rf 3)', () => {
    const got = placeReplicas(plain(4, 2, 0, 3, 1), 10, 3, { startIndex: 0, replicaShift: 0 });
    expect(got).to.deep.equal([
      [0, 1, 2],
      [1, 2, 3],
      [2, 3, 4],
      [3, 4, 0],
      [4, 0, 1],
      [0, 2, 3],
      [1, 3, 4],
      [2, 4, 0],
      [3, 0, 1],
      [4, 1, 2],
    ]);
  });

  it('spreads leaders and replicas evenly from any random start, each partition on distinct brokers', () => {
    const brokers = plain(1, 2, 3, 4, 5, 6);
    for (let seed = 1; seed <= 20; seed++) {
      const got = placeReplicas(brokers, 12, 3, { random: seeded(seed) });
      const leaders = new Map<number, number>();
      const replicas = new Map<number, number>();
      for (const r of got) {
        expect(new Set(r).size, `partition ${JSON.stringify(r)}`).to.equal(3);
        leaders.set(r[0] as number, (leaders.get(r[0] as number) ?? 0) + 1);
        for (const id of r) replicas.set(id, (replicas.get(id) ?? 0) + 1);
      }
      expect([...leaders.values()]).to.deep.equal([2, 2, 2, 2, 2, 2]);
      expect([...replicas.values()]).to.deep.equal([6, 6, 6, 6, 6, 6]);
    }
  });

  it('places added partitions as if they had been placed with the first ones', () => {
    const brokers = plain(1, 2, 3, 4);
    const all = placeReplicas(brokers, 10, 2, { startIndex: 3, replicaShift: 1 });
    const first = placeReplicas(brokers, 4, 2, { startIndex: 3, replicaShift: 1 });
    const rest = placeReplicas(brokers, 6, 2, { startIndex: 3, replicaShift: 1, firstPartition: 4 });
    expect([...first, ...rest]).to.deep.equal(all);
  });

  it('interleaves racks and puts each replica of a partition on a different rack', () => {
    const racked: PlacementBroker[] = [
      { nodeId: 0, rack: 'rack1' },
      { nodeId: 1, rack: 'rack3' },
      { nodeId: 2, rack: 'rack3' },
      { nodeId: 3, rack: 'rack2' },
      { nodeId: 4, rack: 'rack2' },
      { nodeId: 5, rack: 'rack1' },
    ];
    expect(interleaveRacks(racked)).to.deep.equal([0, 3, 1, 5, 4, 2]);
    const rackOf = new Map(racked.map((b) => [b.nodeId, b.rack]));
    for (let seed = 1; seed <= 20; seed++) {
      const got = placeReplicas(racked, 12, 3, { random: seeded(seed) });
      for (const r of got) expect(new Set(r.map((id) => rackOf.get(id))).size, JSON.stringify(r)).to.equal(3);
      // more replicas than racks: every rack used, then no broker twice
      for (const r of placeReplicas(racked, 6, 4, { random: seeded(seed) })) {
        expect(new Set(r).size).to.equal(4);
        expect(new Set(r.map((id) => rackOf.get(id))).size).to.equal(3);
      }
    }
  });

  it('ignores racks unless every broker has one', () => {
    const mixed: PlacementBroker[] = [
      { nodeId: 1, rack: 'a' },
      { nodeId: 2, rack: null },
      { nodeId: 3, rack: 'b' },
    ];
    const opts = { startIndex: 1, replicaShift: 2 };
    expect(placeReplicas(mixed, 6, 2, opts)).to.deep.equal(placeReplicas(plain(1, 2, 3), 6, 2, opts));
  });

  it("rejects a replication factor above the live brokers with Kafka's message, and counts below 1", () => {
    const e = thrown(() => placeReplicas(plain(1, 2), 3, 3));
    expect(e.errorCode).to.equal(ErrorCode.INVALID_REPLICATION_FACTOR);
    expect(e.message).to.equal('Replication factor: 3 larger than available brokers: 2.');
    expect(thrown(() => placeReplicas(plain(1, 2), 3, 0)).errorCode).to.equal(ErrorCode.INVALID_REPLICATION_FACTOR);
    expect(thrown(() => placeReplicas(plain(1, 2), 0, 1)).errorCode).to.equal(ErrorCode.INVALID_PARTITIONS);
  });

  it('validates explicit assignments: duplicates, unknown brokers, uneven replica counts, empty lists', () => {
    const registered = new Set([1, 2, 3]);
    validateAssignments(
      [
        [1, 2],
        [3, 1],
      ],
      registered,
    );
    const cases: (readonly (readonly number[])[])[] = [[[1, 1]], [[1, 4]], [[1, 2], [3]], [[]], []];
    for (const a of cases) {
      expect(thrown(() => validateAssignments(a, registered)).errorCode, JSON.stringify(a)).to.equal(ErrorCode.INVALID_REPLICA_ASSIGNMENT);
    }
    // a growing topic keeps its replication factor
    expect(thrown(() => validateAssignments([[1, 2, 3]], registered, 2)).errorCode).to.equal(ErrorCode.INVALID_REPLICA_ASSIGNMENT);
  });
});
