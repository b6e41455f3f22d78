/**
 * The per-offset share partition gregor had before in-flight batches (one Map entry per record), kept
 * as the model the batch implementation is checked against (share-partition.test.ts): same inputs,
 * same answers, same states.
 */
import {
  AcknowledgeType,
  type AcquiredRange,
  type PersistedRecordState,
  RecordState,
  type SharePartitionLimits,
} from '../../../lib/share/share-partition.js';

interface InFlight {
  state: RecordState;
  deliveryCount: number;
  /** the member holding it while ACQUIRED */
  memberId: string | undefined;
  /** which acquisition holds it (its lock timer compares this) */
  acquisition: number;
}

export class PerOffsetSharePartition {
  /** SPSO */
  startOffset: bigint;
  /** SPEO: offsets at or past it were never acquired */
  endOffset: bigint;
  /** bumped by every change persistence must see */
  stateEpoch = 0;
  private readonly inFlight = new Map<bigint, InFlight>();
  private nextAcquisition = 1;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    readonly groupId: string,
    readonly topicId: string,
    readonly partition: number,
    startOffset: bigint,
    private readonly limits: SharePartitionLimits,
    /** called after records were released by lock expiry (waiting fetches may take them) */
    private readonly onReleased: (sp: PerOffsetSharePartition) => void,
    /** called after every change of state (persistence) */
    private readonly onChange: (sp: PerOffsetSharePartition) => void,
  ) {
    this.startOffset = startOffset;
    this.endOffset = startOffset;
  }

  /** Records a member could acquire now below `readableEnd` (the high watermark). */
  hasAcquirable(readableEnd: bigint): boolean {
    if (this.endOffset < readableEnd && this.inFlightCount() < this.limits.maxRecordLocks()) return true;
    for (const r of this.inFlight.values()) if (r.state === RecordState.AVAILABLE) return true;
    return false;
  }

  /** Where a fetch should read from: the first AVAILABLE record, else the end offset. */
  fetchOffset(): bigint {
    for (let o = this.startOffset; o < this.endOffset; o++) {
      if (this.inFlight.get(o)?.state === RecordState.AVAILABLE) return o;
    }
    return this.endOffset;
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
    const got: bigint[] = [];
    const limit = maxRecords > 0 ? maxRecords : Number.MAX_SAFE_INTEGER;
    const alone = hardCap <= 0;
    const cap = alone ? Number.MAX_SAFE_INTEGER : Math.max(hardCap, maxRecords);
    outer: for (const [first, last, control] of present) {
      if (got.length >= limit) break;
      const lockRoom = this.inFlightCount() < this.limits.maxRecordLocks();
      if (alone && !lockRoom && last >= this.endOffset) break;
      for (let o = first < this.startOffset ? this.startOffset : first; o <= last; o++) {
        if (got.length >= cap) break outer;
        if (o < this.endOffset) {
          const r = this.inFlight.get(o);
          if (r === undefined || r.state !== RecordState.AVAILABLE) continue;
          if (control) {
            r.state = RecordState.ARCHIVED;
            continue;
          }
          r.state = RecordState.ACQUIRED;
          r.deliveryCount++;
          r.memberId = memberId;
          r.acquisition = acquisition;
          got.push(o);
          continue;
        }
        if (o > this.endOffset) this.endOffset = o; // offsets between batches hold no records (compaction): passed over
        if (!alone && this.inFlightCount() >= this.limits.maxRecordLocks()) break outer;
        if (control) {
          this.inFlight.set(o, { state: RecordState.ARCHIVED, deliveryCount: 0, memberId: undefined, acquisition: 0 });
        } else {
          this.inFlight.set(o, { state: RecordState.ACQUIRED, deliveryCount: 1, memberId, acquisition });
          got.push(o);
        }
        this.endOffset = o + 1n;
      }
    }
    this.advanceStart();
    if (got.length === 0) return [];
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.expire(acquisition, got);
    }, lockMs);
    timer.unref();
    this.timers.add(timer);
    this.changed();
    const ranges: AcquiredRange[] = [];
    for (const o of got) {
      const count = this.inFlight.get(o)?.deliveryCount ?? 1;
      const tail = ranges[ranges.length - 1];
      if (tail !== undefined && tail.lastOffset + 1n === o && tail.deliveryCount === count) tail.lastOffset = o;
      else ranges.push({ firstOffset: o, lastOffset: o, deliveryCount: count });
    }
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
    for (let o = firstOffset; o <= lastOffset; o++) {
      const r = this.inFlight.get(o);
      const type = types.length === 1 ? types[0] : types[Number(o - firstOffset)];
      if (type === undefined || type < AcknowledgeType.GAP || type > AcknowledgeType.REJECT) return false;
      if (r === undefined || r.state !== RecordState.ACQUIRED || r.memberId !== memberId) return false;
    }
    for (let o = firstOffset; o <= lastOffset; o++) {
      const r = this.inFlight.get(o);
      const type = types.length === 1 ? types[0] : types[Number(o - firstOffset)];
      if (r === undefined) continue;
      r.memberId = undefined;
      if (type === AcknowledgeType.ACCEPT) r.state = RecordState.ACKNOWLEDGED;
      else if (type === AcknowledgeType.RELEASE) r.state = this.releasedState(r);
      else r.state = RecordState.ARCHIVED; // REJECT, GAP
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
    for (const r of this.inFlight.values()) {
      if (r.state === RecordState.ACQUIRED && r.memberId === memberId) {
        r.state = this.releasedState(r);
        r.memberId = undefined;
        n++;
      }
    }
    if (n > 0) {
      this.advanceStart();
      this.changed();
      this.onReleased(this);
    }
    return n;
  }

  /** The in-flight records as runs of equal state and delivery count (ACQUIRED ones count as AVAILABLE: a restart releases them). */
  stateBatches(): PersistedRecordState[] {
    const out: PersistedRecordState[] = [];
    for (let o = this.startOffset; o < this.endOffset; o++) {
      const r = this.inFlight.get(o);
      if (r === undefined) continue;
      const state = r.state === RecordState.ACQUIRED ? RecordState.AVAILABLE : r.state;
      const tail = out[out.length - 1];
      if (tail !== undefined && tail.lastOffset + 1n === o && tail.state === state && tail.deliveryCount === r.deliveryCount)
        tail.lastOffset = o;
      else out.push({ firstOffset: o, lastOffset: o, deliveryCount: r.deliveryCount, state });
    }
    return out;
  }

  /** Restores persisted state (a restart): the start offset and the in-flight records. */
  restore(startOffset: bigint, batches: readonly PersistedRecordState[]): void {
    this.inFlight.clear();
    this.startOffset = startOffset;
    this.endOffset = startOffset;
    for (const b of batches) {
      for (let o = b.firstOffset; o <= b.lastOffset; o++) {
        if (o < startOffset) continue;
        const state = b.state === RecordState.ACQUIRED ? RecordState.AVAILABLE : (b.state as RecordState);
        this.inFlight.set(o, { state, deliveryCount: b.deliveryCount, memberId: undefined, acquisition: 0 });
        if (o + 1n > this.endOffset) this.endOffset = o + 1n;
      }
    }
    // offsets inside the window the state does not mention were never acquired: available
    for (let o = startOffset; o < this.endOffset; o++) {
      if (!this.inFlight.has(o))
        this.inFlight.set(o, { state: RecordState.AVAILABLE, deliveryCount: 0, memberId: undefined, acquisition: 0 });
    }
    this.advanceStart();
  }

  /** Moves the start offset (AlterShareGroupOffsets, or the log start passing it): the window is dropped. */
  resetTo(offset: bigint): void {
    this.inFlight.clear();
    this.startOffset = offset;
    this.endOffset = offset;
    this.changed();
  }

  /** Counts per state, for tests and describe. */
  counts(): Record<'available' | 'acquired' | 'acknowledged' | 'archived', number> {
    const c = { available: 0, acquired: 0, acknowledged: 0, archived: 0 };
    for (const r of this.inFlight.values()) {
      if (r.state === RecordState.AVAILABLE) c.available++;
      else if (r.state === RecordState.ACQUIRED) c.acquired++;
      else if (r.state === RecordState.ACKNOWLEDGED) c.acknowledged++;
      else c.archived++;
    }
    return c;
  }

  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private inFlightCount(): number {
    return Number(this.endOffset - this.startOffset);
  }

  private releasedState(r: InFlight): RecordState {
    return r.deliveryCount >= this.limits.deliveryCountLimit() ? RecordState.ARCHIVED : RecordState.AVAILABLE;
  }

  /** An acquisition's lock timed out: what it still holds goes back (or is archived past the delivery limit). */
  private expire(acquisition: number, offsets: readonly bigint[]): void {
    let n = 0;
    for (const o of offsets) {
      const r = this.inFlight.get(o);
      if (r === undefined || r.state !== RecordState.ACQUIRED || r.acquisition !== acquisition) continue;
      r.state = this.releasedState(r);
      r.memberId = undefined;
      n++;
    }
    if (n === 0) return;
    this.advanceStart();
    this.changed();
    this.onReleased(this);
  }

  private advanceStart(): void {
    while (this.startOffset < this.endOffset) {
      const r = this.inFlight.get(this.startOffset);
      if (r !== undefined && r.state !== RecordState.ACKNOWLEDGED && r.state !== RecordState.ARCHIVED) break;
      this.inFlight.delete(this.startOffset);
      this.startOffset++;
    }
  }

  private changed(): void {
    this.stateEpoch++;
    this.onChange(this);
  }
}
