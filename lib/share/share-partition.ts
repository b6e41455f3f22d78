/**
 * One share partition (KIP-932): a share group's view of one topic partition, kept by its leader. The
 * share-partition start offset (SPSO) is the first offset not yet done with; the end offset (SPEO) the
 * first never acquired. Between them the records are AVAILABLE, ACQUIRED by one member under a lock
 * that times out, ACKNOWLEDGED or ARCHIVED, with their delivery counts. Records below the start offset
 * are all done; the start offset moves up as the records at its head are acknowledged or archived.
 *
 * The window is kept as Kafka's SharePartition keeps it: in-flight batches (ranges of offsets with one
 * state, delivery count, holder and lock), one per acquisition of a stored batch, split only where an
 * acknowledgement, a release or a partial acquisition cuts through one. A lock is one timer per
 * acquisition, not per record. All mutation is synchronous (one owner, no await inside).
 */
import { InFlightBatches, type InFlightBatch } from './in-flight-batches.js';

/** Kafka's RecordState ids (also the DeliveryState byte of ShareSnapshot/ShareUpdate records). */
export const RecordState = { AVAILABLE: 0, ACQUIRED: 1, ACKNOWLEDGED: 2, ARCHIVED: 4 } as const;
export type RecordState = (typeof RecordState)[keyof typeof RecordState];

/** Acknowledgement types on the wire (ShareFetch/ShareAcknowledge AcknowledgeTypes). */
export const AcknowledgeType = { GAP: 0, ACCEPT: 1, RELEASE: 2, REJECT: 3, RENEW: 4 } as const;

export interface AcquiredRange {
  firstOffset: bigint;
  lastOffset: bigint;
  deliveryCount: number;
}

export interface SharePartitionLimits {
  /** group.share.delivery.count.limit */
  deliveryCountLimit(): number;
  /** group.share.partition.max.record.locks */
  maxRecordLocks(): number;
}

export interface PersistedRecordState {
  firstOffset: bigint;
  lastOffset: bigint;
  deliveryCount: number;
  state: number;
}

interface Lock {
  timer: NodeJS.Timeout;
  /** records of the acquisition still ACQUIRED under it */
  held: bigint;
}

const size = (b: InFlightBatch): bigint => b.last - b.first + 1n;

export class SharePartition {
  /** SPSO */
  startOffset: bigint;
  /** SPEO: offsets at or past it were never acquired */
  endOffset: bigint;
  /** bumped by every change persistence must see */
  stateEpoch = 0;
  /** the in-flight window, [startOffset, endOffset) exactly */
  private readonly window = new InFlightBatches();
  private nextAcquisition = 1;
  private readonly locks = new Map<number, Lock>();
  /** offset ranges changed since persistence last took them (see takeChanges) */
  private dirty: [bigint, bigint][] = [];
  /** the window was replaced (a reset): persistence must write a whole snapshot */
  private replaced = true;

  constructor(
    readonly groupId: string,
    readonly topicId: string,
    readonly partition: number,
    startOffset: bigint,
    private readonly limits: SharePartitionLimits,
    /** called after records were released by lock expiry (waiting fetches may take them) */
    private readonly onReleased: (sp: SharePartition) => void,
    /** called after every change of state (persistence) */
    private readonly onChange: (sp: SharePartition) => void,
  ) {
    this.startOffset = startOffset;
    this.endOffset = startOffset;
  }

  /** Records a member could acquire now below `readableEnd` (the high watermark). */
  hasAcquirable(readableEnd: bigint): boolean {
    if (this.endOffset < readableEnd && this.inFlightCount() < this.limits.maxRecordLocks()) return true;
    return this.window.firstAvailable() !== undefined;
  }

  /** Where a fetch should read from: the first AVAILABLE record, else the end offset. */
  fetchOffset(): bigint {
    return this.window.firstAvailable()?.first ?? this.endOffset;
  }

