import { expect } from 'chai';
import net from 'node:net';
import { Client, eventually, Mode, request, sleep, startServer, type Harness } from './helpers.js';

describe('network: graceful close', () => {
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
    await h.server.close(100);
  });

  it('waits for an in-flight slow request, writes its response, then ends the sockets', async () => {
    const slow = await connect();
    const idle = await connect();
    slow.send(request(1, { delayMs: 300, payload: Buffer.alloc(100_000, 7) }));
    await sleep(30);
    const t0 = Date.now();
    await h.server.close(5000);
    expect(Date.now() - t0).to.be.within(200, 3000);
    const rs = await slow.waitFor(1);
    expect(rs[0]!.correlationId).to.equal(1);
    expect(rs[0]!.payload.length).to.equal(100_000);
    await slow.waitClosed();
    await idle.waitClosed();
    expect(h.server.connectionCount).to.equal(0);
  });

  it('answers requests already received behind the in-flight one', async () => {
    const c = await connect();
    c.send(Buffer.concat([request(1, { delayMs: 100 }), request(2), request(3, { delayMs: 20 })]));
    await sleep(30);
    await h.server.close(5000);
    expect(c.responses.map((r) => r.correlationId)).to.deep.equal([1, 2, 3]);
    await c.waitClosed();
  });

  it('a peer that sends and closes at once: every whole request it sent is still processed (acks=0 producers)', async () => {
    const c = await connect();
    // the first is in flight (its dispatch takes 100 ms) when the peer's FIN closes the socket; the
    // rest are queued behind it, and the last is cut short (not a whole request: dropped)
    const whole = Buffer.concat([request(1, { delayMs: 100 }), ...[2, 3, 4].map((id) => request(id, { mode: Mode.NO_RESPONSE }))]);
    c.socket.end(Buffer.concat([whole, request(5).subarray(0, 10)]));
    await c.waitClosed();
    await eventually(() => h.stats.started.length === 4, 3000, 'the queued requests to be dispatched');
    expect(h.stats.started).to.deep.equal([1, 2, 3, 4]);
    await sleep(150); // nothing more comes
    expect(h.stats.started).to.deep.equal([1, 2, 3, 4]);
    expect(c.responses, 'nothing is written to a closed socket').to.have.length(0);
    await eventually(() => h.server.connectionCount === 0, 3000, 'the connection to be gone');
  });

  it('a shutdown waits (within its grace period) for the requests of a peer that already closed', async () => {
    const c = await connect();
    c.socket.end(Buffer.concat([request(1, { delayMs: 200 }), request(2, { mode: Mode.NO_RESPONSE })]));
    await c.waitClosed();
    expect(h.server.connectionCount, 'still counted while its requests run').to.equal(1);
    await h.server.close(5000);
    expect(h.stats.started).to.deep.equal([1, 2]);
    expect(h.server.connectionCount).to.equal(0);
  });

  it('destroys connections still busy after graceMs', async () => {
    const c = await connect();
    c.send(request(1, { mode: Mode.HANG }));
    await sleep(30);
    const t0 = Date.now();
    await h.server.close(200);
    expect(Date.now() - t0).to.be.within(150, 1500);
    await c.waitClosed();
    expect(c.responses).to.have.length(0);
  });

  it('stops accepting new connections', async () => {
    await h.server.close(100);
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port: h.port });
      s.on('connect', () => {
        s.destroy();
        resolve(null);
      });
      s.on('error', (e) => resolve(e));
    });
    expect(err?.code).to.equal('ECONNREFUSED');
  });

  it('close() is idempotent: one shutdown, one log line, every call resolves', async () => {
    const c = await connect();
    c.send(request(1));
    await c.waitFor(1);
    let socketCloses = 0;
    c.socket.on('close', () => socketCloses++);
    const first = h.server.close(100);
    const second = h.server.close(5000);
    // a second call while closing joins the shutdown already running
    expect(second).to.equal(first);
    await Promise.all([first, second]);
    expect(h.server.connectionCount).to.equal(0);
    await c.waitClosed();
    // a call after the close gets the same settled shutdown and changes nothing
    const third = h.server.close(100);
    expect(third).to.equal(first);
    await third;
    expect(h.lines.filter((l) => l['msg'] === 'listener closed')).to.have.length(1);
    expect(h.lines.filter((l) => l['msg'] === 'grace period over: destroying connections')).to.have.length(0);
    expect(socketCloses).to.equal(1);
    expect(c.socket.destroyed).to.equal(true);
  });
});
