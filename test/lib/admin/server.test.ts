/**
 * The admin HTTP listener on its own (lib/admin/server.ts): route dispatch (exact and pattern paths),
 * 404 / 405 / 4xx-from-a-route / 500 / 413, one log line per refused or bad request, and the
 * loopback-only rule, both as a decision and over a real non-loopback address of this machine.
 */
import { expect } from 'chai';
import { Duplex, Writable } from 'node:stream';
import {
  AdminHttpError,
  AdminServer,
  MAX_BODY_BYTES,
  adminClientAllowed,
  isLoopback,
  jsonBody,
  sendJson,
  sendText,
} from '../../../lib/admin/server.js';
import type { AdminRoute } from '../../../lib/admin/routes.js';
import { createLogger } from '../../../lib/observability/logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { lines, logger: createLogger({ level: 'info', destination }) };
}

const ROUTES: AdminRoute[] = [
  { method: 'GET', path: '/hello', handle: (_req, res) => sendText(res, 200, 'hello') },
  { method: 'POST', path: '/hello', handle: (_req, res, { body }) => sendJson(res, 200, { got: jsonBody(body) }) },
  {
    method: 'GET',
    path: /^\/things\/([a-z]+)$/,
    handle: (_req, res, { match, url }) => sendJson(res, 200, { thing: match?.[1], q: url.searchParams.get('q') }),
  },
  {
    method: 'GET',
    path: '/bad',
    handle() {
      throw new AdminHttpError(400, 'bad input: x must be a number');
    },
  },
  {
    method: 'GET',
    path: '/broken',
    handle() {
      throw new Error('boom');
    },
  },
];

/** A connection from `remoteAddress` handed to the server's HTTP parser; resolves with the response. */
function fakeClient(s: AdminServer, remoteAddress: string, request: string): Promise<{ status: number; body: string }> {
  const out: Buffer[] = [];
  const socket = new (class extends Duplex {
    readonly remoteAddress = remoteAddress;
    override _read(): void {}
    override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
      out.push(chunk);
      cb();
    }
    setTimeout(): this {
      return this;
    }
    setNoDelay(): this {
      return this;
    }
    setKeepAlive(): this {
      return this;
    }
  })();
  return new Promise((resolve, reject) => {
    socket.on('finish', () => {
      const text = Buffer.concat(out).toString();
      const m = /^HTTP\/1\.1 (\d{3})[^]*?\r\n\r\n([^]*)$/.exec(text);
      if (m === null) {
        reject(new Error(`no HTTP response: ${text}`));
        return;
      }
      resolve({ status: Number(m[1]), body: m[2] ?? '' });
    });
    s.httpServer.emit('connection', socket);
    socket.push(request);
  });
}

