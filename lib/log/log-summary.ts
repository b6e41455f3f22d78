/**
 * A partition log's summary: what the broker needs to know of a log it has not opened. Metadata
 * needs nothing from a log; Fetch (is the consumer caught up?), ListOffsets (earliest, latest),
 * the metrics and the retention pass need the offsets and the segment list below. Summaries of
 * every partition of a data dir are kept in `partition-summary-checkpoint` (written at a clean
 * shutdown, Kafka's checkpoint text format), so a restart opens no log at all.
 *
 * The `partition-open-journal` of the data dir lists, one `topic partition` line each, the
 * partitions opened since that checkpoint was written. A log that was never opened cannot have
 * changed, so after an unclean shutdown only the journal's partitions need recovery (Kafka's
 * recovery point, per partition). A partition is in the journal (written and fsynced) before its
 * log opens, so before any of its files can change.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { CheckpointFile, fsyncDir } from './checkpoint.js';

export const SUMMARY_CHECKPOINT = 'partition-summary-checkpoint';
export const OPEN_JOURNAL = 'partition-open-journal';

export interface SegmentSummary {
  readonly baseOffset: bigint;
  readonly nextOffset: bigint;
  /** Bytes of the `.log` file. */
  readonly size: number;
  /** Largest record timestamp in the segment (-1 when none). */
  readonly maxTimestamp: bigint;
  /** Last write, ms since the epoch (retention.ms uses it when the segment has no timestamp). */
  readonly lastModified: number;
}

export interface LogSummary {
  readonly logStartOffset: bigint;
  /** The log end offset, which is also the high watermark of a closed log. */
  readonly logEndOffset: bigint;
  /** First offset of the oldest open transaction (the last stable offset), or null. */
  readonly firstUnstableOffset: bigint | null;
  /** Oldest first; never empty (a new log has one empty segment). */
  readonly segments: readonly SegmentSummary[];
}

/** A partition that has never held data (and may have no directory yet). Shared: never mutated. */
export const EMPTY_SUMMARY: LogSummary = Object.freeze({
  logStartOffset: 0n,
  logEndOffset: 0n,
  firstUnstableOffset: null,
  segments: Object.freeze([Object.freeze({ baseOffset: 0n, nextOffset: 0n, size: 0, maxTimestamp: -1n, lastModified: 0 })]),
});

export const summaryKey = (topic: string, partition: number): string => `${topic}-${partition}`;

const noop = (): void => undefined;
const EMPTY_FIELDS = ['0', '0', '-1', '0:0:0:-1:0'];

/** The checkpoint line of one partition (after its topic and partition fields). */
export function summaryFields(s: LogSummary): string[] {
  if (s === EMPTY_SUMMARY) return EMPTY_FIELDS;
  const segs = s.segments.map((g) => `${g.baseOffset}:${g.nextOffset}:${g.size}:${g.maxTimestamp}:${Math.floor(g.lastModified)}`).join(',');
  return [s.logStartOffset.toString(), s.logEndOffset.toString(), (s.firstUnstableOffset ?? -1n).toString(), segs];
}

/** The summary of an open log's segments and offsets (firstUnstableOffset: the producer state's). */
export function summaryOf(
  segs: readonly { baseOffset: bigint; nextOffset: bigint; size: number; maxTimestamp: bigint; lastModified: number }[],
  logStartOffset: bigint,
  logEndOffset: bigint,
  firstUnstableOffset: bigint | null,
): LogSummary {
  const only = segs.length === 1 ? segs[0] : undefined;
  if (only !== undefined && only.size === 0 && only.baseOffset === 0n && logStartOffset === 0n && firstUnstableOffset === null)
    return EMPTY_SUMMARY;
  return {
    logStartOffset,
    logEndOffset,
    firstUnstableOffset,
    segments: segs.map((s) => ({
      baseOffset: s.baseOffset,
      nextOffset: s.nextOffset,
      size: s.size,
      maxTimestamp: s.maxTimestamp,
      lastModified: s.lastModified,
    })),
  };
}

