/**
 * Per-partition producer state (Kafka's ProducerStateManager): for every producer id its epoch, the
 * sequence ranges and offsets of its last five batches (to answer an exact retry with the original
 * offsets), the coordinator epoch of its last marker and the first offset of its open transaction.
 * Partition-wide: the open transactions and the completed ones whose marker is not yet below the
 * high watermark, which together give the last stable offset.
 *
 * An append is checked in two steps: `analyze` validates it against the state (throwing a LogError
 * with Kafka's code, or reporting a duplicate) without changing anything; `apply` commits the
 * result once the partition log has taken the data. Owned by one PartitionLog; mutated synchronously.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import {
  BatchAttribute,
  BatchField,
  ControlRecordType,
  RecordBatch,
  readControlRecordKey,
  readEndTxnMarker,
} from '../../protocol/records/index.js';
import { LogError } from '../log/errors.js';
import type { AbortedTxn } from '../log/transaction-index.js';
import { int64At } from '../../protocol/codec/int64.js';

/** Who appends: clients get full validation, the coordinators epoch checks only, replays none. */
export const AppendOrigin = { CLIENT: 0, COORDINATOR: 1, REPLICATION: 2 } as const;
export type AppendOrigin = (typeof AppendOrigin)[keyof typeof AppendOrigin];

export const NUM_BATCHES_TO_RETAIN = 5;
export const NO_PRODUCER_EPOCH = -1;
const INT32_MAX = 2147483647;

export interface BatchMetadata {
  firstSeq: number;
  lastSeq: number;
  firstOffset: bigint;
  lastOffset: bigint;
  /** The batch's max timestamp. */
  timestamp: bigint;
}

export interface ProducerStateEntry {
  producerId: bigint;
  /** -1: not known (a producer id seen only through markers, or loaded without an epoch). */
  producerEpoch: number;
  /** Oldest first, at most NUM_BATCHES_TO_RETAIN, all of `producerEpoch`. */
  batches: BatchMetadata[];
  lastTimestamp: bigint;
  coordinatorEpoch: number;
  /** First offset of the producer's open transaction on this partition, else null. */
  currentTxnFirstOffset: bigint | null;
}

export interface CompletedTxn {
  producerId: bigint;
  /** First offset of the transaction's data on this partition; null when it wrote none here. */
  firstOffset: bigint | null;
  /** The marker's offset. */
  lastOffset: bigint;
  isAborted: boolean;
}

/** What an append does to the state, applied once the log took it. */
export interface ProducerAppend {
  updated: Map<bigint, ProducerStateEntry>;
  /** In log order. */
  events: ({ kind: 'begin'; producerId: bigint; firstOffset: bigint } | { kind: 'end'; txn: CompletedTxn })[];
}

/** The exact retry of a batch still cached: answer with its original offsets, append nothing. */
export interface DuplicateBatch {
  duplicate: BatchMetadata;
}

/** A stored entry as the producer state sees it: its bytes and the offsets it was given. */
export interface ProducerBatchSource {
  buf: Buffer;
  magic: number;
  firstOffset: bigint;
  lastOffset: bigint;
}

/** Kafka's inSequence: the next sequence after lastSeq, wrapping from int32 max to 0. */
export function inSequence(lastSeq: number, nextSeq: number): boolean {
  return nextSeq === lastSeq + 1 || (nextSeq === 0 && lastSeq === INT32_MAX);
}

/** Last sequence of a batch: base + delta, wrapping past int32 max as Kafka does. */
export function lastSequenceOf(baseSeq: number, lastOffsetDelta: number): number {
  if (baseSeq < 0) return -1;
  return (baseSeq + lastOffsetDelta) % (INT32_MAX + 1);
}

function emptyEntry(producerId: bigint): ProducerStateEntry {
  return {
    producerId,
    producerEpoch: NO_PRODUCER_EPOCH,
    batches: [],
    lastTimestamp: -1n,
    coordinatorEpoch: -1,
    currentTxnFirstOffset: null,
  };
}

