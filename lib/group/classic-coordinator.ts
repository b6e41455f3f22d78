/**
 * The classic group protocol (Kafka's GroupCoordinator), JoinGroup side: joins wait in the purgatory
 * (DelayedJoin / InitialDelayedJoin under `group-join:<id>`), then the group is stabilised and the
 * members that must sync are watched. SyncGroup, Heartbeat, LeaveGroup and the session timers are in
 * classic-membership.ts. State changes happen synchronously; only persisting the group awaits.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { DelayedOperation } from '../replica/purgatory.js';
import {
  ClassicGroup,
  ClassicGroupMember,
  ClassicGroupState as S,
  type JoinGroupResult,
  joinError,
  type Protocol,
} from './classic-group.js';
import { ClassicMembership, joinKey, syncKey } from './classic-membership.js';

export { type ClassicContext, type GroupSettings, type SyncGroupParams } from './classic-membership.js';

/** Kafka's timeout for a new member that joined but never completed a join. */
export const NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000;

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

export class ClassicCoordinator extends ClassicMembership {
  // ---- JoinGroup ----

  joinGroup(p: JoinGroupParams): Promise<JoinGroupResult> {
    return new Promise((resolve) => this.handleJoinGroup(p, resolve));
  }

  protected handleJoinGroup(p: JoinGroupParams, callback: (r: JoinGroupResult) => void): void {
    const s = this.ctx.settings;
    if (p.sessionTimeoutMs < s.minSessionTimeoutMs || p.sessionTimeoutMs > s.maxSessionTimeoutMs) {
      callback(joinError(p.memberId, ErrorCode.INVALID_SESSION_TIMEOUT));
      return;
    }
    const isUnknownMember = p.memberId === '';
    const found = this.ctx.classicGroup(p.groupId, isUnknownMember);
    if (found?.type === 'consumer') {
      // A known member id joining an empty consumer group: Kafka drops the group and finds no member.
      if (found.members.size === 0) {
        callback(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
        return;
      }
      void this.ctx.inConsumerGroup.join(found, p).then(callback, (e: unknown) => {
        this.log.error({ err: e, group: p.groupId }, 'JoinGroup to a consumer group failed');
        callback(joinError(p.memberId, ErrorCode.UNKNOWN_SERVER_ERROR));
      });
      return;
    }
    if (found === undefined) {
      callback(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
      return;
    }
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

  protected acceptJoiningMember(group: ClassicGroup, memberId: string): boolean {
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

  protected doNewMemberJoinGroup(group: ClassicGroup, p: JoinGroupParams, callback: (r: JoinGroupResult) => void): void {
    if (group.is(S.DEAD)) {
      callback(joinError(p.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE));
      return;
    }
    if (!group.supportsProtocols(p.protocolType, p.protocols)) {
      callback(joinError(p.memberId, ErrorCode.INCONSISTENT_GROUP_PROTOCOL));
      return;
    }
    const newMemberId = `${p.groupInstanceId ?? p.clientId}-${randomUUID()}`;
    if (group.hasStaticMember(p.groupInstanceId)) {
      this.doStaticMemberJoinGroup(group, newMemberId, p, callback);
    } else if (p.requireKnownMemberId) {
      // KIP-394: hand out the id and let the member come back with it.
      group.pendingMembers.set(
        newMemberId,
        this.timer(() => this.removePendingMember(group, newMemberId), p.sessionTimeoutMs),
      );
      callback(joinError(newMemberId, ErrorCode.MEMBER_ID_REQUIRED));
    } else {
      this.addMemberAndRebalance(group, newMemberId, p, callback);
    }
  }

  protected doStaticMemberJoinGroup(
    group: ClassicGroup,
    newMemberId: string,
    p: JoinGroupParams,
    callback: (r: JoinGroupResult) => void,
  ): void {
    const instanceId = p.groupInstanceId as string;
    const oldMemberId = group.currentStaticMemberId(instanceId) as string;
    this.log.info({ group: group.groupId, instanceId, oldMemberId, newMemberId }, 'static member rejoins with a new member id');
    const currentLeader = group.leaderId;
    const member = group.replaceStaticMember(instanceId, oldMemberId, newMemberId);
    this.scheduleHeartbeat(group, member);
    const old = {
      protocols: member.supportedProtocols,
      rebalanceTimeoutMs: member.rebalanceTimeoutMs,
      sessionTimeoutMs: member.sessionTimeoutMs,
    };
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
            callback({
              ...joinError('', error),
              generationId: group.generationId,
              protocolType: group.protocolType,
              protocolName: group.protocolName,
              leaderId: currentLeader ?? '',
            });
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

  protected doCurrentMemberJoinGroup(group: ClassicGroup, p: JoinGroupParams, callback: (r: JoinGroupResult) => void): void {
    if (group.is(S.DEAD)) {
      callback(joinError(p.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE));
      return;
    }
    if (!group.supportsProtocols(p.protocolType, p.protocols)) {
      callback(joinError(p.memberId, ErrorCode.INCONSISTENT_GROUP_PROTOCOL));
      return;
    }
    if (group.isPendingMember(p.memberId)) {
      const t = group.pendingMembers.get(p.memberId);
      if (t !== undefined) clearTimeout(t);
      if (p.groupInstanceId !== null) {
        callback(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
        return;
      }
      this.addMemberAndRebalance(group, p.memberId, p, callback);
      return;
    }
    const instanceNotFound = p.groupInstanceId !== null && !group.hasStaticMember(p.groupInstanceId);
    if (group.isStaticMemberFenced(p.groupInstanceId, p.memberId)) {
      callback(joinError(p.memberId, ErrorCode.FENCED_INSTANCE_ID));
      return;
    }
    const member = group.members.get(p.memberId);
    if (member === undefined || instanceNotFound) {
      callback(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
      return;
    }
    const reason = `member ${p.memberId} rejoins during ${group.state}${p.reason === null ? '' : ` (${p.reason})`}`;
    switch (group.state) {
      case S.PREPARING_REBALANCE: {
        this.updateMemberAndRebalance(group, member, p, reason, callback);
        return;
      }
      case S.COMPLETING_REBALANCE:
        // Same metadata: the member probably lost the join response; answer it again.
        if (member.matches(p.protocols)) {
          callback(this.joinResult(group, p.memberId, group.isLeader(p.memberId), group.leaderId ?? '', false));
          return;
        }
        {
          this.updateMemberAndRebalance(group, member, p, reason, callback);
          return;
        }
      case S.STABLE:
        if (group.isLeader(p.memberId) || !member.matches(p.protocols)) {
          this.updateMemberAndRebalance(group, member, p, reason, callback);
          return;
        }
        {
          callback(this.joinResult(group, p.memberId, false, group.leaderId ?? '', false));
          return;
        }
      default: {
        callback(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
        return;
      }
    }
  }

  protected joinResult(
    group: ClassicGroup,
    memberId: string,
    withMembers: boolean,
    leaderId: string,
    skipAssignment: boolean,
  ): JoinGroupResult {
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

  protected addMemberAndRebalance(group: ClassicGroup, memberId: string, p: JoinGroupParams, callback: (r: JoinGroupResult) => void): void {
    const member = new ClassicGroupMember(
      memberId,
      p.groupInstanceId,
      p.clientId,
      p.clientHost,
      p.rebalanceTimeoutMs,
      p.sessionTimeoutMs,
      p.protocolType,
      p.protocols,
    );
    member.isNew = true;
    // Kafka 4: a new member extends the initial delay of a join phase begun from Empty (any generation).
    if (group.is(S.PREPARING_REBALANCE) && group.previousState === S.EMPTY) group.newMemberAdded = true;
    group.add(member, callback);
    // A joining member cannot heartbeat; it expires only if the join never completes.
    this.scheduleHeartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS);
    this.maybePrepareRebalance(group, `adding new member ${memberId}${p.reason === null ? '' : ` (${p.reason})`}`);
  }

  protected updateMemberAndRebalance(
    group: ClassicGroup,
    member: ClassicGroupMember,
    p: JoinGroupParams,
    reason: string,
    callback: (r: JoinGroupResult) => void,
  ): void {
    group.updateMember(member, p.protocols, p.rebalanceTimeoutMs, p.sessionTimeoutMs, callback);
    this.maybePrepareRebalance(group, reason);
  }

  maybePrepareRebalance(group: ClassicGroup, reason: string): void {
    if (group.canRebalance()) this.prepareRebalance(group, reason);
  }

  protected prepareRebalance(group: ClassicGroup, reason: string): void {
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

  protected watchJoin(group: ClassicGroup): void {
    const op: DelayedOperation = { tryComplete: () => group.hasAllMembersJoined(), onComplete: () => this.onCompleteJoin(group) };
    this.ctx.purgatory.tryCompleteElseWatch(op, [joinKey(group.groupId)], group.rebalanceTimeoutMs);
  }

  /** Kafka's InitialDelayedJoin: waits `delayMs`, extended while new members keep arriving. */
  protected watchInitialJoin(group: ClassicGroup, delayMs: number, remainingMs: number): void {
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

  protected onCompleteJoin(group: ClassicGroup): void {
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
    this.log.info(
      { group: group.groupId, generation: group.generationId, members: group.size, protocol: group.protocolName },
      'stabilized group',
    );
    for (const m of [...group.members.values()]) {
      group.maybeInvokeJoinCallback(m, this.joinResult(group, m.memberId, group.isLeader(m.memberId), group.leaderId ?? '', false));
      this.scheduleHeartbeat(group, m);
      m.isNew = false;
      group.pendingSyncMembers.add(m.memberId);
    }
    this.watchPendingSync(group);
  }

  /** Members that got a join response must sync within the rebalance timeout, or they are removed. */
  protected watchPendingSync(group: ClassicGroup): void {
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
}
