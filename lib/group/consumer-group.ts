/**
 * A KIP-848 consumer group's state (Kafka's ConsumerGroup / ConsumerGroupMember): group epoch, target
 * assignment and epoch, members with their current assignment, and which member epoch owns each
 * partition. `reconcile` is Kafka's CurrentAssignmentBuilder: revoke first, then assign what others
 * have released.
 */
import type { ConsumerGroupCurrentMemberAssignmentValue } from '../../protocol/generated/data/consumer-group-current-member-assignment-value.js';
import type { ConsumerGroupMemberMetadataValue } from '../../protocol/generated/data/consumer-group-member-metadata-value.js';
import type { Assignment } from './assignors.js';

/** A supported protocol of a classic member (JoinGroup's name and metadata). */
export interface ClassicProtocol {
  name: string;
  metadata: Buffer;
}

/** What a member using the classic protocol brought in its JoinGroup (ConsumerGroupMemberMetadataValue's tagged field). */
export interface ClassicMemberMetadata {
  sessionTimeoutMs: number;
  supportedProtocols: ClassicProtocol[];
}

export function classicMetadataEqual(a: ClassicMemberMetadata | null, b: ClassicMemberMetadata | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.sessionTimeoutMs === b.sessionTimeoutMs &&
    a.supportedProtocols.length === b.supportedProtocols.length &&
    a.supportedProtocols.every((p, i) => {
      const o = b.supportedProtocols[i];
      return o !== undefined && o.name === p.name && o.metadata.equals(p.metadata);
    })
  );
}

export const ConsumerGroupState = {
  EMPTY: 'Empty',
  ASSIGNING: 'Assigning',
  RECONCILING: 'Reconciling',
  STABLE: 'Stable',
  DEAD: 'Dead',
} as const;
export type ConsumerGroupState = (typeof ConsumerGroupState)[keyof typeof ConsumerGroupState];

/** Member states as numbered in ConsumerGroupCurrentMemberAssignmentValue. */
export const MemberState = { UNREVOKED_PARTITIONS: 0, UNRELEASED_PARTITIONS: 1, STABLE: 2 } as const;
export type MemberState = (typeof MemberState)[keyof typeof MemberState];

export class ConsumerGroupMember {
  instanceId: string | null = null;
  rackId: string | null = null;
  clientId = '';
  clientHost = '';
  subscribedTopicNames: string[] = [];
  subscribedTopicRegex: string | null = null;
  rebalanceTimeoutMs = -1;
  serverAssignor: string | null = null;
  memberEpoch = 0;
  previousMemberEpoch = -1;
  state: MemberState = MemberState.STABLE;
  assignedPartitions: Assignment = new Map();
  partitionsPendingRevocation: Assignment = new Map();
  /** Set while the member uses the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside this group. */
  classicMemberMetadata: ClassicMemberMetadata | null = null;
  sessionTimer: NodeJS.Timeout | undefined;
  rebalanceTimer: NodeJS.Timeout | undefined;
  /** Classic members only: must rejoin within the rebalance timeout once told to (Kafka's join timeout). */
  joinTimer: NodeJS.Timeout | undefined;
  /** Classic members only: must sync within the rebalance timeout after a join (Kafka's sync timeout). */
  syncTimer: NodeJS.Timeout | undefined;

  constructor(readonly memberId: string) {}

  get useClassicProtocol(): boolean {
    return this.classicMemberMetadata !== null;
  }
}

export function toAssignment(tps: readonly { topicId: string; partitions: number[] }[]): Assignment {
  const a: Assignment = new Map();
  for (const tp of tps) a.set(tp.topicId, new Set([...(a.get(tp.topicId) ?? []), ...tp.partitions]));
  return a;
}

export function fromAssignment(a: Assignment): { topicId: string; partitions: number[] }[] {
  return [...a].filter(([, s]) => s.size > 0).map(([topicId, s]) => ({ topicId, partitions: [...s].sort((x, y) => x - y) }));
}

