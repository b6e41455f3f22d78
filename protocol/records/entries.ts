import { GregorErrorCode, ProtocolError } from '../codec/errors.js';
import { BatchField, LOG_OVERHEAD, RecordBatch } from './batch.js';
import type { DecodeRecordsOptions, PartialTail } from './batch.js';
import { LegacyMessage, MESSAGE_OVERHEAD } from './message-set.js';
import type { Record } from './records.js';

/**
 * Log entries of any format in one buffer. A log (and so a fetch response) can hold v2 batches
 * after older message sets once a topic's format was upgraded; every entry starts with offset
 * int64 + size int32 and has its magic at byte 16, so one walk handles both.
 */
export type LogEntry =
  | { kind: 'batch'; start: number; batch: RecordBatch }
  | { kind: 'message'; start: number; message: LegacyMessage }
  | { kind: 'partial'; start: number; partial: PartialTail };

/** Yields each entry in `buf[start, end)`; a cut-short last entry is yielded as `partial`. */
export function* logEntries(buf: Buffer, start = 0, end = buf.length): Generator<LogEntry, void, undefined> {
  const view = end === buf.length ? buf : buf.subarray(0, end);
  let p = start;
  while (p < end) {
    const available = end - p;
    const size = available >= LOG_OVERHEAD ? view.readInt32BE(p + BatchField.BATCH_LENGTH) : -1;
    if (available >= LOG_OVERHEAD && size < MESSAGE_OVERHEAD[0]) {
      throw new ProtocolError(GregorErrorCode.CORRUPT_RECORD, `entry size ${size} at position ${p} is below the minimum`);
    }
    if (available <= BatchField.MAGIC || LOG_OVERHEAD + size > available) {
      yield { kind: 'partial', start: p, partial: { start: p, available, declaredSize: size < 0 ? null : LOG_OVERHEAD + size } };
      return;
    }
    const magic = view.readInt8(p + BatchField.MAGIC);
    if (magic === 2) {
      const batch = RecordBatch.at(view, p);
      yield { kind: 'batch', start: p, batch };
      p = batch.end;
    } else if (magic === 0 || magic === 1) {
      const message = LegacyMessage.at(view, p);
      yield { kind: 'message', start: p, message };
      p = message.end;
    } else {
      throw new ProtocolError(GregorErrorCode.UNSUPPORTED_MAGIC, `unknown magic ${magic} at position ${p}`);
    }
  }
}

export interface DecodeAllOptions extends DecodeRecordsOptions {
  /** Check batch and message CRCs (default true). */
  checkCrcs?: boolean;
  /** Leave control batches out (default false). */
  skipControl?: boolean;
}

/** Every record of every entry in `buf`, in order, plus the partial tail if any. */
export function decodeRecords(buf: Buffer, opts: DecodeAllOptions): { records: Record[]; partial: PartialTail | null } {
  const records: Record[] = [];
  const check = opts.checkCrcs !== false;
  for (const entry of logEntries(buf)) {
    if (entry.kind === 'partial') return { records, partial: entry.partial };
    if (entry.kind === 'batch') {
      if (check) entry.batch.validate();
      if (opts.skipControl === true && entry.batch.isControl) continue;
      for (const r of entry.batch.records(opts)) records.push(r);
    } else {
      if (check) entry.message.validate();
      for (const r of entry.message.records({ maxOutput: opts.maxOutput, checkCrcs: check })) records.push(r);
    }
  }
  return { records, partial: null };
}
