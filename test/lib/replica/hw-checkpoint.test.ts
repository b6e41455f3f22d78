/**
 * The replication-offset-checkpoint (clusters): a replica's high watermark starts at min(its
 * checkpointed value, its log end offset) instead of its log end offset, open or not yet open, and
 * the checkpoint written from the replicas reads back as written.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { BrokerConfig } from '../../../lib/config.js';
import { CLEAN_SHUTDOWN_MARKER } from '../../../lib/log/log-manager.js';
import { LogManager } from '../../../lib/log/log-dirs.js';
import { SUMMARY_CHECKPOINT } from '../../../lib/log/log-summary.js';
import { HW_CHECKPOINT, HighWatermarkCheckpoint } from '../../../lib/replica/hw-checkpoint.js';
import { captureLog, config, rmDir, tmpDir, v2 } from '../log/helpers.js';

describe('lib/replica replication-offset-checkpoint', () => {
  let dir: string;
  const broker = new BrokerConfig({ overrides: {} });
  const quiet = captureLog().logger;
  beforeEach(() => {
    dir = tmpDir('hwcp');
  });
  afterEach(() => rmDir(dir));

  /** A data dir whose partition t-0 holds 10 records (the last run ended cleanly). */
  async function tenRecords(): Promise<void> {
    const mgr = await LogManager.open(dir, broker, quiet);
    const log = await mgr.getOrCreate('t', 0, config());
    await log.append(v2(10), { leaderEpoch: 0 }).written;
    await mgr.shutdown();
  }

  it('reads back what it wrote; a partition it does not have starts at 0 (then the log start)', async () => {
    await tenRecords();
    expect(new HighWatermarkCheckpoint(dir, quiet).initial('t', 0)).to.equal(0n);
    const mgr = await LogManager.open(dir, broker, quiet);
    const log = await mgr.getOrCreate('t', 0, config());
    const advanced: bigint[] = [];
    log.useExternalHighWatermark(null, { initialHighWatermark: 4n, onAdvanced: (hw) => advanced.push(hw) });
    expect([log.logEndOffset, log.highWatermark]).to.deep.equal([10n, 4n]);
    expect(log.setHighWatermark(7n)).to.equal(7n);
    expect(advanced).to.deep.equal([7n]);
    await new HighWatermarkCheckpoint(dir, quiet).write(mgr.all());
    expect(fs.readFileSync(path.join(dir, HW_CHECKPOINT), 'utf8')).to.equal('0\n1\nt 0 7\n');
    const again = new HighWatermarkCheckpoint(dir, quiet);
    expect([again.initial('t', 0), again.initial('t', 1), again.initial('u', 0)]).to.deep.equal([7n, 0n, 0n]);
    await mgr.shutdown();
  });

  it('a replica starts at min(checkpoint, log end offset), before and after its files open; a log reopened without one starts at its end', async () => {
    await tenRecords();
    let mgr = await LogManager.open(dir, broker, quiet);
    // served from its summary until first use: the checkpointed high watermark already holds
    let log = mgr.attach('t', 0, config());
    log.useExternalHighWatermark(null, { initialHighWatermark: 6n });
    expect(log.isOpen).to.equal(false);
    expect([log.highWatermark, log.lastStableOffset, log.logEndOffset]).to.deep.equal([6n, 6n, 10n]);
    await log.open();
    expect([log.highWatermark, log.lastStableOffset, log.logEndOffset]).to.deep.equal([6n, 6n, 10n]);
    const read = await log.read(0n, 1 << 20, { minOneMessage: true, maxOffset: log.highWatermark });
    expect(read.records.length).to.equal(0); // the one batch [0, 9] ends past the high watermark
    await mgr.shutdown();
    // a checkpoint past the log end (the log was cut since): the log end
    mgr = await LogManager.open(dir, broker, quiet);
    log = mgr.attach('t', 0, config());
    log.useExternalHighWatermark(null, { initialHighWatermark: 50n });
    expect(log.highWatermark).to.equal(10n);
    await log.open();
    expect(log.highWatermark).to.equal(10n);
    await mgr.shutdown();
    // single node (no external high watermark): the log end, as before
    mgr = await LogManager.open(dir, broker, quiet);
    log = await mgr.getOrCreate('t', 0, config());
    expect(log.highWatermark).to.equal(10n);
    await mgr.shutdown();
  });

  it('a replica not recovered yet keeps its checkpointed value; an unreadable file is ignored with a warning', async () => {
    await tenRecords();
    fs.writeFileSync(path.join(dir, HW_CHECKPOINT), '0\n2\nt 0 3\nt 1 9\n');
    // a crash (no clean-shutdown marker) and no summary of t-0: it has to be recovered before it can tell its offsets
    fs.rmSync(path.join(dir, CLEAN_SHUTDOWN_MARKER));
    fs.rmSync(path.join(dir, SUMMARY_CHECKPOINT));
    const mgr = await LogManager.open(dir, broker, quiet);
    const log = mgr.attach('t', 0, config());
    expect(log.servable).to.equal(false);
    const cp = new HighWatermarkCheckpoint(dir, quiet);
    await cp.write(mgr.all());
    expect(fs.readFileSync(path.join(dir, HW_CHECKPOINT), 'utf8')).to.equal('0\n1\nt 0 3\n');
    await mgr.shutdown();
    fs.writeFileSync(path.join(dir, HW_CHECKPOINT), 'garbage');
    const c = captureLog();
    expect(new HighWatermarkCheckpoint(dir, c.logger).initial('t', 0)).to.equal(0n);
    expect(c.lines.some((l) => l.startsWith('ignoring an unreadable replication-offset-checkpoint'))).to.equal(true);
  });
});
