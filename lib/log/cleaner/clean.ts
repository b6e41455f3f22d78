/**
 * Cleaning one log (Kafka's Cleaner.doClean): map each key of the dirty section to its latest
 * offset (as far as the offset map's memory reaches), then rewrite the segments from the log's
 * first up to that point, grouped so small segments merge, into `<base>.log.cleaned` files with
 * their indexes. Synchronous file I/O: it runs on a cleaner worker thread (or inline in tests).
 * The main thread swaps the result in (swap.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { RecordBatch } from '../../../protocol/records/batch.js';
import { readControlRecordKey } from '../../../protocol/records/control.js';
import { LegacyMessage } from '../../../protocol/records/message-set.js';
import { GregorLogErrorCode, LogError } from '../errors.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { OffsetIndex, TimeIndex } from '../indexes.js';
import { HEADER_BYTES, LOG_SUFFIX, entryCrcValid, parseEntryHeader, segmentFileName } from '../segment-format.js';
import type { EntryHeader } from '../segment-format.js';
import { TransactionIndex } from '../transaction-index.js';
import type { AbortedTxn } from '../transaction-index.js';
import { TxnTracker, cleanBatch, cleanLegacy } from './filter.js';
import type { FilterContext } from './filter.js';
import type { OffsetMap } from './offset-map.js';
import type { CleanJob, CleanResult, CleanSegmentInfo, CleanedGroup } from './job.js';
import { Throttle } from './throttle.js';

export const CLEANED_SUFFIX = '.cleaned';
export const SWAP_SUFFIX = '.swap';
const INT32_MAX = 2147483647n;
/** The smallest read or write buffer, whatever log.cleaner.io.buffer.size says (a buffer grows to fit a larger entry). */
const MIN_IO_BUFFER = 4096;

/** Corruption met while cleaning: the log is marked uncleanable (the broker keeps serving it). */
export function cleanerCorrupt(message: string): LogError {
  return new LogError(ErrorCode.CORRUPT_MESSAGE, message, GregorLogErrorCode.CORRUPT);
}

interface Entry {
  buf: Buffer;
  off: number;
  h: EntryHeader;
}

/** The entries of a segment file in order, each CRC-checked; `buf` is reused: copy what must outlive the step. */
function* entriesOf(job: CleanJob, seg: CleanSegmentInfo, throttle: Throttle, read: { bytes: number }): Generator<Entry> {
  const file = path.join(job.dir, segmentFileName(seg.baseOffset, LOG_SUFFIX));
  const fd = fs.openSync(file, 'r');
  const bufferBytes = ioBufferBytes(job);
  try {
    let buf = Buffer.allocUnsafe(bufferBytes);
    let start = 0;
    let len = 0;
    const fill = (p: number, need: number): void => {
      if (buf.length < need) buf = Buffer.allocUnsafe(need);
      const want = Math.min(buf.length, seg.size - p);
      let got = 0;
      while (got < want) {
        const n = fs.readSync(fd, buf, got, want - got, p + got);
        if (n === 0) break;
        got += n;
      }
      start = p;
      len = got;
      read.bytes += got;
      throttle.add(got);
    };
    for (let p = 0; p < seg.size;) {
      if (p + HEADER_BYTES > start + len && start + len < seg.size) fill(p, bufferBytes);
      const h = parseEntryHeader(buf, p - start, len - (p - start), p);
      if (h === null) throw cleanerCorrupt(`${file}: entry at position ${p} is cut short`);
      if (typeof h === 'string') throw cleanerCorrupt(`${file}: ${h} at position ${p}`);
      if (p + h.size > seg.size) throw cleanerCorrupt(`${file}: entry at position ${p} of ${h.size} bytes runs past the segment`);
      if (p + h.size > start + len) fill(p, h.size);
      const off = p - start;
      if (!entryCrcValid(buf, off, h.size, h.magic)) throw cleanerCorrupt(`${file}: CRC mismatch at position ${p}`);
      yield { buf, off, h };
      p += h.size;
    }
  } finally {
    fs.closeSync(fd);
  }
}

function ioBufferBytes(job: CleanJob): number {
  return Math.max(MIN_IO_BUFFER, Math.floor(job.ioBufferBytes));
}

