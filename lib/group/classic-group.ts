/**
 * A classic group's state (Kafka's GroupMetadata / ClassicGroup): members, generation, the chosen
 * protocol, leader, static members, and who is still expected to join or sync. Pure state: the
 * coordinator drives transitions, timers and persistence.
 */
import { Reader } from '../../protocol/codec/reader.js';
import { readConsumerProtocolSubscription } from '../../protocol/generated/data/consumer-protocol-subscription.js';
import type { GroupMetadataValue } from '../../protocol/generated/data/group-metadata-value.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';

export const ClassicGroupState = {
  EMPTY: 'Empty',
  PREPARING_REBALANCE: 'PreparingRebalance',
  COMPLETING_REBALANCE: 'CompletingRebalance',
  STABLE: 'Stable',
  DEAD: 'Dead',
} as const;
export type ClassicGroupState = (typeof ClassicGroupState)[keyof typeof ClassicGroupState];

const S = ClassicGroupState;
const VALID_PREVIOUS: Record<ClassicGroupState, readonly ClassicGroupState[]> = {
  [S.EMPTY]: [S.PREPARING_REBALANCE],
  [S.PREPARING_REBALANCE]: [S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY],
  [S.COMPLETING_REBALANCE]: [S.PREPARING_REBALANCE],
  [S.STABLE]: [S.COMPLETING_REBALANCE],
  [S.DEAD]: [S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD],
};

export const CONSUMER_PROTOCOL_TYPE = 'consumer';
const EMPTY = Buffer.alloc(0);

export interface Protocol {
  name: string;
  metadata: Buffer;
}

export interface JoinGroupResult {
  errorCode: number;
  memberId: string;
  generationId: number;
  protocolType: string | null;
  protocolName: string | null;
  leaderId: string;
  skipAssignment: boolean;
  members: { memberId: string; groupInstanceId: string | null; metadata: Buffer }[];
}

export interface SyncGroupResult {
  errorCode: number;
  protocolType: string | null;
  protocolName: string | null;
  assignment: Buffer;
}

export function joinError(memberId: string, errorCode: number): JoinGroupResult {
  return {
    errorCode,
    memberId,
    generationId: -1,
    protocolType: null,
    protocolName: null,
    leaderId: '',
    skipAssignment: false,
    members: [],
  };
}

export function syncError(errorCode: number): SyncGroupResult {
  return { errorCode, protocolType: null, protocolName: null, assignment: EMPTY };
}

export class ClassicGroupMember {
  assignment: Buffer = EMPTY;
  awaitingJoin: ((r: JoinGroupResult) => void) | null = null;
  awaitingSync: ((r: SyncGroupResult) => void) | null = null;
  /** Joined but not yet through a completed join (Kafka's isNew: expires after the new-member timeout). */
  isNew = false;
  /** The one session timer of this member (owned by the coordinator). */
  heartbeatTimer: NodeJS.Timeout | undefined;

  constructor(
    public memberId: string,
    readonly groupInstanceId: string | null,
    public clientId: string,
    public clientHost: string,
    public rebalanceTimeoutMs: number,
    public sessionTimeoutMs: number,
    readonly protocolType: string,
    public supportedProtocols: Protocol[],
  ) {}

  get isAwaitingJoin(): boolean {
    return this.awaitingJoin !== null;
  }

  get isAwaitingSync(): boolean {
    return this.awaitingSync !== null;
  }

  get isStatic(): boolean {
    return this.groupInstanceId !== null;
  }

  metadata(protocol: string | null): Buffer {
    return this.supportedProtocols.find((p) => p.name === protocol)?.metadata ?? EMPTY;
  }

  /** Same protocols with the same metadata, in the same order. */
  matches(protocols: readonly Protocol[]): boolean {
    if (protocols.length !== this.supportedProtocols.length) return false;
    return protocols.every((p, i) => {
      const mine = this.supportedProtocols[i];
      return mine !== undefined && mine.name === p.name && mine.metadata.equals(p.metadata);
    });
  }

