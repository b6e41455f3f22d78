/**
 * Fault injection over HTTP (lib/admin/fault-routes.ts) against a real in-process broker, through a
 * minimal node:http server of this test's own that dispatches to the routes (the admin listener
 * proper is lib/admin/server.ts), with kafkajs 2.2.4 and librdkafka 2.15 (@confluentinc/kafka-javascript)
 * as the clients: NOT_LEADER_OR_FOLLOWER three times on Produce, latency in the clients' round
 * trips, a dropped connection after the append survived by idempotent producers exactly once,
 * client-id and topic filters, ttl expiry, a pause released in order, malformed rules answered 400
 * with the field named; and GREGOR_FAULTS taking the same JSON in a broker process. Fails (never
 * skips) when the librdkafka module is missing.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { faultRoutes } from '../../lib/admin/fault-routes.js';
import type { AdminRoute } from '../../lib/admin/routes.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { buildRecordBatch, decodeRecords } from '../../protocol/records/index.js';
import { startChildBroker, startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { until } from '../helpers/eos.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import { RawClient, rawCreateTopics, rawFetch, rawProduce } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

type Any = any;

interface HttpAnswer {
  status: number;
  type: string | null;
  body: Any;
}

/** A node:http server that routes as the admin listener does: method, then exact path or pattern. */
async function serveRoutes(routes: AdminRoute[]): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://admin');
      for (const r of routes) {
        if (r.method !== req.method) continue;
        const match = typeof r.path === 'string' ? (r.path === url.pathname ? null : undefined) : (r.path.exec(url.pathname) ?? undefined);
        if (match === undefined) continue;
        Promise.resolve(r.handle(req, res, { url, match, body: Buffer.concat(chunks) })).catch((e: unknown) => {
          res.writeHead(500);
          res.end(String(e));
        });
        return;
      }
      res.writeHead(404);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const batchOf = (key: string) => buildRecordBatch([{ key: Buffer.from(key), value: Buffer.from('v'), timestamp: BigInt(Date.now()) }]);

