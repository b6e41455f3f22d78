/**
 * KIP-848 ConsumerGroupHeartbeat (Kafka's GroupMetadataManager.consumerGroupHeartbeat): members join
 * with epoch 0, the broker computes a target assignment whenever the group epoch moves, and each
 * member is reconciled towards it one heartbeat at a time. One session timer per member, and a
 * rebalance timer while a member still holds partitions it must give up. Subscriptions are topic names
 * and/or an RE2/J regex resolved here against the topics (re-resolved when topics change); static
 * members (instance id) leaving with epoch -2 keep their partitions until they return or time out.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse } from '../../protocol/generated/consumer-group-heartbeat.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { ASSIGNORS, type Assignment } from './assignors.js';
import {
  assignmentsEqual,
  cloneAssignment,
  ConsumerGroup,
  ConsumerGroupMember,
  currentAssignmentValue,
  fromAssignment,
  memberMetadataValue,
  MemberState,
  toAssignment,
} from './consumer-group.js';
import { ConsumerSubscriptions } from './consumer-subscriptions.js';
import { MemberTimers } from './consumer-timers.js';
import { topicRegexError } from './topic-regex.js';
import {
  consumerGroupCurrentMemberRecord,
  consumerGroupMemberRecord,
  consumerGroupMetadataRecord,
  consumerGroupTargetMemberRecord,
  type CoordinatorRecord,
} from './records.js';

export const LEAVE_GROUP_MEMBER_EPOCH = -1;
export const LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2;

export interface ConsumerSettings {
  heartbeatIntervalMs: number;
  sessionTimeoutMs: number;
  maxSize: number;
}

/**
 * A consumer group as a heartbeat finds it. `create` is set when the group is new to the coordinator (a
 * new id, an empty classic group replaced, or a live classic group converted: Kafka's online upgrade):
 * the heartbeat calls it once it knows it will succeed, which registers the group and gives the records
 * that create it (so a refused join leaves nothing behind, as Kafka's discarded records do).
 */
export type ConsumerGroupLookup =
  { group: ConsumerGroup; create?: () => CoordinatorRecord[] } | { errorCode: number; errorMessage: string | null };

export interface ConsumerContext {
  readonly settings: ConsumerSettings;
  readonly logger: Logger;
  /** The consumer group, or what it would be when `create` is set (see ConsumerGroupLookup). */
  consumerGroup(groupId: string, create: boolean): ConsumerGroupLookup;
  /**
   * Kafka's online downgrade when `leaving` (the last member using the consumer protocol) goes: when the
   * policy and the group allow it, the group becomes a classic group and the records are returned.
   * Null when the group stays a consumer group.
   */
  maybeDowngrade(group: ConsumerGroup, leaving: ConsumerGroupMember): CoordinatorRecord[] | null;
  write(groupId: string, records: CoordinatorRecord[]): Promise<number>;
  topicByName(name: string): { topicId: string; partitions: number } | undefined;
  topicName(topicId: string): string | undefined;
  /** Every topic name (regexes are resolved against them). */
  topicNames(): Iterable<string>;
}

export type HeartbeatResult = Omit<ConsumerGroupHeartbeatResponse, 'throttleTimeMs'>;

function fail(errorCode: number, errorMessage: string | null = null): HeartbeatResult {
  return { errorCode, errorMessage, memberId: null, memberEpoch: -1, heartbeatIntervalMs: 0, assignment: null };
}

export { fromAssignment, toAssignment };

/** A 22-character base64url id, as Kafka's Uuid.toString gives. */
function newMemberId(): string {
  return randomBytes(16).toString('base64url');
}

export class ConsumerCoordinator {
  /** Subscriptions, regexes and target assignments (consumer-subscriptions.ts). */
  readonly subscriptions: ConsumerSubscriptions;
  /** Session, rebalance, and classic members' join/sync timers (consumer-timers.ts). */
  readonly timers: MemberTimers;

