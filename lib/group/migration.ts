/**
 * Online migration of a live group between the classic and the consumer (KIP-848) protocol, as Kafka
 * 4.0's GroupMetadataManager does it under `group.consumer.migration.policy`:
 * - upgrade (convertToConsumerGroup / ConsumerGroup.fromClassicGroup): the first consumer-protocol member
 *   joining a non-empty classic group of protocol type "consumer" turns it into a consumer group; every
 *   classic member becomes a member carrying its classic metadata, its subscription (from its JoinGroup
 *   metadata) and its last assignment (from its SyncGroup), Stable at epoch = generation;
 * - downgrade (convertToClassicGroup / ClassicGroup.fromConsumerGroup): when the last consumer-protocol
 *   member leaves and only classic members remain, the group becomes a classic group again at generation
 *   = group epoch, each member with its protocols and its target assignment.
 * The conversions here are pure: the coordinator registers the new group and writes the records.
 */
import { Reader } from '../../protocol/codec/reader.js';
import { Writer } from '../../protocol/codec/writer.js';
import {
  type ConsumerProtocolAssignment,
  ConsumerProtocolAssignmentSchema,
  readConsumerProtocolAssignment,
} from '../../protocol/generated/data/consumer-protocol-assignment.js';
import {
  type ConsumerProtocolSubscription,
  readConsumerProtocolSubscription,
} from '../../protocol/generated/data/consumer-protocol-subscription.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { Assignment } from './assignors.js';
import { ClassicGroup, ClassicGroupMember, ClassicGroupState, CONSUMER_PROTOCOL_TYPE } from './classic-group.js';
import {
  ConsumerGroup,
  ConsumerGroupMember,
  currentAssignmentValue,
  fromAssignment,
  memberMetadataValue,
  MemberState,
} from './consumer-group.js';
import {
  consumerGroupCurrentMemberRecord,
  consumerGroupMemberRecord,
  consumerGroupMetadataRecord,
  consumerGroupPartitionMetadataTombstone,
  consumerGroupTargetMemberRecord,
  consumerGroupTargetMetadataRecord,
  type CoordinatorRecord,
} from './records.js';

export const MigrationPolicy = {
  DISABLED: 'disabled',
  UPGRADE: 'upgrade',
  DOWNGRADE: 'downgrade',
  BIDIRECTIONAL: 'bidirectional',
} as const;
export type MigrationPolicy = (typeof MigrationPolicy)[keyof typeof MigrationPolicy];

/** The config value (case-insensitive, as Kafka's validator takes it). */
export function parseMigrationPolicy(value: string | null): MigrationPolicy {
  const v = (value ?? MigrationPolicy.BIDIRECTIONAL).toLowerCase();
  return (Object.values(MigrationPolicy) as string[]).includes(v) ? (v as MigrationPolicy) : MigrationPolicy.BIDIRECTIONAL;
}

export const isUpgradeEnabled = (p: MigrationPolicy): boolean => p === MigrationPolicy.UPGRADE || p === MigrationPolicy.BIDIRECTIONAL;
export const isDowngradeEnabled = (p: MigrationPolicy): boolean => p === MigrationPolicy.DOWNGRADE || p === MigrationPolicy.BIDIRECTIONAL;

/** A conversion that cannot be done: the Kafka error code and message the request gets. */
export class MigrationError extends Error {
  constructor(
    readonly errorCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'MigrationError';
  }
}

// ---- the embedded consumer protocol (Kafka's ConsumerProtocol) ----

const MAX_CONSUMER_PROTOCOL_VERSION = 3;

/** The int16 version heading a subscription or an assignment (Kafka's deserializeVersion). */
export function consumerProtocolVersion(bytes: Buffer): number {
  if (bytes.length < 2) throw new Error("Buffer underflow while parsing consumer protocol's header");
  return bytes.readInt16BE(0);
}

/** ConsumerProtocolSubscription with its version header; newer versions are read as the highest known. */
export function decodeSubscription(metadata: Buffer): ConsumerProtocolSubscription {
  const version = consumerProtocolVersion(metadata);
  if (version < 0) throw new Error(`Unsupported subscription version: ${version}`);
  const r = new Reader(metadata, 2);
  const s = readConsumerProtocolSubscription(r, Math.min(version, MAX_CONSUMER_PROTOCOL_VERSION));
  r.check();
  return s;
}

export function decodeAssignment(bytes: Buffer): ConsumerProtocolAssignment {
  const version = consumerProtocolVersion(bytes);
  if (version < 0) throw new Error(`Unsupported assignment version: ${version}`);
  const r = new Reader(bytes, 2);
  const a = readConsumerProtocolAssignment(r, Math.min(version, MAX_CONSUMER_PROTOCOL_VERSION));
  r.check();
  return a;
}

