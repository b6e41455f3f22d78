/**
 * A share partition's in-flight window as a sorted run of contiguous batches (Kafka's InFlightBatch):
 * each covers [first, last] with one state, delivery count, holder and acquisition. Operations split a
 * batch only where a range cuts through it; finding the batch of an offset is a binary search.
 */

export interface InFlightBatch {
  first: bigint;
  last: bigint;
  /** a RecordState id */
  state: number;
  deliveryCount: number;
  /** the member holding it while ACQUIRED */
  memberId?: string | undefined;
  /** which acquisition (lock) holds it while ACQUIRED */
  acquisition?: number;
  /** offsets between stored batches that hold no records (compaction), passed over as ARCHIVED */
  gap?: boolean;
}

export type BatchPatch = Partial<Pick<InFlightBatch, 'state' | 'deliveryCount' | 'memberId' | 'acquisition'>>;

export class InFlightBatches {
  private items: InFlightBatch[] = [];
  /** index of the first live batch (dropped ones before it are cut off now and then) */
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }

  /** Adds a batch right after the last one. */
  append(b: InFlightBatch): void {
    this.items.push(b);
  }

  /** The batch holding `offset`. */
  at(offset: bigint): InFlightBatch | undefined {
    const i = this.indexOf(offset);
    return i < 0 ? undefined : this.items[i];
  }

  /** The batches overlapping [first, last], in order (a copy: callers may change the window meanwhile). */
  between(first: bigint, last: bigint): InFlightBatch[] {
    const out: InFlightBatch[] = [];
    if (last < first) return out;
    let i = this.indexOf(first);
    if (i < 0) i = this.firstAfter(first);
    for (; i < this.items.length; i++) {
      const b = this.items[i] as InFlightBatch;
      if (b.first > last) break;
      out.push(b);
    }
    return out;
  }

  /** The batches `pred` holds for, in order. */
  matching(pred: (b: InFlightBatch) => boolean): InFlightBatch[] {
    const out: InFlightBatch[] = [];
    for (let i = this.head; i < this.items.length; i++) {
      const b = this.items[i] as InFlightBatch;
      if (pred(b)) out.push(b);
    }
    return out;
  }

  /** The first batch of AVAILABLE (state 0) records. */
  firstAvailable(): InFlightBatch | undefined {
    for (let i = this.head; i < this.items.length; i++) {
      const b = this.items[i] as InFlightBatch;
      if (b.state === 0) return b;
    }
    return undefined;
  }

  /** Applies `patch` to the records [first, last] (all inside the window), splitting the batches at both ends. */
  set(first: bigint, last: bigint, patch: BatchPatch): void {
    const lo = this.splitAt(first);
    const hi = this.splitAt(last + 1n);
    for (let i = lo; i < hi; i++) Object.assign(this.items[i] as InFlightBatch, patch);
  }

  /** Drops the leading batches `done` holds for; the first offset of the first one left (undefined: none left). */
  dropDone(done: (b: InFlightBatch) => boolean): bigint | undefined {
    while (this.head < this.items.length && done(this.items[this.head] as InFlightBatch)) this.head++;
    if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return this.items[this.head]?.first;
  }

  /** Makes `offset` the first of a batch (splitting the one holding it); the index of that batch (or of the end). */
  private splitAt(offset: bigint): number {
    const i = this.indexOf(offset);
    if (i < 0) return this.firstAfter(offset);
    const b = this.items[i] as InFlightBatch;
    if (b.first === offset) return i;
    const rest: InFlightBatch = { ...b, first: offset };
    b.last = offset - 1n;
    this.items.splice(i + 1, 0, rest);
    return i + 1;
  }

  private indexOf(offset: bigint): number {
    let lo = this.head;
    let hi = this.items.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const b = this.items[mid] as InFlightBatch;
      if (offset < b.first) hi = mid - 1;
      else if (offset > b.last) lo = mid + 1;
      else return mid;
    }
    return -1;
  }

  /** The index of the first batch starting after `offset`. */
  private firstAfter(offset: bigint): number {
    let lo = this.head;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.items[mid] as InFlightBatch).first <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
