/**
 * ResponseWriter with FileSlices over a real loopback TCP connection: a slice is sent from its file
 * with sendfile, in order with the buffers around it; when the socket's buffer is full (a small
 * SO_SNDBUF and a client that reads late) the next bytes go through the socket and sendfile resumes;
 * responses written meanwhile follow, and end() waits for them all.
 */
import { expect } from 'chai';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileSlice } from '../../../protocol/codec/writer.js';
import { fileSliceCalls } from '../../../lib/log/file-io.js';
import { ResponseWriter, sliceSends } from '../../../lib/network/response-writer.js';
import { sockoptAddon, socketFd } from '../../../lib/network/socket-buffers.js';
import { pair, readAll } from './socket-pair.js';

describe('ResponseWriter: responses with FileSlices (sendfile)', function () {
  this.timeout(30_000);
  let dir: string | null = null;
  let fd = -1;
  // 3 MB that no two offsets confuse: a slice sent from the wrong place cannot pass
  const content = Buffer.alloc(3 << 20);
  for (let i = 0; i < content.length; i += 4) content.writeUInt32BE(i, i);

  before(function () {
    if (fileSliceCalls() === null) {
      // the pread addon's sendfile calls need it built and Linux 6.5+ (cachestat); CI has both
      this.skip();
    }
    dir = mkdtempSync(join(tmpdir(), 'gregor-writer-'));
    const file = join(dir, 'seg.log');
    writeFileSync(file, content);
    fd = openSync(file, 'r');
  });
  after(() => {
    if (dir === null) return;
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends the parts in order, from the file and, past a full socket buffer, through the socket; waiting responses follow; end() comes last', async () => {
    const p = await pair();
    try {
      const sfd = socketFd(p.server);
      if (sfd === null) throw new Error('no descriptor for the accepted socket');
      sockoptAddon()?.setBufferSizes(sfd, 32768, -1); // the kernel doubles it: 64 KB, so 2 MB cannot go at once
      const errors: string[] = [];
      const w = new ResponseWriter(p.server, null, sfd, (reason) => errors.push(reason));
      const before = { ...sliceSends };
      const written: string[] = [];
      p.client.pause(); // fills the socket's buffers first
      const reading = readAll(p.client);
      const h1 = Buffer.from('header-one');
      const t1 = Buffer.from('tail-one');
      const h3 = Buffer.from('header-three');
      expect(w.write([h1, new FileSlice(fd, 100, 2_000_000, 1), t1], undefined, () => written.push('one'))).to.equal(true);
      expect(w.write(Buffer.from('two'), undefined, () => written.push('two'))).to.equal(true);
      expect(w.write([h3, new FileSlice(fd, 5, 300_000, 1)], undefined, () => written.push('three'))).to.equal(true);
      w.end();
      expect(written, 'nothing is written before the client reads').to.deep.equal([]);
      await new Promise((r) => setTimeout(r, 50));
      p.client.resume();
      const got = await reading;
      const expected = Buffer.concat([h1, content.subarray(100, 2_000_100), t1, Buffer.from('two'), h3, content.subarray(5, 300_005)]);
      expect(got.length).to.equal(expected.length);
      expect(got.equals(expected), 'the bytes in order').to.equal(true);
      expect(written).to.deep.equal(['one', 'two', 'three']);
      expect(errors).to.deep.equal([]);
      expect(sliceSends.slices - before.slices).to.equal(2);
      const bySendfile = sliceSends.sendfileBytes - before.sendfileBytes;
      const copied = sliceSends.copiedBytes - before.copiedBytes;
      expect(bySendfile + copied).to.equal(2_300_000);
      expect(bySendfile, 'most bytes left with sendfile').to.be.greaterThan(copied);
      expect(copied, 'a full socket buffer sent some through the socket').to.be.greaterThan(0);
    } finally {
      p.close();
    }
  });

  it('a slice whose file ends before it does: the error callback gets the reason, and nothing else is sent after it', async () => {
    const p = await pair();
    try {
      const errors: string[] = [];
      const w = new ResponseWriter(p.server, null, socketFd(p.server), (reason) => {
        errors.push(reason);
        p.server.destroy();
      });
      const got: Buffer[] = [];
      p.client.on('data', (d: Buffer) => got.push(d));
      const closed = new Promise((r) => p.client.once('close', r));
      w.write([Buffer.from('head'), new FileSlice(fd, content.length - 100, 1000, 1)], undefined);
      w.write(Buffer.from('never'), undefined);
      await closed;
      expect(errors).to.have.length(1);
      expect(errors[0]).to.match(/ended inside a fetched slice \(100 of 1000 bytes sent\)/);
      expect(Buffer.concat(got).equals(Buffer.concat([Buffer.from('head'), content.subarray(content.length - 100)]))).to.equal(true);
    } finally {
      p.close();
    }
  });

  it('the peer goes away mid-slice: closed() runs the written callbacks of that response and of those waiting, once each', async () => {
    const p = await pair();
    try {
      const sfd = socketFd(p.server);
      if (sfd === null) throw new Error('no descriptor for the accepted socket');
      sockoptAddon()?.setBufferSizes(sfd, 8192, -1);
      const w = new ResponseWriter(p.server, null, sfd, () => p.server.destroy());
      const written: string[] = [];
      p.client.pause(); // never reads
      w.write([Buffer.from('h'), new FileSlice(fd, 0, 3 << 20, 1)], undefined, () => written.push('big'));
      w.write(Buffer.from('after'), undefined, () => written.push('after'));
      await new Promise((r) => setTimeout(r, 50));
      expect(written, 'the slice is stuck on the full socket').to.deep.equal([]);
      const serverClosed = new Promise((r) => p.server.once('close', r));
      p.client.destroy();
      await serverClosed;
      w.closed();
      await new Promise((r) => setTimeout(r, 20));
      expect([...written].sort()).to.deep.equal(['after', 'big']);
    } finally {
      p.close();
    }
  });
});
