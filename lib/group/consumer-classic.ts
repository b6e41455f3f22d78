/**
 * Members using the classic protocol inside a consumer group (Kafka 4.0's classicGroupJoinToConsumerGroup,
 * classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup, classicGroupLeaveToConsumerGroup):
 * they keep sending JoinGroup / SyncGroup / Heartbeat / LeaveGroup, and the broker reconciles them like
 * any member, its assignor computing their target. A JoinGroup is where a classic member moves towards
 * its target: it answers with the member's epoch as the generation, its preferred protocol, no leader
 * and no members (so the client never runs an assignor); SyncGroup answers the member's assigned
 * partitions as a ConsumerProtocolAssignment; Heartbeat answers REBALANCE_IN_PROGRESS while the member
 * must rejoin (the group epoch moved, it has partitions to revoke, or partitions it waited for are free).
 * Their sessions use their own session timeout; a join timer and a sync timer fence those that do not
 * come back within their rebalance timeout.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { JoinGroupParams, SyncGroupParams } from './classic-coordinator.js';
import { CONSUMER_PROTOCOL_TYPE, type JoinGroupResult, joinError, type SyncGroupResult, syncError } from './classic-group.js';
import type { ConsumerCoordinator } from './consumer-coordinator.js';
import { assignmentsEqual, classicMetadataEqual, type ConsumerGroup, ConsumerGroupMember, MemberState } from './consumer-group.js';
import { classicAssignment, decodeSubscription, partitionsById } from './migration.js';
import type { ConsumerProtocolSubscription } from '../../protocol/generated/data/consumer-protocol-subscription.js';
import {
  consumerGroupCurrentMemberRecord,
  consumerGroupMemberRecord,
  consumerGroupMetadataRecord,
  consumerGroupTargetMemberRecord,
  type CoordinatorRecord,
} from './records.js';

export interface ClassicInConsumerContext {
  readonly consumer: ConsumerCoordinator;
  readonly logger: Logger;
  /** group.consumer.max.size */
  maxSize(): number;
  write(groupId: string, records: CoordinatorRecord[]): Promise<number>;
  topicByName(name: string): { topicId: string; partitions: number } | undefined;
  topicName(topicId: string): string | undefined;
  /**
   * Kafka's downgrade when a classic static member replaced the last member using the consumer protocol
   * (validateOnlineDowngradeWithReplacedMemberId): the records when the group became a classic group
   * (with the joining member, no rebalance), null when it stays a consumer group.
   */
  maybeDowngradeReplaced(group: ConsumerGroup): CoordinatorRecord[] | null;
}

export interface LeavingMember {
  memberId: string;
  groupInstanceId: string | null;
  reason: string | null;
}

/** A 22-character base64url id, as Kafka's Uuid.toString gives. */
const newMemberId = (): string => randomBytes(16).toString('base64url');

export class ClassicInConsumerGroup {
  constructor(private readonly ctx: ClassicInConsumerContext) {}

  private get consumer(): ConsumerCoordinator {
    return this.ctx.consumer;
  }