/** The member's ConsumerGroupMemberMetadataValue (with the classic member's metadata as the tagged field). */
export function memberMetadataValue(m: ConsumerGroupMember): ConsumerGroupMemberMetadataValue {
  return {
    instanceId: m.instanceId,
    rackId: m.rackId,
    clientId: m.clientId,
    clientHost: m.clientHost,
    subscribedTopicNames: m.subscribedTopicNames,
    subscribedTopicRegex: m.subscribedTopicRegex,
    rebalanceTimeoutMs: m.rebalanceTimeoutMs,
    serverAssignor: m.serverAssignor,
    classicMemberMetadata:
      m.classicMemberMetadata === null
        ? null
        : {
            sessionTimeoutMs: m.classicMemberMetadata.sessionTimeoutMs,
            supportedProtocols: m.classicMemberMetadata.supportedProtocols.map((p) => ({ name: p.name, metadata: p.metadata })),
          },
  };
}

/** The member's ConsumerGroupCurrentMemberAssignmentValue. */
export function currentAssignmentValue(m: ConsumerGroupMember): ConsumerGroupCurrentMemberAssignmentValue {
  return {
    memberEpoch: m.memberEpoch,
    previousMemberEpoch: m.previousMemberEpoch,
    state: m.state,
    assignedPartitions: fromAssignment(m.assignedPartitions),
    partitionsPendingRevocation: fromAssignment(m.partitionsPendingRevocation),
  };
}

export function cloneAssignment(a: Assignment): Assignment {
  return new Map([...a].map(([t, s]) => [t, new Set(s)]));
}

export function assignmentsEqual(a: Assignment, b: Assignment): boolean {
  const nonEmpty = (x: Assignment) => [...x].filter(([, s]) => s.size > 0);
  const ea = nonEmpty(a);
  if (ea.length !== nonEmpty(b).length) return false;
  return ea.every(([t, s]) => {
    const o = b.get(t);
    return o !== undefined && o.size === s.size && [...s].every((p) => o.has(p));
  });
}

export function isSubset(owned: Assignment, of: Assignment): boolean {
  for (const [t, s] of owned) {
    const o = of.get(t);
    for (const p of s) if (o === undefined || !o.has(p)) return false;
  }
  return true;
}

export class ConsumerGroup {
  readonly type = 'consumer' as const;
  groupEpoch = 0;
  assignmentEpoch = 0;
  readonly members = new Map<string, ConsumerGroupMember>();
  readonly targetAssignment = new Map<string, Assignment>();
  /** topicId → partition → epoch of the member that holds it (assigned or pending revocation). */
  private readonly partitionEpochs = new Map<string, Map<number, number>>();
  /** Sorted "topic:partitions" of what the members subscribe to, to notice topic changes. */
  subscriptionMetadata = '';
  /**
   * The topics each subscribed regex matches. Kafka persists these as ConsumerGroupRegularExpression
   * records; gregor has no schema for them, so they live in memory and are recomputed after a load.
   */
  readonly resolvedRegexes = new Map<string, ReadonlySet<string>>();
  /** The topics version (ConsumerCoordinator) the resolutions were computed at. */
  regexTopicsVersion = -1;
  dead = false;

  constructor(readonly groupId: string) {}

  get state(): ConsumerGroupState {
    if (this.dead) return ConsumerGroupState.DEAD;
    if (this.members.size === 0) return ConsumerGroupState.EMPTY;
    if (this.groupEpoch > this.assignmentEpoch) return ConsumerGroupState.ASSIGNING;
    for (const m of this.members.values()) {
      if (m.memberEpoch !== this.assignmentEpoch || m.state !== MemberState.STABLE) return ConsumerGroupState.RECONCILING;
    }
    return ConsumerGroupState.STABLE;
  }

  currentPartitionEpoch(topicId: string, partition: number): number {
    return this.partitionEpochs.get(topicId)?.get(partition) ?? -1;
  }

