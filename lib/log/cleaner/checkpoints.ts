/**
 * The cleaner's checkpoints, one `cleaner-offset-checkpoint` per log dir as in Kafka: each holds the
 * first dirty offset of that dir's cleaned partitions (Kafka's text format: `topic partition
 * offset`). All are read at start; a dir's file is rewritten when one of its partitions was cleaned
 * or deleted, with the lines of the partitions it holds then (a line of a partition that is not
 * there, deleted or in another dir, is not written again).
 */
import path from 'node:path';
import { CheckpointFile } from '../checkpoint.js';
import type { LogLogger } from '../log-loader.js';

export const CLEANER_CHECKPOINT = 'cleaner-offset-checkpoint';

const PARTITION_KEY = /^(.+)-(\d+)$/;

/** The log dir holding a partition's directory. */
export function dataDirOf(log: { readonly dir: string }): string {
  return path.dirname(log.dir);
}

export class CleanerCheckpoints {
  private readonly files = new Map<string, CheckpointFile>();
  /** Per log dir: `topic-partition` → first dirty offset. */
  private readonly offsets = new Map<string, Map<string, bigint>>();

  constructor(
    dataDirs: readonly string[],
    private readonly logger: LogLogger,
  ) {
    for (const dir of dataDirs) {
      const m = this.dirMap(dir);
      try {
        for (const row of this.file(dir).readSync() ?? []) {
          if (row.length === 3) m.set(`${row[0] as string}-${Number(row[1])}`, BigInt(row[2] as string));
        }
      } catch (err) {
        // treated as absent, as a whole (not half-read): this dir's compacted logs are cleaned from their start again
        m.clear();
        logger.warn({ err, dataDir: dir }, 'ignoring an unreadable cleaner-offset-checkpoint');
      }
    }
  }

  private file(dir: string): CheckpointFile {
    let f = this.files.get(dir);
    if (f === undefined) {
      f = new CheckpointFile(dir, CLEANER_CHECKPOINT);
      this.files.set(dir, f);
    }
    return f;
  }

  private dirMap(dir: string): Map<string, bigint> {
    let m = this.offsets.get(dir);
    if (m === undefined) {
      m = new Map();
      this.offsets.set(dir, m);
    }
    return m;
  }

  /** The first dirty offset of partition `k` in `dir`. */
  get(dir: string, k: string): bigint | undefined {
    return this.offsets.get(dir)?.get(k);
  }

  /** The first dirty offset of `k` in whichever dir's checkpoint lists it (tests and tools). */
  find(k: string): bigint | undefined {
    for (const m of this.offsets.values()) {
      const o = m.get(k);
      if (o !== undefined) return o;
    }
    return undefined;
  }

  set(dir: string, k: string, offset: bigint): void {
    this.dirMap(dir).set(k, offset);
  }

  /** Drops `k` wherever it is listed; returns the dirs whose checkpoint listed it. */
  delete(k: string): string[] {
    const dirs: string[] = [];
    for (const [dir, m] of this.offsets) if (m.delete(k)) dirs.push(dir);
    return dirs;
  }

  /** Rewrites `dir`'s checkpoint with its lines for the partitions in `live` (those the dir holds now). */
  write(dir: string, live: ReadonlySet<string>): void {
    const rows: (string | number | bigint)[][] = [];
    for (const [k, off] of this.dirMap(dir)) {
      const p = PARTITION_KEY.exec(k);
      if (live.has(k) && p?.[1] !== undefined && p[2] !== undefined) rows.push([p[1], Number(p[2]), off]);
    }
    this.file(dir)
      .write(rows)
      .catch((err: unknown) => this.logger.error({ err, dataDir: dir }, 'writing cleaner-offset-checkpoint failed'));
  }

  /** Resolves once every checkpoint written so far is durable. */
  async settle(): Promise<void> {
    await Promise.all([...this.files.values()].map((f) => f.settle()));
  }
}
