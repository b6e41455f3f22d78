/**
 * The on-disk format of a segment as the log reads it: file names, and the header of each stored
 * entry (a v2 batch or a magic 0/1 message) with its CRC check, used by scans and recovery.
 */
import { crc32c } from '../../protocol/records/native.js';
import { crc32Range } from '../../protocol/records/crc32.js';
import { BatchField, LOG_OVERHEAD, MESSAGE_OVERHEAD, MessageField, RECORD_BATCH_OVERHEAD } from '../../protocol/records/index.js';
import { int64At } from '../../protocol/codec/int64.js';

export const LOG_SUFFIX = '.log';
export const INDEX_SUFFIX = '.index';
export const TIME_INDEX_SUFFIX = '.timeindex';
export const TXN_INDEX_SUFFIX = '.txnindex';
export const DELETED_SUFFIX = '.deleted';
/** Bytes of an entry needed to know its offsets and timestamps (the whole v2 header). */
export const HEADER_BYTES = RECORD_BATCH_OVERHEAD;

export function segmentFileName(baseOffset: bigint, suffix: string): string {
  return baseOffset.toString().padStart(20, '0') + suffix;
}

/** What the header of a stored entry (v2 batch or magic 0/1 message) says. */
export interface EntryHeader {
  position: number;
  size: number;
  magic: number;
  /** v2: baseOffset; magic 0/1: the message offset (for a wrapper, its last inner offset). */
  baseOffset: bigint;
  lastOffset: bigint;
  maxTimestamp: bigint;
  partitionLeaderEpoch: number;
}

/**
 * Parses the entry header at `p` (`avail` bytes present from p). Returns null when more bytes are
 * needed, or a string describing why the bytes cannot be an entry.
 */
export function parseEntryHeader(buf: Buffer, p: number, avail: number, position: number): EntryHeader | null | string {
  if (avail < LOG_OVERHEAD) return null;
  const length = buf.readInt32BE(p + BatchField.BATCH_LENGTH);
  if (avail <= BatchField.MAGIC) return null;
  const magic = buf.readInt8(p + BatchField.MAGIC);
  if (magic === 2) {
    if (length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) return `batch length ${length} below the minimum`;
    if (avail < HEADER_BYTES) return null;
    const base = int64At(buf, p);
    const delta = buf.readInt32BE(p + BatchField.LAST_OFFSET_DELTA);
    if (delta < 0) return `negative lastOffsetDelta ${delta}`;
    return {
      position,
      size: LOG_OVERHEAD + length,
      magic,
      baseOffset: base,
      lastOffset: base + BigInt(delta),
      maxTimestamp: int64At(buf, p + BatchField.MAX_TIMESTAMP),
      partitionLeaderEpoch: buf.readInt32BE(p + BatchField.PARTITION_LEADER_EPOCH),
    };
  }
  if (magic === 0 || magic === 1) {
    if (length < MESSAGE_OVERHEAD[magic]) return `message size ${length} below the minimum`;
    if (magic === 1 && avail < MessageField.TIMESTAMP + 8) return null;
    const offset = int64At(buf, p);
    const ts = magic === 1 ? int64At(buf, p + MessageField.TIMESTAMP) : -1n;
    return {
      position,
      size: LOG_OVERHEAD + length,
      magic,
      baseOffset: offset,
      lastOffset: offset,
      maxTimestamp: ts,
      partitionLeaderEpoch: -1,
    };
  }
  return `unknown magic ${magic}`;
}

/** Checks the CRC of a whole stored entry. */
export function entryCrcValid(buf: Buffer, p: number, size: number, magic: number): boolean {
  if (magic === 2) return crc32c(buf.subarray(p + BatchField.ATTRIBUTES, p + size)) >>> 0 === buf.readUInt32BE(p + BatchField.CRC);
  return crc32Range(buf, p + MessageField.MAGIC, p + size) === buf.readUInt32BE(p + MessageField.CRC);
}
