/**
 * What a log dir last wrote to its recovery-point-offset-checkpoint, so that the periodic write
 * (log.flush.offset.checkpoint.interval.ms) can skip one that would write the same file again: at
 * 10,000 idle partitions that write was most of an idle broker's CPU (every log keyed, parsed back,
 * formatted and fsynced once a minute for an unchanged file). Kafka writes it every interval; the
 * file's content is the same either way.
 */

/** A log as far as its recovery point goes. */
interface HasRecoveryPoint {
  readonly recoveryPoint: bigint;
}

/** The logs (in order) and their recovery points as one write took them. */
export interface PointsSnapshot<L> {
  readonly layout: number;
  readonly logs: readonly L[];
  readonly points: readonly bigint[];
  readonly seq: number;
}

export class WrittenPoints<L extends HasRecoveryPoint> {
  /** Bumped by every change to the dir's partitions (a log attached or dropped, a partition forgotten): those always write. */
  private layout = 0;
  private written: PointsSnapshot<L> | null = null;
  private seq = 0;

  /** The dir's partitions changed (the next periodic write goes ahead). */
  layoutChanged(): void {
    this.layout++;
  }

  /** A snapshot of `logs` (in order) and their recovery points as about to be written; `wrote(snapshot)` once written. */
  snapshot(logs: Iterable<L>): PointsSnapshot<L> {
    const list = [...logs];
    return { layout: this.layout, logs: list, points: list.map((l) => l.recoveryPoint), seq: ++this.seq };
  }

  /** The snapshot reached the file (a later write that landed first is kept). */
  wrote(s: PointsSnapshot<L>): void {
    if (this.written === null || this.written.seq < s.seq) this.written = s;
  }

  /** Whether writing now would write what the file already holds: the same partitions, the same logs in order, each at the same recovery point. */
  unchanged(logs: Iterable<L>): boolean {
    const w = this.written;
    if (w === null || w.layout !== this.layout) return false;
    let i = 0;
    for (const log of logs) {
      if (i >= w.logs.length || w.logs[i] !== log || w.points[i] !== log.recoveryPoint) return false;
      i++;
    }
    return i === w.logs.length;
  }
}