/** Kafka's serializeAssignment at the version of the member's subscription (capped at the highest known). */
export function encodeAssignment(partitions: { topic: string; partitions: number[] }[], version: number): Buffer {
  if (version < 0) throw new Error(`Unsupported assignment version: ${version}`);
  const v = Math.min(version, MAX_CONSUMER_PROTOCOL_VERSION);
  const m: ConsumerProtocolAssignment = { assignedPartitions: partitions, userData: null };
  const w = Writer.alloc(2 + ConsumerProtocolAssignmentSchema.size(m, v));
  w.int16(v);
  ConsumerProtocolAssignmentSchema.write(w, m, v);
  return w.done();
}

/** Topic ids → names (Kafka's toConsumerProtocolAssignment): topics that no longer exist are left out. */
export function namedPartitions(
  a: Assignment,
  topicName: (topicId: string) => string | undefined,
): { topic: string; partitions: number[] }[] {
  return fromAssignment(a).flatMap((tp) => {
    const topic = topicName(tp.topicId);
    return topic === undefined ? [] : [{ topic, partitions: tp.partitions }];
  });
}

/** Topic names → ids (Kafka's toTopicPartitionMap): unknown topics are left out. */
export function partitionsById(
  tps: readonly { topic?: string; partitions?: number[] }[],
  topicId: (name: string) => string | undefined,
): Assignment {
  const a: Assignment = new Map();
  for (const tp of tps) {
    const id = topicId(tp.topic ?? '');
    if (id === undefined) continue;
    const s = a.get(id) ?? new Set<number>();
    for (const p of tp.partitions ?? []) s.add(p);
    a.set(id, s);
  }
  return a;
}

/** The member's assignment encoded for its classic protocol (SyncGroup, and the downgraded group). */
export function classicAssignment(m: ConsumerGroupMember, a: Assignment, topicName: (topicId: string) => string | undefined): Buffer {
  const first = m.classicMemberMetadata?.supportedProtocols[0];
  if (first === undefined) throw new Error(`member ${m.memberId} does not use the classic protocol`);
  return encodeAssignment(namedPartitions(a, topicName), consumerProtocolVersion(first.metadata));
}

// ---- upgrade ----

/** Why Kafka's validateOnlineUpgrade refuses to convert the classic group (null: it may). */
export function onlineUpgradeRefusal(group: ClassicGroup, policy: MigrationPolicy, consumerMaxSize: number): string | null {
  if (!isUpgradeEnabled(policy)) return 'the online upgrade is disabled';
  if (group.protocolType !== CONSUMER_PROTOCOL_TYPE) return 'the group does not use the consumer embedded protocol';
  if (group.size > consumerMaxSize) return 'the group size exceeds the consumer group maximum size';
  return null;
}

/**
 * Kafka's ConsumerGroup.fromClassicGroup: group epoch and target assignment epoch = generation; each
 * member Stable at that epoch, its target = its current assignment. Throws MigrationError
 * (GROUP_ID_NOT_FOUND with Kafka's message) for a malformed embedded protocol or an assignment carrying
 * user data, which a consumer group cannot keep.
 */
export function consumerGroupFromClassic(classic: ClassicGroup, topicId: (name: string) => string | undefined): ConsumerGroup {
  const g = new ConsumerGroup(classic.groupId);
  g.groupEpoch = classic.generationId;
  g.assignmentEpoch = classic.generationId;
  const malformed = () =>
    new MigrationError(
      ErrorCode.GROUP_ID_NOT_FOUND,
      `Cannot upgrade classic group ${classic.groupId} to consumer group because the embedded consumer protocol is malformed.`,
    );
  for (const cm of classic.members.values()) {
    let assigned: Assignment = new Map();
    // A member that joined but never synced has no assignment yet.
    if (cm.assignment.length > 0) {
      let a: ConsumerProtocolAssignment;
      try {
        a = decodeAssignment(cm.assignment);
      } catch {
        throw malformed();
      }
      // KAFKA-18134 (4.0): a consumer group cannot keep an assignor's user data (librdkafka's sticky
      // assignors echo theirs into every assignment), so such a group is not upgraded.
      if (a.userData !== null && a.userData.length > 0) {
        throw new MigrationError(
          ErrorCode.GROUP_ID_NOT_FOUND,
          `Cannot upgrade classic group ${classic.groupId} to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.`,
        );
      }
      assigned = partitionsById(a.assignedPartitions, topicId);
    }
    let sub: ConsumerProtocolSubscription;
    try {
      // Before its first generation the group has no protocol yet: the member's preferred one stands in.
      sub = decodeSubscription(
        classic.protocolName === null ? (cm.supportedProtocols[0]?.metadata ?? Buffer.alloc(0)) : cm.metadata(classic.protocolName),
      );
    } catch {
      throw malformed();
    }
    const m = new ConsumerGroupMember(cm.memberId);
    m.instanceId = cm.groupInstanceId;
    m.rackId = sub.rackId ?? null;
    m.rebalanceTimeoutMs = cm.rebalanceTimeoutMs;
    m.clientId = cm.clientId;
    m.clientHost = cm.clientHost;
    m.subscribedTopicNames = [...sub.topics].sort();
    m.classicMemberMetadata = {
      sessionTimeoutMs: cm.sessionTimeoutMs,
      supportedProtocols: cm.supportedProtocols.map((p) => ({ name: p.name, metadata: p.metadata })),
    };
    g.members.set(m.memberId, m);
    g.updateAssignment(m, {
      memberEpoch: classic.generationId,
      previousMemberEpoch: classic.generationId,
      state: MemberState.STABLE,
      assignedPartitions: assigned,
      partitionsPendingRevocation: new Map(),
    });
    g.targetAssignment.set(m.memberId, new Map([...assigned].map(([t, s]) => [t, new Set(s)])));
  }
  return g;
}

