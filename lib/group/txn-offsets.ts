/**
 * Offsets committed inside transactions (TxnOffsetCommit, KIP-98/KIP-447): written to
 * `__consumer_offsets` as transactional records of the producer, held pending per producer id, and
 * made the group's committed offsets only when the COMMIT marker lands on that partition (unless a
 * plain commit written after them won); an ABORT drops them. While they are pending, OffsetFetch
 * with require_stable answers UNSTABLE_OFFSET_COMMIT for those partitions.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { ClassicGroup, ClassicGroupState as S } from './classic-group.js';
import type { GroupCoordinator } from './coordinator.js';
import { storeErrorFor } from './store-errors.js';
import { offsetKey, type PendingOffset } from './loader.js';
import type { CommitPartition, PartitionErrors } from './offset-manager.js';
import type { OffsetAndMetadata } from './offsets.js';
import { type CoordinatorRecord, offsetCommitRecord } from './records.js';

export class PendingTxnOffsets {
  /** producer id → offsetKey → offset. */
  private readonly byProducer = new Map<bigint, Map<string, PendingOffset>>();
  /** offsetKey → how many producers hold it pending. */
  private readonly pendingKeys = new Map<string, number>();

  add(producerId: bigint, p: PendingOffset): void {
    let m = this.byProducer.get(producerId);
    if (m === undefined) this.byProducer.set(producerId, (m = new Map<string, PendingOffset>()));
    const k = offsetKey(p.group, p.topic, p.partition);
    if (!m.has(k)) this.pendingKeys.set(k, (this.pendingKeys.get(k) ?? 0) + 1);
    m.set(k, p);
  }

  isPending(group: string, topic: string, partition: number): boolean {
    return this.pendingKeys.has(offsetKey(group, topic, partition));
  }

  get size(): number {
    return this.pendingKeys.size;
  }

  /** Removes and returns the producer's pending offsets of the groups `inPartition` accepts. */
  take(producerId: bigint, inPartition: (group: string) => boolean): PendingOffset[] {
    const m = this.byProducer.get(producerId);
    if (m === undefined) return [];
    const out: PendingOffset[] = [];
    for (const [k, p] of m) {
      if (!inPartition(p.group)) continue;
      out.push(p);
      m.delete(k);
      const n = (this.pendingKeys.get(k) ?? 1) - 1;
      if (n <= 0) this.pendingKeys.delete(k);
      else this.pendingKeys.set(k, n);
    }
    if (m.size === 0) this.byProducer.delete(producerId);
    return out;
  }

  removeGroup(group: string): void {
    for (const pid of [...this.byProducer.keys()]) this.take(pid, (g) => g === group);
  }

  /** Drops every producer's pending offset for the partition (what replaying a tombstone does in Kafka). */
  remove(group: string, topic: string, partition: number): void {
    const k = offsetKey(group, topic, partition);
    if (!this.pendingKeys.delete(k)) return;
    for (const [pid, m] of this.byProducer) {
      m.delete(k);
      if (m.size === 0) this.byProducer.delete(pid);
    }
  }

  /** The partitions of the group with an offset pending in some transaction. */
  partitionsOf(group: string): { topic: string; partition: number }[] {
    const out = new Map<string, { topic: string; partition: number }>();
    for (const m of this.byProducer.values()) {
      for (const [k, p] of m) if (p.group === group) out.set(k, { topic: p.topic, partition: p.partition });
    }
    return [...out.values()];
  }
}

/** Stores `o` unless the committed offset there was written later (by log position). */
export function putIfNewer(c: GroupCoordinator, group: string, topic: string, partition: number, o: OffsetAndMetadata): void {
  const cur = c.offsets.get(group, topic, partition);
  if (cur !== undefined && (cur.recordOffset ?? -1n) > (o.recordOffset ?? -1n)) return;
  c.offsets.put(group, topic, partition, o);
}

/** A COMMIT or ABORT marker landed on `__consumer_offsets-<partition>` for `producerId`. */
export function completeTxnOffsets(c: GroupCoordinator, partition: number, producerId: bigint, commit: boolean): number {
  const done = c.pendingTxn.take(producerId, (g) => c.partitionFor(g) === partition);
  if (commit) {
    for (const p of done) {
      putIfNewer(c, p.group, p.topic, p.partition, p.value);
      if (!c.groups.has(p.group)) c.groups.set(p.group, new ClassicGroup(p.group, c.now));
    }
  }
  return done.length;
}

