/**
 * The fsyncs that made the first write to 10,000 partitions slow (issue 14), and what keeps them
 * safe: directory fsyncs shared by the callers that come while one runs, and a new leader epoch's
 * checkpoint written on the append path without fsync and made durable by the log's next flush
 * (Kafka's KAFKA-15046); recovery rebuilds the epochs of the scanned tail and writes only a change.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { fsyncDir, LEADER_EPOCH_CHECKPOINT, LeaderEpochCache } from '../../../lib/log/checkpoint.js';
import { crashCopy } from './replication-helpers.js';
import { openLog, rmDir, tmpDir, v2 } from './helpers.js';

/** Counts `fsp.open` calls whose path `match` selects while `fn` runs (the real open still runs). */
async function countOpens(match: (file: string, flags: unknown) => boolean, fn: () => Promise<void>): Promise<number> {
  const real = fsp.open;
  let n = 0;
  (fsp as { open: typeof fsp.open }).open = (file: fs.PathLike, flags?: string | number, mode?: fs.Mode) => {
    if (match(String(file), flags)) n++;
    return real(file, flags, mode);
  };
  try {
    await fn();
  } finally {
    (fsp as { open: typeof fsp.open }).open = real;
  }
  return n;
}

const epochFile = (dir: string): string => path.join(dir, 'topic-0', LEADER_EPOCH_CHECKPOINT);
const epochLines = (dir: string): string[] => fs.readFileSync(epochFile(dir), 'utf8').trim().split('\n').slice(2);

describe('lib/log file syncs', () => {
  const dirs: string[] = [];
  const dir = (): string => {
    const d = tmpDir('syncs');
    dirs.push(d);
    return d;
  };
  after(() => dirs.forEach(rmDir));

  it('fsyncDir: callers during one fsync share the next one, and each waits for an fsync started after its call', async () => {
    const d = dir();
    const calls = 200;
    const order: string[] = [];
    const syncs = await countOpens(
      (f, flags) => f === d && flags === 'r',
      async () => {
        const first = fsyncDir(d).then(() => order.push('first'));
        const rest = Array.from({ length: calls - 1 }, () => fsyncDir(d));
        await Promise.all([first, ...rest]).then(() => order.push('rest'));
      },
    );
    // the first call's fsync, then one shared by the 199 that came while it ran
    expect(syncs).to.equal(2);
    expect(order).to.deep.equal(['first', 'rest']);
    // once idle, a call starts its own fsync again
    expect(
      await countOpens(
        (f) => f === d,
        () => fsyncDir(d),
      ),
    ).to.equal(1);
  });

  it('fsyncDir: a failed fsync rejects the callers sharing it; the next call tries again', async () => {
    const gone = path.join(dir(), 'missing');
    const both = await Promise.allSettled([fsyncDir(gone), fsyncDir(gone)]);
    expect(both.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    fs.mkdirSync(gone);
    await fsyncDir(gone);
  });

  it("a new epoch's checkpoint is written without fsync on append and rewritten durably by the next flush, once", async () => {
    const d = dir();
    const log = await openLog(d);
    const tmpOpens = (fn: () => Promise<void>): Promise<number> => countOpens((f) => f === `${epochFile(d)}.tmp`, fn);
    const appended = await tmpOpens(async () => {
      await log.append(v2(2), { leaderEpoch: 4 }).written;
      await log.append(v2(2), { leaderEpoch: 4 }).written;
    });
    // one write for the new epoch (none for the second batch of the same epoch)
    expect(appended).to.equal(1);
    // the flush makes it durable (one more atomic write), a second flush has nothing to do
    expect(await tmpOpens(() => log.flush())).to.equal(1);
    expect(epochLines(d)).to.deep.equal(['4 0']);
    expect(await tmpOpens(() => log.flush())).to.equal(0);
    await log.append(v2(1), { leaderEpoch: 5 }).written;
    expect(await tmpOpens(() => log.close())).to.equal(1);
    expect(epochLines(d)).to.deep.equal(['4 0', '5 4']);
  });

  it('recovery rebuilds the epochs of the scanned tail: a checkpoint lost in a crash comes back, a right one is not rewritten', async () => {
    const d = dir();
    const log = await openLog(d);
    await log.append(v2(3), { leaderEpoch: 1 }).written;
    await log.append(v2(2), { leaderEpoch: 3 }).written;
    await log.flush();
    const crashed = dir();
    crashCopy(d, crashed);
    fs.rmSync(epochFile(crashed));
    await log.close();
    const rebuilt = await openLog(crashed, {}, true);
    expect(rebuilt.latestEpoch).to.equal(3);
    await rebuilt.close();
    expect(epochLines(crashed)).to.deep.equal(['1 0', '3 3']);
    const writes = await countOpens(
      (f) => f.startsWith(epochFile(crashed)),
      async () => {
        const again = await openLog(crashed, {}, true);
        expect([again.latestEpoch, again.logEndOffset]).to.deep.equal([3, 5n]);
        await again.close();
      },
    );
    expect(writes).to.equal(0);
  });

  it('rebuildFrom drops entries past the tail before assigning its epochs (an older epoch there would wipe earlier entries)', async () => {
    const d = dir();
    fs.mkdirSync(path.join(d, 'p'));
    const cache = new LeaderEpochCache(path.join(d, 'p'));
    cache.assign(1, 0n);
    cache.assign(3, 27n);
    // the scanned tail starts at 24 with epoch 1 and holds epoch 3 from 27: nothing changes
    cache.rebuildFrom(24n, [
      { epoch: 1, startOffset: 24n },
      { epoch: 3, startOffset: 27n },
    ]);
    expect(cache.all).to.deep.equal([
      { epoch: 1, startOffset: 0n },
      { epoch: 3, startOffset: 27n },
    ]);
    // a tail that ends in epoch 1 (epoch 3 was never written): the stale entry goes
    cache.rebuildFrom(24n, [{ epoch: 1, startOffset: 24n }]);
    expect(cache.all).to.deep.equal([{ epoch: 1, startOffset: 0n }]);
    await cache.settle();
    expect(fs.readFileSync(path.join(d, 'p', LEADER_EPOCH_CHECKPOINT), 'utf8')).to.equal('0\n1\n1 0\n');
  });
});