  private setEpochs(m: ConsumerGroupMember, epoch: number | null): void {
    for (const a of [m.assignedPartitions, m.partitionsPendingRevocation]) {
      for (const [t, parts] of a) {
        let byP = this.partitionEpochs.get(t);
        if (byP === undefined) this.partitionEpochs.set(t, (byP = new Map<number, number>()));
        for (const p of parts) {
          if (epoch === null) byP.delete(p);
          else byP.set(p, epoch);
        }
        if (byP.size === 0) this.partitionEpochs.delete(t);
      }
    }
  }

  /** Replaces the member's assignment state, keeping the partition-epoch index right. */
  updateAssignment(
    m: ConsumerGroupMember,
    next: Pick<ConsumerGroupMember, 'memberEpoch' | 'previousMemberEpoch' | 'state' | 'assignedPartitions' | 'partitionsPendingRevocation'>,
  ): void {
    this.setEpochs(m, null);
    m.memberEpoch = next.memberEpoch;
    m.previousMemberEpoch = next.previousMemberEpoch;
    m.state = next.state;
    m.assignedPartitions = next.assignedPartitions;
    m.partitionsPendingRevocation = next.partitionsPendingRevocation;
    this.setEpochs(m, m.memberEpoch);
  }

  removeMember(memberId: string): ConsumerGroupMember | undefined {
    const m = this.members.get(memberId);
    if (m === undefined) return undefined;
    this.setEpochs(m, null);
    this.members.delete(memberId);
    this.targetAssignment.delete(memberId);
    return m;
  }

  staticMember(instanceId: string): ConsumerGroupMember | undefined {
    for (const m of this.members.values()) if (m.instanceId === instanceId) return m;
    return undefined;
  }

  numClassicProtocolMembers(): number {
    let n = 0;
    for (const m of this.members.values()) if (m.useClassicProtocol) n++;
    return n;
  }

  /**
   * Kafka's supportsClassicProtocols: the "consumer" protocol type, and (unless the group is empty) a
   * protocol every classic member supports.
   */
  supportsClassicProtocols(protocolType: string, names: readonly string[]): boolean {
    if (protocolType !== 'consumer') return false;
    if (this.members.size === 0) return names.length > 0;
    const classic = [...this.members.values()].filter((m) => m.useClassicProtocol);
    return names.some((name) => classic.every((m) => m.classicMemberMetadata?.supportedProtocols.some((p) => p.name === name) === true));
  }

  /** Every member but `memberId` uses the classic protocol, and `memberId` does not. */
  allMembersUseClassicProtocolExcept(memberId: string): boolean {
    const m = this.members.get(memberId);
    return m !== undefined && !m.useClassicProtocol && this.numClassicProtocolMembers() === this.members.size - 1;
  }

  /** The member waits for a partition of its target that another member still holds. */
  waitingOnUnreleasedPartition(m: ConsumerGroupMember): boolean {
    if (m.state !== MemberState.UNRELEASED_PARTITIONS) return false;
    for (const [t, parts] of this.targetAssignment.get(m.memberId) ?? new Map<string, Set<number>>()) {
      const have = m.assignedPartitions.get(t);
      for (const p of parts) if (have?.has(p) !== true && this.currentPartitionEpoch(t, p) !== -1) return true;
    }
    return false;
  }

  /** The assignor most members asked for, else `fallback`. */
  preferredAssignor(fallback: string): string {
    const votes = new Map<string, number>();
    for (const m of this.members.values())
      if (m.serverAssignor !== null) votes.set(m.serverAssignor, (votes.get(m.serverAssignor) ?? 0) + 1);
    let best = fallback;
    let n = 0;
    for (const [name, v] of votes) if (v > n) [best, n] = [name, v];
    return best;
  }

  /** The regexes the members subscribe to ("" means none, as librdkafka sends it). */
  subscribedRegexes(): Set<string> {
    const out = new Set<string>();
    for (const m of this.members.values())
      if (m.subscribedTopicRegex !== null && m.subscribedTopicRegex !== '') out.add(m.subscribedTopicRegex);
    return out;
  }

