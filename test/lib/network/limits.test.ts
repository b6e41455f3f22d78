import { expect } from 'chai';
import { Client, Mode, eventually, request, sleep, startServer, type Harness } from './helpers.js';

const MB = 1024 * 1024;

function sizePrefix(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n, 0);
  return b;
}

describe('network: limits and bad clients', () => {
  let h: Harness | undefined;
  const clients: Client[] = [];
  const connect = async (port = h!.port): Promise<Client> => {
    const c = await Client.connect(port);
    clients.push(c);
    return c;
  };
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await h?.server.close(1000);
    h = undefined;
  });

  describe('socket.request.max.bytes and garbage', () => {
    beforeEach(async () => {
      h = await startServer();
    });

    const cases: Array<[string, Buffer]> = [
      ['a 2 GB size prefix', sizePrefix(0x7fffffff)],
      ['a negative size', sizePrefix(-1)],
      ['the most negative size', Buffer.from([0x80, 0, 0, 0])],
      ['an HTTP request', Buffer.from('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n')],
      ['a TLS ClientHello', Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])],
      ['a size one over the maximum', sizePrefix(104857600 + 1)],
    ];
    for (const [what, bytes] of cases) {
      it(`closes a connection that sends ${what}, without allocating, while others keep working`, async () => {
        const good = await connect();
        good.send(request(1, { delayMs: 200 })); // in flight while the bad client arrives
        global.gc?.();
        const rssBefore = process.memoryUsage.rss();
        const bad = await connect();
        const t0 = Date.now();
        bad.send(bytes);
        await bad.waitClosed(2000);
        expect(Date.now() - t0).to.be.below(1000);
        expect(process.memoryUsage.rss() - rssBefore).to.be.below(50 * MB);
        expect(h!.stats.calls).to.equal(1); // only the good request reached dispatch
        const warns = h!.lines.filter((l) => l['level'] === 'warn');
        expect(warns).to.have.length(1);
        expect(warns[0]!['remoteAddress']).to.equal('127.0.0.1');
        if (what === 'a TLS ClientHello') {
          // a TLS client on a PLAINTEXT listener is named as such (issue 18)
          expect(warns[0]!['msg']).to.equal('TLS client on a PLAINTEXT listener: connection closed');
        } else {
          expect(warns[0]!['msg']).to.match(/invalid request size/);
          expect(warns[0]!['size']).to.equal(bytes.readInt32BE(0));
        }
        const rs = await good.waitFor(1);
        expect(rs[0]!.correlationId).to.equal(1);
        good.send(request(2));
        await good.waitFor(2);
      });
    }

    it('accepts a frame of exactly socket.request.max.bytes', async () => {
      await h!.server.close(100);
      h = await startServer({ socketRequestMaxBytes: 1000 });
      const c = await connect();
      c.send(request(5, { payload: Buffer.alloc(1000 - 13) }));
      const [r] = await c.waitFor(1);
      expect(r!.payload.length).to.equal(987);
      c.send(request(6, { payload: Buffer.alloc(1000 - 12) }));
      await c.waitClosed();
    });
  });

  describe('dispatch outcomes', () => {
    beforeEach(async () => {
      h = await startServer();
    });

    for (const [what, mode] of [
      ['asks to close', Mode.CLOSE],
      ['throws', Mode.THROW],
      ['rejects', Mode.REJECT],
    ] as const) {
      it(`closes only the connection whose dispatch ${what}, with one log line`, async () => {
        const other = await connect();
        other.send(request(1, { delayMs: 100 }));
        const c = await connect();
        c.send(Buffer.concat([request(10), request(11, { mode, delayMs: 10 }), request(12)]));
        await c.waitClosed();
        expect(c.responses.map((r) => r.correlationId)).to.deep.equal([10]);
        expect(h!.stats.started).to.not.include(12);
        const closeLines = h!.lines.filter((l) => typeof l['msg'] === 'string' && l['msg'].startsWith('closing connection'));
        expect(closeLines).to.have.length(1);
        await other.waitFor(1);
        other.send(request(2));
        await other.waitFor(2);
        const fresh = await connect();
        fresh.send(request(3));
        await fresh.waitFor(1);
      });
    }
  });

  describe('connections.max.idle.ms', () => {
    it('closes a connection with no request for that long', async () => {
      h = await startServer({ connectionsMaxIdleMs: 200 });
      const c = await connect();
      c.send(request(1));
      await c.waitFor(1);
      const t0 = Date.now();
      await c.waitClosed(2000);
      expect(Date.now() - t0).to.be.within(150, 1000);
      await eventually(() => h!.server.connectionCount === 0);
    });

    it('does not close a connection whose request is still in flight', async () => {
      h = await startServer({ connectionsMaxIdleMs: 150 });
      const c = await connect();
      c.send(request(1, { delayMs: 500 }));
      const [r] = await c.waitFor(1, 2000);
      expect(r!.correlationId).to.equal(1);
      await c.waitClosed(2000); // then idle again
    });

    it('closes a client that stopped reading its responses', async () => {
      h = await startServer({ connectionsMaxIdleMs: 300 });
      const c = await connect();
      c.socket.pause();
      for (let i = 0; i < 32; i++) c.send(request(i, { payload: Buffer.alloc(1024 * 1024) }));
      await eventually(() => h!.server.connectionCount === 0, 5000, 'stalled connection closed');
    });
  });

  describe('max.connections.per.ip and max.connections', () => {
    it('closes connections over max.connections.per.ip right after accepting', async () => {
      h = await startServer({ maxConnectionsPerIp: 2 });
      const a = await connect();
      const b = await connect();
      await eventually(() => h!.server.connectionCount === 2);
      const c = await connect();
      await c.waitClosed(2000);
      const d = await connect();
      await d.waitClosed(2000);
      expect(h.server.connectionCount).to.equal(2);
      expect(h.lines.filter((l) => l['level'] === 'warn' && /max\.connections\.per\.ip/.test(String(l['msg'])))).to.have.length(1);
      a.send(request(1));
      b.send(request(2));
      await a.waitFor(1);
      await b.waitFor(1);
      a.destroy();
      await eventually(() => h!.server.connectionCount === 1);
      const e = await connect();
      e.send(request(3));
      await e.waitFor(1);
    });

    it('honours max.connections.per.ip.overrides', async () => {
      h = await startServer({ maxConnectionsPerIp: 1, maxConnectionsPerIpOverrides: new Map([['127.0.0.1', 3]]) });
      for (let i = 0; i < 3; i++) await connect();
      await eventually(() => h!.server.connectionCount === 3);
      const over = await connect();
      await over.waitClosed(2000);
    });

    it('closes connections over max.connections', async () => {
      h = await startServer({ maxConnections: 1 });
      const a = await connect();
      await eventually(() => h!.server.connectionCount === 1);
      const b = await connect();
      await b.waitClosed(2000);
      a.send(request(1));
      await a.waitFor(1);
      await sleep(10);
      expect(h.server.connectionCount).to.equal(1);
    });
  });
});
