/**
 * The cleaner over a LogManager's logs: logs not open are considered from their summaries (and
 * opened only when picked), each log dir keeps its own cleaner-offset-checkpoint, and settings
 * changed while it runs (reconfigure: threads, I/O rate, dedupe buffer) take effect.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { BrokerConfig } from '../../../../lib/config.js';
import { CLEANER_CHECKPOINT, LogCleaner } from '../../../../lib/log/cleaner/cleaner.js';
import { threadsChangeError } from '../../../../lib/log/cleaner/settings.js';
import { LogManager } from '../../../../lib/log/log-dirs.js';
import type { PartitionLog } from '../../../../lib/log/partition-log.js';
import { captureLog, config, rmDir, tmpDir } from '../helpers.js';
import { allRecords, batch, expectCompacted, latest, settled } from './helpers.js';

const COMPACT = config({ cleanupPolicy: ['compact'], segmentBytes: 1500 });
const KEYS = Array.from({ length: 10 }, (_, i) => `k${i}`);
const broker = new BrokerConfig({ overrides: {} });

/** `rounds` batches of `keys` (the same each round, or the round's own). */
async function writeRounds(l: PartitionLog, rounds: number, keys: readonly string[] | ((round: number) => string[]) = KEYS): Promise<void> {
  for (let r = 0; r < rounds; r++) l.append(batch(typeof keys === 'function' ? keys(r) : keys, r), { leaderEpoch: 0 });
  await settled(l);
}

function cleanerOver(
  dirs: string | readonly string[],
  logs: () => Iterable<PartitionLog>,
  over: Partial<ConstructorParameters<typeof LogCleaner>[2]> = {},
): { cleaner: LogCleaner; lines: string[] } {
  const cap = captureLog();
  const cleaner = new LogCleaner(dirs, logs, {
    threads: 0,
    dedupeBufferSize: 1 << 20,
    ioMaxBytesPerSecond: Number.MAX_VALUE,
    backoffMs: 15000,
    logger: cap.logger,
    ...over,
  });
  return { cleaner, lines: cap.lines };
}

/** Records below the active segment are compacted, and the latest value of every key is `want`'s. */
async function expectCleaned(log: PartitionLog, want: ReturnType<typeof latest>): Promise<void> {
  const recs = await allRecords(log);
  const activeBase = log.segmentBaseOffsets[log.segmentBaseOffsets.length - 1] as bigint;
  expectCompacted(recs.filter((r) => r.offset < activeBase));
  expect(latest(recs)).to.deep.equal(want);
}

const checkpointLines = (dir: string): string[] => fs.readFileSync(path.join(dir, CLEANER_CHECKPOINT), 'utf8').split('\n').slice(2, -1);