/** Kafka's createConsumerGroupRecords: members, group epoch, targets, target epoch, current assignments. */
export function consumerGroupRecords(g: ConsumerGroup): CoordinatorRecord[] {
  const members = [...g.members.values()];
  return [
    ...members.map((m) => consumerGroupMemberRecord(g.groupId, m.memberId, memberMetadataValue(m))),
    consumerGroupMetadataRecord(g.groupId, g.groupEpoch),
    ...members.map((m) =>
      consumerGroupTargetMemberRecord(g.groupId, m.memberId, {
        topicPartitions: fromAssignment(g.targetAssignment.get(m.memberId) ?? new Map<string, Set<number>>()),
      }),
    ),
    consumerGroupTargetMetadataRecord(g.groupId, g.groupEpoch),
    ...members.map((m) => consumerGroupCurrentMemberRecord(g.groupId, m.memberId, currentAssignmentValue(m))),
  ];
}

// ---- downgrade ----

/**
 * Kafka's validateOnlineDowngradeWithFencedMember: the leaving member is the last one using the
 * consumer protocol, others remain, the policy allows it and they fit in a classic group.
 */
export function mayDowngradeWithoutMember(
  g: ConsumerGroup,
  leavingMemberId: string,
  policy: MigrationPolicy,
  classicMaxSize: number,
): boolean {
  return (
    g.allMembersUseClassicProtocolExcept(leavingMemberId) &&
    g.members.size > 1 &&
    isDowngradeEnabled(policy) &&
    g.members.size - 1 <= classicMaxSize
  );
}

/** Kafka's createGroupTombstoneRecords for a consumer group. */
export function consumerGroupTombstones(g: ConsumerGroup): CoordinatorRecord[] {
  const ids = [...g.members.keys()];
  return [
    ...ids.map((id) => consumerGroupCurrentMemberRecord(g.groupId, id, null)),
    ...ids.map((id) => consumerGroupTargetMemberRecord(g.groupId, id, null)),
    consumerGroupTargetMetadataRecord(g.groupId, null),
    ...ids.map((id) => consumerGroupMemberRecord(g.groupId, id, null)),
    consumerGroupPartitionMetadataTombstone(g.groupId),
    consumerGroupMetadataRecord(g.groupId, null),
  ];
}

/**
 * Kafka's ClassicGroup.fromConsumerGroup: a Stable classic group at generation = group epoch with every
 * member but `leavingMemberId` (all using the classic protocol), the protocol they vote for, and each
 * member's target assignment encoded at its subscription's version. The coordinator then starts a
 * rebalance so that they rejoin. Throws MigrationError (GROUP_ID_NOT_FOUND) when a member's embedded
 * protocol cannot be read.
 */
export function classicGroupFromConsumer(
  g: ConsumerGroup,
  leavingMemberId: string | null,
  now: () => number,
  topicName: (topicId: string) => string | undefined,
): ClassicGroup {
  const classic = new ClassicGroup(g.groupId, now);
  classic.generationId = g.groupEpoch;
  classic.state = ClassicGroupState.STABLE;
  classic.previousState = ClassicGroupState.STABLE;
  for (const m of g.members.values()) {
    if (m.memberId === leavingMemberId) continue;
    const meta = m.classicMemberMetadata;
    if (meta === null)
      throw new MigrationError(
        ErrorCode.GROUP_ID_NOT_FOUND,
        `Cannot downgrade the classic group ${g.groupId}: member ${m.memberId} does not use the classic protocol.`,
      );
    const cm = new ClassicGroupMember(
      m.memberId,
      m.instanceId,
      m.clientId,
      m.clientHost,
      m.rebalanceTimeoutMs,
      meta.sessionTimeoutMs,
      CONSUMER_PROTOCOL_TYPE,
      meta.supportedProtocols.map((p) => ({ name: p.name, metadata: p.metadata })),
    );
    classic.add(cm, null);
  }
  classic.protocolName = classic.selectProtocol();
  classic.subscribedTopics = classic.computeSubscribedTopics();
  for (const cm of classic.members.values()) {
    try {
      const version = consumerProtocolVersion(cm.metadata(classic.protocolName));
      cm.assignment = encodeAssignment(
        namedPartitions(g.targetAssignment.get(cm.memberId) ?? new Map<string, Set<number>>(), topicName),
        version,
      );
    } catch (e) {
      throw new MigrationError(ErrorCode.GROUP_ID_NOT_FOUND, `Cannot downgrade the classic group ${g.groupId}: ${(e as Error).message}.`);
    }
  }
  return classic;
}