function copyEntry(e: ProducerStateEntry): ProducerStateEntry {
  return { ...e, batches: e.batches.slice() };
}

function fail(errorCode: number, message: string): LogError {
  return new LogError(errorCode, message);
}

/** The epoch an entry moves to; a new epoch forgets the batches of the old one. */
function setEpoch(e: ProducerStateEntry, epoch: number): void {
  if (e.producerEpoch !== epoch) {
    e.producerEpoch = epoch;
    e.batches = [];
  }
}

/** What an unused manager reads (never written: the maps are made on first write). */
const NO_PRODUCERS: ReadonlyMap<bigint, ProducerStateEntry> = new Map();
const NO_TXNS: ReadonlyMap<bigint, bigint> = new Map();

export class ProducerStateManager {
  /**
   * Producer id → state, and the open transactions on this partition (producer id → first
   * offset): made on first write, as most partitions of a wide topic never see a producer id and
   * two empty Maps cost a log ~400 bytes of heap.
   */
  private writableProducers: Map<bigint, ProducerStateEntry> | null = null;
  private writableOngoing: Map<bigint, bigint> | null = null;
  /** Completed transactions whose marker is not yet below the high watermark (with data here). */
  private unreplicated: CompletedTxn[] = [];
  private cachedFirstUnstable: bigint | null | undefined = undefined;

  constructor(private readonly where: string) {}

  get producers(): ReadonlyMap<bigint, ProducerStateEntry> {
    return this.writableProducers ?? NO_PRODUCERS;
  }
  private get ongoing(): ReadonlyMap<bigint, bigint> {
    return this.writableOngoing ?? NO_TXNS;
  }
  private producersForWrite(): Map<bigint, ProducerStateEntry> {
    return (this.writableProducers ??= new Map<bigint, ProducerStateEntry>());
  }
  private ongoingForWrite(): Map<bigint, bigint> {
    return (this.writableOngoing ??= new Map<bigint, bigint>());
  }

  get size(): number {
    return this.producers.size;
  }

  get hasOngoing(): boolean {
    return this.ongoing.size > 0;
  }

  /**
   * Checks the producer batches among `entries` (offsets already assigned) against the state. Returns
   * null when none carries a producer id, a DuplicateBatch for an exact client retry, else the
   * changes to apply. Throws LogError: INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER,
   * INVALID_TXN_STATE, TRANSACTION_COORDINATOR_FENCED.
   */
  analyze(entries: readonly ProducerBatchSource[], origin: AppendOrigin): ProducerAppend | DuplicateBatch | null {
    let plan: ProducerAppend | null = null;
    for (const e of entries) {
      if (e.magic !== 2) continue;
      const b = e.buf;
      // no producer (-1): the high word is negative; checked without allocating a bigint
      if (b.readInt32BE(BatchField.PRODUCER_ID) < 0) continue;
      const producerId = int64At(b, BatchField.PRODUCER_ID);
      const attributes = b.readInt16BE(BatchField.ATTRIBUTES);
      const epoch = b.readInt16BE(BatchField.PRODUCER_EPOCH);
      const isControl = (attributes & BatchAttribute.CONTROL) !== 0;
      const isTransactional = (attributes & BatchAttribute.TRANSACTIONAL) !== 0;
      const maxTimestamp = int64At(b, BatchField.MAX_TIMESTAMP);
      const current = this.producers.get(producerId);
      if (origin === AppendOrigin.CLIENT && !isControl && current !== undefined && current.producerEpoch === epoch) {
        const firstSeq = b.readInt32BE(BatchField.BASE_SEQUENCE);
        const lastSeq = lastSequenceOf(firstSeq, b.readInt32BE(BatchField.LAST_OFFSET_DELTA));
        const dup = current.batches.find((m) => m.firstSeq === firstSeq && m.lastSeq === lastSeq);
        if (dup !== undefined) return { duplicate: dup };
      }
      plan ??= { updated: new Map(), events: [] };
      let updated = plan.updated.get(producerId);
      if (updated === undefined) {
        updated = current === undefined ? emptyEntry(producerId) : copyEntry(current);
        plan.updated.set(producerId, updated);
      }
      if (isControl) {
        const txn = this.analyzeMarker(e, producerId, epoch, updated, origin);
        if (txn !== null) plan.events.push({ kind: 'end', txn });
        updated.lastTimestamp = maxTimestamp;
        continue;
      }
      this.checkEpoch(producerId, epoch, updated, origin, e.firstOffset);
      const firstSeq = b.readInt32BE(BatchField.BASE_SEQUENCE);
      const lastSeq = lastSequenceOf(firstSeq, b.readInt32BE(BatchField.LAST_OFFSET_DELTA));
      if (origin === AppendOrigin.CLIENT) this.checkSequence(producerId, epoch, firstSeq, current, updated, e.firstOffset);
      setEpoch(updated, epoch);
      updated.batches.push({ firstSeq, lastSeq, firstOffset: e.firstOffset, lastOffset: e.lastOffset, timestamp: maxTimestamp });
      if (updated.batches.length > NUM_BATCHES_TO_RETAIN) updated.batches.shift();
      updated.lastTimestamp = maxTimestamp;
      if (updated.currentTxnFirstOffset !== null && !isTransactional) {
        throw fail(
          ErrorCode.INVALID_TXN_STATE,
          `producer ${producerId} has a transaction open on ${this.where} and sent a non-transactional batch at offset ${e.firstOffset}`,
        );
      }
      if (updated.currentTxnFirstOffset === null && isTransactional) {
        updated.currentTxnFirstOffset = e.firstOffset;
        plan.events.push({ kind: 'begin', producerId, firstOffset: e.firstOffset });
      }
    }
    return plan;
  }

