import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { BrokerConfig } from '../../../lib/config.js';
import { logConfigFrom } from '../../../lib/log/log-config.js';
import { CLEAN_SHUTDOWN_MARKER, LogDir, RECOVERY_POINT_CHECKPOINT } from '../../../lib/log/log-manager.js';
import { LogManager } from '../../../lib/log/log-dirs.js';
import { captureLog, config, rmDir, tmpDir, v2 } from './helpers.js';

describe('lib/log LogManager', () => {
  let dir: string;
  const broker = new BrokerConfig({ overrides: { 'log.retention.bytes': '-1' } });
  beforeEach(() => {
    dir = tmpDir('mgr');
  });
  afterEach(() => rmDir(dir));

  it('a fresh data dir (first start) recovers nothing and warns about nothing', async () => {
    const c = captureLog();
    const mgr = await LogManager.open(dir, broker, c.logger);
    const log = await mgr.getOrCreate('fresh', 0, config());
    await log.append(v2(2), { leaderEpoch: 0 }).written;
    expect(c.lines).to.not.include('log recovered');
    expect(c.lines.some((l) => l.startsWith('no clean-shutdown marker'))).to.equal(false);
    await mgr.shutdown();
  });

  it('writes the clean-shutdown marker on shutdown and removes it while running', async () => {
    const c1 = captureLog();
    let mgr = await LogManager.open(dir, broker, c1.logger);
    expect(mgr.hadCleanShutdown).to.equal(false);
    const [a, b] = await Promise.all([mgr.getOrCreate('my-topic', 3, config()), mgr.getOrCreate('my-topic', 3, config())]);
    expect(a).to.equal(b);
    await a.append(v2(3), { leaderEpoch: 0 }).written;
    await mgr.shutdown();
    expect(fs.existsSync(path.join(dir, CLEAN_SHUTDOWN_MARKER))).to.equal(true);

    const c2 = captureLog();
    mgr = await LogManager.open(dir, broker, c2.logger);
    expect(mgr.hadCleanShutdown).to.equal(true);
    expect(fs.existsSync(path.join(dir, CLEAN_SHUTDOWN_MARKER))).to.equal(false);
    expect(await mgr.listPartitions()).to.deep.equal([{ topic: 'my-topic', partition: 3 }]);
    const log = await mgr.getOrCreate('my-topic', 3, config());
    expect(log.logEndOffset).to.equal(3n);
    expect(c2.lines).to.not.include('log recovered');
    expect(mgr.get('my-topic', 3)).to.equal(log);
    // "crash": no shutdown, so the next start recovers
    await log.flush();
    const c3 = captureLog();
    const mgr3 = await LogManager.open(dir, broker, c3.logger);
    expect(mgr3.hadCleanShutdown).to.equal(false);
    const again = await mgr3.getOrCreate('my-topic', 3, config());
    expect(again.logEndOffset).to.equal(3n);
    expect(c3.lines).to.include('log recovered');
    await mgr3.shutdown();
    await log.close();
  });

  it("recovery-point-offset-checkpoint: a roll moves the recovery point once the closed segment is fsynced; shutdown writes each log's end; a garbled file is ignored with a warning", async () => {
    let mgr = await LogManager.open(dir, broker);
    const log = await mgr.getOrCreate('rp', 0, config({ segmentBytes: 600 }));
    expect(log.recoveryPoint).to.equal(0n);
    for (let i = 0; i < 12; i++) await log.append(v2(3, { size: 40 }), { leaderEpoch: 0 }).written;
    const bases = log.segmentBaseOffsets;
    expect(bases.length).to.be.greaterThan(2);
    const active = bases[bases.length - 1] as bigint;
    // the last roll's fsync runs in the background: mocha's timeout bounds the wait
    while (log.recoveryPoint < active) await new Promise((r) => setTimeout(r, 5));
    expect(log.recoveryPoint).to.equal(active);
    await mgr.shutdown();
    const file = path.join(dir, RECOVERY_POINT_CHECKPOINT);
    expect(fs.readFileSync(file, 'utf8')).to.equal(`0\n1\nrp 0 ${log.logEndOffset}\n`);
    fs.writeFileSync(file, '0\n1\nrp zero 12\n');
    const c = captureLog();
    mgr = await LogManager.open(dir, broker, c.logger);
    expect(c.lines).to.include(
      `ignoring an unreadable ${RECOVERY_POINT_CHECKPOINT}: logs recovered after an unclean shutdown are validated from their start`,
    );
    await mgr.shutdown();
  });

  it('recovery-point-offset-checkpoint: the periodic write skips one that would repeat the file, and writes after a recovery point moved or a partition came or went', async () => {
    const d = await LogDir.open(dir, broker);
    const file = path.join(dir, RECOVERY_POINT_CHECKPOINT);
    const read = () => fs.readFileSync(file, 'utf8');
    const log = d.attach('rp', 0, config({ segmentBytes: 600 }));
    await log.open();
    expect(await d.writeRecoveryPointsIfChanged()).to.equal(true);
    expect(read()).to.equal('0\n1\nrp 0 0\n');
    expect(await d.writeRecoveryPointsIfChanged()).to.equal(false);
    // a roll moves the recovery point (once the closed segment is fsynced)
    for (let i = 0; i < 12; i++) await log.append(v2(3, { size: 40 }), { leaderEpoch: 0 }).written;
    const active = log.segmentBaseOffsets[log.segmentBaseOffsets.length - 1] as bigint;
    while (log.recoveryPoint < active) await new Promise((r) => setTimeout(r, 5));
    expect(await d.writeRecoveryPointsIfChanged()).to.equal(true);
    expect(read()).to.equal(`0\n1\nrp 0 ${active}\n`);
    expect(await d.writeRecoveryPointsIfChanged()).to.equal(false);
    // a partition added, then one deleted: written each time
    d.attach('rp', 1, config());
    expect(await d.writeRecoveryPointsIfChanged()).to.equal(true);
    expect(read()).to.equal(`0\n2\nrp 0 ${active}\nrp 1 0\n`);
    await d.deletePartition('rp', 1);
    expect(await d.writeRecoveryPointsIfChanged()).to.equal(true);
    expect(read()).to.equal(`0\n1\nrp 0 ${active}\n`);
    expect(await d.writeRecoveryPointsIfChanged()).to.equal(false);
    // the file removed behind its back is not noticed until something changes (as with any checkpoint); shutdown always writes
    fs.rmSync(file);
    await d.shutdown();
    expect(read()).to.equal(`0\n1\nrp 0 ${log.logEndOffset}\n`);
  });

  it('deletes topics and runs retention on one maintenance timer', async () => {
    const mgr = await LogManager.open(dir, broker);
    const cfg = logConfigFrom(
      new BrokerConfig({ overrides: { 'log.segment.bytes': '1000', 'log.retention.bytes': '1500', 'log.segment.delete.delay.ms': '0' } }),
      new Map(),
    );
    expect(cfg.segmentBytes).to.equal(1000);
    const keep = await mgr.getOrCreate('keep', 0, cfg);
    const gone = await mgr.getOrCreate('gone', 0, cfg);
    await mgr.getOrCreate('gone', 1, cfg);
    for (let i = 0; i < 40; i++) keep.append(v2(2, { size: 30 }), { leaderEpoch: 0 });
    await keep.flush();
    gone.append(v2(1), { leaderEpoch: 0 });
    await mgr.deleteTopic('gone');
    expect(mgr.get('gone', 0)).to.equal(undefined);
    expect(fs.readdirSync(dir).filter((n) => n.startsWith('gone'))).to.deep.equal([]);
    const before = keep.segmentBaseOffsets.length;
    mgr.startMaintenance(10);
    for (let i = 0; i < 50 && keep.segmentBaseOffsets.length === before; i++) await new Promise((r) => setTimeout(r, 10));
    expect(keep.segmentBaseOffsets.length).to.be.lessThan(before);
    expect(keep.size).to.be.at.most(1500 + 1000);
    await mgr.shutdown();
    expect(fs.existsSync(path.join(dir, CLEAN_SHUTDOWN_MARKER))).to.equal(true);
  });

  it('resolves LogConfig from topic overrides over broker defaults', () => {
    const b = new BrokerConfig({
      overrides: { 'log.retention.hours': '1', 'message.max.bytes': '5000', 'log.message.timestamp.difference.max.ms': '777' },
    });
    const c = logConfigFrom(
      b,
      new Map<string, string | number | boolean | string[] | bigint | null>([
        ['max.message.bytes', 100],
        ['cleanup.policy', ['compact', 'delete']],
        ['message.timestamp.type', 'LogAppendTime'],
      ]),
    );
    expect(c.retentionMs).to.equal(3600000);
    expect(c.maxMessageBytes).to.equal(100);
    expect(c.cleanupPolicy).to.deep.equal(['compact', 'delete']);
    expect(c.messageTimestampType).to.equal('LogAppendTime');
    expect(c.timestampBeforeMaxMs).to.equal(777);
    expect(c.timestampAfterMaxMs).to.equal(777);
    expect(c.flushMessages).to.equal(Number.MAX_SAFE_INTEGER);
    expect(c.segmentMs).to.equal(168 * 3600000);
    expect(logConfigFrom(new BrokerConfig(), new Map()).retentionBytes).to.equal(-1);
  });
});
