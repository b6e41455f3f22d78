/**
 * ResponseWriter with a direct sender (gregor.socket.write.direct, lib/network/direct-write.ts) over
 * a real loopback TCP connection: a response goes to the socket's descriptor with one sendmsg while
 * Node's stream holds nothing of the connection's; what the kernel does not take, and every response
 * written while the stream holds bytes, goes through the stream, so the bytes arrive in order; the
 * callbacks run after the write, once each; an error the kernel reports leaves the bytes to the stream.
 */
import { expect } from 'chai';
import { directWrites, sendNowaitCall, type SendNowait } from '../../../lib/network/direct-write.js';
import { ResponseWriter } from '../../../lib/network/response-writer.js';
import { sockoptAddon, socketFd } from '../../../lib/network/socket-buffers.js';
import { pair, readAll } from './socket-pair.js';

/** Bytes from..from+n-1 (mod 251) so that a misplaced byte shows. */
const seq = (from: number, n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (from + i) % 251));

describe('ResponseWriter: responses sent straight to the socket (gregor.socket.write.direct)', function () {
  this.timeout(30_000);
  let send: SendNowait;

  before(function () {
    const call = sendNowaitCall();
    if (call === null) {
      // the pread addon (npm install builds it) carries sendNowait; CI has it
      this.skip();
    }
    send = call;
  });

  it('the addon sends buffers in order and refuses what is not a list of Uint8Arrays', async () => {
    const p = await pair();
    try {
      const fd = socketFd(p.server)!;
      const reading = readAll(p.client);
      expect(send(fd, [Buffer.from('ab'), Buffer.alloc(0), Buffer.from('cde')])).to.equal(5);
      expect(send(fd, [])).to.equal(0);
      expect(() => send(fd, [7 as unknown as Uint8Array])).to.throw(/every buffer a Uint8Array/);
      expect(() => send(-1, [])).to.throw(/fd >= 0/);
      p.server.end();
      expect((await reading).toString()).to.equal('abcde');
    } finally {
      p.close();
    }
  });

  it('a small response goes whole in one call; its callback runs on a later tick, not inside write()', async () => {
    const p = await pair();
    try {
      const w = new ResponseWriter(p.server, null, null, () => undefined, { fd: socketFd(p.server)!, send });
      const before = { ...directWrites };
      const reading = readAll(p.client);
      const written: string[] = [];
      w.write(Buffer.from('one'), undefined, () => written.push('one'));
      expect(written, 'not during write()').to.deep.equal([]);
      w.write([Buffer.from('t'), Buffer.from('wo')], undefined, () => written.push('two'));
      await new Promise((r) => process.nextTick(r));
      expect(written).to.deep.equal(['one', 'two']);
      expect(directWrites.whole - before.whole).to.equal(2);
      expect(directWrites.bytes - before.bytes).to.equal(6);
      expect(p.server.writableLength, 'the stream was never used').to.equal(0);
      w.end();
      expect((await reading).toString()).to.equal('onetwo');
    } finally {
      p.close();
    }
  });

  it('past a full socket buffer the rest goes through the stream, and later responses queue behind it there, in order', async () => {
    const p = await pair();
    try {
      const fd = socketFd(p.server)!;
      sockoptAddon()?.setBufferSizes(fd, 32768, -1); // the kernel doubles it: 2 MB cannot go at once
      let offered = 0;
      const counting: SendNowait = (f, bufs) => {
        offered++;
        return send(f, bufs);
      };
      const w = new ResponseWriter(p.server, null, null, () => undefined, { fd, send: counting });
      const before = { ...directWrites };
      const written: string[] = [];
      p.client.pause(); // fills the socket's buffers first
      const reading = readAll(p.client);
      const big = [seq(0, 1_000_000), seq(3, 1_000_000)];
      w.write(big, undefined, () => written.push('big'));
      expect(directWrites.partial - before.partial, 'the kernel took part of it').to.equal(1);
      expect(p.server.writableLength, 'the rest waits in the stream').to.be.greaterThan(0);
      w.write(Buffer.from('small'), undefined, () => written.push('small'));
      w.write([Buffer.from('x'), Buffer.from('y')], undefined, () => written.push('xy'));
      expect(offered, 'nothing is offered to the kernel directly while the stream holds bytes').to.equal(1);
      expect(directWrites.whole - before.whole).to.equal(0);
      w.end();
      await new Promise((r) => setTimeout(r, 30));
      expect(written, 'nothing completes before the client reads').to.deep.equal([]);
      p.client.resume();
      const got = await reading;
      const expected = Buffer.concat([...big, Buffer.from('small'), Buffer.from('xy')]);
      expect(got.length).to.equal(expected.length);
      expect(got.equals(expected), 'the bytes in order').to.equal(true);
      expect(written).to.deep.equal(['big', 'small', 'xy']);
    } finally {
      p.close();
    }
  });

  it('a response of more buffers than one call offers (64): the first go directly, the rest through the stream, in order', async () => {
    const p = await pair();
    try {
      const w = new ResponseWriter(p.server, null, null, () => undefined, { fd: socketFd(p.server)!, send });
      const before = { ...directWrites };
      const reading = readAll(p.client);
      const parts = Array.from({ length: 100 }, (_, i) => seq(i, 10 + i));
      let done = false;
      w.write(parts, undefined, () => (done = true));
      expect(directWrites.partial - before.partial).to.equal(1);
      expect(directWrites.bytes - before.bytes, 'the first 64 buffers').to.equal(parts.slice(0, 64).reduce((n, b) => n + b.length, 0));
      w.end();
      expect((await reading).equals(Buffer.concat(parts))).to.equal(true);
      expect(done).to.equal(true);
    } finally {
      p.close();
    }
  });

  it('a corked socket writes through the stream; once the corked bytes left, the next response goes direct', async () => {
    const p = await pair();
    try {
      const w = new ResponseWriter(p.server, null, null, () => undefined, { fd: socketFd(p.server)!, send });
      const before = { ...directWrites };
      const reading = readAll(p.client);
      p.server.cork();
      w.write(Buffer.from('a'), undefined);
      w.write(Buffer.from('b'), undefined);
      expect(directWrites.whole - before.whole).to.equal(0);
      expect(p.server.writableLength, 'held by the cork').to.equal(2);
      p.server.uncork();
      w.write(Buffer.from('c'), undefined);
      expect(directWrites.whole - before.whole).to.equal(1);
      w.end();
      expect((await reading).toString()).to.equal('abc');
    } finally {
      p.close();
    }
  });

  it('EAGAIN or an error from the kernel: the response goes through the stream whole, the error left for the stream to meet', async () => {
    const p = await pair();
    try {
      const codes = [-11 /* EAGAIN */, -32 /* EPIPE */];
      const refusing: SendNowait = () => codes.shift() ?? -104; /* ECONNRESET */
      const w = new ResponseWriter(p.server, null, null, () => undefined, { fd: socketFd(p.server)!, send: refusing });
      const before = { ...directWrites };
      const written: string[] = [];
      const reading = readAll(p.client);
      w.write(Buffer.from('first'), undefined, () => written.push('first'));
      await new Promise((r) => setTimeout(r, 20)); // the stream's write completed: the next one is tried direct again
      w.write([Buffer.from('sec'), Buffer.from('ond')], undefined, () => written.push('second'));
      w.end();
      expect((await reading).toString()).to.equal('firstsecond');
      expect(written).to.deep.equal(['first', 'second']);
      expect(directWrites.whole + directWrites.partial - before.whole - before.partial).to.equal(0);
      expect(codes, 'both responses were offered to the sender first').to.deep.equal([]);
    } finally {
      p.close();
    }
  });

  it('without a direct sender every response goes through the stream', async () => {
    const p = await pair();
    try {
      const w = new ResponseWriter(p.server, null);
      const before = { ...directWrites };
      const reading = readAll(p.client);
      w.write(Buffer.from('plain'), undefined);
      w.end();
      expect((await reading).toString()).to.equal('plain');
      expect(directWrites.whole - before.whole).to.equal(0);
    } finally {
      p.close();
    }
  });
});
