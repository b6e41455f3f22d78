/**
 * The cleaner's key → latest-offset map over a fixed memory budget (Kafka's SkimpyOffsetMap idea):
 * each slot holds a 16-byte MD5 of the key and the offset, so `memory` bytes hold memory / 24 slots,
 * of which `loadFactor` may be used (log.cleaner.io.buffer.load.factor). Two keys with one digest
 * would share an entry (as in Kafka; MD5 makes it vanishingly rare). Open addressing, linear probing.
 */
import crypto from 'node:crypto';

const HASH_BYTES = 16;
export const BYTES_PER_ENTRY = HASH_BYTES + 8;

export class OffsetMap {
  readonly slots: number;
  /** Entries the map takes before it counts as full. */
  readonly maxEntries: number;
  private readonly hashes: Int32Array;
  /** offset + 1 per slot, 0 for an empty one (fresh typed arrays are zero: nothing is written up front) */
  private readonly offsets: Float64Array;
  private count = 0;
  /** The largest offset put since the last clear (-1 when none). */
  latestOffset = -1n;
  /** Probes beyond the first slot, and lookups (utilisation and collision figures). */
  lookups = 0;

  constructor(memory: number, loadFactor = 0.9) {
    this.slots = Math.max(2, Math.floor(memory / BYTES_PER_ENTRY));
    this.maxEntries = Math.max(1, Math.floor(this.slots * loadFactor));
    this.hashes = new Int32Array(this.slots * 4);
    this.offsets = new Float64Array(this.slots);
  }

  get size(): number {
    return this.count;
  }
  /** Share of the slots in use (Kafka's buffer utilisation). */
  get utilization(): number {
    return this.count / this.slots;
  }

  clear(): void {
    if (this.count > 0) this.offsets.fill(0);
    this.count = 0;
    this.latestOffset = -1n;
  }

  /** Whether `n` more keys surely fit. */
  hasRoomFor(n: number): boolean {
    return this.count + n <= this.maxEntries;
  }

  private slotOf(key: Buffer, insert: boolean): number {
    const d = crypto.createHash('md5').update(key).digest();
    const h0 = d.readInt32LE(0);
    const h1 = d.readInt32LE(4);
    const h2 = d.readInt32LE(8);
    const h3 = d.readInt32LE(12);
    let i = (h0 >>> 0) % this.slots;
    this.lookups++;
    for (;;) {
      if (this.offsets[i] === 0) {
        if (insert) {
          const at = i * 4;
          this.hashes[at] = h0;
          this.hashes[at + 1] = h1;
          this.hashes[at + 2] = h2;
          this.hashes[at + 3] = h3;
        }
        return insert ? i : -1;
      }
      const at = i * 4;
      if (this.hashes[at] === h0 && this.hashes[at + 1] === h1 && this.hashes[at + 2] === h2 && this.hashes[at + 3] === h3) return i;
      i = i + 1 === this.slots ? 0 : i + 1;
    }
  }

  /** Records `offset` as the latest of `key` (callers put in offset order; throws when full). */
  put(key: Buffer, offset: bigint): void {
    const i = this.slotOf(key, true);
    if (this.offsets[i] === 0) {
      if (this.count >= this.slots - 1) throw new Error('the offset map is full');
      this.count++;
    }
    this.offsets[i] = Number(offset) + 1;
    if (offset > this.latestOffset) this.latestOffset = offset;
  }

  /** The latest offset of `key`, or -1n when the map does not hold it. */
  get(key: Buffer): bigint {
    const i = this.slotOf(key, false);
    return i < 0 ? -1n : BigInt((this.offsets[i] as number) - 1);
  }
}

/**
 * The memory a job's map needs: enough slots for every offset of its dirty section (an upper bound
 * on its keys), at most `maxBytes` (log.cleaner.dedupe.buffer.size / threads). A broker whose
 * compacted logs are small (most hold __consumer_offsets) so never holds Kafka's 128 MiB.
 */
export function mapBytesFor(dirtyOffsets: bigint, maxBytes: number, loadFactor = 0.9): number {
  const want = Number(dirtyOffsets < 1n ? 1n : dirtyOffsets) / loadFactor + 2;
  return Math.min(maxBytes, Math.max(1024, Math.ceil(want) * BYTES_PER_ENTRY));
}
