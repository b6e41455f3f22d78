/**
 * The live tail's reading of a Fetch answer: the records at or after a position, where the batch
 * that holds the position is often a producer's whole batch (at full rate librdkafka's batches
 * hold ~1,000 records of 1 KB) and the tail wants its newest few dozen. decodePartition (the
 * client's decoder, used by the message browser) checks each batch's CRC and makes an object for
 * every record; here the records before the position are passed over by their length prefixes
 * (no objects), and no CRC is computed: the bytes are the broker's own log, whose batches were
 * checked when appended and again on recovery after an unclean shutdown. Compressed batches are
 * decompressed and decoded whole; a partition holding magic 0/1 message sets goes to
 * decodePartition.
 */
import { batchRecord, decodePartition, type FetchedRecord } from '../client/fetcher.js';
import type { FetchResponsePartitionData } from '../../protocol/generated/fetch.js';
import { Reader } from '../../protocol/codec/reader.js';
import { CompressionCodec, logEntries, readRecord, type Record, type RecordBatch, TimestampType } from '../../protocol/records/index.js';

/** decompressed bytes a batch may hold at most (as the browser's reads) */
const MAX_DECOMPRESSED = 256 << 20;

/** The records of `data` at or after `position`, and the offset after the last whole batch. */
export function recordsFrom(
  topic: string,
  data: FetchResponsePartitionData,
  position: bigint,
  partitionMaxBytes: number,
): { records: FetchedRecord[]; nextOffset: bigint } {
  const records: FetchedRecord[] = [];
  let next = position;
  const buf = data.records ?? Buffer.alloc(0);
  for (const e of logEntries(buf)) {
    if (e.kind === 'partial') break;
    if (e.kind === 'message')
      return decodePartition(topic, data, position, { isolationLevel: 0, maxDecompressed: MAX_DECOMPRESSED, partitionMaxBytes });
    const b = e.batch;
    next = b.nextOffset;
    if (b.isControl || b.lastOffset < position) continue;
    for (const r of batchRecordsFrom(b, position)) if (r.offset >= position) records.push(batchRecord(topic, data.partitionIndex, b, r));
  }
  return { records, nextOffset: next };
}

/**
 * The records of a v2 batch from the first one at or after `position` (offsets ascend within a
 * batch); an uncompressed batch's earlier records are passed over, a compressed batch is decoded whole.
 */
function batchRecordsFrom(b: RecordBatch, position: bigint): Record[] {
  if (b.compression !== CompressionCodec.NONE || position <= b.baseOffset) return b.records({ maxOutput: MAX_DECOMPRESSED });
  const data = b.recordsBytes;
  const wanted = Number(position - b.baseOffset); // the first offset delta wanted (< 2^31: the batch holds it)
  const count = b.recordCount;
  let p = 0;
  let i = 0;
  for (; i < count; i++) {
    // length, attributes, timestampDelta, offsetDelta: varints in zigzag form
    const length = varintAt(data, p);
    const body = cursor;
    if (length < 0 || body + length > data.length) return b.records({ maxOutput: MAX_DECOMPRESSED }); // malformed: the checked path says why
    const delta = varintAt(data, skipVarint(data, body + 1));
    if (delta >= wanted) break;
    p = body + length;
  }
  const r = new Reader(data, p);
  const logAppendTime = b.timestampType === TimestampType.LOG_APPEND_TIME ? b.maxTimestamp : null;
  const out: Record[] = [];
  for (; i < count; i++) {
    const rec = readRecord(r, b.baseOffset, b.baseTimestamp, logAppendTime);
    if (r.error !== undefined) throw r.error;
    out.push(rec);
  }
  return out;
}

/** where the last varintAt stopped */
let cursor = 0;

/** The zigzag varint at `p` (up to 5 bytes); sets `cursor` after it. -1 past the end or for a longer one. */
function varintAt(buf: Buffer, p: number): number {
  let u = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    const byte = buf[p++];
    if (byte === undefined) return -1;
    u |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      cursor = p;
      return (u >>> 1) ^ -(u & 1);
    }
  }
  return -1;
}

/** The position after the varint (or varlong) at `p`. */
function skipVarint(buf: Buffer, p: number): number {
  while (p < buf.length && ((buf[p] as number) & 0x80) !== 0) p++;
  return p + 1;
}