  /** This member's preferred protocol among the candidates. */
  vote(candidates: ReadonlySet<string>): string | undefined {
    return this.supportedProtocols.find((p) => candidates.has(p.name))?.name;
  }
}

export class ClassicGroup {
  readonly type = 'classic' as const;
  state: ClassicGroupState = S.EMPTY;
  /** The state before the last transition (Kafka 4's previousState: a join phase begun from Empty is the initial one). */
  previousState: ClassicGroupState = S.EMPTY;
  currentStateTimestamp: number | null;
  generationId = 0;
  protocolType: string | null = null;
  protocolName: string | null = null;
  leaderId: string | null = null;
  readonly members = new Map<string, ClassicGroupMember>();
  readonly staticMembers = new Map<string, string>();
  readonly pendingMembers = new Map<string, NodeJS.Timeout | undefined>();
  readonly pendingSyncMembers = new Set<string>();
  private numMembersAwaitingJoin = 0;
  private readonly supportedProtocols = new Map<string, number>();
  /** Set while the initial delayed join may still be extended by new members. */
  newMemberAdded = false;
  subscribedTopics: Set<string> | null = null;

  constructor(
    readonly groupId: string,
    private readonly now: () => number,
  ) {
    this.currentStateTimestamp = now();
  }

  is(state: ClassicGroupState): boolean {
    return this.state === state;
  }

  canRebalance(): boolean {
    return VALID_PREVIOUS[S.PREPARING_REBALANCE].includes(this.state);
  }

  transitionTo(state: ClassicGroupState): void {
    if (!VALID_PREVIOUS[state].includes(this.state)) {
      throw new Error(`GREGOR_ERR_GROUP_STATE: group ${this.groupId} cannot go from ${this.state} to ${state}`);
    }
    this.previousState = this.state;
    this.state = state;
    this.currentStateTimestamp = this.now();
  }

  get size(): number {
    return this.members.size;
  }

  has(memberId: string): boolean {
    return this.members.has(memberId);
  }

  isLeader(memberId: string): boolean {
    return this.leaderId === memberId;
  }

  isPendingMember(memberId: string): boolean {
    return this.pendingMembers.has(memberId);
  }