  /**
   * Acquires for `memberId` up to `maxRecords` records among `present` (the offset ranges of the data
   * batches a log read returned, in order): AVAILABLE ones in the window and new ones past the end
   * offset while the window holds fewer than the max record locks. Control batches' offsets
   * (`skipped`) are archived as they are passed. Each acquisition's lock expires after `lockMs`.
   * `maxRecords` is soft, as in Kafka's batch-optimised acquisition: once reached, the batch being
   * acquired is finished (its bytes go to the client whole anyway), up to `hardCap` records. With no
   * hard cap (0: the member is alone on the partition) a batch begun below the max record locks is
   * finished too, so that a large stored batch is not sent again for each slice of it.
   */
  acquire(
    memberId: string,
    present: readonly [bigint, bigint, boolean][],
    maxRecords: number,
    lockMs: number,
    hardCap = maxRecords,
  ): AcquiredRange[] {
    const acquisition = this.nextAcquisition++;
    const ranges: AcquiredRange[] = [];
    let got = 0n;
    const limit = BigInt(maxRecords > 0 ? maxRecords : Number.MAX_SAFE_INTEGER);
    const alone = hardCap <= 0;
    const cap = BigInt(alone ? Number.MAX_SAFE_INTEGER : Math.max(hardCap, maxRecords));
    const maxLocks = BigInt(this.limits.maxRecordLocks());
    const took = (first: bigint, last: bigint, deliveryCount: number): void => {
      got += last - first + 1n;
      const tail = ranges[ranges.length - 1];
      if (tail !== undefined && tail.lastOffset + 1n === first && tail.deliveryCount === deliveryCount) tail.lastOffset = last;
      else ranges.push({ firstOffset: first, lastOffset: last, deliveryCount });
    };
    outer: for (const [first, last, control] of present) {
      if (got >= limit) break;
      const lockRoom = this.endOffset - this.startOffset < maxLocks;
      if (alone && !lockRoom && last >= this.endOffset) break;
      const from = first < this.startOffset ? this.startOffset : first;
      // the part inside the window: its AVAILABLE records
      if (from < this.endOffset) {
        const to = last < this.endOffset ? last : this.endOffset - 1n;
        for (let o = from; o <= to;) {
          if (got >= cap) break outer;
          const b = this.window.at(o);
          if (b === undefined) break;
          const end = b.last < to ? b.last : to;
          if (b.state !== RecordState.AVAILABLE) {
            o = end + 1n;
            continue;
          }
          if (control) {
            this.window.set(o, end, { state: RecordState.ARCHIVED, memberId: undefined, acquisition: 0 });
            this.markDirty(o, end);
            o = end + 1n;
            continue;
          }
          const n = end - o + 1n < cap - got ? end - o + 1n : cap - got;
          const count = b.deliveryCount + 1;
          this.window.set(o, o + n - 1n, { state: RecordState.ACQUIRED, deliveryCount: count, memberId, acquisition });
          this.markDirty(o, o + n - 1n);
          took(o, o + n - 1n, count);
          o += n;
        }
      }
      // the part past the end offset: new records, while the window has room for their locks
      if (last < this.endOffset) continue;
      if (got >= cap) break;
      if (from > this.endOffset) {
        // offsets between batches hold no records (compaction): passed over
        this.window.append({ first: this.endOffset, last: from - 1n, state: RecordState.ARCHIVED, deliveryCount: 0, gap: true });
        this.markDirty(this.endOffset, from - 1n);
        this.endOffset = from;
      }
      const begin = this.endOffset;
      let n = last - begin + 1n;
      if (!alone) {
        const room = maxLocks - (this.endOffset - this.startOffset);
        if (room <= 0n) break;
        if (room < n) n = room;
      }
      if (!control && cap - got < n) n = cap - got;
      if (control) this.window.append({ first: begin, last: begin + n - 1n, state: RecordState.ARCHIVED, deliveryCount: 0 });
      else {
        this.window.append({ first: begin, last: begin + n - 1n, state: RecordState.ACQUIRED, deliveryCount: 1, memberId, acquisition });
        took(begin, begin + n - 1n, 1);
      }
      this.markDirty(begin, begin + n - 1n);
      this.endOffset = begin + n;
      if (n < last - begin + 1n) break;
    }
    this.advanceStart();
    if (got === 0n) return [];
    const timer = setTimeout(() => this.expire(acquisition), lockMs);
    timer.unref();
    this.locks.set(acquisition, { timer, held: got });
    this.changed();
    return ranges;
  }