describe('fault injection over HTTP, with kafkajs and librdkafka', function () {
  this.timeout(120_000);
  let ck: Any;
  let b: TestBroker;
  let admin: { url: string; close(): Promise<void> };
  let raw: RawClient;
  let seq = 0;

  const call = async (method: string, path: string, body?: unknown): Promise<HttpAnswer> => {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      init.headers = { 'content-type': 'application/json' };
    }
    const res = await fetch(`${admin.url}${path}`, init);
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type'), body: text === '' ? null : JSON.parse(text) };
  };
  const post = async (rules: unknown): Promise<string[]> => {
    const r = await call('POST', '/v1/faults', rules);
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    return r.body.ids as string[];
  };
  const listed = async (): Promise<Any[]> => (await call('GET', '/v1/faults')).body.faults as Any[];
  const newTopic = async (partitions = 1): Promise<string> => {
    const name = `http-faults-${++seq}`;
    await rawCreateTopics(raw, [{ name, partitions }]);
    return name;
  };
  /** keys stored in a partition, in offset order */
  const keys = async (topic: string, partition = 0): Promise<string[]> => {
    const f = await rawFetch(raw, topic, partition, 0n);
    return decodeRecords(f.records ?? Buffer.alloc(0), { maxOutput: 1 << 24 }).records.map((x) => x.key?.toString() ?? '');
  };
  const kjs = (clientId: string) =>
    new Kafka({ brokers: [b.bootstrap], clientId, logLevel: logLevel.NOTHING, retry: { initialRetryTime: 50, retries: 8 } });
  const rdk = (extra: Record<string, unknown> = {}) =>
    new ck.KafkaJS.Kafka({ kafkaJS: { brokers: [b.bootstrap], logLevel: ck.KafkaJS.logLevel.NOTHING } }).producer({
      'linger.ms': 0,
      'retry.backoff.ms': 20,
      'retry.backoff.max.ms': 100,
      'reconnect.backoff.ms': 10,
      'reconnect.backoff.max.ms': 100,
      ...extra,
    });
  const messages = (tag: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ key: `${tag}-${i}`, value: `value ${i}`, partition: 0 }));

  const cleanup = new Cleanup();

  before(async () => {
    ck = loadConfluent();
    b = cleanup.add(await startTestBroker(), (t) => t.stop());
    admin = cleanup.add(await serveRoutes(faultRoutes(b.broker.faults)), (a) => a.close());
    raw = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
  });
  afterEach(() => b.broker.faults.clear());
  after(() => cleanup.run());

  it('malformed rules are answered 400 with a message naming the field, and nothing is added', async () => {
    const cases: [string, string | null, number | null][] = [
      ['{"apiKey": "Produce", "action": "error"}', 'errorCode', null],
      ['{"apiKey": "Produce", "action": "error", "errorCode": "NOT_A_CODE"}', 'errorCode', null],
      ['{"apiKey": "Nope", "action": "close"}', 'apiKey', null],
      ['{"apiKey": 0, "action": "explode"}', 'action', null],
      ['[{"apiKey": 0, "action": "close"}, {"apiKey": 0, "action": "delay", "delayMs": -1}]', 'delayMs', 1],
      ['{"apiKey": 0, "action": "close", "match": "x => true"}', 'match', null],
      ['{"apiKey": "ApiVersions", "action": "close", "topic": "t"}', 'topic', null],
      ['{"apiKey": 0, "action": "close", "partition": 0}', 'partition', null],
      ['{"action": "pause", "topic": "t", "times": 2}', 'times', null],
      ['{"apiKey": 0, "action": "close", "ttlMs": "soon"}', 'ttlMs', null],
      ['{"apiKey": 0, "action": "close", "expiresAt": "2001-01-01T00:00:00Z"}', 'expiresAt', null],
      ['{"apiKey": 0, "action": "close", "tims": 1}', 'tims', null],
      ['"Produce"', null, null],
      ['{"apiKey": 0, "action": ', null, null],
      ['', null, null],
    ];
    for (const [body, field, index] of cases) {
      const r = await call('POST', '/v1/faults', body);
      expect(r.status, body).to.equal(400);
      expect(r.type).to.match(/^application\/json/);
      expect(r.body, body).to.include({ error: 'GREGOR_ERR_FAULT_RULE', field, index });
      expect(r.body.message).to.match(/^GREGOR_ERR_FAULT_RULE: /);
      if (field !== null) expect(r.body.message, body).to.include(field);
    }
    expect(await listed()).to.deep.equal([]);
    expect(b.broker.faults.rules).to.have.length(0);
    expect((await call('DELETE', '/v1/faults/f999')).status).to.equal(404);
    expect((await call('GET', '/v1/faults/f999')).body).to.include({ error: 'GREGOR_ERR_FAULT_NOT_FOUND' });
  });

  it('POST adds one rule or a list (201 with ids); GET lists them with state; DELETE by id and all', async () => {
    const [one] = await post({ apiKey: 'Metadata', action: 'delay', delayMs: 5, jitterMs: 5, clientId: 'nobody' });
    const r = await call('POST', '/v1/faults', [
      { apiKey: 'Produce', action: 'error', errorCode: 'NOT_LEADER_OR_FOLLOWER', times: 3, topic: 'x', partition: 1 },
      { action: 'pause', topic: 'y', ttlMs: 60_000 },
    ]);
    expect(r.status).to.equal(201);
    const [two, three] = r.body.ids as string[];
    expect(new Set([one, two, three]).size).to.equal(3);
    expect(r.body.faults.map((f: Any) => f.id)).to.deep.equal([two, three]);
    const all = await listed();
    expect(all.map((f) => f.id)).to.deep.equal([one, two, three]);
    expect(all[1]).to.deep.include({
      api: 'Produce',
      apiKey: 0,
      errorCode: 6,
      error: 'NOT_LEADER_OR_FOLLOWER',
      times: 3,
      remaining: 3,
      applied: 0,
      topic: 'x',
      partition: 1,
      remainingMs: null,
    });
    expect(all[2]).to.deep.include({ api: 'Produce', action: 'pause', topic: 'y', held: 0, ttlMs: 60_000 });
    expect(all[2].remainingMs).to.be.within(50_000, 60_000);
    expect((await call('GET', `/v1/faults/${two}`)).body).to.deep.include({ id: two, remaining: 3 });
    expect((await call('DELETE', `/v1/faults/${two}`)).status).to.equal(204);
    expect((await call('DELETE', `/v1/faults/${two}`)).status).to.equal(404);
    expect((await listed()).map((f) => f.id)).to.deep.equal([one, three]);
    expect((await call('DELETE', '/v1/faults')).body).to.deep.equal({ removed: 2 });
    expect(await listed()).to.deep.equal([]);
  });

  it('with NOT_LEADER_OR_FOLLOWER injected 3 times on Produce, kafkajs and librdkafka producers still deliver every record', async () => {
    for (const client of ['kafkajs', 'librdkafka'] as const) {
      const topic = await newTopic();
      const [id] = await post({ apiKey: 'Produce', action: 'error', errorCode: 'NOT_LEADER_OR_FOLLOWER', times: 3, topic });
      const sent = messages(client, 50);
      if (client === 'kafkajs') {
        const p = kjs('not-leader').producer({ allowAutoTopicCreation: false });
        await p.connect();
        try {
          for (const m of sent.slice(0, 25)) await p.send({ topic, acks: -1, messages: [m] }); // one request per record: 3 of them fail first
          await p.send({ topic, acks: -1, messages: sent.slice(25) });
        } finally {
          await p.disconnect();
        }
      } else {
        const p = rdk();
        await p.connect();
        try {
          for (const m of sent.slice(0, 25)) await p.send({ topic, messages: [m] });
          await p.send({ topic, messages: sent.slice(25) });
        } finally {
          await p.disconnect();
        }
      }
      // the rule was used up (so 3 requests really got the error), and every record is there once, in order
      expect((await call('GET', `/v1/faults/${id}`)).status, `${client}: rule still there`).to.equal(404);
      expect(await keys(topic), client).to.deep.equal(sent.map((m) => m.key));
    }
  });

  it("injected latency shows in the client's measured round trip (kafkajs metadata, librdkafka produce)", async () => {
    const topic = await newTopic();
    const delayMs = 600;
    // kafkajs: an admin Metadata call
    const kadmin = kjs('latency-kjs').admin();
    await kadmin.connect();
    const timeMetadata = async () => {
      const t0 = performance.now();
      await kadmin.fetchTopicMetadata({ topics: [topic] });
      return performance.now() - t0;
    };
    try {
      const before = await timeMetadata();
      const [id] = await post({ apiKey: 'Metadata', action: 'delay', delayMs, clientId: 'latency-kjs' });
      const slowed = await timeMetadata();
      await call('DELETE', `/v1/faults/${id}`);
      const after = await timeMetadata();
      expect(slowed, 'with the delay').to.be.at.least(delayMs);
      expect(before, 'before the delay').to.be.below(delayMs / 2);
      expect(after, 'after removing it').to.be.below(delayMs / 2);
    } finally {
      await kadmin.disconnect();
    }
    // librdkafka: a produce round trip
    const p = rdk();
    await p.connect();
    const timeSend = async (key: string) => {
      const t0 = performance.now();
      await p.send({ topic, messages: [{ key, value: 'v', partition: 0 }] });
      return performance.now() - t0;
    };
    try {
      const before = await timeSend('fast-1');
      const [id] = await post({ apiKey: 'Produce', action: 'delay', delayMs, topic });
      const slowed = await timeSend('slow');
      await call('DELETE', `/v1/faults/${id}`);
      const after = await timeSend('fast-2');
      expect(slowed, 'with the delay').to.be.at.least(delayMs);
      expect(before, 'before the delay').to.be.below(delayMs / 2);
      expect(after, 'after removing it').to.be.below(delayMs / 2);
    } finally {
      await p.disconnect();
    }
    expect(await keys(topic)).to.deep.equal(['fast-1', 'slow', 'fast-2']);
  });

  it('an injected disconnect after the append is survived by both: idempotent producers deliver once', async () => {
    for (const client of ['kafkajs', 'librdkafka'] as const) {
      const topic = await newTopic();
      const [id] = await post({ apiKey: 'Produce', action: 'close', when: 'after', times: 1, topic });
      const sent = messages(client, 30);
      if (client === 'kafkajs') {
        const p = kjs('disconnect').producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
        await p.connect();
        try {
          await p.send({ topic, acks: -1, messages: sent.slice(0, 10) }); // this one is appended, then the connection drops
          await p.send({ topic, acks: -1, messages: sent.slice(10) });
        } finally {
          await p.disconnect();
        }
      } else {
        const p = rdk({ 'enable.idempotence': true, acks: -1 });
        await p.connect();
        try {
          await p.send({ topic, messages: sent.slice(0, 10) });
          await p.send({ topic, messages: sent.slice(10) });
        } finally {
          await p.disconnect();
        }
      }
      expect((await call('GET', `/v1/faults/${id}`)).status, `${client}: the connection was never dropped`).to.equal(404);
      expect(await keys(topic), client).to.deep.equal(sent.map((m) => m.key)); // the retried batch is not stored twice
    }
  });

  it('clientId and topic filters hit only what they name', async () => {
    const topic = await newTopic();
    const spared = await newTopic();
    const [byClient] = await post({
      apiKey: 'Produce',
      action: 'error',
      errorCode: 'NOT_LEADER_OR_FOLLOWER',
      times: 2,
      clientId: 'victim',
    });
    const [byTopic] = await post({ apiKey: 'Produce', action: 'close', topic });
    const bystander = kjs('bystander').producer({ allowAutoTopicCreation: false });
    const victim = kjs('victim').producer({ allowAutoTopicCreation: false });
    await Promise.all([bystander.connect(), victim.connect()]);
    try {
      await bystander.send({ topic: spared, acks: -1, messages: [{ key: 'b', value: 'b', partition: 0 }] });
      expect((await listed()).map((f) => [f.id, f.applied])).to.deep.equal([
        [byClient, 0],
        [byTopic, 0],
      ]);
      await victim.send({ topic: spared, acks: -1, messages: [{ key: 'v', value: 'v', partition: 0 }] });
      expect((await listed()).map((f) => [f.id, f.applied])).to.deep.equal([[byTopic, 0]]); // byClient used up on the victim
      // the topic rule hits a produce to its topic: the connection is dropped
      const c = await RawClient.connect(b.bootstrap);
      await c.send(ApiKey.Produce, 8, {
        transactionalId: null,
        acks: 1,
        timeoutMs: 5000,
        topicData: [{ name: topic, partitionData: [{ index: 0, records: batchOf('x') }] }],
      });
      expect(await c.waitClosed(5000)).to.equal(true);
      expect((await listed()).map((f) => [f.id, f.applied])).to.deep.equal([[byTopic, 1]]);
      await call('DELETE', `/v1/faults/${byTopic}`);
    } finally {
      await Promise.all([bystander.disconnect(), victim.disconnect()]);
    }
    expect(await keys(spared)).to.deep.equal(['b', 'v']);
    expect(await keys(topic)).to.deep.equal([]);
  });

  it('a rule with ttlMs expires on its own', async () => {
    const ttlMs = 500;
    const [id] = await post({ apiKey: 'Metadata', action: 'close', ttlMs, clientId: 'raw-client' });
    const left = (await listed())[0];
    expect(left).to.include({ id });
    expect(left.remainingMs).to.be.within(1, ttlMs);
    const c1 = await RawClient.connect(b.bootstrap);
    await c1.send(ApiKey.Metadata, 4, { topics: null, allowAutoTopicCreation: false });
    expect(await c1.waitClosed(5000), 'closed while the rule lives').to.equal(true);
    await sleep(ttlMs + 100);
    expect(await listed()).to.deep.equal([]);
    const c2 = await RawClient.connect(b.bootstrap);
    try {
      const md = await c2.request<{ brokers: unknown[] }>(ApiKey.Metadata, 4, { topics: null, allowAutoTopicCreation: false });
      expect(md.brokers).to.have.length(1);
    } finally {
      c2.destroy();
    }
  });

  it("a pause holds a partition's appends from kafkajs and librdkafka and releases them in order: latency, not errors", async () => {
    const topic = await newTopic(2);
    const [id] = await post({ action: 'pause', topic, partition: 0 });
    const heldCount = async () => ((await listed())[0]?.held as number | undefined) ?? -1;
    const a = kjs('pause-a').producer({ allowAutoTopicCreation: false });
    const c = kjs('pause-c').producer({ allowAutoTopicCreation: false });
    const r = rdk();
    await Promise.all([a.connect(), c.connect(), r.connect()]);
    try {
      const sends: Promise<unknown>[] = [];
      sends.push(a.send({ topic, acks: -1, messages: [{ key: 'first', value: 'kafkajs', partition: 0 }] }));
      await until(async () => (await heldCount()) === 1, 10_000, 'the first append held');
      sends.push(r.send({ topic, messages: [{ key: 'second', value: 'librdkafka', partition: 0 }] }));
      await until(async () => (await heldCount()) === 2, 10_000, 'the second append held');
      sends.push(c.send({ topic, acks: -1, messages: [{ key: 'third', value: 'kafkajs', partition: 0 }] }));
      await until(async () => (await heldCount()) === 3, 10_000, 'the third append held');
      // partition 1 of the same topic is not paused (another connection: a held request holds its connection's later ones, as in Kafka)
      expect((await rawProduce(raw, topic, [[1, batchOf('free')]]))[0]).to.include({ errorCode: 0, baseOffset: 0n });
      let settled = 0;
      for (const s of sends)
        void s.then(
          () => settled++,
          () => settled++,
        );
      await sleep(300);
      expect(settled, 'sends answered while paused').to.equal(0);
      expect(await keys(topic, 0)).to.deep.equal([]);
      expect(await keys(topic, 1)).to.deep.equal(['free']);
      expect((await call('DELETE', `/v1/faults/${id}`)).status).to.equal(204);
      await Promise.all(sends); // none fails
    } finally {
      await Promise.all([a.disconnect(), c.disconnect(), r.disconnect()]);
    }
    expect(await keys(topic, 0)).to.deep.equal(['first', 'second', 'third']);
  });

  it('GREGOR_FAULTS takes the same JSON in a broker process; a malformed rule stops it with exit 2, naming the field', async () => {
    const rule = JSON.stringify({ apiKey: 'Produce', action: 'error', errorCode: 'NOT_LEADER_OR_FOLLOWER', times: 1 });
    const dataDir = tempDir();
    const child = await startChildBroker(dataDir, 0, {}, { GREGOR_FAULTS: rule });
    try {
      const c = await RawClient.connect(child.bootstrap);
      try {
        await rawCreateTopics(c, [{ name: 'env-faults', partitions: 1 }]);
        expect((await rawProduce(c, 'env-faults', [[0, batchOf('k')]]))[0]?.errorCode).to.equal(6);
        expect((await rawProduce(c, 'env-faults', [[0, batchOf('k')]]))[0]).to.include({ errorCode: 0, baseOffset: 0n });
      } finally {
        c.destroy();
      }
    } finally {
      child.child.kill('SIGTERM');
      await child.exited;
    }
    const bad = spawn(process.execPath, [join(PROJECT_ROOT, 'bin/gregor.js'), 'start', '--data-dir', tempDir(), '--port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, GREGOR_FAULTS: '[{"apiKey": "Produce", "action": "error", "errorCode": "NOPE"}]' },
    });
    let stderr = '';
    bad.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => bad.on('exit', resolve));
    expect(code).to.equal(2);
    expect(stderr).to.match(/GREGOR_FAULTS: GREGOR_ERR_FAULT_RULE: rule 0: .*errorCode/);
  });
});
