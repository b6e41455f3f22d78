/**
 * What cleaning keeps of one stored entry (Kafka's Cleaner.cleanInto and its record/batch
 * retention rules): a record stays when its key's latest offset in the map is its own (or the map
 * did not reach it); a tombstone stays until its batch's delete horizon (KIP-534: set, as
 * now + delete.retention.ms, by the first cleaning that keeps it); aborted transactional data goes;
 * a COMMIT/ABORT marker goes once its transaction's data is gone and its horizon passed; a
 * producer's last batch stays, empty if need be, so its producer state survives a reload. Kept
 * records keep their offsets and timestamps; a batch that loses records is rebuilt with its
 * original attributes and codec (its CRC recomputed); one that loses none is copied as it is.
 */
import { TimestampType, buildRecordBatch, buildRecordBatchOf } from '../../../protocol/records/batch.js';
import type { RecordBatch } from '../../../protocol/records/batch.js';
import { CompressionCodec } from '../../../protocol/records/compression.js';
import { ControlRecordType, readControlRecordKey } from '../../../protocol/records/control.js';
import type { LegacyMessage } from '../../../protocol/records/message-set.js';
import type { Record } from '../../../protocol/records/records.js';
import type { AbortedTxn } from '../transaction-index.js';
import type { OffsetMap } from './offset-map.js';

/**
 * Transactions met while walking the section in offset order: which producers are inside an
 * aborted transaction (from the aborted-transaction index), and which committed ones had data.
 */
export class TxnTracker {
  private readonly aborted: AbortedTxn[];
  private next = 0;
  /** producer → whether data of its current aborted transaction was met in this walk */
  private readonly ongoingAborted = new Map<bigint, { observed: boolean }>();
  private readonly ongoingCommitted = new Set<bigint>();

  constructor(aborted: readonly AbortedTxn[]) {
    this.aborted = [...aborted].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  }

  private consumeUpTo(offset: bigint): void {
    for (let a = this.aborted[this.next]; a !== undefined && a.firstOffset <= offset; a = this.aborted[++this.next]) {
      this.ongoingAborted.set(a.producerId, { observed: false });
    }
  }

  /** A transactional data batch: true when it belongs to an aborted transaction. */
  onData(batch: RecordBatch): boolean {
    if (!batch.isTransactional) return false;
    this.consumeUpTo(batch.lastOffset);
    const a = this.ongoingAborted.get(batch.producerId);
    if (a !== undefined) {
      a.observed = true;
      return true;
    }
    this.ongoingCommitted.add(batch.producerId);
    return false;
  }

  /** A marker: true when the marker may go (no data of its transaction was met: it is gone already). */
  onMarker(producerId: bigint, lastOffset: bigint, type: number): boolean {
    this.consumeUpTo(lastOffset);
    if (type === ControlRecordType.ABORT) {
      const a = this.ongoingAborted.get(producerId);
      this.ongoingAborted.delete(producerId);
      return a === undefined || !a.observed;
    }
    if (type === ControlRecordType.COMMIT) return !this.ongoingCommitted.delete(producerId);
    return false;
  }
}

export interface FilterContext {
  map: OffsetMap;
  /** Records at or above it were not mapped: they stay. */
  endOffset: bigint;
  now: number;
  deleteRetentionMs: number;
  /** Magic 0/1 tombstones stay while their segment is younger than delete.retention.ms. */
  retainLegacyDeletes: boolean;
  producerLastOffsets: ReadonlyMap<bigint, bigint>;
  maxDecompressed: number;
  txns: TxnTracker;
  /** The earliest delete horizon of what was kept, else null. */
  nextHorizon: number | null;
  recordsRead: number;
  recordsRetained: number;
}

function noteHorizon(ctx: FilterContext, horizon: number): void {
  if (ctx.nextHorizon === null || horizon < ctx.nextHorizon) ctx.nextHorizon = horizon;
}

/** Whether a keyed record survives (tombstones: `retainDeletes`). Keyless records never do (Kafka drops them). */
function keep(ctx: FilterContext, r: Record, retainDeletes: boolean): boolean {
  if (r.key === null) return false;
  if (r.offset >= ctx.endOffset) return true;
  if (r.offset < ctx.map.get(r.key)) return false;
  return r.value !== null || retainDeletes;
}