  /**
   * Applies one acknowledgement batch of `memberId`: every offset must be ACQUIRED by it, else the
   * whole batch is refused (false: INVALID_RECORD_STATE). `types` has one type for the whole range or
   * one per offset.
   */
  acknowledge(memberId: string, firstOffset: bigint, lastOffset: bigint, types: readonly number[]): boolean {
    if (lastOffset < firstOffset || types.length === 0) return false;
    if (types.length !== 1 && BigInt(types.length) !== lastOffset - firstOffset + 1n) return false;
    for (const type of types) if (type < AcknowledgeType.GAP || type > AcknowledgeType.REJECT) return false;
    if (firstOffset < this.startOffset || lastOffset >= this.endOffset) return false;
    for (let o = firstOffset; o <= lastOffset;) {
      const b = this.window.at(o);
      if (b === undefined || b.state !== RecordState.ACQUIRED || b.memberId !== memberId) return false;
      o = b.last + 1n;
    }
    // runs of one acknowledgement type
    for (let i = 0, o = firstOffset; o <= lastOffset;) {
      const type = types.length === 1 ? (types[0] as number) : (types[i] as number);
      let end = types.length === 1 ? lastOffset : o;
      if (types.length !== 1) while (end < lastOffset && types[i + Number(end - o) + 1] === type) end++;
      this.settle(o, end, type);
      i += Number(end - o) + 1;
      o = end + 1n;
    }
    const start = this.startOffset;
    this.advanceStart();
    this.changed();
    // released records, or a start offset that moved (freeing record locks), let waiting fetches acquire
    if (this.startOffset !== start || types.includes(AcknowledgeType.RELEASE)) this.onReleased(this);
    return true;
  }

  /** Releases every record `memberId` holds (its share session closed or it left the group). */
  releaseMember(memberId: string): number {
    let n = 0;
    for (const b of this.window.matching((x) => x.state === RecordState.ACQUIRED && x.memberId === memberId)) {
      this.release(b.first, b.last);
      n += Number(size(b));
    }
    if (n > 0) {
      this.advanceStart();
      this.changed();
      this.onReleased(this);
    }
    return n;
  }

  /** The in-flight records as runs of equal state and delivery count (ACQUIRED ones count as AVAILABLE: a restart releases them). */
  stateBatches(from = this.startOffset, to = this.endOffset - 1n): PersistedRecordState[] {
    const out: PersistedRecordState[] = [];
    for (const b of this.window.between(from, to)) {
      const first = b.first < from ? from : b.first;
      const last = b.last > to ? to : b.last;
      const state = b.state === RecordState.ACQUIRED ? RecordState.AVAILABLE : b.state;
      const tail = out[out.length - 1];
      if (tail !== undefined && tail.lastOffset + 1n === first && tail.state === state && tail.deliveryCount === b.deliveryCount)
        tail.lastOffset = last;
      else out.push({ firstOffset: first, lastOffset: last, deliveryCount: b.deliveryCount, state });
    }
    return out;
  }

  /**
   * What changed since the last call, for a ShareUpdate record: the state batches of the changed
   * offset ranges, or null when the window was replaced (a whole snapshot is needed).
   */
  takeChanges(): PersistedRecordState[] | null {
    const dirty = this.dirty;
    this.dirty = [];
    if (this.replaced) {
      this.replaced = false;
      return null;
    }
    // in offset order, overlapping ranges merged: the batches of an update are sorted and disjoint
    dirty.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    const merged: [bigint, bigint][] = [];
    for (const [a, b] of dirty) {
      const tail = merged[merged.length - 1];
      if (tail !== undefined && a <= tail[1] + 1n) {
        if (b > tail[1]) tail[1] = b;
      } else merged.push([a, b]);
    }
    const out: PersistedRecordState[] = [];
    for (const [a, b] of merged) {
      if (b < this.startOffset) continue;
      out.push(...this.stateBatches(a < this.startOffset ? this.startOffset : a, b < this.endOffset ? b : this.endOffset - 1n));
    }
    return out;
  }

  /** Persistence failed to write what takeChanges gave it: the next write is a whole snapshot. */
  needSnapshot(): void {
    this.replaced = true;
  }

  /** Restores persisted state (a restart): the start offset and the in-flight records. */
  restore(startOffset: bigint, batches: readonly PersistedRecordState[]): void {
    this.clearWindow(startOffset);
    for (const b of batches) {
      if (b.lastOffset < startOffset) continue;
      const first = b.firstOffset < startOffset ? startOffset : b.firstOffset;
      // offsets inside the window the state does not mention were never acquired: available
      if (first > this.endOffset)
        this.window.append({ first: this.endOffset, last: first - 1n, state: RecordState.AVAILABLE, deliveryCount: 0 });
      if (first < this.endOffset) continue; // overlapping batches: the first one wins
      const state = b.state === RecordState.ACQUIRED ? RecordState.AVAILABLE : (b.state as RecordState);
      this.window.append({ first, last: b.lastOffset, state, deliveryCount: b.deliveryCount });
      this.endOffset = b.lastOffset + 1n;
    }
    this.advanceStart();
  }

