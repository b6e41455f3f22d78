/**
 * The aborted-transaction index of one segment (`<base>.txnindex`, Kafka's layout): one 34-byte
 * entry per ABORT marker in the segment — version int16 (0), producerId, firstOffset (the
 * transaction's first offset on this partition), lastOffset (the marker's offset) and
 * lastStableOffset (the first offset of the earliest transaction still open when the marker was
 * written, else marker + 1). read_committed fetches list the entries that overlap what they return.
 */

export interface AbortedTxn {
  producerId: bigint;
  firstOffset: bigint;
  lastOffset: bigint;
  lastStableOffset: bigint;
}

export const TXN_INDEX_ENTRY_SIZE = 34;
const VERSION = 0;

export class TransactionIndex {
  private entries: AbortedTxn[] = [];
  /** Entries already in the file. */
  persisted = 0;
  /** The file must be rewritten from the start (after a truncation). */
  needsRewrite = false;

  get length(): number {
    return this.entries.length;
  }

  get all(): readonly AbortedTxn[] {
    return this.entries;
  }

  /** Entries of a file; null when it is not a whole number of sane entries in marker order. */
  static parse(buf: Buffer): TransactionIndex | null {
    if (buf.length % TXN_INDEX_ENTRY_SIZE !== 0) return null;
    const idx = new TransactionIndex();
    let prev = -1n;
    for (let p = 0; p < buf.length; p += TXN_INDEX_ENTRY_SIZE) {
      if (buf.readInt16BE(p) !== VERSION) return null;
      const e: AbortedTxn = {
        producerId: buf.readBigInt64BE(p + 2),
        firstOffset: buf.readBigInt64BE(p + 10),
        lastOffset: buf.readBigInt64BE(p + 18),
        lastStableOffset: buf.readBigInt64BE(p + 26),
      };
      if (e.lastOffset <= prev || e.firstOffset > e.lastOffset) return null;
      prev = e.lastOffset;
      idx.entries.push(e);
    }
    idx.persisted = idx.entries.length;
    return idx;
  }

  append(e: AbortedTxn): void {
    const last = this.entries[this.entries.length - 1];
    if (last !== undefined && e.lastOffset <= last.lastOffset) {
      throw new Error(`aborted transaction marker at ${e.lastOffset} is not after the last indexed one at ${last.lastOffset}`);
    }
    this.entries.push(e);
  }

  /** Forgets entries whose marker is at or above `offset`. */
  truncateTo(offset: bigint): void {
    let n = this.entries.length;
    while (n > 0 && (this.entries[n - 1] as AbortedTxn).lastOffset >= offset) n--;
    if (n === this.entries.length) return;
    this.entries.length = n;
    if (this.persisted > n) {
      this.persisted = n;
      this.needsRewrite = true;
    }
  }

  clear(): void {
    this.truncateTo(-1n);
  }

  /** Entries [from, length) as file bytes. */
  serialize(from: number): Buffer {
    const out = Buffer.alloc((this.entries.length - from) * TXN_INDEX_ENTRY_SIZE);
    for (let i = from, p = 0; i < this.entries.length; i++, p += TXN_INDEX_ENTRY_SIZE) {
      const e = this.entries[i] as AbortedTxn;
      out.writeInt16BE(VERSION, p);
      out.writeBigInt64BE(e.producerId, p + 2);
      out.writeBigInt64BE(e.firstOffset, p + 10);
      out.writeBigInt64BE(e.lastOffset, p + 18);
      out.writeBigInt64BE(e.lastStableOffset, p + 26);
    }
    return out;
  }

  /**
   * Adds to `out` the aborted transactions overlapping [fetchOffset, upperBound): marker at or after
   * fetchOffset, first offset below upperBound. Returns true when no later segment can hold more
   * (an entry's lastStableOffset reached upperBound), as Kafka's collectAbortedTxns.
   */
  collect(fetchOffset: bigint, upperBound: bigint, out: AbortedTxn[]): boolean {
    for (const e of this.entries) {
      if (e.lastOffset >= fetchOffset && e.firstOffset < upperBound) out.push(e);
      if (e.lastStableOffset >= upperBound) return true;
    }
    return false;
  }
}
