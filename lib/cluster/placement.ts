/**
 * Replica placement for new partitions, the way Kafka's assignReplicasToBrokers spreads them:
 * partition p's first replica is broker (start + p) mod n in id order; its followers follow at a
 * distance that shifts by one every n partitions, so leaders and followers both spread evenly. When
 * every broker has a rack, brokers are first interleaved rack by rack and followers skip racks (and
 * brokers) that already hold a replica of the partition until every rack (broker) holds one.
 * Also the checks of an explicit assignment (CreateTopics/CreatePartitions with assignments).
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { MetadataWriteError } from '../metadata/store.js';

export interface PlacementBroker {
  nodeId: number;
  rack: string | null;
}

export interface PlacementOptions {
  /** Index (in the broker order) of partition `firstPartition`'s first replica; random when absent. */
  startIndex?: number;
  /** Initial follower shift; random when absent. */
  replicaShift?: number;
  /** The id of the first partition placed (a topic growing from 3 partitions places from 3). */
  firstPartition?: number;
  /** [0, 1) source for the random choices (tests pass a seeded one). */
  random?: () => number;
}

/** Rejects a replication factor the live brokers cannot host (Kafka's message). */
export function checkReplicationFactor(replicationFactor: number, brokers: number): void {
  if (!Number.isInteger(replicationFactor) || replicationFactor <= 0) {
    throw new MetadataWriteError(ErrorCode.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0.');
  }
  if (replicationFactor > brokers) {
    throw new MetadataWriteError(
      ErrorCode.INVALID_REPLICATION_FACTOR,
      `Replication factor: ${replicationFactor} larger than available brokers: ${brokers}.`,
    );
  }
}

/** Replicas for `partitions` partitions (index i: partition firstPartition + i), first replica = preferred leader. */
export function placeReplicas(
  brokers: readonly PlacementBroker[],
  partitions: number,
  replicationFactor: number,
  opts: PlacementOptions = {},
): number[][] {
  if (!Number.isInteger(partitions) || partitions <= 0) {
    throw new MetadataWriteError(ErrorCode.INVALID_PARTITIONS, 'Number of partitions must be larger than 0.');
  }
  checkReplicationFactor(replicationFactor, brokers.length);
  const random = opts.random ?? Math.random;
  const n = brokers.length;
  const startIndex = opts.startIndex ?? Math.floor(random() * n);
  const shift = opts.replicaShift ?? Math.floor(random() * n);
  const first = opts.firstPartition ?? 0;
  const sorted = [...brokers].sort((a, b) => a.nodeId - b.nodeId);
  const rackAware = sorted.every((b) => b.rack !== null);
  return rackAware
    ? placeRackAware(sorted, partitions, replicationFactor, startIndex, shift, first)
    : placeRoundRobin(
        sorted.map((b) => b.nodeId),
        partitions,
        replicationFactor,
        startIndex,
        shift,
        first,
      );
}

/** The broker index of follower `j` of a partition whose first replica is at `firstIndex`. */
function followerIndex(firstIndex: number, shift: number, j: number, n: number): number {
  if (n === 1) return firstIndex;
  return (firstIndex + 1 + ((shift + j) % (n - 1))) % n;
}

function placeRoundRobin(
  ids: number[],
  partitions: number,
  rf: number,
  startIndex: number,
  initialShift: number,
  first: number,
): number[][] {
  const n = ids.length;
  const out: number[][] = [];
  let shift = initialShift;
  for (let p = first; p < first + partitions; p++) {
    if (p > 0 && p % n === 0) shift++;
    const firstIndex = (p + startIndex) % n;
    const replicas = [at(ids, firstIndex)];
    for (let j = 0; j < rf - 1; j++) replicas.push(at(ids, followerIndex(firstIndex, shift, j, n)));
    out.push(replicas);
  }
  return out;
}

function placeRackAware(
  sorted: PlacementBroker[],
  partitions: number,
  rf: number,
  startIndex: number,
  initialShift: number,
  first: number,
): number[][] {
  const order = interleaveRacks(sorted);
  const rackOf = new Map(sorted.map((b) => [b.nodeId, b.rack ?? '']));
  const racks = new Set(rackOf.values()).size;
  const n = order.length;
  const out: number[][] = [];
  let shift = initialShift;
  for (let p = first; p < first + partitions; p++) {
    if (p > 0 && p % n === 0) shift++;
    const firstIndex = (p + startIndex) % n;
    const leader = at(order, firstIndex);
    const replicas = [leader];
    const usedRacks = new Set([rackOf.get(leader)]);
    const usedBrokers = new Set([leader]);
    let k = 0;
    while (replicas.length < rf) {
      const candidate = at(order, followerIndex(firstIndex, shift * racks, k++, n));
      const rack = rackOf.get(candidate);
      const rackOk = !usedRacks.has(rack) || usedRacks.size === racks;
      const brokerOk = !usedBrokers.has(candidate) || usedBrokers.size === n;
      if (rackOk && brokerOk) {
        replicas.push(candidate);
        usedRacks.add(rack);
        usedBrokers.add(candidate);
      }
    }
    out.push(replicas);
  }
  return out;
}

/** Brokers ordered by taking one from each rack in turn (racks and brokers by name and id). */
export function interleaveRacks(sorted: readonly PlacementBroker[]): number[] {
  const byRack = new Map<string, number[]>();
  for (const b of sorted) {
    const rack = b.rack ?? '';
    const list = byRack.get(rack) ?? [];
    list.push(b.nodeId);
    byRack.set(rack, list);
  }
  const lists = [...byRack.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, ids]) => ids);
  const out: number[] = [];
  for (let round = 0; out.length < sorted.length; round++) {
    for (const ids of lists) {
      const id = ids[round];
      if (id !== undefined) out.push(id);
    }
  }
  return out;
}

/**
 * Checks explicit assignments against the registered brokers: every partition names at least one
 * broker, no broker twice, only registered brokers, and the same number of replicas as the others
 * (`replicationFactor` when given: a topic's existing factor).
 */
export function validateAssignments(
  assignments: readonly (readonly number[])[],
  registered: ReadonlySet<number>,
  replicationFactor?: number,
): void {
  const fail = (message: string): never => {
    throw new MetadataWriteError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, message);
  };
  if (assignments.length === 0) fail('The replica assignment names no partition.');
  let expected = replicationFactor;
  assignments.forEach((replicas, p) => {
    if (replicas.length === 0) fail(`The replica assignment of partition ${p} is empty.`);
    const seen = new Set<number>();
    for (const id of replicas) {
      if (seen.has(id)) fail(`The replica assignment of partition ${p} names broker ${id} more than once.`);
      seen.add(id);
      if (!registered.has(id)) fail(`The replica assignment of partition ${p} names broker ${id}, which is not registered.`);
    }
    if (expected === undefined) expected = replicas.length;
    else if (replicas.length !== expected) {
      fail(`The replica assignment of partition ${p} has ${replicas.length} replica(s), other partitions have ${expected}.`);
    }
  });
}

function at(ids: readonly number[], i: number): number {
  const id = ids[i];
  if (id === undefined) throw new Error(`placement index ${i} out of ${ids.length}`);
  return id;
}
