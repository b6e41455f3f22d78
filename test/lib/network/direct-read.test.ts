import net from 'node:net';
import { expect } from 'chai';
import { ChunkBuffer } from '../../../lib/network/chunk-buffer.js';
import { readDirect } from '../../../lib/network/direct-read.js';
import { Mode, OpenClients, request, startServer, type Harness } from './helpers.js';

/** Bytes from..from+n-1 (mod 251) so that a misplaced byte shows. */
const seq = (from: number, n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (from + i) % 251));

describe('ChunkBuffer reads into the frame (room / pushRead)', () => {
  it('hands out the unfilled tail of the frame being assembled; bytes read there complete it in place', () => {
    const b = new ChunkBuffer();
    expect(b.room()).to.equal(null);
    const all = seq(0, 4 + 1000);
    b.pushRead(all.subarray(0, 10), 10);
    expect(b.takeInt32()).to.equal(all.readInt32BE(0));
    b.expect(1000);
    const room = b.room();
    expect(room).to.not.equal(null);
    expect(room!.length).to.equal(994);
    all.copy(room!, 0, 10, 510);
    b.pushRead(room!, 500);
    const rest = b.room()!;
    expect(rest.length).to.equal(494);
    all.copy(rest, 0, 510);
    b.pushRead(rest, 494);
    expect(b.room()).to.equal(null);
    const frame = b.take(1000);
    expect(frame.buffer).to.equal(room!.buffer); // the very buffer the reads landed in
    expect(frame.equals(all.subarray(4))).to.equal(true);
    expect(b.buffered).to.equal(0);
  });

  it('treats a read into a tail that is no longer the tail as an ordinary chunk, in arrival order', () => {
    const b = new ChunkBuffer();
    b.expect(8);
    const stale = b.room()!;
    b.push(Buffer.from([9, 9, 9])); // bytes arrived another way: the tail handed out is stale
    const late = Buffer.from([1, 2, 3, 4, 5]);
    b.pushRead(late, 5);
    expect([...b.take(8)]).to.deep.equal([9, 9, 9, 1, 2, 3, 4, 5]);
    expect(stale.length).to.equal(8);
  });

  it('a read of fewer bytes than its buffer holds passes on only those bytes', () => {
    const b = new ChunkBuffer();
    const buf = seq(0, 64);
    b.pushRead(buf, 6);
    expect(b.buffered).to.equal(6);
    expect(b.take(6).equals(seq(0, 6))).to.equal(true);
  });
});

describe('direct socket reads (gregor.socket.read.direct)', function () {
  this.timeout(30000);
  const clients = new OpenClients();
  let h: Harness | undefined;
  afterEach(async () => {
    clients.destroyAll();
    await h?.server.close();
    h = undefined;
  });

  it('switches an accepted plain socket to reading into our buffers (this Node has what it needs)', async () => {
    const reads: number[] = [];
    const server = net.createServer((s) => {
      const ok = readDirect(
        s,
        () => null,
        (buf, n) => reads.push(n, buf.length),
      );
      expect(ok).to.equal(true);
      s.on('data', () => expect.fail('no data event in direct mode'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const c = net.connect(port, '127.0.0.1');
    await new Promise((r) => c.once('connect', r));
    c.write(seq(0, 100));
    const end = Date.now() + 5000;
    while (reads.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    c.destroy();
    await new Promise((r) => server.close(r));
    expect(reads[0]).to.equal(100);
    expect(reads[1]).to.equal(100); // copied out of the shared read buffer into one of its own size
  });

  for (const direct of [true, false]) {
    it(`answers large and pipelined small requests sent in odd pieces, byte for byte (readDirect ${direct})`, async () => {
      h = await startServer({ readDirect: direct });
      const c = await clients.connect(h.port);
      const big = [seq(7, 1_000_000), seq(11, 300_000), seq(13, 70_000)];
      const frames: Buffer[] = [];
      let id = 0;
      for (const p of big) {
        frames.push(request(id++, { mode: Mode.ECHO, payload: p }));
        for (let i = 0; i < 20; i++) frames.push(request(id++, { payload: seq(i, i * 37) }));
      }
      const wire = Buffer.concat(frames);
      // pieces of 1..9000 bytes, some splitting the size prefix
      let at = 0;
      let k = 1;
      while (at < wire.length) {
        const n = Math.min(wire.length - at, (k * 7919) % 9000 || 3);
        c.send(wire.subarray(at, at + n));
        at += n;
        k++;
        if (k % 50 === 0) await new Promise((r) => setImmediate(r));
      }
      const got = await c.waitFor(id, 20000);
      expect(got.map((r) => r.correlationId)).to.deep.equal(Array.from({ length: id }, (_, i) => i));
      let n = 0;
      for (const p of big) {
        expect(got[n++]!.payload.equals(p)).to.equal(true);
        for (let i = 0; i < 20; i++) expect(got[n++]!.payload.equals(seq(i, i * 37))).to.equal(true);
      }
    });
  }
});
