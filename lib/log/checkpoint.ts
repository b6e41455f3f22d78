import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Limiter } from './limiter.js';

/** A directory's fsync in flight, and the one queued after it (shared by every caller meanwhile). */
interface DirSync {
  running: Promise<void>;
  queued: Promise<void> | null;
}
const dirSyncs = new Map<string, DirSync>();

async function syncDirOnce(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

function startDirSync(dir: string, state: DirSync | null): DirSync {
  const running: Promise<void> = syncDirOnce(dir).finally(() => {
    const s = dirSyncs.get(dir);
    if (s?.running === running && s.queued === null) dirSyncs.delete(dir);
  });
  if (state === null) {
    const s = { running, queued: null };
    dirSyncs.set(dir, s);
    return s;
  }
  state.running = running;
  return state;
}

/**
 * fsync a directory so a rename or create in it survives a crash. Callers share fsyncs: one that
 * comes while an fsync of `dir` runs (which may have started before its change) waits for the next
 * one, which starts when that ends and serves everyone who came meanwhile. So 10,000 partitions
 * created at once cost a few dozen fsyncs of the data dir, not 10,000 (each ~1 ms of the disk's
 * time), and every caller's change is still covered by an fsync that started after it.
 */
export function fsyncDir(dir: string): Promise<void> {
  const s = dirSyncs.get(dir);
  if (s === undefined) return startDirSync(dir, null).running;
  if (s.queued !== null) return s.queued;
  const queued = s.running
    .catch(() => undefined)
    .then(() => {
      s.queued = null;
      return startDirSync(dir, s).running;
    });
  s.queued = queued;
  return queued;
}

/** Atomic writes in progress at once, process-wide (each holds two descriptors for a moment). */
const atomicWrites = new Limiter(64);

/**
 * Writes `data` to `file` atomically: tmp → fsync → rename → fsync(dir); a failed write or fsync
 * removes the tmp file. `durable: false` leaves out both fsyncs: the file is whole or absent after a
 * crash of the process, and a power loss may take it (the caller syncs it later, see CheckpointFile).
 */
export function writeFileAtomic(file: string, data: string | Buffer, durable = true): Promise<void> {
  return atomicWrites.run(() => writeAtomically(file, data, durable));
}

async function writeAtomically(file: string, data: string | Buffer, durable: boolean): Promise<void> {
  const tmp = `${file}.tmp`;
  const fh = await fsp.open(tmp, 'w');
  try {
    await fh.writeFile(data);
    if (durable) await fh.sync();
  } catch (err) {
    // a full disk: the part written is not left taking space
    await fh.close().catch(() => undefined);
    await fsp.rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  await fh.close();
  await fsp.rename(tmp, file);
  if (durable) await fsyncDir(path.dirname(file));
}

/**
 * A Kafka-style text checkpoint: version line, entry count line, then one entry per line with
 * space-separated fields. Writes are serialised and coalesced: only the newest content is written.
 */
export class CheckpointFile {
  private next: string | null = null;
  /** Whether the next write must reach the disk (some write queued since the last one asked for it). */
  private nextDurable = false;
  /** The last content written, and whether it is not known to be on disk (written with `durable: false`). */
  private written: string | null = null;
  private unsynced = false;
  private running: Promise<void> | null = null;

  /**
   * `<dir>/<name>`. The path is joined when the file is read or written, not kept: a log's two
   * checkpoints would hold ~160 bytes of path strings each (1.6 MB at 10,000 partitions).
   */
  constructor(
    private readonly dir: string,
    private readonly name: string,
  ) {}

  get file(): string {
    return path.join(this.dir, this.name);
  }

  static format(entries: readonly (readonly (string | number | bigint)[])[], version = 0): string {
    return `${version}\n${entries.length}\n${entries.map((e) => e.join(' ')).join('\n')}${entries.length > 0 ? '\n' : ''}`;
  }

  /** Parses the file; null when missing. Throws on a malformed file. */
  readSync(): string[][] | null {
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    const lines = text.split('\n').filter((l) => l.trim() !== '');
    const version = Number(lines[0]);
    const count = Number(lines[1]);
    if (version !== 0 || !Number.isInteger(count) || count < 0 || lines.length - 2 !== count) {
      throw new Error(`malformed checkpoint file ${this.file}`);
    }
    return lines.slice(2).map((l) => l.trim().split(/\s+/));
  }

  /**
   * Queues `entries` to be written; resolves once they (or newer content) are written: durably
   * unless `durable` is false (then `sync` makes them so later).
   */
  write(entries: readonly (readonly (string | number | bigint)[])[], durable = true): Promise<void> {
    this.next = CheckpointFile.format(entries);
    if (durable) this.nextDurable = true;
    if (this.running === null) this.running = this.drain();
    return this.running;
  }

  /** Makes what was written with `durable: false` durable (one atomic write of the newest content); nothing when it already is. */
  async sync(): Promise<void> {
    await this.settle();
    if (!this.unsynced || this.written === null) return;
    this.next ??= this.written;
    this.nextDurable = true;
    this.running ??= this.drain();
    await this.running;
  }

  private async drain(): Promise<void> {
    try {
      while (this.next !== null) {
        const content = this.next;
        const durable = this.nextDurable;
        this.next = null;
        this.nextDurable = false;
        await writeFileAtomic(this.file, content, durable);
        this.written = content;
        this.unsynced = !durable;
      }
    } finally {
      this.running = null;
    }
  }

  /** Waits for queued writes. */
  async settle(): Promise<void> {
    while (this.running !== null) await this.running.catch(() => undefined);
  }
}

export interface EpochEntry {
  epoch: number;
  startOffset: bigint;
}

export const LEADER_EPOCH_CHECKPOINT = 'leader-epoch-checkpoint';

/**
 * Leader epoch → start offset, as Kafka's LeaderEpochFileCache, persisted in `leader-epoch-checkpoint`.
 */
export class LeaderEpochCache {
  private entries: EpochEntry[] = [];
  private readonly checkpoint: CheckpointFile;
  onError: (err: unknown) => void = () => undefined;

  /** `dir`: the partition directory, which holds the `leader-epoch-checkpoint` file. */
  constructor(dir: string) {
    this.checkpoint = new CheckpointFile(dir, LEADER_EPOCH_CHECKPOINT);
  }

  /**
   * Reads the checkpoint; false when there is none (the entries are then empty). Throws when it is
   * malformed: not two non-negative integers per line, or epochs and offsets not increasing.
   */
  load(): boolean {
    this.entries = [];
    const rows = this.checkpoint.readSync();
    if (rows === null) return false;
    const entries: EpochEntry[] = [];
    for (const row of rows) {
      const [e, o] = row;
      if (row.length !== 2 || e === undefined || o === undefined || !/^\d+$/.test(e) || !/^\d+$/.test(o))
        throw new Error(`malformed leader-epoch entry "${row.join(' ')}" in ${this.checkpoint.file}`);
      const entry = { epoch: Number(e), startOffset: BigInt(o) };
      const prev = entries[entries.length - 1];
      if (
        !Number.isSafeInteger(entry.epoch) ||
        entry.epoch > 0x7fffffff ||
        (prev !== undefined && (entry.epoch <= prev.epoch || entry.startOffset <= prev.startOffset))
      )
        throw new Error(`leader-epoch entry "${row.join(' ')}" out of order or out of range in ${this.checkpoint.file}`);
      entries.push(entry);
    }
    this.entries = entries;
    return true;
  }

  /** Writes the entries now, durably (after they were rebuilt from the log). */
  writeNow(): Promise<void> {
    return this.checkpoint.write(this.entries.map((e) => [e.epoch, e.startOffset]));
  }

  get all(): readonly EpochEntry[] {
    return this.entries;
  }
  get latestEpoch(): number {
    return this.entries[this.entries.length - 1]?.epoch ?? -1;
  }

  /** Records that `epoch` starts at `startOffset` (newer epochs only; drops entries it contradicts). */
  assign(epoch: number, startOffset: bigint): boolean {
    if (!this.place(epoch, startOffset)) return false;
    // as Kafka (KAFKA-15046): a new epoch's entry is not fsynced on the append path; the log's next
    // flush (segment roll, flush policy, close) syncs it before its recovery point passes the
    // entry, and recovery after a crash derives the epochs of the unflushed tail from its batches
    this.flush(false);
    return true;
  }

  /**
   * Recovery (as Kafka's LogSegment.recover): the entries from `offset` on are those the scanned
   * batches `tail` (from `offset`, in order) give; written (without fsync, see assign) only when that
   * changes them, so recovering a log whose checkpoint was right writes nothing.
   */
  rebuildFrom(offset: bigint, tail: readonly EpochEntry[]): void {
    const before = this.entries;
    // an entry past `offset` would make an older epoch's assign below drop earlier entries
    this.entries = before.filter((e) => e.startOffset < offset);
    for (const e of tail) this.place(e.epoch, e.startOffset);
    const same =
      this.entries.length === before.length &&
      this.entries.every((e, i) => e.epoch === before[i]?.epoch && e.startOffset === before[i].startOffset);
    if (!same) this.flush(false);
  }

  /** assign's change in memory; whether there was one. */
  private place(epoch: number, startOffset: bigint): boolean {
    if (epoch < 0) return false;
    const last = this.entries[this.entries.length - 1];
    if (last !== undefined && last.epoch === epoch) return false;
    this.entries = this.entries.filter((e) => e.epoch < epoch && e.startOffset < startOffset);
    this.entries.push({ epoch, startOffset });
    return true;
  }

  /** Drops entries starting at or after `endOffset` (log truncated there). */
  truncateFromEnd(endOffset: bigint): void {
    const kept = this.entries.filter((e) => e.startOffset < endOffset);
    if (kept.length === this.entries.length) return;
    this.entries = kept;
    this.flush();
  }

  /** Forgets every entry (the log was emptied and starts over at another offset). */
  clear(): void {
    if (this.entries.length === 0) return;
    this.entries = [];
    this.flush();
  }

  /** The log now starts at `startOffset`: the epoch covering it starts there, older ones go. */
  truncateFromStart(startOffset: bigint): void {
    let i = -1;
    for (let k = 0; k < this.entries.length; k++) if ((this.entries[k]?.startOffset ?? 0n) <= startOffset) i = k;
    const floor = this.entries[i];
    if (floor === undefined || (i === 0 && floor.startOffset === startOffset)) return;
    this.entries = [{ epoch: floor.epoch, startOffset }, ...this.entries.slice(i + 1)];
    this.flush();
  }

  /** Kafka's endOffsetFor: the end offset of `requested` (the start of the next higher epoch). */
  endOffsetFor(requested: number, logEndOffset: bigint): { leaderEpoch: number; endOffset: bigint } {
    const undef = { leaderEpoch: -1, endOffset: -1n };
    if (requested < 0 || this.entries.length === 0) return undef;
    if (requested === this.latestEpoch) return { leaderEpoch: requested, endOffset: logEndOffset };
    const higher = this.entries.find((e) => e.epoch > requested);
    if (higher === undefined) return undef;
    let floor: EpochEntry | undefined;
    for (const e of this.entries) if (e.epoch <= requested) floor = e;
    return { leaderEpoch: floor === undefined ? requested : floor.epoch, endOffset: higher.startOffset };
  }

  /** Epoch of the batch holding `offset` (-1 if unknown). */
  epochForOffset(offset: bigint): number {
    let epoch = -1;
    for (const e of this.entries) if (e.startOffset <= offset) epoch = e.epoch;
    return epoch;
  }

  private flush(durable = true): void {
    this.checkpoint
      .write(
        this.entries.map((e) => [e.epoch, e.startOffset]),
        durable,
      )
      .catch((err: unknown) => this.onError(err));
  }

  /** Makes the entries written on the append path durable (see assign). */
  sync(): Promise<void> {
    return this.checkpoint.sync();
  }
  settle(): Promise<void> {
    return this.checkpoint.settle();
  }
}