  private checkEpoch(producerId: bigint, epoch: number, updated: ProducerStateEntry, origin: AppendOrigin, offset: bigint): void {
    if (epoch >= updated.producerEpoch || origin === AppendOrigin.REPLICATION) return;
    throw fail(
      ErrorCode.INVALID_PRODUCER_EPOCH,
      `epoch ${epoch} of producer ${producerId} at offset ${offset} in ${this.where} is older than the last seen epoch ${updated.producerEpoch}`,
    );
  }

  private checkSequence(
    producerId: bigint,
    epoch: number,
    firstSeq: number,
    current: ProducerStateEntry | undefined,
    updated: ProducerStateEntry,
    offset: bigint,
  ): void {
    if (epoch !== updated.producerEpoch) {
      if (firstSeq !== 0 && updated.producerEpoch !== NO_PRODUCER_EPOCH) {
        throw fail(
          ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
          `new epoch ${epoch} of producer ${producerId} at offset ${offset} in ${this.where} starts at sequence ${firstSeq}, not 0`,
        );
      }
      return;
    }
    // an unknown producer (state expired, deleted or never seen) may continue at any sequence
    if (current === undefined || current.producerEpoch === NO_PRODUCER_EPOCH) return;
    const lastSeq = updated.batches[updated.batches.length - 1]?.lastSeq ?? -1;
    if (!inSequence(lastSeq, firstSeq)) {
      throw fail(
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        `out of order sequence ${firstSeq} of producer ${producerId} at offset ${offset} in ${this.where}: expected ${lastSeq === INT32_MAX ? 0 : lastSeq + 1}`,
      );
    }
  }

