/** The partition directory's own files as a LocalLog reads and syncs them: its checkpoints, fsyncs of segments and the directory. */
import { type CheckpointFile, fsyncDir, type LeaderEpochCache } from './checkpoint.js';
import type { LogLogger } from './log-loader.js';
import type { LogSegment } from './segment.js';

/** The log start offset the checkpoint holds; null when there is none or it is unreadable (garbled: treated as absent). */
export function readLogStartCheckpoint(file: CheckpointFile, logger: LogLogger, dir: string): bigint | null {
  let checkpointed: bigint | null = null;
  try {
    const row = file.readSync()?.[0];
    if (row?.[2] !== undefined) checkpointed = BigInt(row[2]);
    if (checkpointed !== null && checkpointed < 0n) throw new Error(`negative log start offset ${checkpointed}`);
  } catch (err) {
    checkpointed = null;
    logger.warn({ err, dir }, 'ignoring an unreadable log-start-offset-checkpoint: the log starts at its first segment');
  }
  return checkpointed;
}

/** Loads the leader-epoch checkpoint; false when it was unreadable (the epochs are then taken from the log tail). */
export function loadEpochs(epochs: LeaderEpochCache, logger: LogLogger, dir: string): boolean {
  try {
    epochs.load();
    return true;
  } catch (err) {
    logger.warn({ err, dir }, 'ignoring an unreadable leader-epoch-checkpoint: epochs are taken from the log tail');
    return false;
  }
}

/**
 * fsyncs the segments `which` selects, then (Kafka's LocalLog.flush) the partition directory when
 * one of them is new, based at or above the recovery point `from`: a new segment's name must survive
 * a power loss as its data does. A directory already gone (the topic is being deleted) is no error.
 */
export async function syncSegments(
  segments: readonly LogSegment[],
  from: bigint,
  dir: string,
  which: (s: LogSegment) => boolean,
): Promise<void> {
  let fresh = false;
  for (const s of segments) {
    if (!which(s)) continue;
    await s.sync();
    if (s.baseOffset >= from) fresh = true;
  }
  if (!fresh) return;
  try {
    await fsyncDir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
