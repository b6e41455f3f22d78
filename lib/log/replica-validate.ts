/**
 * Checks of a follower append (Kafka's analyzeAndValidateRecords for REPLICATION): the bytes are
 * the leader's entries as it stored them, so nothing is assigned or rewritten. Header level like a
 * leader append (length, magic, CRC, codec); compressed magic 0/1 wrappers are opened, as the
 * leader path opens them, because their first offset is only known from the inner messages. Not
 * checked, as Kafka's follower does not: timestamps against the clock, max.message.bytes (the
 * leader accepted the entry under its config), control batches; nor the total against
 * segment.bytes (a fetch response may hold many entries: the follower rolls between them).
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import {
  COMPRESSION_CODEC_MASK,
  type LegacyMessage,
  MessageField,
  decompress,
  isCompressionCodec,
  logEntries,
  scanMessageSet,
} from '../../protocol/records/index.js';
import type { AssignedEntry } from './assign-offsets.js';
import { LogError } from './errors.js';
import type { LogConfig } from './log-config.js';
import { decompressLimit, fromProtocolError } from './validator.js';

export interface ReplicatedRecords {
  /** The entries as stored by the leader, with their offsets; uncompressed magic 0/1 messages form runs. */
  entries: AssignedEntry[];
  /** Offsets the entries take (lastOffset + 1 - firstOffset of the whole append). */
  recordCount: number;
  /** Bytes taken: a partial entry at the end (a fetch response cut at its size limit) is left out. */
  bytes: number;
}

function refuse(message: string): LogError {
  return new LogError(ErrorCode.UNKNOWN_SERVER_ERROR, message);
}

/**
 * The entries of `records` for a follower whose log ends at `logEndOffset`. The first must start
 * there, and every later one after the one before it; otherwise (and for bytes that are not
 * entries) a LogError, with nothing changed.
 */
export function validateReplicated(records: Buffer, config: LogConfig, logEndOffset: bigint): ReplicatedRecords {
  const entries: AssignedEntry[] = [];
  let next = logEndOffset;
  let bytes = 0;
  let run: { start: number; first: bigint; max: bigint; maxAt: bigint; magic: 0 | 1 } | null = null;
  const endRun = (end: number): void => {
    if (run === null) return;
    entries.push({
      buf: records.subarray(run.start, end),
      magic: run.magic,
      firstOffset: run.first,
      lastOffset: next - 1n,
      maxTimestamp: run.max,
      partitionLeaderEpoch: -1,
      runOffsetOfMaxTimestamp: run.maxAt,
    });
    run = null;
  };
  const place = (first: bigint, last: bigint, at: number): void => {
    if (first !== next) {
      const what = entries.length === 0 && run === null ? `the log end offset ${logEndOffset}` : `the previous entry's end ${next}`;
      throw refuse(`replicated entry at position ${at} starts at offset ${first}, not at ${what}`);
    }
    if (last < first) throw refuse(`replicated entry at position ${at} has last offset ${last} below its first ${first}`);
    next = last + 1n;
  };
  try {
    for (const e of logEntries(records)) {
      if (e.kind === 'partial') break; // as Kafka's follower: a cut-off tail is fetched again
      if (e.kind === 'batch') {
        endRun(e.start);
        const b = e.batch;
        b.validate();
        if (!isCompressionCodec(b.compression))
          throw new LogError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `unknown codec ${b.compression}`);
        if (b.lastOffsetDelta < 0) throw refuse(`replicated batch at position ${e.start} has lastOffsetDelta ${b.lastOffsetDelta}`);
        place(b.baseOffset, b.lastOffset, e.start);
        const buf = b.bytes;
        entries.push({
          buf,
          magic: 2,
          firstOffset: b.baseOffset,
          lastOffset: b.lastOffset,
          maxTimestamp: b.maxTimestamp,
          partitionLeaderEpoch: b.partitionLeaderEpoch,
        });
        bytes = b.end;
        continue;
      }
      const m = e.message;
      m.validate();
      if (run !== null && m.magic !== run.magic) endRun(e.start);
      const ts: bigint = m.magic === 1 ? m.timestamp : -1n;
      if (((records[e.start + MessageField.ATTRIBUTES] as number) & COMPRESSION_CODEC_MASK) === 0) {
        place(m.offset, m.offset, e.start);
        if (run === null) run = { start: e.start, first: m.offset, max: ts, maxAt: m.offset, magic: m.magic };
        else if (ts > run.max) {
          run.max = ts;
          run.maxAt = m.offset;
        }
        bytes = m.end;
        continue;
      }
      endRun(e.start);
      const first = m.offset - BigInt(innerCount(m, config)) + 1n;
      place(first, m.offset, e.start);
      entries.push({ buf: m.bytes, magic: m.magic, firstOffset: first, lastOffset: m.offset, maxTimestamp: ts, partitionLeaderEpoch: -1 });
      bytes = m.end;
    }
  } catch (err) {
    throw fromProtocolError(err);
  }
  endRun(bytes);
  return { entries, recordCount: Number(next - logEndOffset), bytes };
}

/** Inner messages of a compressed magic 0/1 wrapper (its offset is that of the last one). */
function innerCount(m: LegacyMessage, config: LogConfig): number {
  if (!isCompressionCodec(m.compression)) throw new LogError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `unknown codec ${m.compression}`);
  const value = m.value;
  if (value === null) throw new LogError(ErrorCode.CORRUPT_MESSAGE, 'compressed message has a null value');
  const data = decompress(m.compression, value, { maxOutput: decompressLimit(config), magic: m.magic });
  const { messages, partial } = scanMessageSet(data);
  if (partial !== null || messages.length === 0) {
    throw new LogError(ErrorCode.CORRUPT_MESSAGE, `compressed message at offset ${m.offset} holds no whole messages`);
  }
  return messages.length;
}
