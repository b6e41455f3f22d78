/**
 * Replays a partition log batch by batch from its start (coordinators load their state this way):
 * reads with the log's own `read`, so data still in the page cache or the recent cache is served
 * from there.
 */
import { type RecordBatch, logEntries } from '../../protocol/records/index.js';

/** The part of a partition log a replay reads (PartitionLog satisfies it). */
export interface ReplayableLog {
  read(fetchOffset: bigint, maxBytes: number, opts: { minOneMessage: boolean }): Promise<{ records: Buffer[] }>;
  readonly logStartOffset: bigint;
  readonly logEndOffset: bigint;
}

const MAX_READ = 1 << 20;

/** Calls `visit` with every v2 batch from the log start to the log end, in order. */
export async function replayBatches(log: ReplayableLog, visit: (batch: RecordBatch) => void): Promise<void> {
  let offset = log.logStartOffset;
  const end = log.logEndOffset;
  while (offset < end) {
    const { records } = await log.read(offset, MAX_READ, { minOneMessage: true });
    const buf = records.length === 1 ? (records[0] as Buffer) : Buffer.concat(records);
    if (buf.length === 0) break;
    let progressed = false;
    for (const entry of logEntries(buf)) {
      if (entry.kind !== 'batch') break;
      progressed = true;
      offset = entry.batch.nextOffset;
      visit(entry.batch);
    }
    if (!progressed) break;
  }
}
