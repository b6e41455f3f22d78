/**
 * The member side of the classic group protocol: SyncGroup, Heartbeat, LeaveGroup and the members'
 * session timers (Kafka's GroupCoordinator). ClassicCoordinator (classic-coordinator.ts) adds JoinGroup
 * and the rebalance around it. Members that must still sync wait in the purgatory (DelayedSync under
 * `group-sync:<id>`); each member has one session timer. State changes happen synchronously; only
 * persisting the group awaits.
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { Purgatory } from '../replica/purgatory.js';
import { ClassicGroup, ClassicGroupMember, ClassicGroupState as S, joinError, type SyncGroupResult, syncError } from './classic-group.js';
import type { ClassicInConsumerGroup } from './consumer-classic.js';
import type { ConsumerGroup } from './consumer-group.js';

export interface GroupSettings {
  initialRebalanceDelayMs: number;
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
  maxSize: number;
}

/** What the classic protocol needs from the coordinator that owns the groups. */
export interface ClassicContext {
  readonly purgatory: Purgatory;
  readonly settings: GroupSettings;
  readonly logger: Logger;
  now(): number;
  /** Persists the group (GroupMetadataValue) and resolves with a Kafka error code. */
  storeGroup(group: ClassicGroup, assignment: ReadonlyMap<string, Buffer>): Promise<number>;
  /**
   * The group a classic request goes to: the classic group (created when asked, replacing an empty
   * consumer group), or the consumer group that serves classic members (Kafka's
   * classicGroup*ToConsumerGroup); undefined when there is none.
   */
  classicGroup(groupId: string, create: boolean): ClassicGroup | ConsumerGroup | undefined;
  /** Serves classic members inside consumer groups. */
  readonly inConsumerGroup: ClassicInConsumerGroup;
}

export interface SyncGroupParams {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
  protocolType: string | null;
  protocolName: string | null;
  assignments: { memberId: string; assignment: Buffer }[];
}

export const joinKey = (groupId: string) => `group-join:${groupId}`;
export const syncKey = (groupId: string) => `group-sync:${groupId}`;

/** SyncGroup, Heartbeat, LeaveGroup and session timers; JoinGroup and rebalancing are the subclass's. */
export abstract class ClassicMembership {
  constructor(protected readonly ctx: ClassicContext) {}

  protected get log(): Logger {
    return this.ctx.logger;
  }

  /** Starts a rebalance when the group can (JoinGroup's side). */
  abstract maybePrepareRebalance(group: ClassicGroup, reason: string): void;

  protected removePendingSyncMember(group: ClassicGroup, memberId: string): void {
    group.pendingSyncMembers.delete(memberId);
    this.ctx.purgatory.checkAndComplete(syncKey(group.groupId));
  }

  protected removePendingMember(group: ClassicGroup, memberId: string): void {
    group.remove(memberId);
    if (group.is(S.PREPARING_REBALANCE)) this.ctx.purgatory.checkAndComplete(joinKey(group.groupId));
  }

  // ---- SyncGroup ----

  syncGroup(p: SyncGroupParams): Promise<SyncGroupResult> {
    return new Promise((resolve) => this.handleSyncGroup(p, resolve));
  }

