/**
 * The read path's guard against corruption on disk: a fetch never serves an entry whose CRC fails.
 * The entries a read takes from a segment's bytes that came from disk (below LogSegment.loadedSize)
 * and that no check has vouched for yet (LogSegment.verified) are checked here: CRC, and offsets in
 * order inside the segment (a v2 batch's CRC does not cover its base offset). What a read checked is
 * added to the verified ranges, so a reader going on checks each byte once; what recovery scanned
 * with CRCs, and what this process appended, is never checked again.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { writeFileAtomic } from './checkpoint.js';
import { GregorLogErrorCode, LogError } from './errors.js';
import type { SegmentRead } from './log-read.js';
import { entryCrcValid, parseEntryHeader } from './segment-format.js';
import { isVerified, markVerified } from './verified-ranges.js';
import type { LogSegment } from './segment.js';

/** A corrupt entry a read met: where it is, the first offset that cannot be served, and why. */
export interface ReadCorruption {
  segment: bigint;
  position: number;
  offset: bigint;
  problem: string;
}

/**
 * Checks what `readSegment` returned for a fetch from `fetchOffset`. Returns the entries before the
 * first corrupt one (all of them when none is) and the corruption found, if any.
 */
export function verifyRead(
  seg: LogSegment,
  r: SegmentRead,
  fetchOffset: bigint,
): { records: Buffer[]; size: number; corruption: ReadCorruption | null } {
  let p = r.position;
  let prevEnd = r.prevEnd;
  let prevPos = -1;
  let prevSize = 0;
  let size = 0;
  const bad = (i: number, position: number, problem: string, base: bigint | null): ReturnType<typeof verifyRead> => {
    markVerified(seg.verified, r.position, position);
    // the first offset not served: after the last entry served, else the fetch offset (or the
    // corrupt batch's own base offset when it looks sane and lies below)
    let offset = i > 0 ? prevEnd : fetchOffset;
    if (i === 0 && base !== null && base >= seg.baseOffset && base < offset) offset = base;
    return { records: r.records.slice(0, i), size, corruption: { segment: seg.baseOffset, position, offset, problem } };
  };
  let servedEnd = -1n;
  for (let i = 0; i < r.records.length; i++) {
    const buf = r.records[i] as Buffer;
    const h = parseEntryHeader(buf, 0, buf.length, p);
    if (h === null || typeof h === 'string') return bad(i, p, h ?? 'partial entry header', null);
    const unverified = p < seg.loadedSize && !isVerified(seg.verified, p, p + buf.length);
    if (unverified) {
      if (h.baseOffset < seg.baseOffset || h.lastOffset >= seg.nextOffset) {
        return bad(i, p, `offsets ${h.baseOffset}..${h.lastOffset} outside segment ${seg.baseOffset}`, null);
      }
      if (prevEnd >= 0n && h.baseOffset < prevEnd) {
        // offsets go back: this entry's base offset, or the one before's (neither is covered by a
        // v2 CRC) is garbled; neither is served
        const problem = `offset ${h.baseOffset} at position ${p} is below the end ${prevEnd} of the entry before`;
        if (i === 0) return bad(0, p, problem, null);
        size -= prevSize;
        prevEnd = servedEnd;
        return bad(i - 1, prevPos, problem, null);
      }
      if (!entryCrcValid(buf, 0, buf.length, h.magic)) return bad(i, p, `CRC mismatch in the entry at position ${p}`, h.baseOffset);
    }
    servedEnd = prevEnd;
    prevEnd = h.lastOffset + 1n;
    prevPos = p;
    prevSize = buf.length;
    size += buf.length;
    p += buf.length;
  }
  if (r.malformed !== null) return bad(r.records.length, r.malformed.position, r.malformed.problem, null);
  if (p > r.position) markVerified(seg.verified, r.position, p);
  return { records: r.records, size, corruption: null };
}

/** What a fetch at or past a corrupt entry is answered: CORRUPT_MESSAGE, as Kafka answers a read of a corrupt log. */
export function corruptReadError(dir: string, c: ReadCorruption): LogError {
  return new LogError(
    ErrorCode.CORRUPT_MESSAGE,
    `${dir}: segment ${c.segment} holds a corrupt entry at position ${c.position} (${c.problem}); offsets from ${c.offset} are not served until the log is repaired (a broker restart truncates it there)`,
    GregorLogErrorCode.CORRUPT,
  );
}

/** In a partition directory: a read met a corrupt entry there; the next open repairs the log (log-loader.ts). */
export const REPAIR_MARKER = 'gregor-repair-marker';

/** Writes the repair marker: the segment, position and first offset of the corrupt entry, and why. */
export function writeRepairMarker(dir: string, c: ReadCorruption): Promise<void> {
  return writeFileAtomic(path.join(dir, REPAIR_MARKER), `${c.segment} ${c.position} ${c.offset} ${c.problem}\n`);
}

/** The segment base offset a repair marker names; null when there is none (or it cannot be read: then repair from the start). */
export async function readRepairMarker(dir: string): Promise<bigint | null> {
  let text: string;
  try {
    text = await fsp.readFile(path.join(dir, REPAIR_MARKER), 'utf8');
  } catch {
    return null;
  }
  const m = /^(\d+) /.exec(text);
  return m?.[1] === undefined ? 0n : BigInt(m[1]);
}