/** The cleaned form of a v2 batch: the bytes to write (the batch itself when unchanged), or null to drop it. */
export function cleanBatch(batch: RecordBatch, ctx: FilterContext): Buffer | null {
  const horizon = batch.hasDeleteHorizon ? Number(batch.baseTimestamp) : null;
  if (batch.isControl) {
    const records = batch.records({ maxOutput: ctx.maxDecompressed });
    const type = records[0] === undefined ? -1 : readControlRecordKey(records[0].key).type;
    const canDiscard = ctx.txns.onMarker(batch.producerId, batch.lastOffset, type);
    ctx.recordsRead += records.length;
    if (canDiscard && horizon !== null && horizon <= ctx.now) return null;
    ctx.recordsRetained += records.length;
    if (!canDiscard || horizon !== null) {
      if (horizon !== null) noteHorizon(ctx, horizon);
      return batch.bytes;
    }
    const h = ctx.now + ctx.deleteRetentionMs;
    noteHorizon(ctx, h);
    return rebuild(batch, records, h);
  }
  const lastOfProducer = batch.producerId >= 0n && ctx.producerLastOffsets.get(batch.producerId) === batch.lastOffset;
  const aborted = ctx.txns.onData(batch);
  let records: Record[] = [];
  let retained: Record[] = [];
  if (aborted) ctx.recordsRead += batch.recordCount;
  else {
    records = batch.records({ maxOutput: ctx.maxDecompressed });
    ctx.recordsRead += records.length;
    const retainDeletes = horizon === null || ctx.now < horizon;
    retained = records.filter((r) => keep(ctx, r, retainDeletes));
  }
  ctx.recordsRetained += retained.length;
  if (retained.length === 0 && !lastOfProducer) return null;
  const tombstones = retained.some((r) => r.value === null);
  if (tombstones && horizon !== null) noteHorizon(ctx, horizon);
  const setHorizon = tombstones && horizon === null;
  if (retained.length === records.length && !aborted && !setHorizon) return batch.bytes;
  const h = setHorizon ? ctx.now + ctx.deleteRetentionMs : null;
  if (h !== null) noteHorizon(ctx, h);
  return rebuild(batch, retained, h);
}

/** The batch rebuilt around `records` (its offsets, attributes, producer fields and codec kept); `horizon` sets KIP-534's delete horizon. */
function rebuild(batch: RecordBatch, records: Record[], horizon: number | null): Buffer {
  const base = batch.baseOffset;
  const logAppend = batch.timestampType === TimestampType.LOG_APPEND_TIME;
  const opts = {
    baseOffset: base,
    partitionLeaderEpoch: batch.partitionLeaderEpoch,
    compression: records.length === 0 ? CompressionCodec.NONE : batch.compression,
    timestampType: batch.timestampType,
    logAppendTime: batch.maxTimestamp,
    isTransactional: batch.isTransactional,
    isControl: batch.isControl,
    hasDeleteHorizon: horizon !== null || batch.hasDeleteHorizon,
    producerId: batch.producerId,
    producerEpoch: batch.producerEpoch,
    baseSequence: batch.baseSequence,
    baseTimestamp: horizon !== null ? BigInt(horizon) : batch.baseTimestamp,
    lastOffsetDelta: batch.lastOffsetDelta,
  };
  if (records.length === 0) {
    const info = {
      records: 0,
      lastOffsetDelta: batch.lastOffsetDelta,
      baseTimestamp: opts.baseTimestamp,
      maxTimestamp: batch.maxTimestamp,
    };
    return buildRecordBatchOf(Buffer.alloc(0), info, opts);
  }
  // a LogAppendTime batch's records carry the batch's time, which maxTimestamp keeps
  const inputs = records.map((r) => ({
    key: r.key,
    value: r.value,
    headers: r.headers,
    timestamp: logAppend ? opts.baseTimestamp : r.timestamp,
  }));
  return buildRecordBatch(inputs, { ...opts, offsetDeltas: records.map((r) => Number(r.offset - base)) });
}

/**
 * A magic 0/1 entry: an uncompressed message stays or goes by the record rules; a compressed
 * wrapper stays whole while any of its inner records would (it is not rewritten).
 */
export function cleanLegacy(msg: LegacyMessage, ctx: FilterContext): Buffer | null {
  const records = msg.records({ maxOutput: ctx.maxDecompressed, checkCrcs: false });
  ctx.recordsRead += records.length;
  const kept = records.filter((r) => keep(ctx, r, ctx.retainLegacyDeletes)).length;
  if (kept === 0) return null;
  ctx.recordsRetained += msg.isCompressed ? records.length : kept;
  return msg.bytes;
}