  protected handleSyncGroup(p: SyncGroupParams, callback: (r: SyncGroupResult) => void): void {
    const found = this.ctx.classicGroup(p.groupId, false);
    if (found?.type === 'consumer') {
      callback(this.ctx.inConsumerGroup.sync(found, p));
      return;
    }
    if (found === undefined) {
      callback(syncError(ErrorCode.UNKNOWN_MEMBER_ID));
      return;
    }
    const group = found;
    const error = this.validateSyncGroup(group, p);
    if (error !== ErrorCode.NONE) {
      callback(syncError(error));
      return;
    }
    switch (group.state) {
      case S.EMPTY: {
        callback(syncError(ErrorCode.UNKNOWN_MEMBER_ID));
        return;
      }
      case S.PREPARING_REBALANCE: {
        callback(syncError(ErrorCode.REBALANCE_IN_PROGRESS));
        return;
      }
      case S.COMPLETING_REBALANCE: {
        const member = group.members.get(p.memberId) as ClassicGroupMember;
        member.awaitingSync = callback;
        this.removePendingSyncMember(group, p.memberId);
        if (!group.isLeader(p.memberId)) return;
        this.log.info(
          { group: group.groupId, generation: group.generationId, members: group.size, leader: p.memberId },
          'assignment received from leader',
        );
        const assignment = new Map<string, Buffer>();
        for (const a of p.assignments) if (group.has(a.memberId)) assignment.set(a.memberId, a.assignment);
        for (const id of group.members.keys()) if (!assignment.has(id)) assignment.set(id, Buffer.alloc(0));
        const generation = group.generationId;
        void this.ctx.storeGroup(group, assignment).then((storeError) => {
          // Another join may have started meanwhile; then this assignment is stale.
          if (!group.is(S.COMPLETING_REBALANCE) || generation !== group.generationId) return;
          if (storeError !== ErrorCode.NONE) {
            this.resetAndPropagateAssignmentError(group, storeError);
            this.maybePrepareRebalance(group, 'error storing the group assignment');
          } else {
            for (const m of group.members.values()) m.assignment = assignment.get(m.memberId) ?? Buffer.alloc(0);
            this.propagateAssignment(group, ErrorCode.NONE);
            group.transitionTo(S.STABLE);
          }
        });
        return;
      }
      case S.STABLE: {
        this.removePendingSyncMember(group, p.memberId);
        const member = group.members.get(p.memberId) as ClassicGroupMember;
        callback({
          errorCode: ErrorCode.NONE,
          protocolType: group.protocolType,
          protocolName: group.protocolName,
          assignment: member.assignment,
        });
        this.scheduleHeartbeat(group, member);
        return;
      }
      default: {
        callback(syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE));
        return;
      }
    }
  }

  protected validateSyncGroup(group: ClassicGroup, p: SyncGroupParams): number {
    if (group.is(S.DEAD)) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const e = this.validateCurrentMember(group, p.memberId, p.groupInstanceId);
    if (e !== ErrorCode.NONE) return e;
    if (p.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
    if (p.protocolType !== null && group.protocolType !== p.protocolType) return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
    if (p.protocolName !== null && group.protocolName !== p.protocolName) return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
    return ErrorCode.NONE;
  }

  /** Kafka's validateMember: a given instance id must be known and map to this member id; the member id must be known. */
  validateCurrentMember(group: ClassicGroup, memberId: string, groupInstanceId: string | null): number {
    if (groupInstanceId !== null && !group.hasStaticMember(groupInstanceId)) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (group.isStaticMemberFenced(groupInstanceId, memberId)) return ErrorCode.FENCED_INSTANCE_ID;
    if (!group.has(memberId)) return ErrorCode.UNKNOWN_MEMBER_ID;
    return ErrorCode.NONE;
  }

  protected propagateAssignment(group: ClassicGroup, errorCode: number): void {
    for (const m of group.members.values()) {
      const answered = group.maybeInvokeSyncCallback(m, {
        errorCode,
        protocolType: group.protocolType,
        protocolName: group.protocolName,
        assignment: errorCode === ErrorCode.NONE ? m.assignment : Buffer.alloc(0),
      });
      // A session that ran out while waiting for the leader is counted from now. Only for members that
      // waited: one that never sent SyncGroup (e.g. a stopped static member) keeps its deadline.
      if (answered) this.scheduleHeartbeat(group, m);
    }
  }

  protected resetAndPropagateAssignmentError(group: ClassicGroup, errorCode: number): void {
    for (const m of group.members.values()) m.assignment = Buffer.alloc(0);
    this.propagateAssignment(group, errorCode);
  }

  // ---- Heartbeat / LeaveGroup ----

  heartbeat(groupId: string, memberId: string, groupInstanceId: string | null, generationId: number): number {
    const found = this.ctx.classicGroup(groupId, false);
    if (found?.type === 'consumer') return this.ctx.inConsumerGroup.heartbeat(found, memberId, groupInstanceId, generationId);
    if (found === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    const group = found;
    if (group.is(S.DEAD)) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const e = this.validateCurrentMember(group, memberId, groupInstanceId);
    if (e !== ErrorCode.NONE) return e;
    if (generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
    const member = group.members.get(memberId) as ClassicGroupMember;
    switch (group.state) {
      case S.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID;
      case S.PREPARING_REBALANCE:
        this.scheduleHeartbeat(group, member);
        return ErrorCode.REBALANCE_IN_PROGRESS;
      default:
        this.scheduleHeartbeat(group, member);
        return ErrorCode.NONE;
    }
  }

  /** Removes members; one error code per leaving member (null: the group is unknown → all UNKNOWN_MEMBER_ID). */
  leaveGroup(group: ClassicGroup, members: { memberId: string; groupInstanceId: string | null; reason: string | null }[]): number[] {
    return members.map((lm) => {
      const reason = `leaving group${lm.reason === null ? '' : ` (${lm.reason})`}`;
      if (lm.memberId === '') {
        const current = group.currentStaticMemberId(lm.groupInstanceId);
        if (current === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
        this.removeCurrentMember(group, current, reason);
        return ErrorCode.NONE;
      }
      if (group.isPendingMember(lm.memberId)) {
        const t = group.pendingMembers.get(lm.memberId);
        if (t !== undefined) clearTimeout(t);
        this.removePendingMember(group, lm.memberId);
        return ErrorCode.NONE;
      }
      const e = this.validateCurrentMember(group, lm.memberId, lm.groupInstanceId);
      if (e !== ErrorCode.NONE) return e;
      this.removeCurrentMember(group, lm.memberId, reason);
      return ErrorCode.NONE;
    });
  }

  protected removeCurrentMember(group: ClassicGroup, memberId: string, reason: string): void {
    const member = group.members.get(memberId);
    if (member === undefined) return;
    this.cancelHeartbeat(member);
    this.removeMemberAndUpdateGroup(group, member, reason);
  }

  protected removeMemberAndUpdateGroup(group: ClassicGroup, member: ClassicGroupMember, reason: string): void {
    // A new member may still wait in a join; tell it to start over.
    group.maybeInvokeJoinCallback(member, joinError('', ErrorCode.UNKNOWN_MEMBER_ID));
    group.remove(member.memberId);
    this.log.info({ group: group.groupId, member: member.memberId, reason }, 'member removed from group');
    switch (group.state) {
      case S.STABLE:
      case S.COMPLETING_REBALANCE:
        this.maybePrepareRebalance(group, `removing member ${member.memberId}: ${reason}`);
        break;
      case S.PREPARING_REBALANCE:
        this.ctx.purgatory.checkAndComplete(joinKey(group.groupId));
        break;
      default:
    }
  }

  // ---- session timers ----

  protected timer(fn: () => void, ms: number): NodeJS.Timeout {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  }

  /** (Re)arms the member's one session timer. */
  scheduleHeartbeat(group: ClassicGroup, member: ClassicGroupMember, timeoutMs = member.sessionTimeoutMs): void {
    if (member.heartbeatTimer !== undefined) clearTimeout(member.heartbeatTimer);
    member.heartbeatTimer = this.timer(() => this.onExpireHeartbeat(group, member), timeoutMs);
  }

  cancelHeartbeat(member: ClassicGroupMember): void {
    if (member.heartbeatTimer !== undefined) clearTimeout(member.heartbeatTimer);
    member.heartbeatTimer = undefined;
  }

  protected onExpireHeartbeat(group: ClassicGroup, member: ClassicGroupMember): void {
    member.heartbeatTimer = undefined;
    if (group.is(S.DEAD) || group.members.get(member.memberId) !== member) return;
    // Members waiting in a rebalance count as alive (unless they never completed a first join).
    if (!member.isNew && (member.isAwaitingJoin || member.isAwaitingSync)) {
      this.scheduleHeartbeat(group, member);
      return;
    }
    this.log.info({ group: group.groupId, member: member.memberId }, 'member session expired; removing it from the group');
    this.removeMemberAndUpdateGroup(group, member, 'session timeout expired');
  }

  /** Answers everyone still waiting (the coordinator is going away) and stops every timer. */
  unload(group: ClassicGroup, errorCode: number): void {
    for (const m of group.members.values()) {
      this.cancelHeartbeat(m);
      group.maybeInvokeJoinCallback(m, joinError(m.memberId, errorCode));
      group.maybeInvokeSyncCallback(m, syncError(errorCode));
    }
    for (const t of group.pendingMembers.values()) if (t !== undefined) clearTimeout(t);
  }
}