  /** Moves the start offset (AlterShareGroupOffsets, or the log start passing it): the window is dropped. */
  resetTo(offset: bigint): void {
    this.clearWindow(offset);
    this.changed();
  }

  /** Counts per state, for tests and describe. */
  counts(): Record<'available' | 'acquired' | 'acknowledged' | 'archived', number> {
    const c = { available: 0, acquired: 0, acknowledged: 0, archived: 0 };
    for (const b of this.window.matching((x) => x.gap !== true)) {
      const n = Number(size(b));
      if (b.state === RecordState.AVAILABLE) c.available += n;
      else if (b.state === RecordState.ACQUIRED) c.acquired += n;
      else if (b.state === RecordState.ACKNOWLEDGED) c.acknowledged += n;
      else c.archived += n;
    }
    return c;
  }

  /** How many in-flight batches the window holds (tests). */
  get batchCount(): number {
    return this.window.length;
  }

  close(): void {
    for (const l of this.locks.values()) clearTimeout(l.timer);
    this.locks.clear();
  }

  private clearWindow(offset: bigint): void {
    this.close();
    this.window.clear();
    this.startOffset = offset;
    this.endOffset = offset;
    this.dirty = [];
    this.replaced = true;
  }

  private inFlightCount(): number {
    return Number(this.endOffset - this.startOffset);
  }

  /** Ends the hold of the ACQUIRED records [first, last] (one batch's worth) with an acknowledgement type. */
  private settle(first: bigint, last: bigint, type: number): void {
    if (type === AcknowledgeType.RELEASE) {
      this.release(first, last);
      return;
    }
    this.unlock(first, last);
    const state = type === AcknowledgeType.ACCEPT ? RecordState.ACKNOWLEDGED : RecordState.ARCHIVED; // REJECT, GAP
    this.window.set(first, last, { state, memberId: undefined, acquisition: 0 });
    this.markDirty(first, last);
  }

  /** ACQUIRED records go back: AVAILABLE, or ARCHIVED once at the delivery count limit. */
  private release(first: bigint, last: bigint): void {
    this.unlock(first, last);
    const limit = this.limits.deliveryCountLimit();
    for (const b of this.window.between(first, last)) {
      const a = b.first < first ? first : b.first;
      const z = b.last > last ? last : b.last;
      const state = b.deliveryCount >= limit ? RecordState.ARCHIVED : RecordState.AVAILABLE;
      this.window.set(a, z, { state, memberId: undefined, acquisition: 0 });
    }
    this.markDirty(first, last);
  }

  /** The records [first, last] leave their acquisitions' locks (a lock whose records are all done stops its timer). */
  private unlock(first: bigint, last: bigint): void {
    for (const b of this.window.between(first, last)) {
      const lock = this.locks.get(b.acquisition ?? 0);
      if (lock === undefined) continue;
      lock.held -= (b.last > last ? last : b.last) - (b.first < first ? first : b.first) + 1n;
      if (lock.held <= 0n) {
        clearTimeout(lock.timer);
        this.locks.delete(b.acquisition ?? 0);
      }
    }
  }

  /** An acquisition's lock timed out: what it still holds goes back (or is archived past the delivery limit). */
  private expire(acquisition: number): void {
    this.locks.delete(acquisition);
    const held = this.window.matching((b) => b.state === RecordState.ACQUIRED && b.acquisition === acquisition);
    if (held.length === 0) return;
    for (const b of held) this.release(b.first, b.last);
    this.advanceStart();
    this.changed();
    this.onReleased(this);
  }

  private advanceStart(): void {
    const next = this.window.dropDone((b) => b.state === RecordState.ACKNOWLEDGED || b.state === RecordState.ARCHIVED);
    if (next !== undefined) this.startOffset = next;
    else if (this.startOffset !== this.endOffset) this.startOffset = this.endOffset;
  }

  private markDirty(first: bigint, last: bigint): void {
    const tail = this.dirty[this.dirty.length - 1];
    if (tail !== undefined && first <= tail[1] + 1n && last >= tail[0] - 1n) {
      if (first < tail[0]) tail[0] = first;
      if (last > tail[1]) tail[1] = last;
      return;
    }
    this.dirty.push([first, last]);
    if (this.dirty.length > 64) {
      // many scattered ranges: one hull is cheaper to keep than to write apart
      let lo = first;
      let hi = last;
      for (const [a, b] of this.dirty) {
        if (a < lo) lo = a;
        if (b > hi) hi = b;
      }
      this.dirty = [[lo, hi]];
    }
  }

  private changed(): void {
    this.stateEpoch++;
    this.onChange(this);
  }
}
