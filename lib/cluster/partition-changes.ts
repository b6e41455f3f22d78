/**
 * The partition state changes the controller makes on request or on its own, as pure functions of the
 * current state, the live brokers and what was asked (lib/cluster/partition-admin.ts writes them):
 * - preferred and unclean leader elections (ElectLeaders, auto.leader.rebalance.enable);
 * - reassignments (AlterPartitionReassignments), Kafka's algorithm: replicas become target ∪ current
 *   (target first), adding = target − current, removing = current − target; once every target replica
 *   is in the ISR the reassignment completes: replicas = target, ISR = ISR ∩ target, and a leader that
 *   is leaving hands over to the first target replica in the ISR. Cancelling reverts to the original
 *   replicas.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { PartitionState, TopicPartitionRef } from '../metadata/store.js';

/** A state change, or why there is none (errorCode other than NONE). */
export interface Decision {
  state?: PartitionState;
  errorCode: number;
  errorMessage: string | null;
}

const refused = (errorCode: number, errorMessage: string): Decision => ({ errorCode, errorMessage });
const changed = (state: PartitionState): Decision => ({ state, errorCode: ErrorCode.NONE, errorMessage: null });

/** Whether a reassignment is in progress. */
export function isReassigning(s: PartitionState): boolean {
  return (s.addingReplicas?.length ?? 0) > 0 || (s.removingReplicas?.length ?? 0) > 0;
}

/** The replicas before the reassignment in progress (all of them when none is). */
export function originalReplicas(s: PartitionState): number[] {
  const adding = s.addingReplicas ?? [];
  return s.replicas.filter((r) => !adding.includes(r));
}

/** The replicas the reassignment in progress leads to (all of them when none is). */
export function targetReplicas(s: PartitionState): number[] {
  const removing = s.removingReplicas ?? [];
  return s.replicas.filter((r) => !removing.includes(r));
}

/** `s` with no reassignment in progress, and `fields` changed. */
function settled(s: PartitionState, fields: Partial<PartitionState>): PartitionState {
  const out: PartitionState = { ...s, ...fields };
  delete out.addingReplicas;
  delete out.removingReplicas;
  return out;
}

/** `s` with `leader` (its epoch bumped when it changes) and the partition epoch bumped. */
function withLeader(s: PartitionState, leader: number): Pick<PartitionState, 'leader' | 'leaderEpoch' | 'partitionEpoch'> {
  return { leader, leaderEpoch: leader === s.leader ? s.leaderEpoch : s.leaderEpoch + 1, partitionEpoch: s.partitionEpoch + 1 };
}

/** PREFERRED: the first replica leads, if it is live and in the ISR. */
export function preferredElection(cur: PartitionState, live: ReadonlySet<number>): Decision {
  const preferred = cur.replicas[0];
  if (preferred !== undefined && cur.leader === preferred)
    return refused(ErrorCode.ELECTION_NOT_NEEDED, 'The preferred replica is already the leader.');
  if (preferred === undefined || !live.has(preferred) || !cur.isr.includes(preferred)) {
    return refused(
      ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
      `The preferred replica ${preferred ?? 'none'} is not ${preferred !== undefined && live.has(preferred) ? 'in the ISR' : 'live'}.`,
    );
  }
  return changed({ ...cur, ...withLeader(cur, preferred) });
}

/**
 * UNCLEAN: only for a partition whose leader is gone. A live ISR member leads if there is one; else the
 * first live replica, alone in the ISR (records only the old ISR had may be lost).
 */
export function uncleanElection(cur: PartitionState, live: ReadonlySet<number>): Decision {
  if (cur.leader !== -1 && live.has(cur.leader))
    return refused(ErrorCode.ELECTION_NOT_NEEDED, `Broker ${cur.leader} is a live leader already.`);
  const clean = cur.replicas.find((r) => live.has(r) && cur.isr.includes(r));
  if (clean !== undefined) return changed({ ...cur, ...withLeader(cur, clean), isr: cur.isr.filter((r) => live.has(r)) });
  const any = cur.replicas.find((r) => live.has(r));
  if (any === undefined) return refused(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, 'No replica of the partition is live.');
  return changed({ ...cur, ...withLeader(cur, any), isr: [any] });
}