  /** A member's subscription: its topic names and what its regex matches. */
  memberTopicNames(m: ConsumerGroupMember): Set<string> {
    const out = new Set(m.subscribedTopicNames);
    if (m.subscribedTopicRegex !== null) for (const t of this.resolvedRegexes.get(m.subscribedTopicRegex) ?? []) out.add(t);
    return out;
  }

  /** Every topic some member subscribes to, by name or by regex. */
  subscribedTopicNames(): Set<string> {
    const out = new Set<string>();
    for (const m of this.members.values()) for (const t of this.memberTopicNames(m)) out.add(t);
    return out;
  }

  /**
   * Moves the member towards the target assignment (Kafka's CurrentAssignmentBuilder). `owned` is what the
   * member reported owning (null: not reported). Returns the next assignment state.
   */
  reconcile(
    m: ConsumerGroupMember,
    owned: Assignment | null,
  ): Pick<ConsumerGroupMember, 'memberEpoch' | 'previousMemberEpoch' | 'state' | 'assignedPartitions' | 'partitionsPendingRevocation'> {
    const same = {
      memberEpoch: m.memberEpoch,
      previousMemberEpoch: m.previousMemberEpoch,
      state: m.state,
      assignedPartitions: m.assignedPartitions,
      partitionsPendingRevocation: m.partitionsPendingRevocation,
    };
    switch (m.state) {
      case MemberState.STABLE:
        return m.memberEpoch !== this.assignmentEpoch ? this.nextAssignment(m, m.memberEpoch) : same;
      case MemberState.UNREVOKED_PARTITIONS: {
        if (owned === null) return same;
        for (const [t, parts] of m.partitionsPendingRevocation) for (const p of parts) if (owned.get(t)?.has(p) === true) return same;
        return this.nextAssignment(m, Math.min(m.memberEpoch + 1, this.assignmentEpoch));
      }
      default:
        return this.nextAssignment(m, m.memberEpoch);
    }
  }

  private nextAssignment(m: ConsumerGroupMember, memberEpoch: number): ReturnType<ConsumerGroup['reconcile']> {
    const target = this.targetAssignment.get(m.memberId) ?? new Map<string, Set<number>>();
    const assigned: Assignment = new Map();
    const revoke: Assignment = new Map();
    const pending: Assignment = new Map();
    let unreleased = false;
    for (const t of new Set([...target.keys(), ...m.assignedPartitions.keys()])) {
      const want = target.get(t) ?? new Set<number>();
      const have = m.assignedPartitions.get(t) ?? new Set<number>();
      const keep = new Set([...have].filter((p) => want.has(p)));
      const rev = new Set([...have].filter((p) => !keep.has(p)));
      const add = new Set<number>();
      for (const p of want) {
        if (keep.has(p)) continue;
        if (this.currentPartitionEpoch(t, p) !== -1) unreleased = true;
        else add.add(p);
      }
      if (keep.size > 0) assigned.set(t, keep);
      if (rev.size > 0) revoke.set(t, rev);
      if (add.size > 0) pending.set(t, add);
    }
    if (revoke.size > 0) {
      // Revoke first; the member keeps its epoch until it confirms.
      return {
        memberEpoch,
        previousMemberEpoch: m.memberEpoch,
        state: MemberState.UNREVOKED_PARTITIONS,
        assignedPartitions: assigned,
        partitionsPendingRevocation: revoke,
      };
    }
    for (const [t, ps] of pending) {
      const s = assigned.get(t) ?? new Set<number>();
      for (const p of ps) s.add(p);
      assigned.set(t, s);
    }
    return {
      memberEpoch: this.assignmentEpoch,
      previousMemberEpoch: m.memberEpoch,
      state: unreleased ? MemberState.UNRELEASED_PARTITIONS : MemberState.STABLE,
      assignedPartitions: assigned,
      partitionsPendingRevocation: new Map(),
    };
  }
}