/** Kafka's groupSegmentsBySize: consecutive segments whose sum fits segment.bytes, the index sizes and int32 relative offsets. */
export function groupSegments(segs: readonly CleanSegmentInfo[], maxBytes: number, maxIndexBytes: number): CleanSegmentInfo[][] {
  const groups: CleanSegmentInfo[][] = [];
  for (let i = 0; i < segs.length;) {
    const first = segs[i++] as CleanSegmentInfo;
    const g = [first];
    let size = first.size;
    let idx = first.offsetIndexEntries * 8;
    let tidx = first.timeIndexEntries * 12;
    for (let s = segs[i]; s !== undefined; s = segs[++i]) {
      if (size + s.size > maxBytes || idx + s.offsetIndexEntries * 8 > maxIndexBytes || tidx + s.timeIndexEntries * 12 > maxIndexBytes)
        break;
      if (s.nextOffset - 1n - first.baseOffset > INT32_MAX) break;
      g.push(s);
      size += s.size;
      idx += s.offsetIndexEntries * 8;
      tidx += s.timeIndexEntries * 12;
    }
    groups.push(g);
  }
  return groups;
}

/** Maps keys of the dirty section; returns where the map's reach ends (the end of the section when it all fit). */
function buildMap(job: CleanJob, map: OffsetMap, throttle: Throttle, read: { bytes: number }): bigint {
  const txns = new TxnTracker(job.abortedTxns);
  const last = job.segments[job.segments.length - 1];
  const sectionEnd = last === undefined ? job.firstDirtyOffset : last.nextOffset;
  for (const seg of job.segments) {
    if (seg.nextOffset <= job.firstDirtyOffset) continue;
    for (const { buf, off, h } of entriesOf(job, seg, throttle, read)) {
      if (h.lastOffset < job.firstDirtyOffset) continue;
      if (h.magic === 2) {
        const batch = RecordBatch.at(buf, off);
        if (!map.hasRoomFor(batch.recordCount)) return full(map, h.baseOffset);
        if (batch.isControl) {
          const r = batch.records({ maxOutput: job.maxDecompressed })[0];
          if (r !== undefined) txns.onMarker(batch.producerId, batch.lastOffset, readControlRecordKey(r.key).type);
          continue;
        }
        if (txns.onData(batch)) continue;
        for (const r of batch.records({ maxOutput: job.maxDecompressed })) if (r.key !== null) map.put(r.key, r.offset);
      } else {
        const records = LegacyMessage.at(buf, off).records({ maxOutput: job.maxDecompressed, checkCrcs: false });
        if (!map.hasRoomFor(records.length)) return full(map, records[0]?.offset ?? h.baseOffset);
        for (const r of records) if (r.key !== null) map.put(r.key, r.offset);
      }
    }
  }
  return sectionEnd;
}

function full(map: OffsetMap, at: bigint): bigint {
  if (map.size === 0)
    throw new LogError(
      ErrorCode.UNKNOWN_SERVER_ERROR,
      'log.cleaner.dedupe.buffer.size is too small for one batch',
      GregorLogErrorCode.REFUSED,
    );
  return at;
}

/** Cleans the job's section into `.cleaned` files (fsynced); the main thread swaps them in. */
export function cleanLog(job: CleanJob, map: OffsetMap): CleanResult {
  const t0 = performance.now();
  const throttle = new Throttle(job.io);
  const read = { bytes: 0 };
  map.clear();
  const endOffset = buildMap(job, map, throttle, read);
  const bufferUtilization = map.utilization;
  const ctx: FilterContext = {
    map,
    endOffset,
    now: job.now,
    deleteRetentionMs: job.deleteRetentionMs,
    retainLegacyDeletes: true,
    producerLastOffsets: new Map(job.producerLastOffsets),
    maxDecompressed: job.maxDecompressed,
    txns: new TxnTracker(job.abortedTxns),
    nextHorizon: null,
    recordsRead: 0,
    recordsRetained: 0,
  };
  const byMarker = new Map<bigint, AbortedTxn>(job.abortedTxns.map((a) => [a.lastOffset, a]));
  const groups: CleanedGroup[] = [];
  let written = 0;
  const toClean = job.segments.filter((s) => s.baseOffset < endOffset);
  for (const g of groupSegments(toClean, job.segmentBytes, job.segmentIndexBytes)) {
    const group = writeGroup(job, g, ctx, byMarker, throttle, read);
    written += group.size;
    groups.push(group);
  }
  return {
    groups,
    endOffset,
    nextDeleteHorizon: ctx.nextHorizon,
    stats: {
      bytesRead: read.bytes,
      bytesWritten: written,
      recordsRead: ctx.recordsRead,
      recordsRetained: ctx.recordsRetained,
      bufferUtilization,
      elapsedMs: performance.now() - t0,
    },
  };
}

