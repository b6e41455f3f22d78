import { expect } from 'chai';
import { ConnectionQuotas, parseConnectionOverrides } from '../../../lib/network/connection-quotas.js';
import { RequestBudget } from '../../../lib/network/request-budget.js';
import { KafkaServer } from '../../../lib/network/server.js';
import {
  Client,
  Mode,
  OpenClients,
  captureLogger,
  eventually,
  listenerOptions,
  newStats,
  request,
  sleep,
  startServer,
  stubDispatch,
  type Harness,
} from './helpers.js';

const MB = 1024 * 1024;
const UNLIMITED = Number.MAX_SAFE_INTEGER;

describe('network: overload limits', () => {
  let h: Harness | undefined;
  const extra: KafkaServer[] = [];
  const clients = new OpenClients();
  const connect = (port = h!.port): Promise<Client> => clients.connect(port);
  afterEach(async () => {
    clients.destroyAll();
    for (const s of [h?.server, ...extra.splice(0)]) await s?.close(1000);
    h = undefined;
  });

  describe('the broker-wide request budget', () => {
    it('queued.max.requests: a connection stops reading while others fill the queue, and goes on in turn', async () => {
      const budget = new RequestBudget(2, UNLIMITED);
      h = await startServer({ budget });
      const a = await connect();
      // 1 in flight (handled: no longer queued), 2 and 3 queued: the queue is full
      a.send(Buffer.concat([request(1, { delayMs: 300 }), request(2), request(3)]));
      await eventually(() => budget.stats().queuedRequests === 2, 3000, 'two queued');
      const b = await connect();
      b.send(request(100));
      await eventually(() => budget.stats().waiting === 1, 3000, 'b muted');
      expect(h.stats.started).to.deep.equal([1]);
      await b.waitFor(1);
      await a.waitFor(3);
      expect([...h.stats.started].sort((x, y) => x - y)).to.deep.equal([1, 2, 3, 100]);
      expect(budget.stats()).to.include({ queuedRequests: 0, queuedBytes: 0, waiting: 0 });
      expect(budget.stats().mutes).to.be.at.least(1);
    });

    it('queued.max.request.bytes: bytes count until handled; a request larger than the budget still passes', async () => {
      const budget = new RequestBudget(UNLIMITED, 1 * MB);
      h = await startServer({ budget });
      const a = await connect();
      a.send(request(1, { delayMs: 300, payload: Buffer.alloc(2 * MB) }));
      await eventually(() => h!.stats.started.length === 1, 3000, 'a dispatched');
      expect(budget.stats().queuedBytes).to.be.greaterThan(2 * MB); // in flight, still counted
      const b = await connect();
      b.send(request(100));
      await eventually(() => budget.stats().waiting === 1, 3000, 'b muted');
      expect(h.stats.started).to.deep.equal([1]);
      const [r] = await a.waitFor(1);
      expect(r!.payload.length).to.equal(2 * MB);
      await b.waitFor(1);
      expect(budget.stats()).to.include({ queuedRequests: 0, queuedBytes: 0, waiting: 0 });
      expect(budget.stats().exhaustedMs).to.be.greaterThan(0);
    });

    it('a connection that closes gives back what it held: a request partly read', async () => {
      const budget = new RequestBudget(UNLIMITED, UNLIMITED);
      h = await startServer({ budget });
      const a = await connect();
      const partial = request(3, { payload: Buffer.alloc(1000) }).subarray(0, 500);
      a.send(Buffer.concat([request(1, { mode: Mode.HANG }), partial]));
      await eventually(() => budget.stats().queuedRequests === 1, 3000, 'one being read');
      expect(budget.stats().queuedBytes).to.equal(13 + 1013);
      a.destroy();
      await eventually(() => h!.server.connectionCount === 0, 3000, 'closed');
      // only the hung request's own bytes stay counted (its handler never finishes)
      expect(budget.stats().queuedRequests).to.equal(0);
      expect(budget.stats().queuedBytes).to.equal(13);
    });

    it('a client that never reads its responses stops being read: it holds no budget others need, and the rest are served', async () => {
      const budget = new RequestBudget(4, 64 * MB);
      h = await startServer({ budget });
      const stalled = await connect();
      stalled.socket.pause();
      const big = Buffer.alloc(1 * MB);
      for (let i = 0; i < 60; i++) stalled.send(request(i, { payload: big }));
      // its responses fill the socket's buffers: from then on nothing more of it is framed
      await eventually(() => h!.stats.calls > 0, 3000, 'first dispatched');
      await sleep(500);
      const dispatched = h.stats.calls;
      expect(dispatched).to.be.below(60);
      expect(budget.stats().queuedRequests).to.equal(0); // its queued requests are parked: out of the count
      const other = await connect();
      for (let i = 0; i < 20; i++) other.send(request(1000 + i));
      await other.waitFor(20);
      expect(h.stats.calls - dispatched).to.equal(20);
      stalled.socket.resume(); // reading again: the rest is served in order
      await stalled.waitFor(60, 20000);
      expect(stalled.responses.map((r) => r.correlationId)).to.deep.equal([...Array(60).keys()]);
    });
  });

  describe('gregor.request.read.timeout.ms (slow-loris)', () => {
    it('closes connections sending a request byte by byte, with one log line for all of them', async () => {
      h = await startServer({ requestReadTimeoutMs: 300 });
      const frame = request(7, { payload: Buffer.alloc(200) });
      const slow = [await connect(), await connect(), await connect()];
      const good = await connect();
      let stop = false;
      const drip = async (c: Client): Promise<void> => {
        for (let i = 0; i < frame.length && !stop && !c.closed; i++) {
          c.send(frame.subarray(i, i + 1));
          await sleep(20);
        }
      };
      const drips = slow.map(drip);
      // a client with whole requests, idle between them, is not affected
      good.send(request(1));
      await good.waitFor(1);
      for (const c of slow) await c.waitClosed(5000);
      stop = true;
      await Promise.all(drips);
      expect(slow.every((c) => c.responses.length === 0)).to.equal(true);
      await sleep(400);
      good.send(request(2));
      await good.waitFor(2);
      expect(good.closed).to.equal(false);
      const lines = h.lines.filter((l) => /gregor\.request\.read\.timeout\.ms/.test(String(l['msg'])));
      expect(lines).to.have.length(1);
      expect(lines[0]!['level']).to.equal('warn');
    });

    it('does not count time during which the broker itself stopped reading the connection', async () => {
      const budget = new RequestBudget(1, UNLIMITED);
      h = await startServer({ budget, requestReadTimeoutMs: 200 });
      const a = await connect();
      a.send(Buffer.concat([request(1, { delayMs: 800 }), request(2)])); // 2 fills the queue for 800 ms
      await eventually(() => budget.stats().queuedRequests === 1, 3000, 'queue full');
      const b = await connect();
      const frame = request(3);
      b.send(frame.subarray(0, 2)); // half a size prefix, then muted for want of budget
      await sleep(50);
      b.send(frame.subarray(2));
      await a.waitFor(2, 5000);
      const [r] = await b.waitFor(1, 5000);
      expect(r!.correlationId).to.equal(3);
      expect(b.closed).to.equal(false);
    });
  });

  describe('connection quotas shared by listeners', () => {
    it('max.connections counts every listener together; refusals are counted by limit', async () => {
      const quotas = new ConnectionQuotas({ maxConnections: 2, maxConnectionsPerIp: UNLIMITED });
      h = await startServer({ quotas });
      const { logger } = captureLogger();
      const second = new KafkaServer(listenerOptions({ name: 'OTHER', quotas }), stubDispatch(newStats()), logger);
      extra.push(second);
      const { port: port2 } = await second.listen();
      await connect();
      await connect(port2);
      await eventually(() => quotas.count === 2);
      const refused = await connect(port2);
      await refused.waitClosed(2000);
      const refused2 = await connect();
      await refused2.waitClosed(2000);
      expect(quotas.refused().get('max.connections')).to.equal(2);
      clients.all[0]!.destroy();
      await eventually(() => quotas.count === 1);
      const ok = await connect(port2);
      ok.send(request(1));
      await ok.waitFor(1);
    });

    it('parses max.connections.per.ip.overrides as Kafka writes it', () => {
      expect([...parseConnectionOverrides('127.0.0.1:5, 10.0.0.2:0,[::1]:7,fe80::2:3,')]).to.deep.equal([
        ['127.0.0.1', 5],
        ['10.0.0.2', 0],
        ['::1', 7],
        ['fe80::2', 3],
      ]);
      expect(parseConnectionOverrides('')).to.have.property('size', 0);
      for (const bad of ['127.0.0.1', '127.0.0.1:x', ':5', 'h:-1', 'h:1.5'])
        expect(() => parseConnectionOverrides(bad), bad).to.throw(/host:limit/);
    });
  });
});
