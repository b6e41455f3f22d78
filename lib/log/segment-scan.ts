/** Recovery's walk over a segment's file: each entry checked (structure, offsets, optionally its CRC) and indexed. */
import { entryCrcValid, type EntryHeader, HEADER_BYTES, parseEntryHeader } from './segment-format.js';
import { markVerified } from './verified-ranges.js';

const SCAN_CHUNK = 1 << 20;

export interface ScanResult {
  /** Position after the last valid entry. */
  validEnd: number;
  /** Why scanning stopped before the end of the file, if it did. */
  problem: string | null;
  entries: EntryHeader[];
}

/** What a scan reads and feeds: lib/log/segment.ts's LogSegment. */
export interface ScannedSegment {
  readonly baseOffset: bigint;
  readonly writtenSize: number;
  readonly verified: number[];
  rollBaseTimestamp: number | null;
  read(pos: number, len: number): Promise<Buffer>;
  canHold(lastOffset: bigint): boolean;
  track(lastOffset: bigint, maxTimestamp: bigint, position: number, size: number, indexIntervalBytes: number): void;
}

/**
 * Walks entries from `from` to the end of the file, checking structure, offsets and (optionally)
 * CRCs, and feeds each valid one to the indexes. Stops at the first invalid or partial entry.
 */
export async function scanEntries(
  seg: ScannedSegment,
  from: number,
  checkCrc: boolean,
  indexIntervalBytes: number,
  minOffset: bigint,
): Promise<ScanResult> {
  const entries: EntryHeader[] = [];
  let p = from;
  let expected = minOffset;
  const end = seg.writtenSize;
  let chunk: Buffer = Buffer.alloc(0);
  let chunkStart = 0;
  while (p < end) {
    let off = p - chunkStart;
    if (off < 0 || chunk.length - off < HEADER_BYTES) {
      chunk = await seg.read(p, Math.min(SCAN_CHUNK, end - p));
      chunkStart = p;
      off = 0;
    }
    const h = parseEntryHeader(chunk, off, chunk.length - off, p);
    if (h === null) return { validEnd: p, problem: `partial entry at position ${p}`, entries };
    if (typeof h === 'string') return { validEnd: p, problem: `${h} at position ${p}`, entries };
    if (p + h.size > end) return { validEnd: p, problem: `entry at position ${p} of ${h.size} bytes is cut short`, entries };
    if (h.baseOffset < expected || h.baseOffset < seg.baseOffset || !seg.canHold(h.lastOffset)) {
      return { validEnd: p, problem: `offset ${h.baseOffset} at position ${p} is out of order (expected >= ${expected})`, entries };
    }
    if (checkCrc) {
      if (chunk.length - off < h.size) {
        chunk = await seg.read(p, Math.max(h.size, Math.min(SCAN_CHUNK, end - p)));
        chunkStart = p;
        off = 0;
      }
      if (!entryCrcValid(chunk, off, h.size, h.magic)) return { validEnd: p, problem: `CRC mismatch at position ${p}`, entries };
    }
    if (p === 0 && h.maxTimestamp >= 0n) seg.rollBaseTimestamp = Number(h.maxTimestamp);
    seg.track(h.lastOffset, h.maxTimestamp, p, h.size, indexIntervalBytes);
    entries.push(h);
    expected = h.lastOffset + 1n;
    p += h.size;
  }
  if (checkCrc) markVerified(seg.verified, from, p);
  return { validEnd: p, problem: null, entries };
}