  constructor(private readonly ctx: ConsumerContext) {
    this.subscriptions = new ConsumerSubscriptions(ctx);
    this.timers = new MemberTimers(
      (group, member, why) => this.fenceMember(group, member, why),
      () => this.ctx.settings.sessionTimeoutMs,
    );
  }

  private validate(req: ConsumerGroupHeartbeatRequest, apiVersion: number): HeartbeatResult | null {
    const bad = (m: string) => fail(ErrorCode.INVALID_REQUEST, m);
    if (req.groupId === '') return bad("GroupId can't be empty.");
    if (req.instanceId === '') return bad("InstanceId can't be empty.");
    if (req.rackId === '') return bad("RackId can't be empty.");
    if (apiVersion >= 1 && req.memberId === '' && req.memberEpoch !== 0) return bad("MemberId can't be empty.");
    if (req.memberEpoch > 0 || req.memberEpoch === LEAVE_GROUP_MEMBER_EPOCH) {
      if (req.memberId === '') return bad("MemberId can't be empty.");
    } else if (req.memberEpoch === 0) {
      if (req.rebalanceTimeoutMs === -1) return bad('RebalanceTimeoutMs must be provided in first request.');
      if (req.topicPartitions === null || req.topicPartitions.length > 0) return bad('TopicPartitions must be empty when (re-)joining.');
      // An empty list of names or an empty regex is accepted: the member subscribes to nothing (Kafka 4.x).
      if (req.subscribedTopicNames === null && (req.subscribedTopicRegex ?? null) === null)
        return bad('SubscribedTopicNames or SubscribedTopicRegex must be set in first request.');
    } else if (req.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
      if (req.memberId === '') return bad("MemberId can't be empty.");
      if (req.instanceId === null) return bad("InstanceId can't be null.");
    } else {
      return bad('MemberEpoch is invalid.');
    }
    if (req.serverAssignor !== null && !ASSIGNORS.has(req.serverAssignor)) {
      return fail(
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        `ServerAssignor ${req.serverAssignor} is not supported. Supported assignors: ${[...ASSIGNORS.keys()].join(', ')}.`,
      );
    }
    return null;
  }

