/**
 * Down-conversion for Fetch v0-3 (Kafka's LogValidator/RecordsUtil down-conversion): stored entries
 * rewritten as magic 0 or 1 message sets for readers that cannot take newer ones, offsets kept.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import {
  CompressionCodec,
  LegacyMessage,
  TimestampType,
  buildMessageSet,
  compress,
  encodeMessage,
  logEntries,
} from '../../protocol/records/index.js';
import type { Record as LogRecord } from '../../protocol/records/index.js';
import { LogError } from './errors.js';
import { fromProtocolError } from './validator.js';
import type { Magic } from './convert.js';

/** Magic a Fetch version reads: v0-1 → 0, v2-3 → 1, v4+ → 2 (stored bytes as they are). */
export function fetchMagic(apiVersion: number): Magic {
  return apiVersion <= 1 ? 0 : apiVersion <= 3 ? 1 : 2;
}

/** Whether any stored entry in `records` has a magic above `toMagic`. */
export function needsDownConversion(records: readonly Buffer[], toMagic: Magic): boolean {
  for (const r of records) if (r.length > 16 && r.readInt8(16) > toMagic) return true;
  return false;
}

/**
 * Kafka's RecordsUtil.downConvert: entries at or below `toMagic` pass unchanged; control batches are
 * dropped; each other batch becomes one magic-0/1 entry set with its codec (one wrapper) or one
 * message per record (uncompressed, where records below `fetchOffset` are trimmed as Kafka does),
 * keeping offsets and timestamps (LogAppendTime batches keep their time), dropping headers.
 */
export function downConvert(data: Buffer, toMagic: 0 | 1, fetchOffset: bigint, maxOutput: number): Buffer {
  const out: Buffer[] = [];
  try {
    for (const e of logEntries(data)) {
      if (e.kind === 'partial') break;
      if (e.kind === 'message') {
        if (e.message.magic <= toMagic) out.push(e.message.bytes);
        else out.push(legacyToMagic0(e.message, fetchOffset, maxOutput));
        continue;
      }
      const b = e.batch;
      if (b.isControl) continue;
      const codec = b.compression;
      let recs = b.records({ maxOutput });
      if (codec === CompressionCodec.NONE) recs = recs.filter((r) => r.offset >= fetchOffset);
      if (recs.length === 0) continue;
      if (codec === CompressionCodec.ZSTD)
        throw new LogError(
          ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
          'zstd-compressed data cannot be down-converted to message format magic 0/1',
        );
      const logAppend = b.timestampType === TimestampType.LOG_APPEND_TIME;
      out.push(buildAtOffsets(recs, toMagic, codec, logAppend ? b.maxTimestamp : null));
    }
  } catch (err) {
    throw fromProtocolError(err);
  }
  return out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
}

/** Magic-1 entry → magic 0 (for Fetch v0-1 readers of data stored at format 1). */
function legacyToMagic0(m: LegacyMessage, fetchOffset: bigint, maxOutput: number): Buffer {
  let recs = m.records({ maxOutput, checkCrcs: false });
  if (!m.isCompressed) recs = recs.filter((r) => r.offset >= fetchOffset);
  if (recs.length === 0) return Buffer.alloc(0);
  return buildAtOffsets(recs, 0, m.compression, null);
}

/** A message set holding `recs` at their own offsets (they are contiguous in what we store). */
function buildAtOffsets(recs: LogRecord[], magic: 0 | 1, codec: number, logAppendTime: bigint | null): Buffer {
  const first = recs[0] as LogRecord;
  const contiguous = recs.every((r, i) => r.offset === first.offset + BigInt(i));
  const inputs = recs.map((r) => ({ key: r.key, value: r.value, timestamp: r.timestamp }));
  const tsOpts = magic === 1 && logAppendTime !== null ? { timestampType: TimestampType.LOG_APPEND_TIME, logAppendTime } : {};
  if (contiguous || codec !== CompressionCodec.NONE) {
    // compacted data can have holes inside a compressed batch: offsets are then rewritten below
    const set = buildMessageSet(inputs, { magic, compression: codec, baseOffset: first.offset, ...tsOpts });
    if (contiguous) return set;
    return withInnerOffsets(set, recs, magic);
  }
  return Buffer.concat(
    recs.map((r) => buildMessageSet([{ key: r.key, value: r.value, timestamp: r.timestamp }], { magic, baseOffset: r.offset, ...tsOpts })),
  );
}

/** Rewrites a wrapper's inner offsets to the records' own (sparse after compaction). */
function withInnerOffsets(set: Buffer, recs: LogRecord[], magic: 0 | 1): Buffer {
  const w = LegacyMessage.at(set, 0);
  const inner = w.innerMessages({ maxOutput: 2 ** 30, checkCrcs: false });
  const last = recs[recs.length - 1] as LogRecord;
  inner.forEach((im, i) =>
    im.setOffset(magic === 0 ? (recs[i] as LogRecord).offset : (recs[i] as LogRecord).offset - last.offset + BigInt(inner.length - 1)),
  );
  const data = inner[0]?.buf ?? Buffer.alloc(0);
  return encodeMessage(last.offset, magic, w.attributes, w.timestamp, w.key, compress(w.compression, data, { magic }));
}
