/**
 * Leader epochs from the log itself, for a log loaded without a usable `leader-epoch-checkpoint`
 * (missing or unreadable): a walk over every segment's entry headers (no records decoded, no CRCs)
 * collecting where each v2 batch's partitionLeaderEpoch changes. Kafka keeps its epoch cache in the
 * same file and derives entries from batches during recovery (LogSegment.recover); a clean load
 * does not scan, so without this a lost checkpoint would leave the log with no epochs at all
 * (latestEpoch -1, OffsetForLeaderEpoch UNDEFINED), which makes followers truncate wrongly.
 */
import type { EpochEntry } from './checkpoint.js';
import { HEADER_BYTES, parseEntryHeader } from './segment-format.js';
import type { LogSegment } from './segment.js';

/** Bytes read per step: many small batches per read, one read per batch when batches are large. */
const WALK_CHUNK = 64 * 1024;

/** What the walk reads: a loaded segment. */
export type WalkedSegment = Pick<LogSegment, 'baseOffset' | 'size' | 'read'>;

/**
 * The epoch entries the segments' v2 batch headers give (the first offset of each run of batches of
 * one epoch), oldest first, and how many batches were walked. Stops a segment at an entry it cannot
 * parse (a loaded segment has none: its tail was checked at load).
 */
export async function epochsFromSegments(segments: readonly WalkedSegment[]): Promise<{ entries: EpochEntry[]; batches: number }> {
  const entries: EpochEntry[] = [];
  let batches = 0;
  for (const seg of segments) {
    const end = seg.size;
    let p = 0;
    let chunk: Buffer = Buffer.alloc(0);
    let chunkStart = 0;
    while (p < end) {
      let off = p - chunkStart;
      if (off < 0 || off >= chunk.length || chunk.length - off < HEADER_BYTES) {
        chunk = await seg.read(p, Math.min(WALK_CHUNK, end - p));
        chunkStart = p;
        off = 0;
      }
      const h = parseEntryHeader(chunk, off, chunk.length - off, p);
      if (h === null || typeof h === 'string' || h.size <= 0) break;
      batches++;
      const last = entries[entries.length - 1];
      if (h.magic === 2 && h.partitionLeaderEpoch >= 0 && (last === undefined || h.partitionLeaderEpoch !== last.epoch))
        entries.push({ epoch: h.partitionLeaderEpoch, startOffset: h.baseOffset });
      p += h.size;
    }
  }
  return { entries, batches };
}