/** Why `target` cannot be a partition's replica set (INVALID_REPLICA_ASSIGNMENT), or undefined. */
export function targetError(target: readonly number[], registered: ReadonlySet<number>): string | undefined {
  if (target.length === 0) return 'The replica list is empty.';
  if (new Set(target).size !== target.length) return `The replica list [${target.join(',')}] names a broker more than once.`;
  const unknown = target.find((r) => !registered.has(r));
  if (unknown !== undefined) return `The replica list names broker ${unknown}, which is not registered.`;
  return undefined;
}

/**
 * Starts a reassignment to `target` (validated), from the original replicas when one is in progress.
 * When nothing is to be added the change completes at once (completeReassignment).
 */
export function startReassignment(cur: PartitionState, target: readonly number[], live: ReadonlySet<number>): PartitionState {
  const original = originalReplicas(cur);
  const adding = target.filter((r) => !original.includes(r));
  const removing = original.filter((r) => !target.includes(r));
  const replicas = [...target, ...removing];
  const isr = cur.isr.filter((r) => replicas.includes(r));
  const leader = replicas.includes(cur.leader) ? cur.leader : (replicas.find((r) => live.has(r) && isr.includes(r)) ?? -1);
  const next: PartitionState = {
    ...settled(cur, { replicas, isr }),
    ...withLeader(cur, leader),
    ...(adding.length > 0 || removing.length > 0 ? { addingReplicas: adding, removingReplicas: removing } : {}),
  };
  const done = completeReassignment(next, live);
  // one write: the epochs move once from `cur`
  return done === undefined ? next : { ...done, ...withLeader(cur, done.leader) };
}

/**
 * The end of the reassignment in progress once every target replica is in the ISR (undefined before,
 * or when none is in progress, or when no target replica is live to lead).
 */
export function completeReassignment(cur: PartitionState, live: ReadonlySet<number>): PartitionState | undefined {
  if (!isReassigning(cur)) return undefined;
  const target = targetReplicas(cur);
  if (!target.every((r) => cur.isr.includes(r))) return undefined;
  const isr = cur.isr.filter((r) => target.includes(r));
  const leader = target.includes(cur.leader) && live.has(cur.leader) ? cur.leader : target.find((r) => live.has(r) && isr.includes(r));
  if (leader === undefined) return undefined;
  return settled(cur, { replicas: target, isr, ...withLeader(cur, leader) });
}

/**
 * Cancels the reassignment in progress: back to the original replicas, in the order they have in the
 * merged list, as Kafka's revert does (NO_REASSIGNMENT_IN_PROGRESS when none is in progress).
 */
export function cancelReassignment(cur: PartitionState, live: ReadonlySet<number>): Decision {
  if (!isReassigning(cur)) return refused(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, 'No reassignment is in progress for this partition.');
  const replicas = originalReplicas(cur);
  const liveIsr = cur.isr.filter((r) => replicas.includes(r));
  const isr = liveIsr.length > 0 ? liveIsr : replicas; // offline, keeping the last ISR it had among them
  const leader = replicas.includes(cur.leader) ? cur.leader : (replicas.find((r) => live.has(r) && liveIsr.includes(r)) ?? -1);
  return changed(settled(cur, { replicas, isr, ...withLeader(cur, leader) }));
}

/** One partition's state with its name, as the rebalance check walks them. */
export interface PartitionView extends TopicPartitionRef {
  state: PartitionState;
}

/**
 * auto.leader.rebalance.enable: the partitions to hand back to their preferred replica. A live broker
 * whose share of preferred partitions led by others is above `percentage` gets back those it can
 * lead now (live and in the ISR, no reassignment in progress), as Kafka's controller does.
 */
export function rebalanceCandidates(parts: Iterable<PartitionView>, live: ReadonlySet<number>, percentage: number): PartitionView[] {
  const byPreferred = new Map<number, { total: number; elsewhere: PartitionView[] }>();
  for (const p of parts) {
    const preferred = p.state.replicas[0];
    if (preferred === undefined) continue;
    let b = byPreferred.get(preferred);
    if (b === undefined) byPreferred.set(preferred, (b = { total: 0, elsewhere: [] }));
    b.total++;
    if (p.state.leader !== preferred) b.elsewhere.push(p);
  }
  const out: PartitionView[] = [];
  for (const [broker, b] of byPreferred) {
    if (!live.has(broker) || (b.elsewhere.length * 100) / b.total <= percentage) continue;
    for (const p of b.elsewhere) if (!isReassigning(p.state) && preferredElection(p.state, live).state !== undefined) out.push(p);
  }
  return out;
}