describe('admin: HTTP listener', function () {
  this.timeout(20_000);
  let server: AdminServer;
  let base: string;
  let log: ReturnType<typeof capture>;

  before(async () => {
    log = capture();
    server = new AdminServer({ host: '127.0.0.1', port: 0, allowRemote: false, routes: ROUTES, logger: log.logger });
    const { port } = await server.listen();
    base = `http://127.0.0.1:${port}`;
    expect(server.address).to.equal(`127.0.0.1:${port}`);
  });
  after(() => server.close());

  const flushLog = () => new Promise((r) => setTimeout(r, 50));

  it('dispatches by method and exact path, and by pattern with its groups', async () => {
    let res = await fetch(`${base}/hello`);
    expect(res.status).to.equal(200);
    expect(await res.text()).to.equal('hello\n');
    res = await fetch(`${base}/hello`, { method: 'POST', body: '{"a":1}' });
    expect(await res.json()).to.deep.equal({ got: { a: 1 } });
    res = await fetch(`${base}/things/abc?q=7`);
    expect(await res.json()).to.deep.equal({ thing: 'abc', q: '7' });
  });

  it('unknown path: 404 text; known path, other method: 405 with Allow; each logged once', async () => {
    const before = log.lines.length;
    let res = await fetch(`${base}/nope`);
    expect(res.status).to.equal(404);
    expect(res.headers.get('content-type')).to.match(/^text\/plain/);
    expect(await res.text()).to.equal('not found: /nope\n');
    res = await fetch(`${base}/things/ABC`);
    expect(res.status, 'a pattern that does not match is unknown').to.equal(404);
    res = await fetch(`${base}/hello`, { method: 'DELETE' });
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.equal('GET, POST');
    await res.text();
    await flushLog();
    const msgs = log.lines.slice(before).map((l) => [l['msg'], l['path'], l['method']]);
    expect(msgs).to.deep.equal([
      ['admin: unknown path', '/nope', 'GET'],
      ['admin: unknown path', '/things/ABC', 'GET'],
      ['admin: method not allowed', '/hello', 'DELETE'],
    ]);
  });

  it('a route error with a 4xx status answers it with the message; others are 500; bodies over 1 MiB 413', async () => {
    const before = log.lines.length;
    let res = await fetch(`${base}/bad`);
    expect(res.status).to.equal(400);
    expect(await res.text()).to.equal('bad input: x must be a number\n');
    res = await fetch(`${base}/hello`, { method: 'POST', body: '{not json' });
    expect(res.status).to.equal(400);
    expect(await res.text()).to.match(/^request body is not JSON/);
    res = await fetch(`${base}/broken`);
    expect(res.status).to.equal(500);
    expect(await res.text()).to.equal('internal error: boom\n');
    res = await fetch(`${base}/hello`, { method: 'POST', body: Buffer.alloc(MAX_BODY_BYTES + 10, 32) });
    expect(res.status).to.equal(413);
    await res.text();
    await flushLog();
    const got = log.lines.slice(before).map((l) => [l['level'], l['msg'], l['status'] ?? null]);
    expect(got).to.deep.equal([
      ['info', 'admin: bad request', 400],
      ['info', 'admin: bad request', 400],
      ['error', 'admin: route failed', null],
      ['info', 'admin: bad request', 413],
    ]);
  });

  it('decides loopback clients only, unless allowed', () => {
    for (const a of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) expect(isLoopback(a), a).to.equal(true);
    for (const a of ['10.0.0.5', '192.168.1.2', '::ffff:10.1.2.3', 'fe80::1', '0.0.0.0', '128.0.0.1', undefined]) {
      expect(isLoopback(a), String(a)).to.equal(false);
      expect(adminClientAllowed(a, false), String(a)).to.equal(false);
      expect(adminClientAllowed(a, true), String(a)).to.equal(true);
    }
  });

  it('refuses a client on a non-loopback address with 403 (one warning), serves it when allowed', async () => {
    // This workplace allows test traffic to loopback addresses only, so the non-loopback client is a
    // socket handed to the real HTTP server with another remote address; HTTP parsing, routing and
    // the check run as for any connection.
    for (const allowRemote of [false, true]) {
      const l = capture();
      const s = new AdminServer({ host: '127.0.0.1', port: 0, allowRemote, routes: ROUTES, logger: l.logger });
      await s.listen();
      try {
        for (const remote of ['10.1.2.3', '::ffff:192.168.7.8', '127.0.0.1']) {
          const { status, body } = await fakeClient(s, remote, 'GET /hello HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n');
          if (allowRemote || remote === '127.0.0.1') {
            expect(status, `${remote}, allowRemote=${allowRemote}`).to.equal(200);
            expect(body, 'chunked body').to.include('hello\n');
          } else {
            expect(status, remote).to.equal(403);
            expect(body).to.match(/admin.listener.allow.remote=true/);
          }
        }
        await flushLog();
        const warns = l.lines.filter((x) => x['level'] === 'warn');
        if (allowRemote) expect(warns).to.have.length(0);
        else expect(warns.map((w) => w['remoteAddress'])).to.deep.equal(['10.1.2.3', '::ffff:192.168.7.8']);
      } finally {
        await s.close();
      }
    }
  });

  it('close() ends idle keep-alive connections and frees the port', async () => {
    const l = capture();
    const s = new AdminServer({ host: '127.0.0.1', port: 0, allowRemote: false, routes: ROUTES, logger: l.logger });
    const { port } = await s.listen();
    const res = await fetch(`http://127.0.0.1:${port}/hello`); // keep-alive by default
    await res.text();
    const t0 = performance.now();
    await s.close();
    expect(performance.now() - t0, 'close does not wait for the keep-alive timeout').to.be.below(900);
    const again = new AdminServer({ host: '127.0.0.1', port, allowRemote: false, routes: ROUTES, logger: l.logger });
    await again.listen();
    await again.close();
  });
});