/** Parses the fields written by summaryFields; null when they are not a sane summary. */
export function parseSummary(f: readonly string[]): LogSummary | null {
  if (f.length !== 4) return null;
  if (f.every((x, i) => x === EMPTY_FIELDS[i])) return EMPTY_SUMMARY;
  try {
    const [start, end, unstable, segs] = f as [string, string, string, string];
    const segments: SegmentSummary[] = segs.split(',').map((g) => {
      const [b, n, size, ts, mod] = g.split(':');
      if (mod === undefined) throw new Error('short segment');
      return {
        baseOffset: BigInt(b ?? ''),
        nextOffset: BigInt(n ?? ''),
        size: Number(size),
        maxTimestamp: BigInt(ts ?? ''),
        lastModified: Number(mod),
      };
    });
    const s: LogSummary = {
      logStartOffset: BigInt(start),
      logEndOffset: BigInt(end),
      firstUnstableOffset: unstable === '-1' ? null : BigInt(unstable),
      segments,
    };
    const last = segments[segments.length - 1];
    if (last === undefined || last.nextOffset !== s.logEndOffset || s.logStartOffset > s.logEndOffset) return null;
    if (
      segments.some((g) => !Number.isSafeInteger(g.size) || g.size < 0 || !Number.isFinite(g.lastModified) || g.nextOffset < g.baseOffset)
    )
      return null;
    return s;
  } catch {
    return null;
  }
}

/** Reads the data dir's summaries by `topic-partition`; empty when the file is missing or unreadable. */
export function readSummaries(dataDir: string, onError: (err: unknown) => void): Map<string, LogSummary> {
  const out = new Map<string, LogSummary>();
  try {
    for (const row of new CheckpointFile(dataDir, SUMMARY_CHECKPOINT).readSync() ?? []) {
      const [topic, partition, ...rest] = row;
      const s = parseSummary(rest);
      if (topic === undefined || partition === undefined || !/^\d+$/.test(partition) || s === null)
        throw new Error(`malformed line: ${row.join(' ')}`);
      out.set(summaryKey(topic, Number(partition)), s);
    }
  } catch (err) {
    onError(err);
    out.clear();
  }
  return out;
}

/**
 * The journal of partitions opened since the last clean shutdown. `add` resolves once the line is
 * on disk (fsynced); lines added in the same event-loop turn share one write.
 */
export class OpenJournal {
  readonly file: string;
  private readonly done = new Map<string, Promise<void>>();
  /** Lines of the current event-loop turn, written together. */
  private batch: { lines: string[]; promise: Promise<void> } | null = null;
  private chain: Promise<void> = Promise.resolve();
  private fh: FileHandle | null = null;

  constructor(dataDir: string) {
    this.file = path.join(dataDir, OPEN_JOURNAL);
  }

  /** The `topic-partition` keys the journal lists (empty when it is missing). */
  static read(dataDir: string): Set<string> {
    const out = new Set<string>();
    let text: string;
    try {
      text = fs.readFileSync(path.join(dataDir, OPEN_JOURNAL), 'utf8');
    } catch {
      return out;
    }
    for (const line of text.split('\n')) {
      const m = /^(\S+) (\d+)$/.exec(line.trim());
      if (m?.[1] !== undefined && m[2] !== undefined) out.add(summaryKey(m[1], Number(m[2])));
    }
    return out;
  }

  /** Keys already in the file (from the previous run): adding them again writes nothing. */
  preload(keys: Iterable<string>): void {
    for (const k of keys) this.done.set(k, Promise.resolve());
  }

  /** Resolves once `topic partition` is in the journal on disk. */
  add(topic: string, partition: number): Promise<void> {
    const k = summaryKey(topic, partition);
    const known = this.done.get(k);
    if (known !== undefined) return known;
    if (this.batch === null) {
      const lines: string[] = [];
      const promise = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        this.batch = null;
        this.chain = this.chain.catch(noop).then(() => this.write(lines.join('')));
        return this.chain;
      });
      this.batch = { lines, promise };
    }
    const { lines, promise } = this.batch;
    lines.push(`${topic} ${partition}\n`);
    this.done.set(k, promise);
    // a failed write is retried by the next add of the key
    promise.catch(() => {
      if (this.done.get(k) === promise) this.done.delete(k);
    });
    return promise;
  }

  private async write(text: string): Promise<void> {
    if (this.fh === null) {
      const created = !fs.existsSync(this.file);
      this.fh = await fsp.open(this.file, 'a');
      if (created) await fsyncDir(path.dirname(this.file));
    }
    await this.fh.write(text);
    await this.fh.datasync();
  }

  /** Waits for pending writes and closes the file. */
  async close(): Promise<void> {
    await this.batch?.promise.catch(noop);
    await this.chain.catch(noop);
    const fh = this.fh;
    this.fh = null;
    if (fh !== null) await fh.close();
  }

  /** After a clean shutdown's checkpoint: the journal starts over. */
  async remove(): Promise<void> {
    await this.close();
    this.done.clear();
    await fsp.rm(this.file, { force: true });
  }
}
