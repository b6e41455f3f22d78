/**
 * The web console's JSON API (/ui/api, issue 19) against a real broker child process (the start
 * bundle, which loads the console on the first /ui request), with data produced and consumed by
 * kafkajs: the page and its security headers, the overview and the per-second history, and the
 * cross-site request defences (CSRF token, Origin, Host).
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { startChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { ConsoleClient } from '../helpers/console.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value (not undefined); fails after `ms`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

describe('web console API (/ui/api)', function () {
  this.timeout(60_000);
  const cleanup = new Cleanup();
  let broker: ChildBroker;
  let kafka: Kafka;
  let ui: ConsoleClient;

  before(async () => {
    const dataDir = cleanup.add(tempDir('gregor-console-'), (d) => rmSync(d, { recursive: true, force: true }));
    broker = await startChildBroker(dataDir, 0, { 'group.initial.rebalance.delay.ms': '0', 'num.partitions': '1' });
    cleanup.defer(async () => {
      broker.child.kill('SIGTERM');
      await broker.exited;
    });
    if (broker.admin === null) throw new Error('no admin listener');
    kafka = new Kafka({ clientId: 'console-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    ui = new ConsoleClient(broker.admin);
  });
  after(() => cleanup.run());

  describe('page and overview', () => {
    it('serves the page with its CSRF cookie, a strict Content-Security-Policy, and the bundle', async () => {
      const res = await ui.open();
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/html/);
      expect(res.headers.get('set-cookie')).to.match(/^gregor_csrf=[0-9a-f]{64}; Path=\/ui; SameSite=Strict$/);
      expect(res.headers.get('content-security-policy')).to.contain("script-src 'self'").and.contain("frame-ancestors 'none'");
      const js = await fetch(`${ui.base}/ui/assets/app.js`);
      expect(js.status).to.equal(200);
      expect(js.headers.get('content-type')).to.match(/^text\/javascript/);
      const code = await js.text();
      // offline: the bundle names no other host to load from
      expect(code).to.not.match(/https?:\/\/(?!www\.w3\.org)[a-z0-9.-]+\.[a-z]{2,}\/[^"'\s]*\.(?:js|css|woff2?)/i);
      expect((await fetch(`${ui.base}/ui/assets/app.css`)).status).to.equal(200);
      expect((await fetch(`${ui.base}/ui/assets/..%2Fpackage.json`)).status).to.equal(404);
      expect((await ui.get('/nothing')).status).to.equal(404);
    });

    it('shows brokers, topics, partitions and health, and counts what kafkajs produced and consumed per second', async () => {
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({ topics: [{ topic: 'overview-t', numPartitions: 3 }] });
      await admin.disconnect();
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: 'overview-t', messages: Array.from({ length: 25 }, (_v, i) => ({ value: `m${i}` })) });
      await producer.disconnect();
      const consumer = kafka.consumer({ groupId: 'overview-g' });
      await consumer.connect();
      await consumer.subscribe({ topic: 'overview-t', fromBeginning: true });
      let seen = 0;
      await consumer.run({
        eachMessage: () => {
          seen++;
          return Promise.resolve();
        },
      });
      await until('the consumer to read 25', () => Promise.resolve(seen >= 25 ? true : undefined));
      await consumer.disconnect();

      const ov = (await ui.get('/overview')).body;
      expect(ov.brokers).to.have.length(1);
      expect(ov.brokers[0].self).to.equal(true);
      expect(ov.topics).to.be.at.least(1);
      expect(ov.partitions).to.be.at.least(3);
      expect(ov.health).to.include({ ready: true, healthy: true });
      expect(ov.totals.messagesIn).to.equal(25);
      expect(ov.totals.messagesOut).to.be.at.least(25);
      expect(ov.groups).to.be.at.least(1);
      // the samples of the last seconds add up to what was produced (the sampler runs each second)
      const sums = await until('the history to hold the 25 messages', async () => {
        const h = (await ui.get('/history?seconds=120')).body;
        const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
        const s = { in: sum(h.series.messagesIn), out: sum(h.series.messagesOut), bytesIn: sum(h.series.bytesIn) };
        return s.in === 25 && s.out >= 25 ? s : undefined;
      });
      expect(sums.bytesIn).to.equal(ov.totals.bytesIn);
      const h = (await ui.get('/history?seconds=10')).body;
      expect(h.series.messagesIn).to.have.length.at.most(10);
      expect(h.start).to.be.a('number');
      expect((await ui.get('/history?seconds=0')).status).to.equal(400);
    });
  });

  describe('cross-site request defences', () => {
    it('refuses a mutating request without the token, with a wrong one, without the cookie, or from another origin', async () => {
      await ui.open();
      const refused = async (headers: Record<string, string>) => {
        const res = await fetch(`${ui.base}/ui/api/topics`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: '{"name":"csrf-t"}',
        });
        return { status: res.status, body: (await res.json()) as { error: string } };
      };
      const token = /gregor_csrf=([0-9a-f]+)/.exec((await fetch(`${ui.base}/ui`)).headers.get('set-cookie') ?? '')?.[1] ?? '';
      const cookie = `gregor_csrf=${token}`;
      for (const headers of [
        {},
        { cookie },
        { 'x-gregor-csrf': token },
        { 'x-gregor-csrf': 'f'.repeat(64), cookie: `gregor_csrf=${'f'.repeat(64)}` },
        { 'x-gregor-csrf': token, cookie, origin: 'http://evil.example' },
        { 'x-gregor-csrf': token, cookie, 'sec-fetch-site': 'cross-site' },
        { 'x-gregor-csrf': token, cookie, origin: 'null' },
      ]) {
        const r = await refused(headers);
        expect(r.status, JSON.stringify(headers)).to.equal(403);
        expect(r.body.error).to.equal('GREGOR_ERR_CONSOLE_CSRF');
      }
      // nothing was created by the refused requests
      expect((await ui.get('/overview')).body.topics).to.equal((await ui.get('/overview')).body.topics);
      const admin = kafka.admin();
      await admin.connect();
      expect(await admin.listTopics()).to.not.include('csrf-t');
      await admin.disconnect();
    });

    it('refuses a Host that is not the listener (DNS rebinding), for reads too', async () => {
      const res = await ui.get('/overview');
      expect(res.status).to.equal(200);
      const http = await import('node:http');
      const [host, port] = ui.admin.split(':');
      const status = await new Promise<{ code: number; body: string }>((resolve, reject) => {
        const req = http.request(
          { host, port: Number(port), path: '/ui/api/overview', headers: { host: `attacker.example:${port}` } },
          (r) => {
            let body = '';
            r.on('data', (d: Buffer) => (body += d.toString()));
            r.on('end', () => resolve({ code: r.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end();
      });
      expect(status.code).to.equal(403);
      expect(JSON.parse(status.body).error).to.equal('GREGOR_ERR_CONSOLE_HOST');
    });
  });
});
