import { expect } from 'chai';
import { Client, Mode, eventually, request, sleep, startServer, type Harness } from './helpers.js';

describe('network: framing, ordering, responses', () => {
  let h: Harness;
  const clients: Client[] = [];
  const connect = async (): Promise<Client> => {
    const c = await Client.connect(h.port);
    clients.push(c);
    return c;
  };

  beforeEach(async () => {
    h = await startServer();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await h.server.close(1000);
  });

  it('answers one request with its correlation id', async () => {
    const c = await connect();
    c.send(request(42, { payload: Buffer.from('hello') }));
    const [r] = await c.waitFor(1);
    expect(r!.correlationId).to.equal(42);
    expect(r!.payload.toString()).to.equal('hello');
  });

  it('reassembles frames written one byte at a time', async () => {
    const c = await connect();
    const bytes = Buffer.concat([1, 2, 3, 4, 5].map((i) => request(i, { payload: Buffer.from(`p${i}`) })));
    for (const b of bytes) {
      c.send(Buffer.from([b]));
      await new Promise((r) => setImmediate(r));
    }
    const rs = await c.waitFor(5);
    expect(rs.map((r) => r.correlationId)).to.deep.equal([1, 2, 3, 4, 5]);
    expect(rs.map((r) => r.payload.toString())).to.deep.equal(['p1', 'p2', 'p3', 'p4', 'p5']);
  });

  it('answers many frames sent in one write, in order', async () => {
    const c = await connect();
    const n = 500;
    c.send(Buffer.concat(Array.from({ length: n }, (_, i) => request(i))));
    const rs = await c.waitFor(n);
    expect(rs.map((r) => r.correlationId)).to.deep.equal(Array.from({ length: n }, (_, i) => i));
  });

  it('reassembles a 4 MB frame split across many TCP chunks', async () => {
    const c = await connect();
    const payload = Buffer.alloc(4 * 1024 * 1024);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 31) & 0xff;
    const frame = request(7, { payload });
    for (let off = 0; off < frame.length; off += 50_000) c.send(frame.subarray(off, off + 50_000));
    const [r] = await c.waitFor(1, 10_000);
    expect(r!.correlationId).to.equal(7);
    expect(r!.payload.equals(payload)).to.equal(true);
  });

  it('processes one request at a time: a slow first request is answered before a fast second', async () => {
    const c = await connect();
    c.send(Buffer.concat([request(1, { delayMs: 150 }), request(2)]));
    await sleep(30); // separate TCP writes while request 1 is still in flight
    c.send(request(3, { delayMs: 20 }));
    await sleep(30);
    c.send(request(4));
    const rs = await c.waitFor(4);
    expect(rs.map((r) => r.correlationId)).to.deep.equal([1, 2, 3, 4]);
    expect(h.stats.started).to.deep.equal([1, 2, 3, 4]);
    expect(Math.max(...h.stats.maxActivePerConn.values())).to.equal(1);
  });

  it('serializes per connection only: another connection is not held by a slow request', async () => {
    const slow = await connect();
    const fast = await connect();
    slow.send(request(1, { delayMs: 400 }));
    await sleep(20);
    const t0 = Date.now();
    fast.send(request(2));
    await fast.waitFor(1);
    expect(Date.now() - t0).to.be.below(300);
    expect(slow.responses).to.have.length(0);
    await slow.waitFor(1);
  });

  it('noResponse writes nothing and the next response still arrives', async () => {
    const c = await connect();
    c.send(Buffer.concat([request(1, { mode: Mode.NO_RESPONSE }), request(2, { mode: Mode.NO_RESPONSE, delayMs: 30 }), request(3)]));
    const rs = await c.waitFor(1);
    await sleep(50);
    expect(rs.map((r) => r.correlationId)).to.deep.equal([3]);
    expect(h.stats.started).to.deep.equal([1, 2, 3]);
  });

  it('writes a Buffer[] response as one frame, without losing order', async () => {
    const c = await connect();
    c.send(Buffer.concat([request(1, { mode: Mode.SPLIT, payload: Buffer.from('abc') }), request(2, { payload: Buffer.from('d') })]));
    const rs = await c.waitFor(2);
    expect(rs.map((r) => [r.correlationId, r.payload.toString()])).to.deep.equal([
      [1, 'abc'],
      [2, 'd'],
    ]);
  });

  it('a zero-length frame reaches dispatch (which may close the connection)', async () => {
    const c = await connect();
    c.send(Buffer.from([0, 0, 0, 0]));
    await c.waitClosed();
    expect(h.stats.calls).to.equal(1);
  });

  it('stops reading while the client does not read its responses, then catches up', async () => {
    const c = await connect();
    c.socket.pause(); // the client does not read
    const payload = Buffer.alloc(1024 * 1024, 1);
    const n = 64; // 64 MB of responses if all were produced
    for (let i = 0; i < n; i++) c.send(request(i, { payload }));
    await sleep(500);
    // Socket buffers hold a few MB at most: dispatch must have stopped well short of n.
    expect(h.stats.calls).to.be.below(n / 2);
    c.socket.resume();
    const rs = await c.waitFor(n, 20_000);
    expect(rs.map((r) => r.correlationId)).to.deep.equal(Array.from({ length: n }, (_, i) => i));
  });

  it('counts connections', async () => {
    expect(h.server.connectionCount).to.equal(0);
    const a = await connect();
    await connect();
    await eventually(() => h.server.connectionCount === 2);
    a.destroy();
    await eventually(() => h.server.connectionCount === 1);
  });
});
