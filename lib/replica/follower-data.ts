/** What a follower does with a partition's data in a Fetch response from its leader. */
import type { FetchResponsePartitionData } from '../../protocol/generated/fetch.js';
import { logEntries } from '../../protocol/records/index.js';
import type { PartitionLog } from '../log/partition-log.js';

/**
 * The leader's entries appended as they are; then the high watermark follows the leader's (up to
 * our log end) and so does the log start offset (up to our high watermark: Kafka's
 * maybeIncrementLogStartOffset with LeaderOffsetIncremented). `removed` is asked after each wait:
 * once the partition is no longer followed nothing more is done.
 */
export async function applyFetched(log: PartitionLog, pd: FetchResponsePartitionData, removed: () => boolean): Promise<void> {
  const records = pd.records;
  if (records !== null && records.length > 0) {
    if (log.logEndOffset === log.logStartOffset) {
      // An empty log fetching from the leader's log start, which DeleteRecords put inside an entry:
      // the log starts over at that entry's first offset (Kafka's UnexpectedAppendOffsetException case).
      const first = firstEntryOffsets(records);
      if (first !== null && first.first < log.logEndOffset && first.last >= log.logEndOffset) {
        await log.truncateFullyAndStartAt(first.first);
        if (removed()) return;
      }
    }
    const { written } = await log.appendAsFollower(records);
    await written;
    if (removed()) return;
  }
  applyWatermarks(log, pd);
}

/** The high watermark and log start offset of a response without data (synchronous: an idle fetch of thousands of partitions is all this). */
export function applyWatermarks(log: PartitionLog, pd: FetchResponsePartitionData): void {
  if (pd.highWatermark >= 0n) log.setHighWatermark(pd.highWatermark < log.logEndOffset ? pd.highWatermark : log.logEndOffset);
  const leaderStart = pd.logStartOffset ?? -1n;
  if (leaderStart > log.logStartOffset) {
    const to = leaderStart < log.highWatermark ? leaderStart : log.highWatermark;
    if (to > log.logStartOffset) log.deleteRecordsBefore(to);
  }
}

/**
 * The first and last offset of the first whole entry in fetched `records` (a v2 batch, or an
 * uncompressed magic 0/1 message); null for anything else (a compressed magic 0/1 wrapper only
 * tells its last offset) or bytes that are not entries.
 */
export function firstEntryOffsets(records: Buffer): { first: bigint; last: bigint } | null {
  try {
    for (const e of logEntries(records)) {
      if (e.kind === 'batch') return { first: e.batch.baseOffset, last: e.batch.lastOffset };
      if (e.kind === 'message' && !e.message.isCompressed) return { first: e.message.offset, last: e.message.offset };
      return null;
    }
  } catch {
    // not entries: the append refuses them
  }
  return null;
}