export interface TxnCommitParams {
  transactionalId: string;
  groupId: string;
  producerId: bigint;
  producerEpoch: number;
  /** v3+ (KIP-447); -1 / '' / null when not sent. */
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
  topics: { name: string; partitions: Omit<CommitPartition, 'commitTimestamp'>[] }[];
}

/** KIP-447: a committer naming its member and generation must match the group's. */
function validateMember(c: GroupCoordinator, p: TxnCommitParams): number {
  let g = c.groups.get(p.groupId);
  if (g === undefined) {
    g = new ClassicGroup(p.groupId, c.now);
    c.groups.set(p.groupId, g);
  }
  if (g.type === 'classic' && g.is(S.DEAD)) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
  if (p.generationId < 0 && p.memberId === '' && p.groupInstanceId === null) return ErrorCode.NONE;
  if (g.type === 'consumer') {
    const m = g.members.get(p.memberId);
    if (m === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    return p.generationId === m.memberEpoch ? ErrorCode.NONE : ErrorCode.ILLEGAL_GENERATION;
  }
  const e = c.classic.validateCurrentMember(g, p.memberId, p.groupInstanceId);
  if (e !== ErrorCode.NONE) return e;
  return p.generationId === g.generationId ? ErrorCode.NONE : ErrorCode.ILLEGAL_GENERATION;
}

/**
 * TxnOffsetCommit. `verify` asks the transaction coordinator whether the group's offsets partition
 * is in the producer's ongoing transaction (KIP-890); NONE when it is.
 */
export async function commitTxnOffsets(
  c: GroupCoordinator,
  p: TxnCommitParams,
  partitionExists: (topic: string, partition: number) => boolean,
  verify: (offsetsPartition: number) => number | Promise<number>,
): Promise<PartitionErrors> {
  const result: PartitionErrors = p.topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map((pp) => ({ partitionIndex: pp.partitionIndex, errorCode: ErrorCode.NONE })),
  }));
  const setAll = (code: number): PartitionErrors => {
    for (const t of result) for (const pp of t.partitions) pp.errorCode = code;
    return result;
  };
  const status = c.validateGroupStatus(p.groupId, 'commit');
  if (status !== ErrorCode.NONE) return setAll(status);
  const verifying = verify(c.partitionFor(p.groupId));
  const verified = typeof verifying === 'number' ? verifying : await verifying;
  if (verified !== ErrorCode.NONE) return setAll(verified);
  const member = validateMember(c, p);
  if (member !== ErrorCode.NONE) return setAll(member);
  const now = c.now();
  const records: CoordinatorRecord[] = [];
  const stored: PendingOffset[] = [];
  p.topics.forEach((t, ti) =>
    t.partitions.forEach((pp, pi) => {
      const out = result[ti]?.partitions[pi] as { errorCode: number };
      const metadata = pp.committedMetadata ?? '';
      if (!partitionExists(t.name, pp.partitionIndex)) out.errorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
      else if (Buffer.byteLength(metadata) > c.settings.offsetMetadataMaxBytes) out.errorCode = ErrorCode.OFFSET_METADATA_TOO_LARGE;
      else {
        const value: OffsetAndMetadata = {
          offset: pp.committedOffset,
          leaderEpoch: pp.committedLeaderEpoch,
          metadata,
          commitTimestamp: now,
          expireTimestamp: null,
        };
        records.push(
          offsetCommitRecord(p.groupId, t.name, pp.partitionIndex, {
            offset: value.offset,
            leaderEpoch: value.leaderEpoch,
            metadata,
            commitTimestamp: BigInt(now),
            expireTimestamp: null,
          }),
        );
        stored.push({ group: p.groupId, topic: t.name, partition: pp.partitionIndex, value });
      }
    }),
  );
  if (records.length === 0) return result;
  const res = await c.append(p.groupId, records, { producerId: p.producerId, producerEpoch: p.producerEpoch });
  if (res.errorCode !== ErrorCode.NONE) {
    const code = res.errorCode === ErrorCode.INVALID_PRODUCER_EPOCH ? res.errorCode : storeErrorFor(res.errorCode, true);
    for (const t of result) for (const pp of t.partitions) if (pp.errorCode === ErrorCode.NONE) pp.errorCode = code;
    return result;
  }
  stored.forEach((s, i) => {
    s.value.recordOffset = res.offset + BigInt(i);
    c.pendingTxn.add(p.producerId, s);
  });
  return result;
}
