/**
 * The share-group side of the group coordinator (KIP-932, as Kafka 4.2's GroupMetadataManager serves
 * ShareGroupHeartbeat and ShareGroupDescribe): membership with member epochs, session timeouts and
 * the simple assignor's server-side assignment. Each change is written to `__consumer_offsets` (Kafka's
 * ShareGroup* records, share-group-store.ts) before the heartbeat is answered, and replayed when this
 * broker becomes the group's coordinator (start, or an election in a cluster): members keep their ids,
 * epochs and assignments across a restart or a failover, and their session timeouts start again.
 */
import type { Logger } from 'pino';
import { consumerGroupDescribeError } from '../group/group-admin.js';
import type { ShareGroupOwner } from '../group/coordinator.js';
import type { CoordinatorRecord } from '../group/records.js';
import type { ShareGroupRecords } from '../group/share-group-records.js';
import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse } from '../../protocol/generated/share-group-heartbeat.js';
import type { ShareGroupDescribeResponseDescribedGroup } from '../../protocol/generated/share-group-describe.js';
import {
  type AssignableTopic,
  assignShareGroup,
  sameAssignment,
  type ShareAssignment,
  ShareGroup,
  ShareGroupMember,
} from './share-group.js';
import {
  buildShareGroup,
  currentAssignmentRecord,
  groupEpochRecord,
  groupTombstones,
  memberMetadataValue,
  memberRecord,
  memberTombstones,
  targetEpochRecord,
  targetMemberRecord,
} from './share-group-store.js';

/** Per group: its group configs (share.session.timeout.ms, share.heartbeat.interval.ms) or the broker's. */
export interface ShareGroupSettings {
  sessionTimeoutMs(groupId: string): number;
  heartbeatIntervalMs(groupId: string): number;
  maxSize: number;
}

export interface ShareCoordinatorDeps {
  settings: ShareGroupSettings;
  topicByName(name: string): { topicId: string; partitions: number } | undefined;
  topicName(topicId: string): string | undefined;
  /** Whether a classic or consumer group holds the id (a share group may not take it). */
  otherGroupExists(groupId: string): boolean;
  /** A partition was assigned to a member of the group (the share partition initialises its start offset). */
  onAssigned(groupId: string, topicId: string, partition: number): void;
  /** A member's session timed out: what it holds acquired goes back to the others. */
  onMemberFenced(groupId: string, memberId: string): void;
  /** Appends the records to the group's `__consumer_offsets` partition; resolves with what a heartbeat answers (NONE once written). */
  write(groupId: string, records: CoordinatorRecord[]): Promise<number>;
  logger: Logger;
}

type HeartbeatResult = Omit<ShareGroupHeartbeatResponse, 'throttleTimeMs'>;

const fail = (errorCode: number, errorMessage: string | null = null): HeartbeatResult => ({
  errorCode,
  errorMessage,
  memberId: null,
  memberEpoch: -1,
  heartbeatIntervalMs: 0,
  assignment: null,
});

export const SIMPLE_ASSIGNOR = 'simple';

/** A ShareGroupDescribe entry for a group that could not be described: the same shape as ConsumerGroupDescribe's. */
export function describedShareGroupError(
  groupId: string,
  errorCode: number,
  errorMessage: string | null = null,
): ShareGroupDescribeResponseDescribedGroup {
  return consumerGroupDescribeError(groupId, errorCode, errorMessage);
}

export class ShareCoordinator implements ShareGroupOwner {
  readonly groups = new Map<string, ShareGroup>();

  constructor(private readonly deps: ShareCoordinatorDeps) {}

  /** Answers the heartbeat once what it changed is written to `__consumer_offsets`. */
  async heartbeat(req: ShareGroupHeartbeatRequest, clientId: string, clientHost: string): Promise<HeartbeatResult> {
    const records: CoordinatorRecord[] = [];
    const r = this.heartbeatRecords(req, clientId, clientHost, records);
    if (r.errorCode !== ErrorCode.NONE || records.length === 0 || req.groupId === '') return r;
    const errorCode = await this.deps.write(req.groupId, records);
    return errorCode === ErrorCode.NONE ? r : fail(errorCode);
  }