  async heartbeat(req: ConsumerGroupHeartbeatRequest, apiVersion: number, clientId: string, clientHost: string): Promise<HeartbeatResult> {
    const invalid = this.validate(req, apiVersion);
    if (invalid !== null) return invalid;
    if (req.memberEpoch < 0) return this.leave(req);
    const joining = req.memberEpoch === 0;
    const regex = req.subscribedTopicRegex ?? null;
    const regexError = regex === null || regex === '' ? null : topicRegexError(regex);
    const found = this.ctx.consumerGroup(req.groupId, joining);
    if ('errorCode' in found) return fail(found.errorCode, found.errorMessage);
    const group = found.group;
    const records: CoordinatorRecord[] = [];

    // Get the member, or check that one may join (Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember).
    let member = req.memberId === '' ? undefined : group.members.get(req.memberId);
    let replaced: ConsumerGroupMember | undefined;
    if (joining) {
      if (member === undefined) {
        if (group.members.size >= this.ctx.settings.maxSize)
          return fail(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            `The consumer group has reached its maximum capacity of ${this.ctx.settings.maxSize} members.`,
          );
        replaced = req.instanceId === null ? undefined : group.staticMember(req.instanceId);
        // A member using the classic protocol is replaced at once (a rolling upgrade of static members).
        if (replaced !== undefined && !replaced.useClassicProtocol && replaced.memberEpoch !== LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
          return fail(
            ErrorCode.UNRELEASED_INSTANCE_ID,
            `Static member ${req.memberId} with instance id ${req.instanceId} cannot join the group because the instance id is owned by ${replaced.memberId} member.`,
          );
        }
      }
    } else {
      if (req.instanceId !== null) {
        const holder = group.staticMember(req.instanceId);
        if (holder === undefined) return fail(ErrorCode.UNKNOWN_MEMBER_ID, `Instance id ${req.instanceId} is unknown.`);
        if (holder.memberId !== req.memberId)
          return fail(
            ErrorCode.FENCED_INSTANCE_ID,
            `Static member ${req.memberId} with instance id ${req.instanceId} was fenced by member ${holder.memberId}.`,
          );
      }
      if (member === undefined) return fail(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${req.memberId} is not a member of group ${req.groupId}.`);
      const owned = req.topicPartitions === null ? null : toAssignment(req.topicPartitions);
      if (req.memberEpoch > member.memberEpoch) {
        return fail(
          ErrorCode.FENCED_MEMBER_EPOCH,
          `The consumer group member has a greater member epoch (${req.memberEpoch}) than the one known by the group coordinator (${member.memberEpoch}). The member must abandon all its partitions and rejoin.`,
        );
      }
      if (
        req.memberEpoch < member.memberEpoch &&
        (req.memberEpoch !== member.previousMemberEpoch || (owned !== null && !isSubsetOf(owned, member.assignedPartitions)))
      ) {
        return fail(
          ErrorCode.FENCED_MEMBER_EPOCH,
          `The consumer group member has a smaller member epoch (${req.memberEpoch}) than the one known by the group coordinator (${member.memberEpoch}). The member must abandon all its partitions and rejoin.`,
        );
      }
    }
    // A regex new to the member must compile (Kafka's throwIfRegularExpressionIsInvalid).
    if (regexError !== null && regex !== (member ?? replaced)?.subscribedTopicRegex)
      return fail(ErrorCode.INVALID_REGULAR_EXPRESSION, regexError);
    // The join will go through: a new group (or one converted from a classic group) is registered now.
    if (found.create !== undefined) records.push(...found.create());

    let bump = false;
    let changed = false;
    if (member === undefined) {
      member = new ConsumerGroupMember(req.memberId === '' ? newMemberId() : req.memberId);
      if (replaced !== undefined) {
        // A static member back within its session takes over the previous member: its subscription,
        // its target and its partitions, under a new member id and epoch 0 (Kafka's replaceMember).
        this.replaceStaticMember(group, replaced, member, records, false);
        changed = true;
      } else {
        group.members.set(member.memberId, member);
        bump = true;
      }
      this.ctx.logger.info(
        { group: group.groupId, member: member.memberId, instance: req.instanceId, replaces: replaced?.memberId },
        'member joins the consumer group',
      );
    }
    const before = cloneAssignment(member.assignedPartitions);

    // 1. Member fields; a new subscription bumps the group epoch.
    const subs = req.subscribedTopicNames === null ? member.subscribedTopicNames : [...req.subscribedTopicNames].sort();
    if (subs.join('\0') !== member.subscribedTopicNames.join('\0')) bump = true;
    if (req.serverAssignor !== null && req.serverAssignor !== member.serverAssignor) bump = true;
    const nextRegex = regex === null ? member.subscribedTopicRegex : regex === '' ? null : regex;
    if (nextRegex !== member.subscribedTopicRegex) bump = true;
    // A member heartbeating with the consumer protocol no longer uses the classic one.
    changed ||= member.classicMemberMetadata !== null;
    member.classicMemberMetadata = null;
    changed ||=
      bump ||
      member.instanceId !== (req.instanceId ?? member.instanceId) ||
      member.clientId !== clientId ||
      (req.rebalanceTimeoutMs !== -1 && req.rebalanceTimeoutMs !== member.rebalanceTimeoutMs);
    member.subscribedTopicNames = subs;
    member.subscribedTopicRegex = nextRegex;
    if (req.instanceId !== null) member.instanceId = req.instanceId;
    if (req.rackId !== null) member.rackId = req.rackId;
    if (req.rebalanceTimeoutMs !== -1) member.rebalanceTimeoutMs = req.rebalanceTimeoutMs;
    if (req.serverAssignor !== null) member.serverAssignor = req.serverAssignor;
    member.clientId = clientId;
    member.clientHost = clientHost;
    if (changed) records.push(consumerGroupMemberRecord(group.groupId, member.memberId, this.memberValue(member)));

    // 2. The group epoch and, when it moved past it, a new target assignment.
    this.subscriptions.advanceGroup(group, bump, records);

    // 3. Reconcile this member towards the target.
    const owned = req.topicPartitions === null ? null : toAssignment(req.topicPartitions);
    if (!(member.memberEpoch === group.assignmentEpoch && member.state === MemberState.STABLE)) {
      const next = group.reconcile(member, owned);
      const moved =
        next.memberEpoch !== member.memberEpoch ||
        next.state !== member.state ||
        !assignmentsEqual(next.assignedPartitions, member.assignedPartitions) ||
        !assignmentsEqual(next.partitionsPendingRevocation, member.partitionsPendingRevocation);
      if (moved || replaced !== undefined) {
        group.updateAssignment(member, next);
        records.push(consumerGroupCurrentMemberRecord(group.groupId, member.memberId, this.currentValue(member)));
        if (member.state === MemberState.UNREVOKED_PARTITIONS) this.timers.scheduleRebalanceTimeout(group, member);
        else this.timers.cancelRebalanceTimeout(member);
      }
    }
    this.timers.scheduleSessionTimeout(group, member);
    const error = records.length === 0 ? ErrorCode.NONE : await this.ctx.write(group.groupId, records);
    if (error !== ErrorCode.NONE) return fail(error);
    const full =
      joining || (req.rebalanceTimeoutMs !== -1 && (req.subscribedTopicNames !== null || regex !== null) && req.topicPartitions !== null);
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      memberId: member.memberId,
      memberEpoch: member.memberEpoch,
      heartbeatIntervalMs: this.ctx.settings.heartbeatIntervalMs,
      assignment:
        full || !assignmentsEqual(before, member.assignedPartitions)
          ? { topicPartitions: fromAssignment(member.assignedPartitions) }
          : null,
    };
  }

  /**
   * The new member copies the static member it replaces (subscription, target, assigned partitions)
   * at epoch 0, so the group epoch does not move and nobody else notices; the old member's records go.
   */
  replaceStaticMember(
    group: ConsumerGroup,
    old: ConsumerGroupMember,
    member: ConsumerGroupMember,
    records: CoordinatorRecord[],
    classic: boolean,
  ): void {
    member.instanceId = old.instanceId;
    member.rackId = old.rackId;
    member.clientId = old.clientId;
    member.clientHost = old.clientHost;
    member.subscribedTopicNames = old.subscribedTopicNames;
    member.subscribedTopicRegex = old.subscribedTopicRegex;
    member.rebalanceTimeoutMs = old.rebalanceTimeoutMs;
    member.serverAssignor = old.serverAssignor;
    if (classic) member.classicMemberMetadata = old.classicMemberMetadata;
    this.timers.cancelTimers(old);
    const target = group.targetAssignment.get(old.memberId) ?? new Map<string, Set<number>>();
    group.removeMember(old.memberId);
    group.members.set(member.memberId, member);
    group.targetAssignment.set(member.memberId, target);
    group.updateAssignment(member, {
      memberEpoch: 0,
      previousMemberEpoch: 0,
      state: old.state,
      assignedPartitions: old.assignedPartitions,
      partitionsPendingRevocation: old.partitionsPendingRevocation,
    });
    records.push(
      consumerGroupCurrentMemberRecord(group.groupId, old.memberId, null),
      consumerGroupTargetMemberRecord(group.groupId, old.memberId, null),
      consumerGroupMemberRecord(group.groupId, old.memberId, null),
      consumerGroupTargetMemberRecord(group.groupId, member.memberId, { topicPartitions: fromAssignment(target) }),
    );
  }

  private async leave(req: ConsumerGroupHeartbeatRequest): Promise<HeartbeatResult> {
    const lookup = this.ctx.consumerGroup(req.groupId, false);
    if ('errorCode' in lookup) return fail(lookup.errorCode, lookup.errorMessage);
    const found = lookup.group;
    let member: ConsumerGroupMember | undefined;
    if (req.instanceId === null) {
      member = found.members.get(req.memberId);
      if (member === undefined) return fail(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${req.memberId} is not a member of group ${req.groupId}.`);
    } else {
      member = found.staticMember(req.instanceId);
      if (member === undefined) return fail(ErrorCode.UNKNOWN_MEMBER_ID, `Instance id ${req.instanceId} is unknown.`);
      if (member.memberId !== req.memberId)
        return fail(
          ErrorCode.FENCED_INSTANCE_ID,
          `Static member ${req.memberId} with instance id ${req.instanceId} was fenced by member ${member.memberId}.`,
        );
    }
    let error: number;
    if (req.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
      // A static member leaving temporarily keeps its partitions (at epoch -2) until it comes back or its
      // session, still running from its last heartbeat, expires; partitions it was revoking are released.
      this.ctx.logger.info(
        { group: found.groupId, member: member.memberId, instance: req.instanceId },
        'static member temporarily left the consumer group',
      );
      this.timers.cancelRebalanceTimeout(member);
      found.updateAssignment(member, {
        memberEpoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        previousMemberEpoch: member.previousMemberEpoch,
        state: member.state,
        assignedPartitions: member.assignedPartitions,
        partitionsPendingRevocation: new Map(),
      });
      error = await this.ctx.write(found.groupId, [
        consumerGroupCurrentMemberRecord(found.groupId, member.memberId, this.currentValue(member)),
      ]);
    } else {
      error = await this.fenceMember(found, member, 'left the group');
    }
    if (error !== ErrorCode.NONE) return fail(error);
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      memberId: member.memberId,
      memberEpoch: req.memberEpoch,
      heartbeatIntervalMs: 0,
      assignment: null,
    };
  }

  /**
   * Removes the member, frees its partitions and moves the group epoch so the others rebalance; or, when
   * it was the last member using the consumer protocol, converts the group to a classic one (Kafka's
   * consumerGroupFenceMember with the online downgrade).
   */
  fenceMember(group: ConsumerGroup, member: ConsumerGroupMember, why: string): Promise<number> {
    if (group.dead || group.members.get(member.memberId) !== member) return Promise.resolve(ErrorCode.NONE);
    this.timers.cancelTimers(member);
    let downgrade: CoordinatorRecord[] | null;
    try {
      downgrade = this.ctx.maybeDowngrade(group, member);
    } catch (e) {
      this.ctx.logger.warn({ err: e, group: group.groupId }, 'could not downgrade the consumer group');
      return Promise.resolve((e as { errorCode?: number }).errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR);
    }
    if (downgrade !== null) {
      this.ctx.logger.info(
        { group: group.groupId, member: member.memberId, why },
        'last consumer-protocol member left: group downgraded to classic',
      );
      return this.ctx.write(group.groupId, downgrade);
    }
    group.removeMember(member.memberId);
    group.groupEpoch++;
    this.subscriptions.resolveRegexes(group);
    group.subscriptionMetadata = this.subscriptions.subscriptionMetadata(group);
    this.ctx.logger.info(
      { group: group.groupId, member: member.memberId, epoch: group.groupEpoch, why },
      'member removed from consumer group',
    );
    return this.ctx.write(group.groupId, [
      consumerGroupCurrentMemberRecord(group.groupId, member.memberId, null),
      consumerGroupTargetMemberRecord(group.groupId, member.memberId, null),
      consumerGroupMemberRecord(group.groupId, member.memberId, null),
      consumerGroupMetadataRecord(group.groupId, group.groupEpoch),
    ]);
  }

  // ---- regex subscriptions ----

  memberValue(m: ConsumerGroupMember) {
    return memberMetadataValue(m);
  }

  currentValue(m: ConsumerGroupMember) {
    return currentAssignmentValue(m);
  }
}

function isSubsetOf(owned: Assignment, of: Assignment): boolean {
  for (const [t, s] of owned) for (const p of s) if (of.get(t)?.has(p) !== true) return false;
  return true;
}