  get rebalanceTimeoutMs(): number {
    let max = 0;
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs);
    return max;
  }

  get numAwaitingJoin(): number {
    return this.numMembersAwaitingJoin;
  }

  add(member: ClassicGroupMember, callback: ((r: JoinGroupResult) => void) | null): void {
    if (this.members.size === 0) this.protocolType = member.protocolType;
    if (this.leaderId === null) this.leaderId = member.memberId;
    this.members.set(member.memberId, member);
    if (member.groupInstanceId !== null) this.staticMembers.set(member.groupInstanceId, member.memberId);
    for (const p of member.supportedProtocols) this.supportedProtocols.set(p.name, (this.supportedProtocols.get(p.name) ?? 0) + 1);
    member.awaitingJoin = callback;
    if (member.isAwaitingJoin) this.numMembersAwaitingJoin++;
    this.pendingMembers.delete(member.memberId);
  }

  remove(memberId: string): ClassicGroupMember | undefined {
    const member = this.members.get(memberId);
    if (member !== undefined) {
      this.members.delete(memberId);
      for (const p of member.supportedProtocols) this.supportedProtocols.set(p.name, (this.supportedProtocols.get(p.name) ?? 1) - 1);
      if (member.isAwaitingJoin) this.numMembersAwaitingJoin--;
      if (member.groupInstanceId !== null && this.staticMembers.get(member.groupInstanceId) === memberId)
        this.staticMembers.delete(member.groupInstanceId);
    }
    if (this.isLeader(memberId)) this.leaderId = this.members.keys().next().value ?? null;
    this.pendingMembers.delete(memberId);
    this.pendingSyncMembers.delete(memberId);
    return member;
  }

  updateMember(
    member: ClassicGroupMember,
    protocols: Protocol[],
    rebalanceTimeoutMs: number,
    sessionTimeoutMs: number,
    callback: ((r: JoinGroupResult) => void) | null,
  ): void {
    for (const p of member.supportedProtocols) this.supportedProtocols.set(p.name, (this.supportedProtocols.get(p.name) ?? 1) - 1);
    for (const p of protocols) this.supportedProtocols.set(p.name, (this.supportedProtocols.get(p.name) ?? 0) + 1);
    member.supportedProtocols = protocols;
    member.rebalanceTimeoutMs = rebalanceTimeoutMs;
    member.sessionTimeoutMs = sessionTimeoutMs;
    if (callback !== null && !member.isAwaitingJoin) this.numMembersAwaitingJoin++;
    else if (callback === null && member.isAwaitingJoin) this.numMembersAwaitingJoin--;
    member.awaitingJoin = callback;
  }

  maybeInvokeJoinCallback(member: ClassicGroupMember, result: JoinGroupResult): void {
    const cb = member.awaitingJoin;
    if (cb === null) return;
    member.awaitingJoin = null;
    this.numMembersAwaitingJoin--;
    cb(result);
  }

  /** Answers the member's parked SyncGroup, if any; true when there was one. */
  maybeInvokeSyncCallback(member: ClassicGroupMember, result: SyncGroupResult): boolean {
    const cb = member.awaitingSync;
    if (cb === null) return false;
    member.awaitingSync = null;
    cb(result);
    return true;
  }

  hasAllMembersJoined(): boolean {
    return this.members.size === this.numMembersAwaitingJoin && this.pendingMembers.size === 0;
  }

  notYetRejoinedMembers(): ClassicGroupMember[] {
    return [...this.members.values()].filter((m) => !m.isAwaitingJoin);
  }

  hasStaticMember(instanceId: string | null): boolean {
    return instanceId !== null && this.staticMembers.has(instanceId);
  }

  currentStaticMemberId(instanceId: string | null): string | undefined {
    return instanceId === null ? undefined : this.staticMembers.get(instanceId);
  }

  /** A static member's request is fenced when its instance id now maps to another member id. */
  isStaticMemberFenced(instanceId: string | null, memberId: string): boolean {
    if (instanceId === null) return false;
    const current = this.staticMembers.get(instanceId);
    return current !== undefined && current !== memberId;
  }

  replaceStaticMember(instanceId: string, oldMemberId: string, newMemberId: string): ClassicGroupMember {
    const member = this.members.get(oldMemberId);
    if (member === undefined) throw new Error(`GREGOR_ERR_GROUP_STATE: static member ${oldMemberId} of ${this.groupId} is unknown`);
    this.members.delete(oldMemberId);
    // Fence whoever still waits with the old id.
    this.maybeInvokeJoinCallback(member, joinError(oldMemberId, ErrorCode.FENCED_INSTANCE_ID));
    this.maybeInvokeSyncCallback(member, syncError(ErrorCode.FENCED_INSTANCE_ID));
    member.memberId = newMemberId;
    this.members.set(newMemberId, member);
    if (this.isLeader(oldMemberId)) this.leaderId = newMemberId;
    this.staticMembers.set(instanceId, newMemberId);
    this.pendingSyncMembers.delete(oldMemberId);
    return member;
  }

  /** When the leader did not rejoin, any member that did becomes leader. False when none rejoined. */
  maybeElectNewJoinedLeader(): boolean {
    if (this.leaderId === null) return false;
    const leader = this.members.get(this.leaderId);
    if (leader !== undefined && leader.isAwaitingJoin) return true;
    for (const m of this.members.values()) {
      if (m.isAwaitingJoin) {
        this.leaderId = m.memberId;
        return true;
      }
    }
    return false;
  }

  /** Empty groups accept any non-empty protocol list; others only protocols every member supports. */
  supportsProtocols(protocolType: string, protocols: readonly Protocol[]): boolean {
    if (this.is(S.EMPTY)) return protocolType !== '' && protocols.length > 0;
    return this.protocolType === protocolType && protocols.some((p) => this.supportedProtocols.get(p.name) === this.members.size);
  }

  candidateProtocols(): Set<string> {
    const out = new Set<string>();
    for (const [name, n] of this.supportedProtocols) if (n === this.members.size) out.add(name);
    return out;
  }

  /** Each member votes for its first candidate; most votes wins (ties: first voted). */
  selectProtocol(): string {
    const candidates = this.candidateProtocols();
    const votes = new Map<string, number>();
    for (const m of this.members.values()) {
      const v = m.vote(candidates);
      if (v !== undefined) votes.set(v, (votes.get(v) ?? 0) + 1);
    }
    let best: string | undefined;
    let bestVotes = -1;
    for (const [name, n] of votes) {
      if (n > bestVotes) {
        best = name;
        bestVotes = n;
      }
    }
    if (best === undefined) throw new Error(`GREGOR_ERR_GROUP_STATE: no protocol shared by every member of ${this.groupId}`);
    return best;
  }

  initNextGeneration(): void {
    this.generationId++;
    if (this.members.size > 0) {
      this.protocolName = this.selectProtocol();
      this.subscribedTopics = this.computeSubscribedTopics();
      this.transitionTo(S.COMPLETING_REBALANCE);
    } else {
      this.protocolName = null;
      this.subscribedTopics = this.computeSubscribedTopics();
      this.transitionTo(S.EMPTY);
    }
    this.pendingSyncMembers.clear();
  }

  /** Topics the members subscribe to (consumer protocol only); null when unknown. */
  computeSubscribedTopics(): Set<string> | null {
    if (this.protocolType !== CONSUMER_PROTOCOL_TYPE || this.protocolName === null) return this.members.size === 0 ? new Set() : null;
    const topics = new Set<string>();
    try {
      for (const m of this.members.values()) {
        const r = new Reader(m.metadata(this.protocolName));
        const version = r.int16();
        const sub = readConsumerProtocolSubscription(r, Math.min(Math.max(version, 0), 3));
        r.check();
        for (const t of sub.topics) topics.add(t);
      }
    } catch {
      return null;
    }
    return topics;
  }

  isSubscribedToTopic(topic: string): boolean {
    return this.subscribedTopics?.has(topic) ?? false;
  }

  currentMemberMetadata(): JoinGroupResult['members'] {
    return [...this.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      metadata: m.metadata(this.protocolName),
    }));
  }

  /** The GroupMetadataValue to persist, with the given assignment (default: the members' current ones). */
  toRecordValue(assignment?: ReadonlyMap<string, Buffer>): GroupMetadataValue {
    return {
      protocolType: this.protocolType ?? '',
      generation: this.generationId,
      protocol: this.protocolName,
      leader: this.leaderId,
      currentStateTimestamp: BigInt(this.currentStateTimestamp ?? -1),
      members: [...this.members.values()].map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        rebalanceTimeout: m.rebalanceTimeoutMs,
        sessionTimeout: m.sessionTimeoutMs,
        subscription: m.metadata(this.protocolName),
        assignment: assignment?.get(m.memberId) ?? m.assignment,
      })),
    };
  }

  /** Rebuilds a group from its last GroupMetadataValue (Empty without members, else Stable). */
  static load(groupId: string, v: GroupMetadataValue, now: () => number): ClassicGroup {
    const g = new ClassicGroup(groupId, now);
    g.generationId = v.generation;
    g.protocolType = v.protocolType === '' ? null : v.protocolType;
    g.protocolName = v.protocol;
    for (const m of v.members) {
      const member = new ClassicGroupMember(
        m.memberId,
        m.groupInstanceId ?? null,
        m.clientId,
        m.clientHost,
        m.rebalanceTimeout ?? m.sessionTimeout,
        m.sessionTimeout,
        g.protocolType ?? '',
        [{ name: v.protocol ?? '', metadata: m.subscription }],
      );
      member.assignment = m.assignment;
      g.add(member, null);
    }
    g.leaderId = v.leader;
    g.state = v.members.length === 0 ? S.EMPTY : S.STABLE;
    const ts = v.currentStateTimestamp ?? -1n;
    g.currentStateTimestamp = ts < 0n ? null : Number(ts);
    g.subscribedTopics = g.computeSubscribedTopics();
    return g;
  }
}