  /** Kafka's validateConsumerGroupMember then throwIfMemberDoesNotUseClassicProtocol. */
  private classicMember(group: ConsumerGroup, memberId: string, instanceId: string | null): ConsumerGroupMember | number {
    let m: ConsumerGroupMember | undefined;
    if (instanceId === null) {
      m = group.members.get(memberId);
      if (m === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    } else {
      m = group.staticMember(instanceId);
      if (m === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
      if (m.memberId !== memberId) return ErrorCode.FENCED_INSTANCE_ID;
    }
    return m.useClassicProtocol ? m : ErrorCode.UNKNOWN_MEMBER_ID;
  }

  /** Kafka's throwIfRebalanceInProgress: the group moved on and the member is not revoking already. */
  private mustRejoin(group: ConsumerGroup, m: ConsumerGroupMember): boolean {
    if (group.groupEpoch > m.memberEpoch && m.state !== MemberState.UNREVOKED_PARTITIONS) {
      this.consumer.timers.scheduleJoinTimeoutIfAbsent(group, m);
      return true;
    }
    return false;
  }

  // ---- JoinGroup ----

  async join(group: ConsumerGroup, p: JoinGroupParams): Promise<JoinGroupResult> {
    const isUnknown = p.memberId === '';
    const memberId = isUnknown ? newMemberId() : p.memberId;
    const fail = (code: number) => joinError(p.memberId, code);
    if (group.members.size >= this.ctx.maxSize() && !group.members.has(memberId)) return fail(ErrorCode.GROUP_MAX_SIZE_REACHED);
    if (
      !group.supportsClassicProtocols(
        p.protocolType,
        p.protocols.map((x) => x.name),
      )
    )
      return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    // KIP-394: hand out the id and let the member come back with it (no pending state in a consumer group).
    if (isUnknown && p.requireKnownMemberId) return joinError(memberId, ErrorCode.MEMBER_ID_REQUIRED);

    let member: ConsumerGroupMember | undefined;
    let replaced: ConsumerGroupMember | undefined;
    if (p.groupInstanceId === null) {
      member = group.members.get(memberId);
    } else {
      const existing = group.staticMember(p.groupInstanceId);
      if (isUnknown) {
        replaced = existing;
      } else {
        if (existing === undefined) return fail(ErrorCode.UNKNOWN_MEMBER_ID);
        if (existing.memberId !== memberId) return fail(ErrorCode.FENCED_INSTANCE_ID);
        member = existing;
      }
    }
    const first = p.protocols[0];
    let sub: ConsumerProtocolSubscription;
    try {
      // Every protocol of a consumer carries the same subscription.
      sub = decodeSubscription(first?.metadata ?? Buffer.alloc(0));
    } catch {
      return fail(ErrorCode.UNKNOWN_SERVER_ERROR); // Kafka: "Malformed embedded consumer protocol in subscription deserialization."
    }

    const records: CoordinatorRecord[] = [];
    // Kafka's validateOnlineDowngradeWithReplacedMemberId: the replaced static member was the last one using the consumer protocol.
    const replacesLastConsumerMember = replaced !== undefined && group.allMembersUseClassicProtocolExcept(replaced.memberId);
    let changed = false;
    let bump = false;
    if (member === undefined) {
      member = new ConsumerGroupMember(memberId);
      if (replaced !== undefined) {
        this.consumer.replaceStaticMember(group, replaced, member, records, true);
      } else {
        group.members.set(memberId, member);
      }
      changed = true;
      this.ctx.logger.info(
        { group: group.groupId, member: memberId, instance: p.groupInstanceId, replaces: replaced?.memberId },
        'member joins the consumer group using the classic protocol',
      );
    }

    // 1. Member fields; a new subscription bumps the group epoch.
    const topics = [...sub.topics].sort();
    const classicMeta = {
      sessionTimeoutMs: p.sessionTimeoutMs,
      supportedProtocols: p.protocols.map((x) => ({ name: x.name, metadata: x.metadata })),
    };
    if (topics.join('\0') !== member.subscribedTopicNames.join('\0')) bump = true;
    const rackId = sub.rackId === undefined || sub.rackId === null || sub.rackId === '' ? member.rackId : sub.rackId;
    const rebalanceTimeoutMs = p.rebalanceTimeoutMs === -1 ? member.rebalanceTimeoutMs : p.rebalanceTimeoutMs;
    changed ||=
      bump ||
      member.instanceId !== (p.groupInstanceId ?? member.instanceId) ||
      member.rackId !== rackId ||
      member.rebalanceTimeoutMs !== rebalanceTimeoutMs ||
      member.clientId !== p.clientId ||
      member.clientHost !== p.clientHost ||
      !classicMetadataEqual(member.classicMemberMetadata, classicMeta);
    member.subscribedTopicNames = topics;
    if (p.groupInstanceId !== null) member.instanceId = p.groupInstanceId;
    member.rackId = rackId;
    member.rebalanceTimeoutMs = rebalanceTimeoutMs;
    member.clientId = p.clientId;
    member.clientHost = p.clientHost;
    member.classicMemberMetadata = classicMeta;
    if (changed) records.push(consumerGroupMemberRecord(group.groupId, member.memberId, this.consumer.memberValue(member)));

    this.consumer.subscriptions.advanceGroup(group, bump, records);

    // 3. Reconcile the member towards its target; what it owns comes from its subscription.
    if (!(member.memberEpoch === group.assignmentEpoch && member.state === MemberState.STABLE)) {
      const owned = partitionsById(sub.ownedPartitions ?? [], (name) => this.ctx.topicByName(name)?.topicId);
      const next = group.reconcile(member, owned);
      const moved =
        next.memberEpoch !== member.memberEpoch ||
        next.state !== member.state ||
        !assignmentsEqual(next.assignedPartitions, member.assignedPartitions) ||
        !assignmentsEqual(next.partitionsPendingRevocation, member.partitionsPendingRevocation);
      if (moved || replaced !== undefined) {
        group.updateAssignment(member, next);
        records.push(consumerGroupCurrentMemberRecord(group.groupId, member.memberId, this.consumer.currentValue(member)));
      }
    }

    // 4. Maybe downgrade: this classic static member replaced the last member using the consumer protocol.
    const downgrade = replacesLastConsumerMember ? this.ctx.maybeDowngradeReplaced(group) : null;
    if (downgrade !== null) records.push(...downgrade);

    const error = await this.ctx.write(group.groupId, records);
    if (error !== ErrorCode.NONE) return fail(error);
    this.consumer.timers.cancelJoinTimeout(member);
    if (downgrade === null) {
      // The member must now sync within its rebalance timeout; its session runs on its own timeout.
      this.consumer.timers.scheduleSessionTimeout(group, member, p.sessionTimeoutMs);
      this.consumer.timers.scheduleSyncTimeout(group, member);
    }
    return {
      errorCode: ErrorCode.NONE,
      memberId: member.memberId,
      generationId: member.memberEpoch,
      protocolType: CONSUMER_PROTOCOL_TYPE,
      protocolName: first?.name ?? null,
      leaderId: '',
      skipAssignment: false,
      members: [],
    };
  }

  // ---- SyncGroup ----

  sync(group: ConsumerGroup, p: SyncGroupParams): SyncGroupResult {
    if (group.members.size === 0) return syncError(ErrorCode.UNKNOWN_MEMBER_ID);
    const found = this.classicMember(group, p.memberId, p.groupInstanceId);
    if (typeof found === 'number') return syncError(found);
    const m = found;
    if (p.generationId !== m.memberEpoch) return syncError(ErrorCode.ILLEGAL_GENERATION);
    const protocolName = m.classicMemberMetadata?.supportedProtocols[0]?.name ?? null;
    if (p.protocolType !== null && p.protocolType !== CONSUMER_PROTOCOL_TYPE) return syncError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    if (p.protocolName !== null && p.protocolName !== protocolName) return syncError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    if (this.mustRejoin(group, m)) return syncError(ErrorCode.REBALANCE_IN_PROGRESS);
    let assignment: Buffer;
    try {
      assignment = classicAssignment(m, m.assignedPartitions, (id) => this.ctx.topicName(id));
    } catch {
      return syncError(ErrorCode.UNKNOWN_SERVER_ERROR); // Kafka: "Malformed embedded consumer protocol in version deserialization."
    }
    this.consumer.timers.cancelSyncTimeout(m);
    this.consumer.timers.scheduleSessionTimeout(group, m, m.classicMemberMetadata?.sessionTimeoutMs);
    return { errorCode: ErrorCode.NONE, protocolType: p.protocolType, protocolName: p.protocolName, assignment };
  }

  // ---- Heartbeat ----

  heartbeat(group: ConsumerGroup, memberId: string, instanceId: string | null, generationId: number): number {
    const found = this.classicMember(group, memberId, instanceId);
    if (typeof found === 'number') return found;
    const m = found;
    if (generationId !== m.memberEpoch) return ErrorCode.ILLEGAL_GENERATION;
    this.consumer.timers.scheduleSessionTimeout(group, m, m.classicMemberMetadata?.sessionTimeoutMs);
    // Rejoin when the group moved on, when partitions must be revoked, or when partitions waited for are free.
    if (
      m.memberEpoch < group.groupEpoch ||
      m.state === MemberState.UNREVOKED_PARTITIONS ||
      (m.state === MemberState.UNRELEASED_PARTITIONS && !group.waitingOnUnreleasedPartition(m))
    ) {
      this.consumer.timers.scheduleJoinTimeoutIfAbsent(group, m);
      return ErrorCode.REBALANCE_IN_PROGRESS;
    }
    return ErrorCode.NONE;
  }

  // ---- LeaveGroup ----

  /** One error code per leaving member; those that leave free their partitions, and the group epoch moves once. */
  async leave(group: ConsumerGroup, members: LeavingMember[]): Promise<number[]> {
    const records: CoordinatorRecord[] = [];
    const codes = members.map((lm) => {
      let m: ConsumerGroupMember | undefined;
      if (lm.groupInstanceId === null) {
        m = group.members.get(lm.memberId);
      } else {
        m = group.staticMember(lm.groupInstanceId);
        // The member id may be left out to remove a static member administratively.
        if (m !== undefined && lm.memberId !== '' && m.memberId !== lm.memberId) return ErrorCode.FENCED_INSTANCE_ID;
      }
      if (m === undefined || !m.useClassicProtocol) return ErrorCode.UNKNOWN_MEMBER_ID;
      this.ctx.logger.info(
        { group: group.groupId, member: m.memberId, instance: lm.groupInstanceId, reason: lm.reason },
        'classic member left the consumer group through LeaveGroup',
      );
      records.push(
        consumerGroupCurrentMemberRecord(group.groupId, m.memberId, null),
        consumerGroupTargetMemberRecord(group.groupId, m.memberId, null),
        consumerGroupMemberRecord(group.groupId, m.memberId, null),
      );
      this.consumer.timers.cancelTimers(m);
      group.removeMember(m.memberId);
      return ErrorCode.NONE;
    });
    if (records.length > 0) {
      this.consumer.subscriptions.resolveRegexes(group);
      group.subscriptionMetadata = this.consumer.subscriptions.subscriptionMetadata(group);
      group.groupEpoch++;
      records.push(consumerGroupMetadataRecord(group.groupId, group.groupEpoch));
    }
    const error = await this.ctx.write(group.groupId, records);
    return error === ErrorCode.NONE ? codes : codes.map(() => error);
  }
}
