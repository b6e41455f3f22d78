/**
 * The classic group protocol (Kafka's GroupCoordinator): JoinGroup, SyncGroup, Heartbeat, LeaveGroup.
 * Joins wait in the purgatory (DelayedJoin / InitialDelayedJoin under `group-join:<id>`), members that
 * must still sync wait there too (DelayedSync under `group-sync:<id>`), and each member has one
 * session timer. State changes happen synchronously; only persisting the group awaits.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { DelayedOperation, Purgatory } from '../replica/purgatory.js';
import {
  ClassicGroup,
  ClassicGroupMember,
  ClassicGroupState as S,
  type JoinGroupResult,
  joinError,
  type Protocol,
  type SyncGroupResult,
  syncError,
} from './classic-group.js';
import type { ClassicInConsumerGroup } from './consumer-classic.js';
import type { ConsumerGroup } from './consumer-group.js';

/** Kafka's timeout for a new member that joined but never completed a join. */
export const NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000;

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

export interface JoinGroupParams {
  groupId: string;
  memberId: string;
  groupInstanceId: string | null;
  requireKnownMemberId: boolean;
  supportSkippingAssignment: boolean;
  clientId: string;
  clientHost: string;
  rebalanceTimeoutMs: number;
  sessionTimeoutMs: number;
  protocolType: string;
  protocols: Protocol[];
  reason: string | null;
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

const joinKey = (groupId: string) => `group-join:${groupId}`;
const syncKey = (groupId: string) => `group-sync:${groupId}`;

export class ClassicCoordinator {
  constructor(private readonly ctx: ClassicContext) {}

  private get log(): Logger {
    return this.ctx.logger;
  }

  // ---- JoinGroup ----

  joinGroup(p: JoinGroupParams): Promise<JoinGroupResult> {
    return new Promise((resolve) => this.handleJoinGroup(p, resolve));
  }

