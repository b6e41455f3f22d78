/** The partition directory's own files as a LocalLog reads and syncs them: its checkpoints, fsyncs of segments and the directory. */
import { type CheckpointFile, fsyncDir, type LeaderEpochCache } from './checkpoint.js';
import type { LogLogger } from './log-loader.js';
import { epochsFromSegments } from './epoch-rebuild.js';
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

/**
 * Loads the leader-epoch checkpoint: 'loaded', 'missing' (no file), or 'unreadable' (garbled; the
 * entries are then empty). Either of the last two makes the caller rebuild the epochs from the log.
 */
export function loadEpochs(epochs: LeaderEpochCache, logger: LogLogger, dir: string): 'loaded' | 'missing' | 'unreadable' {
  try {
    return epochs.load() ? 'loaded' : 'missing';
  } catch (err) {
    logger.warn({ err, dir }, 'ignoring an unreadable leader-epoch-checkpoint: the epochs are rebuilt from the log');
    return 'unreadable';
  }
}

/**
 * A log loaded without a usable leader-epoch checkpoint (`why`): its epochs come from its batch
 * headers (epoch-rebuild.ts), logged in one line; true when they were rebuilt, and the caller writes
 * the checkpoint once they are cut to the log's bounds. A log without data is left without a file
 * (as a new one has none until its first batch).
 */
export async function rebuildEpochs(
  epochs: LeaderEpochCache,
  segments: readonly LogSegment[],
  why: 'missing' | 'unreadable',
  logger: LogLogger,
  dir: string,
): Promise<boolean> {
  if (segments.every((s) => s.size === 0)) return false;
  const { entries, batches } = await epochsFromSegments(segments);
  epochs.rebuildFrom(segments[0]?.baseOffset ?? 0n, entries);
  logger.info(
    { dir, batches, epochs: entries.map((e) => `${e.epoch}@${e.startOffset}`).join(' ') },
    `leader-epoch-checkpoint ${why}: rebuilt the leader epochs from the log's batch headers; writing the checkpoint`,
  );
  return true;
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