/** The path of a segment file of `base` with `suffix` (`.log`, `.index`, ...) and the cleaner's `extra` suffix. */
export function cleanerFile(dir: string, base: bigint, suffix: string, extra: string): string {
  return path.join(dir, segmentFileName(base, suffix) + extra);
}

function writeGroup(
  job: CleanJob,
  segs: CleanSegmentInfo[],
  ctx: FilterContext,
  byMarker: ReadonlyMap<bigint, AbortedTxn>,
  throttle: Throttle,
  read: { bytes: number },
): CleanedGroup {
  const base = (segs[0] as CleanSegmentInfo).baseOffset;
  const file = (suffix: string): string => cleanerFile(job.dir, base, suffix, CLEANED_SUFFIX);
  const offsetIndex = new OffsetIndex(base, Math.floor(job.segmentIndexBytes / 8));
  const timeIndex = new TimeIndex(base, Math.floor(job.segmentIndexBytes / 12));
  const txnIndex = new TransactionIndex();
  const fd = fs.openSync(file('.log'), 'w');
  let out = Buffer.allocUnsafe(ioBufferBytes(job));
  let used = 0;
  let position = 0;
  let sinceIndex = 0;
  let maxTs = -1n;
  let offsetOfMaxTs = -1n;
  let nextOffset = base;
  const flush = (): void => {
    for (let done = 0; done < used;) done += fs.writeSync(fd, out, done, used - done, position - used + done);
    throttle.add(used);
    used = 0;
  };
  try {
    for (const seg of segs) {
      ctx.retainLegacyDeletes = seg.lastModified > job.now - job.deleteRetentionMs;
      for (const { buf, off, h } of entriesOf(job, seg, throttle, read)) {
        const kept = h.magic === 2 ? cleanBatch(RecordBatch.at(buf, off), ctx) : cleanLegacy(LegacyMessage.at(buf, off), ctx);
        if (kept === null) continue;
        const k = parseEntryHeader(kept, 0, kept.length, position);
        if (k === null || typeof k === 'string') throw new Error(`cleaned entry at ${h.baseOffset} is malformed: ${String(k)}`);
        if (k.maxTimestamp > maxTs) {
          maxTs = k.maxTimestamp;
          offsetOfMaxTs = k.lastOffset;
        }
        if (sinceIndex > job.indexIntervalBytes) {
          offsetIndex.append(k.lastOffset, position);
          timeIndex.maybeAppend(maxTs, offsetOfMaxTs);
          sinceIndex = 0;
        }
        sinceIndex += kept.length;
        nextOffset = k.lastOffset + 1n;
        if (h.magic === 2 && RecordBatch.at(kept).isControl) {
          const a = byMarker.get(k.lastOffset);
          if (a !== undefined) txnIndex.append(a);
        }
        if (used + kept.length > out.length) {
          flush();
          if (kept.length > out.length) out = Buffer.allocUnsafe(kept.length);
        }
        kept.copy(out, used);
        used += kept.length;
        position += kept.length;
      }
    }
    flush();
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  if (maxTs >= 0n) timeIndex.maybeAppend(maxTs, offsetOfMaxTs, true);
  writeSynced(file('.index'), offsetIndex.serialize(0));
  writeSynced(file('.timeindex'), timeIndex.serialize(0));
  if (txnIndex.length > 0) writeSynced(file('.txnindex'), txnIndex.serialize(0));
  return { baseOffset: base, oldBases: segs.map((s) => s.baseOffset), size: position, nextOffset, hasTxnIndex: txnIndex.length > 0 };
}

function writeSynced(file: string, data: Buffer): void {
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
