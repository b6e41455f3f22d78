/**
 * Fetch from the closest replica (KIP-392), the leader's side: `replica.selector.class` names the
 * selector (none by default: consumers read from leaders only, as in Kafka). The rack-aware one sends a
 * consumer that names its rack (Fetch v11+ `rack_id`) to a replica in that rack: the leader when it is
 * there, else the most caught-up in-sync follower there; anyone else stays on the leader.
 */
import { type BrokerConfig, RACK_AWARE_REPLICA_SELECTORS } from '../config.js';

/** A replica the selector may choose: the leader, or an in-sync follower that holds the fetch offset. */
export interface ReplicaView {
  nodeId: number;
  /** its broker.rack (null: none) */
  rack: string | null;
  logEndOffset: bigint;
  /** ms since it last had everything the leader had (the leader: 0) */
  timeSinceCaughtUpMs: number;
}

export type ReplicaSelector = (clientRack: string, leader: ReplicaView, followers: readonly ReplicaView[]) => ReplicaView;

/** The selector `replica.selector.class` names, or null (leader only). */
export function replicaSelectorFrom(config: BrokerConfig): ReplicaSelector | null {
  const name = config.string('replica.selector.class');
  return name !== null && RACK_AWARE_REPLICA_SELECTORS.includes(name) ? rackAwareSelector : null;
}

/** Whether `a` is a better read replica than `b`: further along, then caught up more recently. */
function ahead(a: ReplicaView, b: ReplicaView): boolean {
  if (a.logEndOffset !== b.logEndOffset) return a.logEndOffset > b.logEndOffset;
  return a.timeSinceCaughtUpMs < b.timeSinceCaughtUpMs;
}

/**
 * Kafka's RackAwareReplicaSelector: no rack named, or none of the candidates in it: the leader. The
 * leader is in it: the leader (it wins among equals). Otherwise the best of the followers in it.
 */
export const rackAwareSelector: ReplicaSelector = (clientRack, leader, followers) => {
  if (clientRack === '' || leader.rack === clientRack) return leader;
  let best: ReplicaView | null = null;
  for (const f of followers) if (f.rack === clientRack && (best === null || ahead(f, best))) best = f;
  return best ?? leader;
};
