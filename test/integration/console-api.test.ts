/**
 * The web console's JSON API (/ui/api, issue 19) against a real broker child process (the start
 * bundle, which loads the console on the first /ui request), with data produced and consumed by
 * kafkajs: the page and its security headers, the overview and the per-second history, and the
 * cross-site request defences (CSRF token, Origin, Host).
 */
import { expect } from 'chai';
import kafkajs, { type Kafka } from 'kafkajs';
import { Cleanup } from '../helpers/cleanup.js';
import { type ConsoleClient, createTopic, startConsoleBroker, until } from '../helpers/console.js';

describe('web console API (/ui/api)', function () {
  this.timeout(60_000);
  const cleanup = new Cleanup();
  let kafka: Kafka;
  let ui: ConsoleClient;

  before(async () => {
    ({ kafka, ui } = await startConsoleBroker(cleanup, 'gregor-console-'));
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
      await createTopic(kafka, 'overview-t', 3);
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
      // the topic's own per-second history (the topic page's charts) holds the same 25
      const topicSums = await until("the topic's history to hold the 25 messages", async () => {
        const t = (await ui.get('/topics/overview-t/history?seconds=900')).body;
        const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
        const s = { in: sum(t.series.messagesIn), out: sum(t.series.messagesOut) };
        return s.in === 25 && s.out >= 25 ? s : undefined;
      });
      expect(topicSums.in).to.equal(25);
      expect((await ui.get('/topics/no-such-topic/history')).status).to.equal(404);
    });
  });

  describe('topics', () => {
    it("creates a topic through CreateTopics, with Kafka's checks and errors", async () => {
      const created = await ui.post('/topics', { name: 'console-t', partitions: 2, configs: { 'retention.ms': '3600000' } });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      expect(created.body).to.include({ name: 'console-t', partitions: 2, replicationFactor: 1 });
      const admin = kafka.admin();
      await admin.connect();
      try {
        const md = await admin.fetchTopicMetadata({ topics: ['console-t'] });
        expect(md.topics[0]?.partitions).to.have.length(2);
        const again = await ui.post('/topics', { name: 'console-t', partitions: 1 });
        expect(again.status).to.equal(400);
        expect(again.body).to.include({ error: 'GREGOR_ERR_CONSOLE_KAFKA', kafkaError: 'TOPIC_ALREADY_EXISTS' });
        const badConfig = await ui.post('/topics', { name: 'console-bad', configs: { 'retention.ms': 'soon' } });
        expect(badConfig.status).to.equal(400);
        expect(badConfig.body.kafkaError).to.equal('INVALID_CONFIG');
        expect((await ui.post('/topics', { name: 'bad/name' })).body.kafkaError).to.equal('INVALID_TOPIC_EXCEPTION');
        expect((await ui.post('/topics', { partitions: 1 })).status).to.equal(400);
        expect(await admin.listTopics()).to.not.include('console-bad');
      } finally {
        await admin.disconnect();
      }
    });

    it('lists topics with message counts and sizes, searched by name, internal ones on request', async () => {
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({
        topic: 'console-t',
        messages: Array.from({ length: 10 }, (_v, i) => ({ key: `k${i}`, value: `v${i}`, partition: i % 2 })),
      });
      await producer.disconnect();
      const all = (await ui.get('/topics')).body.topics as { name: string; messages: number; sizeBytes: number; partitions: number }[];
      const t = all.find((x) => x.name === 'console-t');
      expect(t).to.include({ messages: 10, partitions: 2 });
      expect(t?.sizeBytes).to.be.greaterThan(0);
      expect(all.map((x) => x.name)).to.not.include('__consumer_offsets');
      const found = (await ui.get('/topics?q=CONSOLE')).body.topics as { name: string }[];
      expect(found.map((x) => x.name)).to.deep.equal(['console-t']);
      const internal = (await ui.get('/topics?internal=1')).body.topics as { name: string; internal: boolean }[];
      expect(internal.find((x) => x.name === '__consumer_offsets')?.internal).to.equal(true);
    });

    it("shows a topic's partitions with offsets, leader and ISR, and its configs with source and default", async () => {
      const d = (await ui.get('/topics/console-t')).body;
      expect(d.partitions).to.have.length(2);
      for (const p of d.partitions) {
        expect(p).to.include({ leader: 0, logStartOffset: '0', highWatermark: '5', messages: 5 });
        expect(p.isr).to.deep.equal([0]);
        expect(p.replicas).to.deep.equal([0]);
      }
      const retention = d.configs.find((c: { name: string }) => c.name === 'retention.ms');
      expect(retention).to.include({ value: '3600000', source: 'DYNAMIC_TOPIC_CONFIG', default: '604800000', overridden: true });
      const cleanup = d.configs.find((c: { name: string }) => c.name === 'cleanup.policy');
      expect(cleanup).to.include({ value: 'delete', source: 'DEFAULT_CONFIG', overridden: false });
      expect((await ui.get('/topics/nope')).status).to.equal(404);
    });

    it('alters configs through IncrementalAlterConfigs (kafkajs sees the change) and resets them to the default', async () => {
      const set = await ui.send('PUT', '/topics/console-t/configs', { set: { 'max.message.bytes': '65536' }, delete: ['retention.ms'] });
      expect(set.status, JSON.stringify(set.body)).to.equal(200);
      const admin = kafka.admin();
      await admin.connect();
      try {
        const cfg = await admin.describeConfigs({
          resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: 'console-t', configNames: ['max.message.bytes', 'retention.ms'] }],
          includeSynonyms: false,
        });
        const entries = new Map(cfg.resources[0]?.configEntries.map((e) => [e.configName, e]));
        expect(entries.get('max.message.bytes')?.configValue).to.equal('65536');
        expect(entries.get('retention.ms')?.configValue).to.equal('604800000');
        expect(entries.get('retention.ms')?.isDefault).to.equal(true);
      } finally {
        await admin.disconnect();
      }
      const bad = await ui.send('PUT', '/topics/console-t/configs', { set: { 'max.message.bytes': 'lots' } });
      expect(bad.status).to.equal(400);
      expect(bad.body.kafkaError).to.equal('INVALID_CONFIG');
      expect((await ui.send('PUT', '/topics/console-t/configs', {})).status).to.equal(400);
    });

    it('adds partitions and deletes a topic', async () => {
      await ui.post('/topics', { name: 'console-doomed', partitions: 1 });
      const grown = await ui.post('/topics/console-doomed/partitions', { count: 3 });
      expect(grown.status, JSON.stringify(grown.body)).to.equal(200);
      expect((await ui.get('/topics/console-doomed')).body.partitions).to.have.length(3);
      expect((await ui.post('/topics/console-doomed/partitions', { count: 2 })).body.kafkaError).to.equal('INVALID_PARTITIONS');
      expect((await ui.send('DELETE', '/topics/console-doomed')).status).to.equal(200);
      const admin = kafka.admin();
      await admin.connect();
      try {
        expect(await admin.listTopics()).to.not.include('console-doomed');
      } finally {
        await admin.disconnect();
      }
      expect((await ui.send('DELETE', '/topics/console-doomed')).status).to.equal(404);
    });
  });

  describe('many partitions', () => {
    it('sends the first 100 partitions of a topic page unless asked for all', async () => {
      await createTopic(kafka, 'wide-t', 150);
      const first = (await ui.get('/topics/wide-t')).body;
      expect(first.partitionCount).to.equal(150);
      expect(first.partitions).to.have.length(100);
      expect(first.partitions[99].partition).to.equal(99);
      const all = (await ui.get('/topics/wide-t?partitions=all')).body;
      expect(all.partitions).to.have.length(150);
      expect((await ui.get('/topics/wide-t?partitions=0')).body.partitions).to.have.length(0);
      // what each answer cost the broker: a Server-Timing header, and per route at /ui/api/timings
      const res = await fetch(`${ui.base}/ui/api/topics/wide-t`);
      expect(res.headers.get('server-timing')).to.match(/^app;dur=[\d.]+, cpu;dur=[\d.]+$/);
      const routes = (await ui.get('/timings')).body.routes as { route: string; calls: number; medianBytes: number }[];
      expect(routes.find((r) => r.route === 'GET /topics/:p')?.calls).to.be.at.least(4);
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

    it('refuses cross-site and non-JSON POSTs to /v1/faults and /v1/requests; curl-style JSON without Origin passes', async () => {
      const rule = JSON.stringify({ apiKey: 'Produce', action: 'error', errorCode: 'NOT_LEADER_OR_FOLLOWER', times: 1 });
      const post = async (path: string, body: string, headers: Record<string, string>) => {
        const res = await fetch(`${ui.base}${path}`, { method: 'POST', headers, body });
        return { status: res.status, text: await res.text() };
      };
      const json = { 'content-type': 'application/json' };
      const refusals: [Record<string, string>, number, string][] = [
        [{ 'content-type': 'application/x-www-form-urlencoded' }, 415, 'GREGOR_ERR_ADMIN_CONTENT_TYPE'],
        [{ 'content-type': 'text/plain' }, 415, 'GREGOR_ERR_ADMIN_CONTENT_TYPE'],
        [{ 'content-type': 'multipart/form-data; boundary=x' }, 415, 'GREGOR_ERR_ADMIN_CONTENT_TYPE'],
        [{}, 415, 'GREGOR_ERR_ADMIN_CONTENT_TYPE'],
        [{ ...json, origin: 'http://evil.example' }, 403, 'GREGOR_ERR_ADMIN_CROSS_SITE'],
        [{ ...json, origin: 'null' }, 403, 'GREGOR_ERR_ADMIN_CROSS_SITE'],
        [{ ...json, 'sec-fetch-site': 'cross-site' }, 403, 'GREGOR_ERR_ADMIN_CROSS_SITE'],
        [
          { 'content-type': 'text/plain', origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
          403,
          'GREGOR_ERR_ADMIN_CROSS_SITE',
        ],
      ];
      for (const [headers, status, code] of refusals) {
        const f = await post('/v1/faults', rule, headers);
        expect(f.status, `faults ${JSON.stringify(headers)}`).to.equal(status);
        expect(f.text).to.contain(code);
        const r = await post('/v1/requests/record-all', '{"on":true}', headers);
        expect(r.status, `record-all ${JSON.stringify(headers)}`).to.equal(status);
      }
      // none of the refused requests took effect
      const listed = (await (await fetch(`${ui.base}/v1/faults`)).json()) as { faults: unknown[] };
      expect(listed.faults).to.have.length(0);
      const log = (await (await fetch(`${ui.base}/v1/requests?limit=1`)).json()) as { recording: { recordAll: boolean } };
      expect(log.recording.recordAll).to.equal(false);
      const del = await fetch(`${ui.base}/v1/faults`, { method: 'DELETE', headers: { origin: 'http://evil.example' } });
      expect(del.status).to.equal(403);
      // curl --json (no Origin), and a same-origin page, are served
      const added = await post('/v1/faults', rule, json);
      expect(added.status, added.text).to.equal(201);
      const same = await post('/v1/requests/record-all', '{"on":false}', { ...json, origin: ui.base, 'sec-fetch-site': 'same-origin' });
      expect(same.status, same.text).to.equal(200);
      expect((await fetch(`${ui.base}/v1/faults`, { method: 'DELETE' })).status).to.equal(200);
    });
  });
});
