/**
 * A full disk under a partition log: the error a failed write maps to, and, on a real tmpfs filled
 * up by the test, that the appends a failed write left (in memory, in a rolled segment, and the
 * part of a batch a short writev put in the file) are discarded, acknowledged data stays intact,
 * and appends resume once space is freed, without reopening the log.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { GregorLogErrorCode, LogError, RateLimitedLog, isNoSpace, writeFailure } from '../../../lib/log/errors.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { expectLogErrorAsync, openLog, readAll, v2 } from './helpers.js';
import { PID, idem } from './replication-helpers.js';
import { fillUp, mountTmpfs, type Tmpfs } from '../../helpers/tmpfs.js';
import { scanPartitionDir } from '../../helpers/log-scan.js';

function errno(code: string): Error {
  return Object.assign(new Error(`${code}: simulated`), { code });
}

describe('lib/log full disk: error mapping', () => {
  it('ENOSPC and EDQUOT (also as a cause) are a full disk; every write failure answers KAFKA_STORAGE_ERROR', () => {
    expect(isNoSpace(errno('ENOSPC'))).to.equal(true);
    expect(isNoSpace(errno('EDQUOT'))).to.equal(true);
    expect(isNoSpace(new Error('wrapped', { cause: errno('ENOSPC') }))).to.equal(true);
    expect(isNoSpace(errno('EIO'))).to.equal(false);
    expect(isNoSpace('ENOSPC')).to.equal(false);
    for (const code of ['ENOSPC', 'EDQUOT', 'EIO']) {
      const e = writeFailure('/data/t-0', errno(code));
      expect(e).to.be.instanceOf(LogError);
      expect(e.errorCode).to.equal(ErrorCode.KAFKA_STORAGE_ERROR);
      expect(e.code).to.equal(GregorLogErrorCode.STORAGE);
      expect(e.message).to.contain(code === 'EIO' ? 'the write failed' : 'the file system is full');
    }
  });

  it('RateLimitedLog writes one line per interval and counts the ones held back', () => {
    const lines: number[] = [];
    const log = new RateLimitedLog(1000);
    for (const now of [0, 1, 500, 999, 1000, 1001, 5000]) log.event((held) => lines.push(held), now);
    expect(lines).to.deep.equal([0, 3, 1]);
  });
});

describe('lib/log full disk: a real full tmpfs', function () {
  this.timeout(30_000);
  let fsys: Tmpfs | string;
  const logs: PartitionLog[] = [];
  before(function () {
    fsys = mountTmpfs(2 << 20);
    // skipped only where a tmpfs cannot be mounted (not root): the reason is printed
    if (typeof fsys === 'string') {
      console.warn(`skipping the full-disk tests: ${fsys}`);
      this.skip();
    }
  });
  after(() => {
    if (typeof fsys !== 'string') fsys.unmount();
  });
  afterEach(async () => {
    for (const l of logs.splice(0)) await l.close().catch(() => undefined);
    if (typeof fsys !== 'string')
      for (const f of fs.readdirSync(fsys.dir)) fs.rmSync(path.join(fsys.dir, f), { recursive: true, force: true });
  });

  /** Waits (without a time bound: mocha's timeout is the bound) until the log takes appends again. */
  async function backOnline(log: PartitionLog): Promise<void> {
    while (log.isOffline) await new Promise((r) => setTimeout(r, 5));
  }

  it('an idempotent producer retrying the refused batch once space is freed gets it written at the same offset (its sequence was rolled back)', async () => {
    const root = (fsys as Tmpfs).dir;
    const dataDir = path.join(root, 'data');
    const log = await openLog(dataDir);
    logs.push(log);
    const first = idem(3, 0);
    await log.append(first, { leaderEpoch: 0 }).written;
    const filler = fillUp(root, 0);
    // larger than what is left of the page the first batch is in (a tmpfs allocates by page)
    const retried = v2(3, { producerId: PID, producerEpoch: 0, baseSequence: 3, size: 10_000 });
    await expectLogErrorAsync(log.append(retried, { leaderEpoch: 0 }).written, ErrorCode.KAFKA_STORAGE_ERROR);
    await backOnline(log);
    expect(log.logEndOffset).to.equal(3n);
    fs.rmSync(filler);
    // not a duplicate of the discarded batch (which would answer offsets never written), nor out of order
    const r = log.append(retried, { leaderEpoch: 0 });
    expect(r.info.firstOffset).to.equal(3n);
    expect(r.info.recordCount).to.equal(3);
    await r.written;
    expect(await readAll(log)).to.deep.equal([first, retried]);
  });

  for (const roll of [false, true]) {
    it(`discards what a failed write left${roll ? ' (in a segment rolled for it)' : ''}, keeps what was acknowledged, resumes once space is freed`, async () => {
      const root = (fsys as Tmpfs).dir;
      const dataDir = path.join(root, 'data');
      // 8 acknowledged batches of ~20 KB; with `roll` the next append rolls a new segment
      const segmentBytes = roll ? 8 * 21_000 : 100 << 20;
      const log = await openLog(dataDir, { segmentBytes });
      logs.push(log);
      const acked: Buffer[] = [];
      for (let i = 0; i < 8; i++) {
        const b = v2(2, { prefix: `ok${i}`, size: 10_000 });
        await log.append(b, { leaderEpoch: 0 }).written;
        acked.push(b);
      }
      const end = log.logEndOffset;
      const dir = path.join(dataDir, 'topic-0');
      const logFile = path.join(dir, '00000000000000000000.log');
      const sizeBefore = fs.statSync(logFile).size;
      // 8 KB left: a 60 KB batch is written in part (a short writev), then ENOSPC
      const filler = fillUp(root, 8 << 10);
      const big = log.append(v2(3, { prefix: 'big', size: 20_000 }), { leaderEpoch: 0 });
      const next = log.append(v2(1, { prefix: 'next', size: 100 }), { leaderEpoch: 0 });
      expect(big.info.firstOffset).to.equal(end);
      const e = await expectLogErrorAsync(big.written, ErrorCode.KAFKA_STORAGE_ERROR);
      expect(e.message).to.contain('the file system is full');
      await expectLogErrorAsync(next.written, ErrorCode.KAFKA_STORAGE_ERROR);
      await backOnline(log);
      expect(log.logEndOffset).to.equal(end);
      expect(log.highWatermark).to.equal(end);
      expect(fs.statSync(logFile).size).to.equal(sizeBefore);
      expect(fs.readdirSync(dir).filter((f) => f.endsWith('.log'))).to.deep.equal(['00000000000000000000.log']);
      expect(await readAll(log)).to.deep.equal(acked);
      // still full: refused again, the same way
      await expectLogErrorAsync(
        log.append(v2(3, { prefix: 'again', size: 20_000 }), { leaderEpoch: 0 }).written,
        ErrorCode.KAFKA_STORAGE_ERROR,
      );
      await backOnline(log);
      expect(log.logEndOffset).to.equal(end);
      // the operator frees space: the next append is written at the same log end offset, no reopen
      fs.rmSync(filler);
      const after = v2(2, { prefix: 'after', size: 1000 });
      const r = log.append(after, { leaderEpoch: 0 });
      await r.written;
      expect(r.info.firstOffset).to.equal(end);
      acked.push(after);
      expect(await readAll(log)).to.deep.equal(acked);
      await log.close();
      const reopened = await openLog(dataDir, { segmentBytes }, true);
      logs.push(reopened);
      expect(await readAll(reopened)).to.deep.equal(acked);
      await reopened.close();
      const scan = scanPartitionDir(dir);
      expect(scan.problems).to.deep.equal([]);
      expect(scan.nextOffset).to.equal(end + 2n);
    });
  }
});