  /** A COMMIT/ABORT marker: epoch and coordinator-epoch checks, then the transaction it ends. */
  private analyzeMarker(
    e: ProducerBatchSource,
    producerId: bigint,
    epoch: number,
    updated: ProducerStateEntry,
    origin: AppendOrigin,
  ): CompletedTxn | null {
    const record = RecordBatch.at(e.buf).records({ maxOutput: e.buf.length })[0];
    if (record === undefined) return null; // an empty control batch: the transaction was cleaned away
    const type = readControlRecordKey(record.key).type;
    if (type !== ControlRecordType.ABORT && type !== ControlRecordType.COMMIT) return null;
    const { coordinatorEpoch } = readEndTxnMarker(record.value);
    this.checkEpoch(producerId, epoch, updated, origin, e.firstOffset);
    if (updated.coordinatorEpoch > coordinatorEpoch && origin !== AppendOrigin.REPLICATION) {
      throw fail(
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
        `marker for producer ${producerId} in ${this.where} has coordinator epoch ${coordinatorEpoch}, older than ${updated.coordinatorEpoch}`,
      );
    }
    const txn: CompletedTxn = {
      producerId,
      firstOffset: updated.currentTxnFirstOffset,
      lastOffset: e.firstOffset,
      isAborted: type === ControlRecordType.ABORT,
    };
    setEpoch(updated, epoch);
    updated.coordinatorEpoch = coordinatorEpoch;
    updated.currentTxnFirstOffset = null;
    return txn;
  }

  /**
   * Commits an analyzed append. Returns the aborted transactions to index (with their
   * lastStableOffset), in marker order.
   */
  apply(plan: ProducerAppend, highWatermark: bigint): AbortedTxn[] {
    if (plan.updated.size > 0) {
      const producers = this.producersForWrite();
      for (const [pid, entry] of plan.updated) producers.set(pid, entry);
    }
    const aborted: AbortedTxn[] = [];
    for (const ev of plan.events) {
      this.cachedFirstUnstable = undefined;
      if (ev.kind === 'begin') {
        this.ongoingForWrite().set(ev.producerId, ev.firstOffset);
        continue;
      }
      const txn = ev.txn;
      this.writableOngoing?.delete(txn.producerId);
      if (txn.firstOffset === null) continue;
      if (txn.lastOffset >= highWatermark) this.unreplicated.push(txn);
      if (txn.isAborted) {
        const open = this.firstOngoingOffset();
        aborted.push({
          producerId: txn.producerId,
          firstOffset: txn.firstOffset,
          lastOffset: txn.lastOffset,
          lastStableOffset: open ?? txn.lastOffset + 1n,
        });
      }
    }
    return aborted;
  }

  private firstOngoingOffset(): bigint | null {
    let min: bigint | null = null;
    for (const o of this.ongoing.values()) if (min === null || o < min) min = o;
    return min;
  }

  /** The high watermark moved: completed transactions below it are stable now. */
  onHighWatermark(highWatermark: bigint): void {
    if (this.unreplicated.length === 0) return;
    const keep = this.unreplicated.filter((t) => t.lastOffset >= highWatermark);
    if (keep.length !== this.unreplicated.length) {
      this.unreplicated = keep;
      this.cachedFirstUnstable = undefined;
    }
  }

  /** First offset of the earliest transaction not yet stable, or null. */
  firstUnstableOffset(): bigint | null {
    if (this.cachedFirstUnstable !== undefined) return this.cachedFirstUnstable;
    let min = this.firstOngoingOffset();
    for (const t of this.unreplicated) if (t.firstOffset !== null && (min === null || t.firstOffset < min)) min = t.firstOffset;
    this.cachedFirstUnstable = min;
    return min;
  }

  /** Drops producers idle for `expirationMs` (by their last batch timestamp) with no open transaction. */
  expire(now: number, expirationMs: number): number {
    let n = 0;
    const limit = BigInt(now - expirationMs);
    const producers = this.writableProducers;
    if (producers === null) return 0;
    for (const [pid, e] of producers) {
      if (e.currentTxnFirstOffset === null && e.lastTimestamp <= limit) {
        producers.delete(pid);
        n++;
      }
    }
    return n;
  }

  /** Replaces the whole state (a snapshot was loaded). */
  load(entries: Iterable<ProducerStateEntry>): void {
    this.writableProducers = null;
    this.writableOngoing = null;
    this.unreplicated = [];
    this.cachedFirstUnstable = undefined;
    for (const e of entries) {
      this.producersForWrite().set(e.producerId, e);
      if (e.currentTxnFirstOffset !== null) this.ongoingForWrite().set(e.producerId, e.currentTxnFirstOffset);
    }
  }
}
