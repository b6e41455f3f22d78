import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { LogFile } from '../../../lib/log/file-io.js';
import { LogSegment } from '../../../lib/log/segment.js';
import { rmDir, tmpDir } from './helpers.js';

describe('lib/log LogFile (a segment file on a plain descriptor)', () => {
  let dir: string;
  let file: LogFile;
  let logPath: string;
  beforeEach(() => {
    dir = tmpDir();
    logPath = path.join(dir, '00000000000000000000.log');
    fs.writeFileSync(logPath, Buffer.from('0123456789'));
    file = new LogFile({ logPath });
  });
  afterEach(async () => {
    await file.close();
    rmDir(dir);
  });

  it('opens on first use, reads positionally and stops short at the end of the file', async () => {
    expect(file.fd).to.equal(-1);
    const out = Buffer.alloc(8);
    expect(await file.readFully(out, 4, 3)).to.equal(4);
    expect(out.subarray(0, 4).toString()).to.equal('3456');
    expect(file.fd).to.be.at.least(0);
    expect(await file.readFully(out, 8, 6)).to.equal(4);
    expect(out.subarray(0, 4).toString()).to.equal('6789');
  });

  it('keeps the descriptor until the operations in flight are done, then closes it; a later use opens the file again', async () => {
    await file.openNow('r+');
    const fd = file.fd;
    const out = Buffer.alloc(10);
    const reads = [file.readFully(out, 10, 0), file.writev([Buffer.from('ab')], 10)];
    const closed = file.close();
    // the descriptor is not released under the read and the write (its number could go to another file)
    expect(file.fd).to.equal(fd);
    expect(await Promise.all(reads)).to.deep.equal([10, 2]);
    await closed;
    expect(file.fd).to.equal(-1);
    expect(() => fs.fstatSync(fd)).to.throw(/EBADF/);
    expect(out.toString()).to.equal('0123456789');
    expect(await file.readFully(out, 2, 10)).to.equal(2);
    expect(out.subarray(0, 2).toString()).to.equal('ab');
  });

  it('truncates and syncs', async () => {
    await file.truncate(4);
    await file.sync();
    expect(fs.readFileSync(logPath).toString()).to.equal('0123');
    expect((await file.stat()).size).to.equal(4);
  });
});

describe('lib/log LogSegment.open with the directory listing', () => {
  let dir: string;
  beforeEach(() => {
    dir = tmpDir();
  });
  afterEach(() => rmDir(dir));

  it('reads the index files listed and skips those not listed', async () => {
    const stats = { writes: 0, syncs: 0 };
    fs.writeFileSync(path.join(dir, '00000000000000000000.log'), Buffer.alloc(0));
    // a sane, empty offset index and time index on disk
    fs.writeFileSync(path.join(dir, '00000000000000000000.index'), Buffer.alloc(0));
    fs.writeFileSync(path.join(dir, '00000000000000000000.timeindex'), Buffer.alloc(0));
    const all = new Set(fs.readdirSync(dir));
    const listed = await LogSegment.open(dir, 0n, 1 << 20, 0, stats, all);
    await listed.segment.close();
    expect(listed.indexesValid).to.equal(true);
    const unlisted = await LogSegment.open(dir, 0n, 1 << 20, 0, stats, new Set(['00000000000000000000.log']));
    await unlisted.segment.close();
    expect(unlisted.indexesValid).to.equal(false);
    const unknown = await LogSegment.open(dir, 0n, 1 << 20, 0, stats);
    await unknown.segment.close();
    expect(unknown.indexesValid).to.equal(true);
  });
});
