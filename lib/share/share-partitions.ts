/**
 * The share partitions this broker leads, by (group, topic id, partition), and the two operations
 * share consumers drive on them: acquire-and-read (ShareFetch) and acknowledge. Reading the log is the
 * only await: the acquisition that follows it is synchronous, so two members fetching at once never
 * acquire the same record.
 */
import { BatchField, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from '../../protocol/records/index.js';
import type { ShareAutoOffsetReset } from '../group/group-configs.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { AcquiredRange, PersistedRecordState } from './share-partition.js';
import { SharePartition, type SharePartitionLimits } from './share-partition.js';
import { int64At } from '../../protocol/codec/int64.js';

export interface SharePartitionsDeps {
  limits: SharePartitionLimits;
  /** share.auto.offset.reset of the group */
  autoOffsetReset(groupId: string): ShareAutoOffsetReset;
  /** The log of a partition this broker leads (undefined otherwise). */
  log(topicId: string, partition: number): PartitionLog | undefined;
  /** Records went back to AVAILABLE (a lock expired, a member released them): wake waiting fetches. */
  onReleased(sp: SharePartition): void;
  /** A share partition's state changed (persistence). */
  onChange(sp: SharePartition): void;
  /** Clusters: whether a new share partition may start from share.auto.offset.reset (its persisted state was read). */
  mayInitialise?(groupId: string, topicId: string, partition: number): boolean;
}

export interface AcquiredRead {
  /** the stored entries holding the acquired offsets, as read (slices, passed on to the response uncopied) */
  records: Buffer[];
  /** their total size */
  bytes: number;
  acquired: AcquiredRange[];
  count: number;
}

/** The most one acquisition reads of a partition's log (at least one batch is read whatever its size). */
const PARTITION_READ_BYTES = 1 << 20;

const NOTHING: AcquiredRead = { records: [], bytes: 0, acquired: [], count: 0 };

/** One stored entry of a log read: where it sits and which offsets it holds. */
interface Entry {
  buf: Buffer;
  start: number;
  end: number;
  first: bigint;
  last: bigint;
  control: boolean;
}

function entriesOf(records: readonly Buffer[]): Entry[] {
  const out: Entry[] = [];
  for (const b of records) {
    for (let p = 0; p + LOG_OVERHEAD <= b.length;) {
      const size = LOG_OVERHEAD + b.readInt32BE(p + BatchField.BATCH_LENGTH);
      if (size <= BatchField.MAGIC || p + size > b.length) break;
      const base = int64At(b, p);
      const v2 = b[p + BatchField.MAGIC] === 2 && size >= RECORD_BATCH_OVERHEAD;
      const last = v2 ? base + BigInt(b.readInt32BE(p + BatchField.LAST_OFFSET_DELTA)) : base;
      const control = v2 && (b.readInt16BE(p + BatchField.ATTRIBUTES) & 0x20) !== 0;
      out.push({ buf: b, start: p, end: p + size, first: base, last, control });
      p += size;
    }
  }
  return out;
}

/**
 * Where a new share partition starts (share.auto.offset.reset): the log start, the high watermark, or
 * the first record at most `durationMs` old (the high watermark when there is none, or when the log is
 * not open for a search by time).
 */
export function initialOffset(log: PartitionLog, reset: ShareAutoOffsetReset, now: number): bigint {
  if (reset.kind === 'earliest') return log.logStartOffset;
  if (reset.kind === 'latest') return log.highWatermark;
  try {
    const found = log.offsetForTimestamp(BigInt(now - reset.durationMs));
    if (found === null) return log.highWatermark;
    return found.offset < log.highWatermark ? found.offset : log.highWatermark;
  } catch {
    return log.highWatermark;
  }
}

export class SharePartitions {
  private readonly partitions = new Map<string, SharePartition>();

  constructor(private readonly deps: SharePartitionsDeps) {}

  get(groupId: string, topicId: string, partition: number): SharePartition | undefined {
    return this.partitions.get(`${groupId}\0${topicId}\0${partition}`);
  }

  /** The share partition, made on first use with its start offset from share.auto.offset.reset. */
  getOrCreate(groupId: string, topicId: string, partition: number): SharePartition | undefined {
    const key = `${groupId}\0${topicId}\0${partition}`;
    const known = this.partitions.get(key);
    if (known !== undefined) return known;
    const log = this.deps.log(topicId, partition);
    if (log === undefined || this.deps.mayInitialise?.(groupId, topicId, partition) === false) return undefined;
    const sp = this.make(groupId, topicId, partition, initialOffset(log, this.deps.autoOffsetReset(groupId), Date.now()));
    this.deps.onChange(sp);
    return sp;
  }

  /** AlterShareGroupOffsets: the share partition (made when absent) starts at `offset`, its in-flight window dropped. */
  setStartOffset(groupId: string, topicId: string, partition: number, offset: bigint): SharePartition | undefined {
    if (this.deps.log(topicId, partition) === undefined) return undefined;
    const sp = this.get(groupId, topicId, partition) ?? this.make(groupId, topicId, partition, offset);
    sp.resetTo(offset);
    return sp;
  }

  /** DeleteShareGroupOffsets: forgets the group's share partitions of one topic; returns them. */
  deleteTopic(groupId: string, topicId: string): SharePartition[] {
    const out: SharePartition[] = [];
    for (const [k, sp] of this.partitions) {
      if (sp.groupId !== groupId || sp.topicId !== topicId) continue;
      sp.close();
      this.partitions.delete(k);
      out.push(sp);
    }
    return out;
  }

  /** A share partition restored from persisted state (broker start). */
  restore(groupId: string, topicId: string, partition: number, startOffset: bigint, batches: readonly PersistedRecordState[]): void {
    this.make(groupId, topicId, partition, startOffset).restore(startOffset, batches);
  }

  private make(groupId: string, topicId: string, partition: number, startOffset: bigint): SharePartition {
    const sp = new SharePartition(
      groupId,
      topicId,
      partition,
      startOffset,
      this.deps.limits,
      (s) => this.deps.onReleased(s),
      (s) => this.deps.onChange(s),
    );
    this.partitions.set(`${groupId}\0${topicId}\0${partition}`, sp);
    return sp;
  }

  /** Every share partition of `groupId` (or all). */
  list(groupId?: string): SharePartition[] {
    const out: SharePartition[] = [];
    for (const sp of this.partitions.values()) if (groupId === undefined || sp.groupId === groupId) out.push(sp);
    return out;
  }

  /** Forgets one share partition (clusters: its partition's leadership moved away). */
  drop(sp: SharePartition): void {
    const key = `${sp.groupId}\0${sp.topicId}\0${sp.partition}`;
    if (this.partitions.get(key) !== sp) return;
    sp.close();
    this.partitions.delete(key);
  }

  /** Forgets a group's share partitions (DeleteGroups). */
  deleteGroup(groupId: string): void {
    for (const [k, sp] of this.partitions) {
      if (sp.groupId !== groupId) continue;
      sp.close();
      this.partitions.delete(k);
    }
  }

  /** Whether `memberId` could acquire records of the partition now (a waiting fetch re-checks this). */
  acquirable(sp: SharePartition): boolean {
    const log = this.deps.log(sp.topicId, sp.partition);
    if (log === undefined) return false;
    return sp.hasAcquirable(log.highWatermark);
  }

  /**
   * Reads from where the partition has records to hand out and acquires up to `maxRecords` of them
   * for `memberId` (finishing the last batch, up to `hardCap`); the returned bytes are the stored
   * batches holding the acquired records.
   */
  async acquire(
    sp: SharePartition,
    memberId: string,
    maxRecords: number,
    maxBytes: number,
    lockMs: number,
    hardCap = maxRecords,
  ): Promise<AcquiredRead> {
    const log = this.deps.log(sp.topicId, sp.partition);
    if (log === undefined) return NOTHING;
    if (sp.startOffset < log.logStartOffset) sp.resetTo(log.logStartOffset);
    const hw = log.highWatermark;
    if (!sp.hasAcquirable(hw)) return NOTHING;
    const from = sp.fetchOffset();
    if (from >= hw) return NOTHING;
    // no more than a partition's worth (Kafka's max.partition.fetch.bytes default), not the log's whole tail
    const read = await log.read(from, Math.min(maxBytes, PARTITION_READ_BYTES), { minOneMessage: true, maxOffset: hw });
    const entries = entriesOf(read.records);
    // synchronous from here: the state may have moved while the log was read, acquire checks it again
    const acquired = sp.acquire(
      memberId,
      entries.map((e) => [e.first, e.last, e.control] as [bigint, bigint, boolean]),
      maxRecords,
      lockMs,
      hardCap,
    );
    if (acquired.length === 0) return NOTHING;
    const lo = acquired[0]?.firstOffset ?? 0n;
    const hi = acquired[acquired.length - 1]?.lastOffset ?? 0n;
    const parts: Buffer[] = [];
    let bytes = 0;
    for (const e of entries)
      if (e.last >= lo && e.first <= hi) {
        parts.push(e.buf.subarray(e.start, e.end));
        bytes += e.end - e.start;
      }
    let count = 0;
    for (const r of acquired) count += Number(r.lastOffset - r.firstOffset) + 1;
    return { records: parts, bytes, acquired, count };
  }

  /** Releases what `memberId` holds in every share partition of the group. */
  releaseMember(groupId: string, memberId: string): void {
    for (const sp of this.partitions.values()) if (sp.groupId === groupId) sp.releaseMember(memberId);
  }

  close(): void {
    for (const sp of this.partitions.values()) sp.close();
  }
}
