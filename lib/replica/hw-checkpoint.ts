/**
 * The high watermark of every replica of a data dir, kept in `replication-offset-checkpoint` as Kafka
 * keeps it (clusters only): written every replica.high.watermark.checkpoint.interval.ms and at a clean
 * shutdown, and read once at start, where a replica's high watermark starts at min(its checkpointed
 * value, its log end offset). Without it a replica would start at its log end offset, and a follower
 * restarted after a crash would advertise (and serve to consumers reading from it) records the ISR
 * never had.
 */
import type { Logger } from 'pino';
import { CheckpointFile } from '../log/checkpoint.js';
import type { PartitionLog } from '../log/partition-log.js';

export const HW_CHECKPOINT = 'replication-offset-checkpoint';

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`;

export class HighWatermarkCheckpoint {
  private readonly file: CheckpointFile;
  /** The values read at start (kept for replicas that cannot tell theirs yet: not recovered). */
  private readonly saved = new Map<string, bigint>();

  constructor(dataDir: string, logger: Pick<Logger, 'warn'>) {
    this.file = new CheckpointFile(dataDir, HW_CHECKPOINT);
    try {
      for (const [topic, partition, hw] of this.file.readSync() ?? []) {
        if (topic !== undefined && partition !== undefined && hw !== undefined && /^-?\d+$/.test(hw))
          this.saved.set(key(topic, Number(partition)), BigInt(hw));
      }
    } catch (err) {
      logger.warn(
        { err, file: this.file.file },
        'ignoring an unreadable replication-offset-checkpoint: high watermarks start at the log start',
      );
    }
  }

  /**
   * Where the partition's high watermark starts (clamped to the log by the log): the checkpointed
   * value, or 0 for a partition the checkpoint does not have (Kafka's default: a new replica learns
   * it from its leader; a leader recomputes it from its ISR).
   */
  initial(topic: string, partition: number): bigint {
    return this.saved.get(key(topic, partition)) ?? 0n;
  }

  has(topic: string, partition: number): boolean {
    return this.saved.has(key(topic, partition));
  }

  /** Writes the high watermark of every replica in `logs` (a replica not recovered yet keeps the value read at start). */
  write(logs: Iterable<PartitionLog>): Promise<void> {
    const rows: [string, number, bigint][] = [];
    for (const log of logs) {
      const hw = log.servable ? log.highWatermark : this.saved.get(key(log.topic, log.partition));
      if (hw !== undefined) rows.push([log.topic, log.partition, hw]);
    }
    return this.file.write(rows);
  }
}

/** The replication-offset-checkpoint of every log dir, each listing the replicas in its dir (as Kafka keeps them). */
export class HighWatermarkCheckpoints {
  private readonly files: { dataDir: string; checkpoint: HighWatermarkCheckpoint }[];

  constructor(dataDirs: readonly string[], logger: Pick<Logger, 'warn'>) {
    this.files = dataDirs.map((dataDir) => ({ dataDir, checkpoint: new HighWatermarkCheckpoint(dataDir, logger) }));
  }

  /** See HighWatermarkCheckpoint.initial: the value of whichever dir's checkpoint has the partition. */
  initial(topic: string, partition: number): bigint {
    for (const f of this.files) if (f.checkpoint.has(topic, partition)) return f.checkpoint.initial(topic, partition);
    return 0n;
  }

  /** Writes each dir's checkpoint from the replicas `logsIn` that dir. */
  async write(logsIn: (dataDir: string) => Iterable<PartitionLog>): Promise<void> {
    await Promise.all(this.files.map((f) => f.checkpoint.write(logsIn(f.dataDir))));
  }
}
