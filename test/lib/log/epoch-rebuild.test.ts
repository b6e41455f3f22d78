/**
 * A log loaded cleanly whose `leader-epoch-checkpoint` is missing or garbled (issue 17, item 3):
 * the epochs come back from the segments' batch headers, one line says so, and the checkpoint is
 * written again with the same content. Both an opened log and one opened lazily through the log
 * manager (whose closed answers read the checkpoint) are checked.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { BrokerConfig } from '../../../lib/config.js';
import { LEADER_EPOCH_CHECKPOINT } from '../../../lib/log/checkpoint.js';
import { epochsFromSegments } from '../../../lib/log/epoch-rebuild.js';
import { PartitionLog } from '../../../lib/log/partition-log.js';
import { captureLog, config, expectLogError, legacy, managerRuns, openLog, rmDir, tmpDir, v2 } from './helpers.js';

/** What the log answers about its epochs. */
function epochView(log: PartitionLog): unknown {
  return {
    latest: log.latestEpoch,
    ends: [0, 1, 2, 3, 4, 5, 6].map((e) => log.endOffsetForEpoch(e)),
    earliest: log.offsetForTimestamp(-2n),
    latestOffset: log.offsetForTimestamp(-1n),
  };
}

const DAMAGES: [string, (file: string) => void][] = [
  ['deleted', (f) => fs.rmSync(f)],
  ['garbled (not numbers)', (f) => fs.writeFileSync(f, '0\n2\nzz 0\n2 qq\n')],
  ['garbled (count does not match)', (f) => fs.writeFileSync(f, '0\n5\n0 0\n')],
  ['garbled (entries out of order)', (f) => fs.writeFileSync(f, '0\n2\n5 9\n2 5\n')],
  ['emptied', (f) => fs.writeFileSync(f, '')],
];

describe('lib/log leader epochs rebuilt from the log when the checkpoint is lost', () => {
  let dir: string;
  let log: PartitionLog | null = null;
  beforeEach(() => {
    dir = tmpDir('epoch-rebuild');
  });
  afterEach(async () => {
    await log?.close();
    log = null;
    rmDir(dir);
  });

  /** Epochs 1, 3 and 6 over several small segments, the start moved into epoch 1's segment by DeleteRecords. */
  async function written(): Promise<{ view: unknown; checkpoint: string }> {
    log = await openLog(dir, { segmentBytes: 600 });
    for (let i = 0; i < 12; i++) await (await log.appendAsync(v2(3, { size: 40 }), { leaderEpoch: i < 4 ? 1 : i < 9 ? 3 : 6 })).written;
    log.deleteRecordsBefore(4n);
    const view = epochView(log);
    expect(log.segmentBaseOffsets.length).to.be.greaterThan(3);
    await log.close();
    log = null;
    return { view, checkpoint: fs.readFileSync(path.join(dir, 'topic-0', LEADER_EPOCH_CHECKPOINT), 'utf8') };
  }

  for (const [what, damage] of DAMAGES) {
    it(`a checkpoint ${what} after a clean shutdown: the epochs come back from the batches and the file is written again`, async () => {
      const before = await written();
      expect(before.checkpoint).to.equal('0\n3\n1 4\n3 12\n6 27\n');
      damage(path.join(dir, 'topic-0', LEADER_EPOCH_CHECKPOINT));
      const c = captureLog();
      log = await PartitionLog.open(dir, 'topic', 0, config({ segmentBytes: 600 }), { recover: false, logger: c.logger });
      expect(epochView(log)).to.deep.equal(before.view);
      await log.flush();
      expect(fs.readFileSync(path.join(dir, 'topic-0', LEADER_EPOCH_CHECKPOINT), 'utf8')).to.equal(before.checkpoint);
      expect(c.lines.filter((l) => /rebuilt the leader epochs from the log's batch headers/.test(l))).to.have.length(1);
      expect(c.lines).to.not.include('log recovered');
    });
  }

  it('the header walk finds where each epoch starts, and skips magic 0/1 entries', async () => {
    log = await openLog(dir, { segmentBytes: 500 });
    await log.appendAsync(legacy(2, { magic: 1 }), { leaderEpoch: 0 });
    for (let i = 0; i < 8; i++) await log.appendAsync(v2(2, { size: 30 }), { leaderEpoch: i < 5 ? 2 : 7 });
    const segs = (log as unknown as { log: { segments: Parameters<typeof epochsFromSegments>[0] } }).log.segments;
    const walked = await epochsFromSegments(segs);
    expect(walked.batches).to.equal(10); // two magic 1 messages (uncompressed: one entry each) and eight batches
    expect(walked.entries).to.deep.equal([
      { epoch: 2, startOffset: 2n },
      { epoch: 7, startOffset: 12n },
    ]);
  });

  it('a log without data gets no checkpoint; one with only magic 0/1 data gets an empty one (not walked again)', async () => {
    log = await openLog(dir);
    await log.close();
    log = await openLog(dir);
    await log.flush();
    expect(fs.existsSync(path.join(dir, 'topic-0', LEADER_EPOCH_CHECKPOINT))).to.equal(false);
    await log.appendAsync(legacy(3, { magic: 1 }), { leaderEpoch: 0 });
    await log.close();
    log = await openLog(dir);
    expect(log.latestEpoch).to.equal(-1);
    await log.flush();
    expect(fs.readFileSync(path.join(dir, 'topic-0', LEADER_EPOCH_CHECKPOINT), 'utf8')).to.equal('0\n0\n');
  });
});

describe('lib/log leader epochs of a log not open whose checkpoint is lost', () => {
  const runs = managerRuns('epoch-rebuild-lazy', new BrokerConfig({ overrides: { 'log.retention.bytes': '-1' } }));

  it('the closed log does not answer from the missing file: it opens, rebuilds, and answers as before', async () => {
    const cfg = config({ segmentBytes: 600 });
    let mgr = await runs.open();
    const l = await mgr.getOrCreate('t', 0, cfg);
    for (let i = 0; i < 10; i++) await l.appendAsync(v2(3, { size: 40 }), { leaderEpoch: i < 5 ? 2 : 4 });
    const before = epochView(l);
    await mgr.shutdown();
    fs.rmSync(path.join(runs.dir, 't-0', LEADER_EPOCH_CHECKPOINT));
    mgr = await runs.open();
    const again = mgr.attach('t', 0, cfg);
    expect(again.isOpen).to.equal(false);
    // without the file the summary's answer would be "no epochs": the log opens instead, retriably
    expectLogError(() => again.latestEpoch, ErrorCode.REQUEST_TIMED_OUT);
    for (let i = 0; i < 400 && !again.isOpen; i++) await new Promise((r) => setTimeout(r, 10));
    expect(again.isOpen).to.equal(true);
    expect(epochView(again)).to.deep.equal(before);
    await again.flush();
    expect(fs.readFileSync(path.join(runs.dir, 't-0', LEADER_EPOCH_CHECKPOINT), 'utf8')).to.equal('0\n2\n2 0\n4 15\n');
  });
});