  private heartbeatRecords(
    req: ShareGroupHeartbeatRequest,
    clientId: string,
    clientHost: string,
    out: CoordinatorRecord[],
  ): HeartbeatResult {
    const s = this.deps.settings;
    if (req.groupId === '') return fail(ErrorCode.INVALID_REQUEST, 'GroupId can not be empty.');
    if (req.memberEpoch > 0 && req.memberId === '') return fail(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.");
    if (req.memberEpoch === 0 && (req.subscribedTopicNames === null || req.subscribedTopicNames.length === 0)) {
      return fail(ErrorCode.INVALID_REQUEST, 'SubscribedTopicNames must be set in first request.');
    }
    if (req.memberEpoch < -1) return fail(ErrorCode.INVALID_REQUEST, `MemberEpoch is invalid: ${req.memberEpoch}`);
    if (this.deps.otherGroupExists(req.groupId)) return fail(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${req.groupId} is not a share group.`);
    let group = this.groups.get(req.groupId);
    if (req.memberEpoch === -1) {
      const member = group?.members.get(req.memberId);
      if (group !== undefined && member !== undefined) this.removeMember(group, member, out);
      return {
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        memberId: req.memberId,
        memberEpoch: -1,
        heartbeatIntervalMs: 0,
        assignment: null,
      };
    }
    if (group === undefined) {
      if (req.memberEpoch !== 0)
        return fail(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${req.memberId} is not a member of group ${req.groupId}.`);
      group = new ShareGroup(req.groupId);
      this.groups.set(req.groupId, group);
    }
    let member = group.members.get(req.memberId);
    let joined = false;
    if (member === undefined) {
      if (req.memberEpoch !== 0)
        return fail(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${req.memberId} is not a member of group ${req.groupId}.`);
      if (group.members.size >= s.maxSize)
        return fail(ErrorCode.GROUP_MAX_SIZE_REACHED, `The share group has reached its maximum capacity of ${s.maxSize} members.`);
      member = new ShareGroupMember(req.memberId === '' ? randomUUID() : req.memberId);
      group.members.set(member.memberId, member);
      joined = true;
    } else if (req.memberEpoch !== 0 && req.memberEpoch !== member.memberEpoch) {
      return fail(
        ErrorCode.FENCED_MEMBER_EPOCH,
        `The share group member has an invalid epoch ${req.memberEpoch}, expected ${member.memberEpoch}.`,
      );
    }
    const before = joined ? null : JSON.stringify(memberMetadataValue(member));
    member.clientId = clientId;
    member.clientHost = clientHost;
    if (req.rackId !== null) member.rackId = req.rackId;
    let changed = joined;
    if (req.subscribedTopicNames !== null) {
      const next = [...new Set(req.subscribedTopicNames)].sort();
      if (next.join('\0') !== member.subscribedTopicNames.join('\0')) {
        member.subscribedTopicNames = next;
        changed = true;
      }
    }
    if (before !== JSON.stringify(memberMetadataValue(member))) out.push(memberRecord(group.groupId, member));
    if (changed || this.assignmentStale(group)) {
      group.groupEpoch++;
      out.push(groupEpochRecord(group));
      this.assign(group, out);
    }
    this.scheduleSessionTimeout(group, member, s.sessionTimeoutMs(req.groupId));
    // a rejoining member (epoch 0) and one behind the assignment epoch get the assignment again
    const sendAssignment = req.memberEpoch === 0 || member.memberEpoch !== group.assignmentEpoch;
    if (member.memberEpoch !== group.assignmentEpoch || joined) {
      const previous = member.memberEpoch;
      member.memberEpoch = group.assignmentEpoch;
      out.push(currentAssignmentRecord(group.groupId, member, previous));
    }
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      memberId: member.memberId,
      memberEpoch: member.memberEpoch,
      heartbeatIntervalMs: s.heartbeatIntervalMs(req.groupId),
      assignment: sendAssignment
        ? { topicPartitions: [...member.assignment].map(([topicId, partitions]) => ({ topicId, partitions })) }
        : null,
    };
  }

  describe(groupId: string, includeAuthorizedOperations: boolean, authorizedOperations: number): ShareGroupDescribeResponseDescribedGroup {
    const g = this.groups.get(groupId);
    if (g === undefined || g.dead) return describedShareGroupError(groupId, ErrorCode.GROUP_ID_NOT_FOUND, `Group ${groupId} not found.`);
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      groupId,
      groupState: g.state,
      groupEpoch: g.groupEpoch,
      assignmentEpoch: g.assignmentEpoch,
      assignorName: SIMPLE_ASSIGNOR,
      members: [...g.members.values()].map((m) => ({
        memberId: m.memberId,
        rackId: m.rackId,
        memberEpoch: m.memberEpoch,
        clientId: m.clientId,
        clientHost: m.clientHost,
        subscribedTopicNames: m.subscribedTopicNames,
        assignment: {
          topicPartitions: [...m.assignment].map(([topicId, partitions]) => ({
            topicId,
            topicName: this.deps.topicName(topicId) ?? '',
            partitions,
          })),
        },
      })),
      authorizedOperations: includeAuthorizedOperations ? authorizedOperations : -2147483648,
    };
  }

  /** DeleteGroups: an empty share group goes (its records tombstoned); one with members answers NON_EMPTY_GROUP. */
  async delete(groupId: string): Promise<number | undefined> {
    const g = this.groups.get(groupId);
    if (g === undefined) return undefined;
    if (g.members.size > 0) return ErrorCode.NON_EMPTY_GROUP;
    g.dead = true;
    this.groups.delete(groupId);
    return this.deps.write(groupId, groupTombstones(g));
  }

  /** Topics created, deleted or grown: groups subscribed to them get a new assignment. */
  topicsChanged(): void {
    for (const g of this.groups.values()) {
      if (this.assignmentStale(g)) {
        g.groupEpoch++;
        const out = [groupEpochRecord(g)];
        this.assign(g, out);
        this.writeInBackground(g.groupId, out);
      }
    }
  }

  /** A replayed group (this broker became its coordinator): members come back with their epochs, their sessions start again. */
  load(groupId: string, records: ShareGroupRecords): void {
    this.dropGroup(groupId);
    const g = buildShareGroup(groupId, records);
    this.groups.set(groupId, g);
    const timeoutMs = this.deps.settings.sessionTimeoutMs(groupId);
    for (const m of g.members.values()) this.scheduleSessionTimeout(g, m, timeoutMs);
  }

  /** The coordinator resigned the groups' `__consumer_offsets` partition: they go from here (timers stopped). */
  unload(inPartition: (groupId: string) => boolean): void {
    for (const groupId of [...this.groups.keys()]) if (inPartition(groupId)) this.dropGroup(groupId);
  }

  shutdown(): void {
    for (const g of this.groups.values()) {
      for (const m of g.members.values()) if (m.sessionTimer !== undefined) clearTimeout(m.sessionTimer);
    }
  }

  private dropGroup(groupId: string): void {
    const g = this.groups.get(groupId);
    if (g === undefined) return;
    for (const m of g.members.values()) if (m.sessionTimer !== undefined) clearTimeout(m.sessionTimer);
    g.dead = true;
    this.groups.delete(groupId);
  }

  private writeInBackground(groupId: string, records: CoordinatorRecord[]): void {
    if (records.length === 0) return;
    void this.deps.write(groupId, records).then((errorCode) => {
      if (errorCode !== ErrorCode.NONE)
        this.deps.logger.warn({ group: groupId, errorCode }, 'GREGOR_ERR_SHARE_GROUP_WRITE: share-group change not written');
    });
  }

  private assignable(group: ShareGroup): AssignableTopic[] {
    const out: AssignableTopic[] = [];
    for (const name of group.subscribedTopics()) {
      const t = this.deps.topicByName(name);
      if (t !== undefined) out.push({ name, topicId: t.topicId, partitions: t.partitions });
    }
    return out;
  }

  private assignmentStale(group: ShareGroup): boolean {
    const target = assignShareGroup([...group.members.values()], this.assignable(group));
    for (const m of group.members.values())
      if (!sameAssignment(m.assignment, target.get(m.memberId) ?? new Map<string, number[]>())) return true;
    return false;
  }

  /** The new target assignment at the group epoch; the members whose partitions changed get a target record. */
  private assign(group: ShareGroup, out: CoordinatorRecord[]): void {
    const target = assignShareGroup([...group.members.values()], this.assignable(group));
    for (const m of group.members.values()) {
      const next: ShareAssignment = target.get(m.memberId) ?? new Map<string, number[]>();
      for (const [topicId, ps] of next) for (const p of ps) this.deps.onAssigned(group.groupId, topicId, p);
      const changed = !sameAssignment(m.assignment, next) || m.memberEpoch === 0;
      m.assignment = next;
      if (changed) out.push(targetMemberRecord(group.groupId, m));
    }
    group.assignmentEpoch = group.groupEpoch;
    out.push(targetEpochRecord(group));
  }

  private removeMember(group: ShareGroup, member: ShareGroupMember, out: CoordinatorRecord[], fenced = false): void {
    if (member.sessionTimer !== undefined) clearTimeout(member.sessionTimer);
    member.sessionTimer = undefined;
    group.members.delete(member.memberId);
    out.push(...memberTombstones(group.groupId, member.memberId));
    group.groupEpoch++;
    out.push(groupEpochRecord(group));
    this.assign(group, out);
    if (fenced) this.deps.onMemberFenced(group.groupId, member.memberId);
  }

  private scheduleSessionTimeout(group: ShareGroup, member: ShareGroupMember, timeoutMs: number): void {
    if (member.sessionTimer !== undefined) clearTimeout(member.sessionTimer);
    member.sessionTimer = setTimeout(() => {
      member.sessionTimer = undefined;
      if (this.groups.get(group.groupId) !== group || group.members.get(member.memberId) !== member) return;
      const out: CoordinatorRecord[] = [];
      this.removeMember(group, member, out, true);
      this.writeInBackground(group.groupId, out);
    }, timeoutMs);
    member.sessionTimer.unref();
  }
}