describe('lib/log/cleaner over a LogManager', () => {
  let root: string;
  let mgr: LogManager | null = null;
  let cleaner: LogCleaner | null = null;
  const quiet = captureLog().logger;
  beforeEach(() => {
    root = tmpDir('cleaner-mgr');
  });
  afterEach(async () => {
    await cleaner?.stop();
    cleaner = null;
    await mgr?.shutdown();
    mgr = null;
    rmDir(root);
  });

  it('cleans a dirty compacted log that is not open (judged from its summary, opened once picked); leaves the others closed', async () => {
    mgr = await LogManager.open(root, broker, quiet);
    await writeRounds(await mgr.getOrCreate('dirty', 0, COMPACT), 60);
    await writeRounds(await mgr.getOrCreate('deleting', 0, config({ segmentBytes: 1500 })), 60);
    // one segment only: nothing below the active segment to clean
    await writeRounds(await mgr.getOrCreate('small', 0, COMPACT), 2);
    const want = latest(await allRecords(await mgr.getOrCreate('dirty', 0, COMPACT)));
    await mgr.shutdown();

    mgr = await LogManager.open(root, broker, quiet);
    const m = mgr;
    const [dirty, deleting, small] = [
      m.attach('dirty', 0, COMPACT),
      m.attach('deleting', 0, config({ segmentBytes: 1500 })),
      m.attach('small', 0, COMPACT),
    ];
    expect([dirty.isOpen, deleting.isOpen, small.isOpen]).to.deep.equal([false, false, false]);
    const run = cleanerOver(root, () => m.all());
    cleaner = run.cleaner;
    expect(await cleaner.runOnce()).to.equal(1);
    expect([dirty.isOpen, deleting.isOpen, small.isOpen]).to.deep.equal([true, false, false]);
    expect(run.lines).to.include('opened a log not in use to clean it');
    await expectCleaned(dirty, want);
    const firstDirty = cleaner.firstDirtyOffset('dirty', 0);
    expect(firstDirty).to.equal(dirty.segmentBaseOffsets[dirty.segmentBaseOffsets.length - 1]);
    await cleaner.stop();
    cleaner = null;
    await mgr.shutdown();

    // cleaned and checkpointed: after a restart it is not due, and stays closed
    mgr = await LogManager.open(root, broker, quiet);
    const m2 = mgr;
    const again = m2.attach('dirty', 0, COMPACT);
    cleaner = cleanerOver(root, () => m2.all()).cleaner;
    expect(cleaner.firstDirtyOffset('dirty', 0)).to.equal(firstDirty);
    expect(await cleaner.runOnce()).to.equal(0);
    expect(again.isOpen).to.equal(false);
  });

  it('keeps a cleaner-offset-checkpoint per log dir with its own partitions; a new cleaner reads them all; a deleted partition drops out', async () => {
    const dirs = ['a', 'b'].map((n) => path.join(root, n));
    const [a, b] = dirs as [string, string];
    mgr = await LogManager.open(dirs, broker, quiet);
    const m = mgr;
    // placed a, b (the dir with fewer partitions)
    const logs = [await m.getOrCreate('t', 0, COMPACT), await m.getOrCreate('t', 1, COMPACT)];
    expect(logs.map((l) => path.basename(path.dirname(l.dir)))).to.deep.equal(['a', 'b']);
    for (const l of logs) await writeRounds(l, 60);
    // a stale line for t-1 in a's checkpoint (its directory is in b): neither read for it nor written again
    fs.writeFileSync(path.join(a, CLEANER_CHECKPOINT), '0\n1\nt 1 5\n');
    cleaner = cleanerOver(dirs, () => m.all()).cleaner;
    // one log per round (threads 0: one at a time)
    expect(await cleaner.runOnce()).to.equal(1);
    expect(await cleaner.runOnce()).to.equal(1);
    expect(await cleaner.runOnce()).to.equal(0);
    await cleaner.checkpointWritten();
    const end = (l: PartitionLog): bigint => l.segmentBaseOffsets[l.segmentBaseOffsets.length - 1] as bigint;
    expect(checkpointLines(a)).to.deep.equal([`t 0 ${end(logs[0] as PartitionLog)}`]);
    expect(checkpointLines(b)).to.deep.equal([`t 1 ${end(logs[1] as PartitionLog)}`]);
    await cleaner.stop();

    // a new cleaner (a restart) reads both
    cleaner = cleanerOver(dirs, () => m.all()).cleaner;
    expect([cleaner.firstDirtyOffset('t', 0), cleaner.firstDirtyOffset('t', 1)]).to.deep.equal(logs.map(end));
    expect(await cleaner.runOnce()).to.equal(0);
    await m.deletePartition('t', 1);
    expect(await cleaner.runOnce()).to.equal(0);
    await cleaner.checkpointWritten();
    expect(checkpointLines(b)).to.deep.equal([]);
    expect(checkpointLines(a)).to.deep.equal([`t 0 ${end(logs[0] as PartitionLog)}`]);
    expect(cleaner.firstDirtyOffset('t', 1)).to.equal(undefined);
  });

  it('a round over the same logs as the last: a log turned compacted since is cleaned; one re-created in its place starts over', async () => {
    mgr = await LogManager.open(root, broker, quiet);
    const m = mgr;
    // made last, so that made again it takes the same place in the list
    const later = await m.getOrCreate('later', 0, config({ segmentBytes: 1500 }));
    const kept = await m.getOrCreate('t', 0, COMPACT);
    for (const l of [kept, later]) await writeRounds(l, 60);
    const want = latest(await allRecords(later));
    cleaner = cleanerOver(root, () => m.all()).cleaner;
    expect(await cleaner.runOnce()).to.equal(1);
    expect(await cleaner.runOnce()).to.equal(0);
    expect(cleaner.firstDirtyOffset('t', 0)).to.not.equal(undefined);
    // the same list of logs: only a config changed
    later.updateConfig(COMPACT);
    expect(await cleaner.runOnce()).to.equal(1);
    await expectCleaned(later, want);
    // deleted and made again: as many logs as before, one of them another object
    await m.deletePartition('t', 0);
    const again = await m.getOrCreate('t', 0, COMPACT);
    expect(m.all().map((l) => l.topic)).to.deep.equal(['later', 't']);
    expect(await cleaner.runOnce()).to.equal(0);
    expect(cleaner.firstDirtyOffset('t', 0)).to.equal(undefined);
    await writeRounds(again, 60);
    expect(await cleaner.runOnce()).to.equal(1);
    expect(cleaner.firstDirtyOffset('t', 0)).to.equal(again.segmentBaseOffsets[again.segmentBaseOffsets.length - 1]);
  });

  // settings changed while it runs

  async function dirtyLogs(n: number): Promise<{ m: LogManager; logs: PartitionLog[] }> {
    const m = await LogManager.open(root, broker, quiet);
    mgr = m;
    const logs: PartitionLog[] = [];
    for (let p = 0; p < n; p++) {
      const l = await m.getOrCreate('t', p, COMPACT);
      await writeRounds(l, 60);
      logs.push(l);
    }
    return { m, logs };
  }

  it('log.cleaner.threads: more threads clean more logs per round, fewer end once idle', async () => {
    const { m, logs } = await dirtyLogs(4);
    const wants = await Promise.all(logs.map(async (l) => latest(await allRecords(l))));
    const run = cleanerOver(root, () => m.all(), { threads: 1 });
    cleaner = run.cleaner;
    expect(await cleaner.runOnce()).to.equal(1);
    expect(cleaner.liveThreads).to.equal(1);
    cleaner.reconfigure({ ...cleaner.currentSettings, threads: 2 });
    expect(run.lines).to.include('log cleaner reconfigured');
    expect(await cleaner.runOnce()).to.equal(2);
    expect(cleaner.liveThreads).to.equal(2);
    cleaner.reconfigure({ ...cleaner.currentSettings, threads: 1 });
    expect(cleaner.liveThreads).to.equal(1);
    expect(await cleaner.runOnce()).to.equal(1);
    expect(await cleaner.runOnce()).to.equal(0);
    for (const [i, l] of logs.entries()) await expectCleaned(l, wants[i] as ReturnType<typeof latest>);
  });

  it('log.cleaner.io.max.bytes.per.second: raising it wakes a throttled cleaning in the middle, which then finishes', async function () {
    this.timeout(30_000);
    const { m, logs } = await dirtyLogs(1);
    const want = latest(await allRecords(logs[0] as PartitionLog));
    // 100 B/s: cleaning the 12 KB log (read twice, written once) would take five minutes, far longer than this test may run
    cleaner = cleanerOver(root, () => m.all(), { threads: 1, ioMaxBytesPerSecond: 100 }).cleaner;
    const round = cleaner.runOnce();
    await new Promise((r) => setTimeout(r, 200));
    cleaner.reconfigure({ ...cleaner.currentSettings, ioMaxBytesPerSecond: Number.MAX_VALUE });
    expect(await round).to.equal(1);
    await expectCleaned(logs[0] as PartitionLog, want);
  });

  it('log.cleaner.dedupe.buffer.size: the next cleaning maps as many keys as the new size holds', async () => {
    const m = await LogManager.open(root, broker, quiet);
    mgr = m;
    // ten new keys per batch: a map of 90 usable slots reaches nine batches
    await writeRounds(await m.getOrCreate('t', 0, COMPACT), 40, (r) => KEYS.map((k) => `${k}-${r}`));
    cleaner = cleanerOver(root, () => m.all(), { dedupeBufferSize: 1 << 20 }).cleaner;
    cleaner.reconfigure({ ...cleaner.currentSettings, dedupeBufferSize: 2400 });
    expect(await cleaner.runOnce()).to.equal(1);
    expect(cleaner.firstDirtyOffset('t', 0)).to.equal(90n);
  });

  it("log.cleaner.threads changes within Kafka's bounds: at least 1, at least half (rounded down), at most double", () => {
    expect([1, 2].map((n) => threadsChangeError(1, n))).to.deep.equal([undefined, undefined]);
    expect(threadsChangeError(1, 3)).to.equal('Log cleaner threads cannot be increased to more than double the current value 1');
    expect(threadsChangeError(3, 0)).to.equal('Log cleaner threads should be at least 1');
    expect(threadsChangeError(3, 1)).to.equal(undefined);
    expect(threadsChangeError(4, 1)).to.equal('Log cleaner threads cannot be reduced to less than half the current value 4');
  });
});
