/**
 * Segment reads from the page cache (native/pread: preadv2 with RWF_NOWAIT) on the calling thread,
 * with libuv's thread pool taking whatever is not cached. The bytes must be the file's whichever way
 * they come; the counters show which way they came.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CACHED_READ_MAX_BYTES, cachedReadsEnabled, fileSliceCalls, LogFile, segmentReads } from '../../../lib/log/file-io.js';
import { loadAddon } from '../../../protocol/records/native-addon.js';
import { rmDir, tmpDir } from './helpers.js';

interface PreadAddon {
  preadNowait(fd: number, buf: Uint8Array, offset: number, length: number, position: number): number;
  dropCached(fd: number): number;
  sendfileNowait(outFd: number, inFd: number, position: number, length: number): number;
  uncachedPages(fd: number, position: number, length: number): number;
  dupFd(fd: number): number;
}

const EAGAIN = 11;

describe('lib/log cached segment reads (preadv2 RWF_NOWAIT)', () => {
  let dir: string;
  let logPath: string;
  let file: LogFile;
  let content: Buffer;
  const { addon, error } = loadAddon<PreadAddon>('pread');

  beforeEach(() => {
    dir = tmpDir();
    logPath = path.join(dir, '00000000000000000000.log');
    content = randomBytes(4 << 20);
    fs.writeFileSync(logPath, content);
    file = new LogFile({ logPath });
  });
  afterEach(async () => {
    await file.close();
    rmDir(dir);
  });

  it('the addon is built and in use', () => {
    expect(error).to.equal(null);
    expect(cachedReadsEnabled()).to.equal(true);
  });

  it('a read of cached bytes is served at once, without the thread pool', async () => {
    await file.openNow('r+');
    const before = { ...segmentReads };
    const out = Buffer.alloc(1 << 20);
    expect(await file.readFully(out, out.length, 12345)).to.equal(out.length);
    expect(out.equals(content.subarray(12345, 12345 + out.length))).to.equal(true);
    // the end of the file: fewer bytes, still from the cache (the last page is cached)
    expect(await file.readFully(out, 1000, content.length - 300)).to.equal(300);
    expect(out.subarray(0, 300).equals(content.subarray(content.length - 300))).to.equal(true);
    expect(segmentReads.cached - before.cached).to.equal(1);
  });

  it('a read of bytes the page cache does not hold goes to the thread pool and gets them', async () => {
    await file.openNow('r+');
    fs.fsyncSync(file.fd);
    expect(addon?.dropCached(file.fd)).to.equal(0);
    const probe = Buffer.alloc(4096);
    expect(addon?.preadNowait(file.fd, probe, 0, 4096, 2 << 20)).to.equal(-EAGAIN);
    const before = { ...segmentReads };
    const out = Buffer.alloc(1 << 20);
    expect(await file.readFully(out, out.length, 2 << 20)).to.equal(out.length);
    expect(out.equals(content.subarray(2 << 20, 3 << 20))).to.equal(true);
    expect(segmentReads.pooled - before.pooled).to.equal(1);
    expect(segmentReads.cached - before.cached).to.equal(0);
  });

  it('a read whose first part is cached and the rest not gets all its bytes', async () => {
    await file.openNow('r+');
    fs.fsyncSync(file.fd);
    expect(addon?.dropCached(file.fd)).to.equal(0);
    // bring back the pages at the start of the range (with the kernel's read-ahead after them)
    fs.readSync(file.fd, Buffer.alloc(4096), 0, 4096, 1 << 20);
    const out = Buffer.alloc(3 << 20);
    expect(await file.readFully(out, out.length, 1 << 20)).to.equal(out.length);
    expect(out.equals(content.subarray(1 << 20))).to.equal(true);
  });

  it('a read larger than CACHED_READ_MAX_BYTES copies that much at once and leaves the rest to the thread pool', async () => {
    const big = randomBytes(CACHED_READ_MAX_BYTES + (1 << 20));
    fs.writeFileSync(logPath, big);
    await file.openNow('r+');
    const before = { ...segmentReads };
    const out = Buffer.alloc(big.length);
    const pending = file.readFully(out, big.length, 0);
    // the first CACHED_READ_MAX_BYTES are in `out` already, before the promise settles
    expect(out.subarray(0, CACHED_READ_MAX_BYTES).equals(big.subarray(0, CACHED_READ_MAX_BYTES))).to.equal(true);
    expect(out.subarray(CACHED_READ_MAX_BYTES).equals(Buffer.alloc(1 << 20))).to.equal(true);
    expect(await pending).to.equal(big.length);
    expect(out.equals(big)).to.equal(true);
    expect(segmentReads.pooled - before.pooled).to.equal(1);
  });

  it('a file not open yet is opened by the asynchronous path', async () => {
    expect(file.fd).to.equal(-1);
    const out = Buffer.alloc(100);
    expect(await file.readFully(out, 100, 7)).to.equal(100);
    expect(out.equals(content.subarray(7, 107))).to.equal(true);
    expect(file.fd).to.be.at.least(0);
  });

  it('the addon refuses arguments outside its buffer', () => {
    const buf = Buffer.alloc(16);
    expect(() => addon?.preadNowait(0, buf, 8, 9, 0)).to.throw(TypeError, /range inside it/);
    expect(() => addon?.preadNowait(-1, buf, 0, 1, 0)).to.throw(TypeError);
    expect(() => addon?.preadNowait(0, [1, 2] as unknown as Uint8Array, 0, 1, 0)).to.throw(TypeError);
    expect(addon?.preadNowait(0, buf, 0, 0, 0)).to.equal(0);
  });

  it('uncachedPages (cachestat) counts the pages of a range the page cache does not hold', async function () {
    if (fileSliceCalls() === null) {
      // cachestat(2) came in Linux 6.5: older kernels serve every Fetch from memory (file-slices.ts)
      this.skip();
    }
    await file.openNow('r+');
    fs.fsyncSync(file.fd);
    expect(addon?.dropCached(file.fd)).to.equal(0);
    // [100, 100 + 3 pages) touches 4 pages, none cached
    expect(addon?.uncachedPages(file.fd, 100, 3 * 4096)).to.equal(4);
    fs.readSync(file.fd, Buffer.alloc(8192), 0, 8192, 0);
    // the first two pages are cached now (read-ahead may have brought more, never fewer)
    expect(addon?.uncachedPages(file.fd, 0, 8192)).to.equal(0);
    expect(addon?.uncachedPages(file.fd, 0, 0)).to.equal(0);
    expect(addon?.uncachedPages(1 << 20, 0, 1)).to.be.below(0); // -EBADF
  });

  it('dupFd gives a descriptor of its own for the same file; the argument checks of the slice calls', async () => {
    await file.openNow('r+');
    const own = addon?.dupFd(file.fd) ?? -1;
    expect(own).to.be.above(2).and.not.equal(file.fd);
    try {
      const out = Buffer.alloc(16);
      expect(fs.readSync(own, out, 0, 16, 1000)).to.equal(16);
      expect(out.equals(content.subarray(1000, 1016))).to.equal(true);
    } finally {
      fs.closeSync(own);
    }
    expect(() => addon?.sendfileNowait(-1, file.fd, 0, 1)).to.throw(TypeError, /sendfileNowait/);
    expect(() => addon?.uncachedPages(file.fd, -1, 1)).to.throw(TypeError, /uncachedPages/);
    expect(() => addon?.dupFd(-1)).to.throw(TypeError, /dupFd/);
    expect(addon?.sendfileNowait(1, file.fd, 0, 0)).to.equal(0);
  });

  it('GREGOR_PREAD_NOWAIT=0 turns cached reads off', () => {
    const mod = fileURLToPath(new URL('../../../lib/log/file-io.js', import.meta.url));
    const script = `import(${JSON.stringify(mod)}).then((m) => console.log(m.cachedReadsEnabled()))`;
    const run = (v: string): string =>
      execFileSync(process.execPath, ['-e', script], { env: { ...process.env, GREGOR_PREAD_NOWAIT: v }, encoding: 'utf8' }).trim();
    expect(run('0')).to.equal('false');
    expect(run('1')).to.equal('true');
  });
});