  private handleJoinGroup(p: JoinGroupParams, callback: (r: JoinGroupResult) => void): void {
    const s = this.ctx.settings;
    if (p.sessionTimeoutMs < s.minSessionTimeoutMs || p.sessionTimeoutMs > s.maxSessionTimeoutMs) {
      return callback(joinError(p.memberId, ErrorCode.INVALID_SESSION_TIMEOUT));
    }
    const isUnknownMember = p.memberId === '';
    const found = this.ctx.classicGroup(p.groupId, isUnknownMember);
    if (found?.type === 'consumer') {
      // A known member id joining an empty consumer group: Kafka drops the group and finds no member.
      if (found.members.size === 0) return callback(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
      void this.ctx.inConsumerGroup.join(found, p).then(callback, (e: unknown) => {
        this.log.error({ err: e, group: p.groupId }, 'JoinGroup to a consumer group failed');
        callback(joinError(p.memberId, ErrorCode.UNKNOWN_SERVER_ERROR));
      });
      return;
    }
    if (found === undefined) return callback(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
    const group = found;
    if (!this.acceptJoiningMember(group, p.memberId)) {
      group.remove(p.memberId);
      callback(joinError('', ErrorCode.GROUP_MAX_SIZE_REACHED));
    } else if (isUnknownMember) {
      this.doNewMemberJoinGroup(group, p, callback);
    } else {
      this.doCurrentMemberJoinGroup(group, p, callback);
    }
    if (group.is(S.PREPARING_REBALANCE)) this.ctx.purgatory.checkAndComplete(joinKey(group.groupId));
  }

  private acceptJoiningMember(group: ClassicGroup, memberId: string): boolean {
    const max = this.ctx.settings.maxSize;
    switch (group.state) {
      case S.EMPTY:
      case S.DEAD:
        return true;
      case S.PREPARING_REBALANCE:
        return (group.members.get(memberId)?.isAwaitingJoin ?? false) || group.numAwaitingJoin < max;
      default:
        return group.has(memberId) || group.size < max;
    }
  }

  private doNewMemberJoinGroup(group: ClassicGroup, p: JoinGroupParams, callback: (r: JoinGroupResult) => void): void {
    if (group.is(S.DEAD)) return callback(joinError(p.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE));
    if (!group.supportsProtocols(p.protocolType, p.protocols)) return callback(joinError(p.memberId, ErrorCode.INCONSISTENT_GROUP_PROTOCOL));
    const newMemberId = `${p.groupInstanceId ?? p.clientId}-${randomUUID()}`;
    if (group.hasStaticMember(p.groupInstanceId)) {
      this.doStaticMemberJoinGroup(group, newMemberId, p, callback);
    } else if (p.requireKnownMemberId) {
      // KIP-394: hand out the id and let the member come back with it.
      group.pendingMembers.set(newMemberId, this.timer(() => this.removePendingMember(group, newMemberId), p.sessionTimeoutMs));
      callback(joinError(newMemberId, ErrorCode.MEMBER_ID_REQUIRED));
    } else {
      this.addMemberAndRebalance(group, newMemberId, p, callback);
    }
  }

  private doStaticMemberJoinGroup(group: ClassicGroup, newMemberId: string, p: JoinGroupParams, callback: (r: JoinGroupResult) => void): void {
    const instanceId = p.groupInstanceId as string;
    const oldMemberId = group.currentStaticMemberId(instanceId) as string;
    this.log.info({ group: group.groupId, instanceId, oldMemberId, newMemberId }, 'static member rejoins with a new member id');
    const currentLeader = group.leaderId;
    const member = group.replaceStaticMember(instanceId, oldMemberId, newMemberId);
    this.scheduleHeartbeat(group, member);
    const old = { protocols: member.supportedProtocols, rebalanceTimeoutMs: member.rebalanceTimeoutMs, sessionTimeoutMs: member.sessionTimeoutMs };
    group.updateMember(member, p.protocols, p.rebalanceTimeoutMs, p.sessionTimeoutMs, callback);
    switch (group.state) {
      case S.STABLE: {
        // Same protocol for the next generation: keep the assignment, persist the new id, no rebalance.
        if (group.protocolName !== group.selectProtocol()) {
          this.maybePrepareRebalance(group, `static member ${instanceId} changed protocols`);
          return;
        }
        const assignment = new Map([...group.members.values()].map((m) => [m.memberId, m.assignment]));
        void this.ctx.storeGroup(group, assignment).then((error) => {
          if (error !== ErrorCode.NONE) {
            group.updateMember(member, old.protocols, old.rebalanceTimeoutMs, old.sessionTimeoutMs, null);
            const back = group.replaceStaticMember(instanceId, newMemberId, oldMemberId);
            this.scheduleHeartbeat(group, back);
            callback({ ...joinError('', error), generationId: group.generationId, protocolType: group.protocolType, protocolName: group.protocolName, leaderId: currentLeader ?? '' });
          } else if (p.supportSkippingAssignment) {
            const isLeader = group.isLeader(newMemberId);
            group.maybeInvokeJoinCallback(member, this.joinResult(group, newMemberId, isLeader, group.leaderId ?? '', isLeader));
          } else {
            // Before v9 the old leader id is returned so the rejoining member does not run a useless assignment.
            group.maybeInvokeJoinCallback(member, this.joinResult(group, newMemberId, false, currentLeader ?? '', false));
          }
        });
        return;
      }
      case S.COMPLETING_REBALANCE:
        this.prepareRebalance(group, `static member ${instanceId} rejoined during CompletingRebalance`);
        return;
      default:
        return; // PreparingRebalance: the member now waits for the join to complete.
    }
  }

  private doCurrentMemberJoinGroup(group: ClassicGroup, p: JoinGroupParams, callback: (r: JoinGroupResult) => void): void {
    if (group.is(S.DEAD)) return callback(joinError(p.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE));
    if (!group.supportsProtocols(p.protocolType, p.protocols)) return callback(joinError(p.memberId, ErrorCode.INCONSISTENT_GROUP_PROTOCOL));
    if (group.isPendingMember(p.memberId)) {
      const t = group.pendingMembers.get(p.memberId);
      if (t !== undefined) clearTimeout(t);
      if (p.groupInstanceId !== null) return callback(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
      return this.addMemberAndRebalance(group, p.memberId, p, callback);
    }
    const instanceNotFound = p.groupInstanceId !== null && !group.hasStaticMember(p.groupInstanceId);
    if (group.isStaticMemberFenced(p.groupInstanceId, p.memberId)) return callback(joinError(p.memberId, ErrorCode.FENCED_INSTANCE_ID));
    const member = group.members.get(p.memberId);
    if (member === undefined || instanceNotFound) return callback(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
    const reason = `member ${p.memberId} rejoins during ${group.state}${p.reason === null ? '' : ` (${p.reason})`}`;
    switch (group.state) {
      case S.PREPARING_REBALANCE:
        return this.updateMemberAndRebalance(group, member, p, reason, callback);
      case S.COMPLETING_REBALANCE:
        // Same metadata: the member probably lost the join response; answer it again.
        if (member.matches(p.protocols)) return callback(this.joinResult(group, p.memberId, group.isLeader(p.memberId), group.leaderId ?? '', false));
        return this.updateMemberAndRebalance(group, member, p, reason, callback);
      case S.STABLE:
        if (group.isLeader(p.memberId) || !member.matches(p.protocols)) return this.updateMemberAndRebalance(group, member, p, reason, callback);
        return callback(this.joinResult(group, p.memberId, false, group.leaderId ?? '', false));
      default:
        return callback(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
    }
  }

  private joinResult(group: ClassicGroup, memberId: string, withMembers: boolean, leaderId: string, skipAssignment: boolean): JoinGroupResult {
    return {
      errorCode: ErrorCode.NONE,
      memberId,
      generationId: group.generationId,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      leaderId,
      skipAssignment,
      members: withMembers ? group.currentMemberMetadata() : [],
    };
  }

  private addMemberAndRebalance(group: ClassicGroup, memberId: string, p: JoinGroupParams, callback: (r: JoinGroupResult) => void): void {
    const member = new ClassicGroupMember(memberId, p.groupInstanceId, p.clientId, p.clientHost, p.rebalanceTimeoutMs, p.sessionTimeoutMs, p.protocolType, p.protocols);
    member.isNew = true;
    // Kafka 4: a new member extends the initial delay of a join phase begun from Empty (any generation).
    if (group.is(S.PREPARING_REBALANCE) && group.previousState === S.EMPTY) group.newMemberAdded = true;
    group.add(member, callback);
    // A joining member cannot heartbeat; it expires only if the join never completes.
    this.scheduleHeartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS);
    this.maybePrepareRebalance(group, `adding new member ${memberId}${p.reason === null ? '' : ` (${p.reason})`}`);
  }

  private updateMemberAndRebalance(group: ClassicGroup, member: ClassicGroupMember, p: JoinGroupParams, reason: string, callback: (r: JoinGroupResult) => void): void {
    group.updateMember(member, p.protocols, p.rebalanceTimeoutMs, p.sessionTimeoutMs, callback);
    this.maybePrepareRebalance(group, reason);
  }

  maybePrepareRebalance(group: ClassicGroup, reason: string): void {
    if (group.canRebalance()) this.prepareRebalance(group, reason);
  }

  private prepareRebalance(group: ClassicGroup, reason: string): void {
    if (group.is(S.COMPLETING_REBALANCE)) this.resetAndPropagateAssignmentError(group, ErrorCode.REBALANCE_IN_PROGRESS);
    group.pendingSyncMembers.clear();
    this.ctx.purgatory.checkAndComplete(syncKey(group.groupId));
    const wasEmpty = group.is(S.EMPTY);
    group.transitionTo(S.PREPARING_REBALANCE);
    this.log.info({ group: group.groupId, generation: group.generationId, reason }, 'preparing to rebalance group');
    const delay = this.ctx.settings.initialRebalanceDelayMs;
    if (wasEmpty) this.watchInitialJoin(group, delay, Math.max(group.rebalanceTimeoutMs - delay, 0));
    else this.watchJoin(group);
  }

  private watchJoin(group: ClassicGroup): void {
    const op: DelayedOperation = { tryComplete: () => group.hasAllMembersJoined(), onComplete: () => this.onCompleteJoin(group) };
    this.ctx.purgatory.tryCompleteElseWatch(op, [joinKey(group.groupId)], group.rebalanceTimeoutMs);
  }

  /** Kafka's InitialDelayedJoin: waits `delayMs`, extended while new members keep arriving. */
  private watchInitialJoin(group: ClassicGroup, delayMs: number, remainingMs: number): void {
    const configured = this.ctx.settings.initialRebalanceDelayMs;
    const op: DelayedOperation = {
      tryComplete: () => false,
      onComplete: () => {
        if (group.newMemberAdded && remainingMs !== 0 && !group.is(S.DEAD)) {
          group.newMemberAdded = false;
          const delay = Math.min(configured, remainingMs);
          this.watchInitialJoin(group, delay, Math.max(remainingMs - delayMs, 0));
        } else {
          this.onCompleteJoin(group);
        }
      },
    };
    this.ctx.purgatory.tryCompleteElseWatch(op, [joinKey(group.groupId)], delayMs);
  }

  private onCompleteJoin(group: ClassicGroup): void {
    if (!group.is(S.PREPARING_REBALANCE)) return; // unloaded or deleted meanwhile
    for (const m of group.notYetRejoinedMembers()) {
      if (m.isStatic) continue;
      this.log.info({ group: group.groupId, member: m.memberId }, 'removing member that did not rejoin');
      group.remove(m.memberId);
      this.cancelHeartbeat(m);
    }
    if (!group.maybeElectNewJoinedLeader() && group.size > 0) {
      this.log.error({ group: group.groupId }, 'could not complete rebalance because no members rejoined');
      this.watchJoin(group);
      return;
    }
    group.initNextGeneration();
    if (group.is(S.EMPTY)) {
      this.log.info({ group: group.groupId, generation: group.generationId }, 'group is now empty');
      void this.ctx.storeGroup(group, new Map()).then((e) => {
        if (e !== ErrorCode.NONE) this.log.warn({ group: group.groupId, errorCode: e }, 'failed to persist empty group');
      });
      return;
    }
    this.log.info({ group: group.groupId, generation: group.generationId, members: group.size, protocol: group.protocolName }, 'stabilized group');
    for (const m of [...group.members.values()]) {
      group.maybeInvokeJoinCallback(m, this.joinResult(group, m.memberId, group.isLeader(m.memberId), group.leaderId ?? '', false));
      this.scheduleHeartbeat(group, m);
      m.isNew = false;
      group.pendingSyncMembers.add(m.memberId);
    }
    this.watchPendingSync(group);
  }

  /** Members that got a join response must sync within the rebalance timeout, or they are removed. */
  private watchPendingSync(group: ClassicGroup): void {
    const generation = group.generationId;
    const stale = () => generation !== group.generationId || !(group.is(S.COMPLETING_REBALANCE) || group.is(S.STABLE));
    const op: DelayedOperation = {
      tryComplete: () => stale() || group.pendingSyncMembers.size === 0,
      onComplete: (expired) => {
        if (!expired || stale() || group.pendingSyncMembers.size === 0) return;
        const missing = [...group.pendingSyncMembers];
        for (const id of missing) {
          const m = group.remove(id);
          if (m !== undefined) this.cancelHeartbeat(m);
        }
        this.log.info({ group: group.groupId, members: missing }, 'removing members that did not sync in time');
        this.prepareRebalance(group, `removing ${missing.join(', ')} on pending sync request expiration`);
      },
    };
    this.ctx.purgatory.tryCompleteElseWatch(op, [syncKey(group.groupId)], group.rebalanceTimeoutMs);
  }

  private removePendingSyncMember(group: ClassicGroup, memberId: string): void {
    group.pendingSyncMembers.delete(memberId);
    this.ctx.purgatory.checkAndComplete(syncKey(group.groupId));
  }

  private removePendingMember(group: ClassicGroup, memberId: string): void {
    group.remove(memberId);
    if (group.is(S.PREPARING_REBALANCE)) this.ctx.purgatory.checkAndComplete(joinKey(group.groupId));
  }

  // ---- SyncGroup ----

  syncGroup(p: SyncGroupParams): Promise<SyncGroupResult> {
    return new Promise((resolve) => this.handleSyncGroup(p, resolve));
  }

  private handleSyncGroup(p: SyncGroupParams, callback: (r: SyncGroupResult) => void): void {
    const found = this.ctx.classicGroup(p.groupId, false);
    if (found?.type === 'consumer') return callback(this.ctx.inConsumerGroup.sync(found, p));
    if (found === undefined) return callback(syncError(ErrorCode.UNKNOWN_MEMBER_ID));
    const group = found;
    const error = this.validateSyncGroup(group, p);
    if (error !== ErrorCode.NONE) return callback(syncError(error));
    switch (group.state) {
      case S.EMPTY:
        return callback(syncError(ErrorCode.UNKNOWN_MEMBER_ID));
      case S.PREPARING_REBALANCE:
        return callback(syncError(ErrorCode.REBALANCE_IN_PROGRESS));
      case S.COMPLETING_REBALANCE: {
        const member = group.members.get(p.memberId) as ClassicGroupMember;
        member.awaitingSync = callback;
        this.removePendingSyncMember(group, p.memberId);
        if (!group.isLeader(p.memberId)) return;
        this.log.info({ group: group.groupId, generation: group.generationId, members: group.size, leader: p.memberId }, 'assignment received from leader');
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
        callback({ errorCode: ErrorCode.NONE, protocolType: group.protocolType, protocolName: group.protocolName, assignment: member.assignment });
        this.scheduleHeartbeat(group, member);
        return;
      }
      default:
        return callback(syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE));
    }
  }

  private validateSyncGroup(group: ClassicGroup, p: SyncGroupParams): number {
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

  private propagateAssignment(group: ClassicGroup, errorCode: number): void {
    for (const m of group.members.values()) {
      const answered = group.maybeInvokeSyncCallback(m, { errorCode, protocolType: group.protocolType, protocolName: group.protocolName, assignment: errorCode === ErrorCode.NONE ? m.assignment : Buffer.alloc(0) });
      // A session that ran out while waiting for the leader is counted from now. Only for members that
      // waited: one that never sent SyncGroup (e.g. a stopped static member) keeps its deadline.
      if (answered) this.scheduleHeartbeat(group, m);
    }
  }

  private resetAndPropagateAssignmentError(group: ClassicGroup, errorCode: number): void {
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

  private removeCurrentMember(group: ClassicGroup, memberId: string, reason: string): void {
    const member = group.members.get(memberId);
    if (member === undefined) return;
    this.cancelHeartbeat(member);
    this.removeMemberAndUpdateGroup(group, member, reason);
  }

  private removeMemberAndUpdateGroup(group: ClassicGroup, member: ClassicGroupMember, reason: string): void {
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

  private timer(fn: () => void, ms: number): NodeJS.Timeout {
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

  private onExpireHeartbeat(group: ClassicGroup, member: ClassicGroupMember): void {
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
