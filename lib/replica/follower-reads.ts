/**
 * Consumers reading from followers (KIP-392), the consumer-fetch side, in a cluster:
 * - a Fetch v11+ may read a partition this broker follows, up to the high watermark its leader sent
 *   it (read_committed: the last stable offset it knows), while this broker is in the partition's
 *   ISR; out of it (or in an older version, or not a replica at all) the partition answers
 *   NOT_LEADER_OR_FOLLOWER, and the client goes back to the leader. Offsets outside the replica's
 *   log answer OFFSET_OUT_OF_RANGE as on a leader (the client then asks the leader).
 * - with a replica selector (replica.selector.class), a leader sends a consumer that names its rack
 *   to a closer replica: the partition's answer carries `preferred_read_replica` and no records.
 * What to read (and what not) is decided here, once per requested topic; the Fetch handler reads.
 */
import type { FetchRequestFetchPartition } from '../../protocol/generated/fetch.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { BrokerServices } from '../services.js';
import type { TopicLogs } from '../topics.js';
import { replicaSelectorFrom, type ReplicaSelector, type ReplicaView } from './replica-selector.js';

/** The first Fetch version that carries the client's rack and may be sent to a follower. */
export const FOLLOWER_FETCH_MIN_VERSION = 11;

/** What a consumer Fetch reads of one topic. */
export interface ConsumerReads {
  /** The logs to read, by partition index (led partitions, and followed ones a v11+ fetch may read). */
  logs: TopicLogs | undefined;
  /** Partition → the replica the leader sends the consumer to; undefined: none (read here). */
  readReplicas: Map<number, number> | undefined;
}

const selectors = new WeakMap<object, ReplicaSelector | null>();

function selectorOf(s: BrokerServices): ReplicaSelector | null {
  let sel = selectors.get(s.config);
  if (sel === undefined) selectors.set(s.config, (sel = replicaSelectorFrom(s.config)));
  return sel;
}

/**
 * The logs a consumer Fetch of `partitions` of `topic` reads here, and (KIP-392) the partitions the
 * leader sends elsewhere. One node, or an older Fetch: the logs of the partitions this broker leads.
 */
export function consumerReads(
  s: BrokerServices,
  apiVersion: number,
  topic: string,
  partitions: readonly FetchRequestFetchPartition[],
  rackId: string,
): ConsumerReads {
  const led = s.topics.logsOf(topic);
  if (!s.topics.clustered || apiVersion < FOLLOWER_FETCH_MIN_VERSION) return { logs: led, readReplicas: undefined };
  // a client in the leader's own rack reads here whatever its followers hold (the rack-aware selector's first rule)
  const selector = rackId === '' || rackId === s.config.string('broker.rack') ? null : selectorOf(s);
  let logs: (PartitionLog | undefined)[] | undefined;
  let readReplicas: Map<number, number> | undefined;
  for (let i = 0; i < partitions.length; i++) {
    const p = partitions[i] as FetchRequestFetchPartition;
    const leaderLog = led?.[p.partition];
    if (leaderLog !== undefined) {
      if (selector === null) continue;
      const to = preferredReadReplica(s, selector, rackId, topic, p, leaderLog);
      if (to !== s.nodeId) (readReplicas ??= new Map()).set(p.partition, to);
      continue;
    }
    const replica = followedReplica(s, topic, p.partition);
    if (replica === undefined) continue;
    logs ??= led === undefined ? [] : [...led];
    logs[p.partition] = replica;
  }
  return { logs: logs ?? led, readReplicas };
}

/** The log of a partition this broker follows and may serve to consumers: a replica in the ISR. */
function followedReplica(s: BrokerServices, topic: string, partition: number): PartitionLog | undefined {
  const state = s.metadata.partitionState(topic, partition);
  if (state === undefined || state.leader === s.nodeId || state.leader < 0 || !state.isr.includes(s.nodeId)) return undefined;
  return s.topics.replica(topic, partition);
}

/** The replica the selector picks for a consumer in `rackId` at the partition's fetch offset (this broker: read here). */
function preferredReadReplica(
  s: BrokerServices,
  selector: ReplicaSelector,
  rackId: string,
  topic: string,
  p: FetchRequestFetchPartition,
  log: PartitionLog,
): number {
  const candidates = s.replication?.readCandidates(topic, p.partition, p.fetchOffset);
  if (candidates === undefined || candidates.length === 0) return s.nodeId;
  const brokers = s.metadata.brokers();
  const rackOf = (nodeId: number): string | null | undefined => brokers.find((b) => b.nodeId === nodeId)?.rack;
  const followers: ReplicaView[] = [];
  for (const c of candidates) {
    // only a live broker (registered, so its endpoints are known) can be sent to
    const rack = rackOf(c.nodeId);
    if (rack !== undefined) followers.push({ ...c, rack });
  }
  const leader: ReplicaView = { nodeId: s.nodeId, rack: rackOf(s.nodeId) ?? null, logEndOffset: log.logEndOffset, timeSinceCaughtUpMs: 0 };
  return selector(rackId, leader, followers).nodeId;
}
