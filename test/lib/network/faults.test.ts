/**
 * The embedded fault-injection hook (broker.faults): rule validation and picking (probability with an
 * injected random, times, match, remove/clear), then against a real in-process broker: 'error' /
 * 'close' / 'delay' before and after the handler, with raw Produce requests whose effect on the log is
 * read back with ListOffsets and Fetch from another connection, and kafkajs retrying over a dropped
 * connection.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { FaultInjector, type FaultRule } from '../../../lib/network/faults.js';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { buildRecordBatch, decodeRecords } from '../../../protocol/records/index.js';
import { startTestBroker, type TestBroker } from '../../helpers/broker.js';
import {
  FETCH_V,
  fetchBody,
  type PartitionProduceResult,
  PRODUCE_V,
  RawClient,
  type RawFetchPartition,
  rawCreateTopics,
  rawFetch,
  rawListOffset,
  rawProduce,
  rawRequestFrame,
} from '../../helpers/raw-client.js';
import { Cleanup } from '../../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER;

function batch(key: string): Buffer {
  return buildRecordBatch([{ key: Buffer.from(key), value: Buffer.from(`value of ${key}`), timestamp: BigInt(Date.now()) }]);
}

/** A match on the (first) topic of a Produce request, so rules leave other topics alone. */
function produceTo(topic: string): NonNullable<FaultRule['match']> {
  return (req) => (req as { topicData: { name: string }[] }).topicData[0]?.name === topic;
}

/** A produce request body (Produce v8) of one batch to partition 0. */
function produceBody(topic: string, records: Buffer, acks = 1) {
  return { transactionalId: null, acks, timeoutMs: 10000, topicData: [{ name: topic, partitionData: [{ index: 0, records }] }] };
}

/** A random() that cycles through `values` and counts its calls. */
function cycle(values: number[]): { random: () => number; calls: () => number } {
  let n = 0;
  return { random: () => values[n++ % values.length]!, calls: () => n };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('network: fault injection', function () {
  describe('FaultInjector rules', () => {
    const invalidRules: [string, unknown][] = [
      ['error without errorCode', { apiKey: 0, action: 'error' }],
      ['errorCode 0', { apiKey: 0, action: 'error', errorCode: 0 }],
      ['non-integer errorCode', { apiKey: 0, action: 'error', errorCode: 6.5 }],
      ['probability above 1', { apiKey: 0, action: 'close', probability: 1.5 }],
      ['negative probability', { apiKey: 0, action: 'close', probability: -0.1 }],
      ['NaN probability', { apiKey: 0, action: 'close', probability: NaN }],
      ['times 0', { apiKey: 0, action: 'close', times: 0 }],
      ['fractional times', { apiKey: 0, action: 'close', times: 1.5 }],
      ['unknown action', { apiKey: 0, action: 'explode' }],
      ['unknown when', { apiKey: 0, action: 'close', when: 'during' }],
      ['unknown API key', { apiKey: 9999, action: 'close' }],
      ['non-numeric API key', { apiKey: '0', action: 'close' }],
      ['delay without delayMs', { apiKey: 0, action: 'delay' }],
      ['negative delayMs', { apiKey: 0, action: 'delay', delayMs: -1 }],
      ['errorCode on a close rule', { apiKey: 0, action: 'close', errorCode: 6 }],
      ['delayMs on an error rule', { apiKey: 0, action: 'error', errorCode: 6, delayMs: 10 }],
      ['a misspelt field', { apiKey: 0, action: 'close', time: 1 }],
      ['match not a function', { apiKey: 0, action: 'close', match: true }],
    ];
    for (const [what, rule] of invalidRules) {
      it(`rejects ${what} with GREGOR_ERR_FAULT_RULE`, () => {
        const f = new FaultInjector();
        expect(() => f.add(rule as FaultRule)).to.throw(Error, /^GREGOR_ERR_FAULT_RULE: /);
        expect(f.rules).to.have.length(0);
      });
    }

    it('accepts valid rules and lists them in order, as frozen copies', () => {
      const f = new FaultInjector();
      const rule: FaultRule = { apiKey: ApiKey.Produce, action: 'error', errorCode: NOT_LEADER, when: 'after', probability: 0, times: 3 };
      f.add(rule);
      f.add({ apiKey: ApiKey.Fetch, action: 'delay', delayMs: 0 });
      rule.errorCode = 7;
      expect(f.rules.map((r) => [r.apiKey, r.action, r.errorCode])).to.deep.equal([
        [ApiKey.Produce, 'error', NOT_LEADER],
        [ApiKey.Fetch, 'delay', undefined],
      ]);
      expect(Object.isFrozen(f.rules[0])).to.equal(true);
    });

    it('picks the first matching rule per API, with defaults filled in', () => {
      const f = new FaultInjector();
      const info = { apiVersion: 8, clientId: 'c' };
      f.add({ apiKey: ApiKey.Produce, action: 'error', errorCode: NOT_LEADER, match: (_req, i) => i.clientId === 'other' });
      const second = f.add({ apiKey: ApiKey.Produce, action: 'close', when: 'after' });
      f.add({ apiKey: ApiKey.Produce, action: 'delay', delayMs: 5 });
      expect(f.pick(ApiKey.Fetch, {}, info)).to.equal(null);
      const p = f.pick(ApiKey.Produce, {}, info);
      expect(p).to.include({ action: 'close', when: 'after', applied: 1 });
      expect(second.applied).to.equal(1);
      const q = f.pick(ApiKey.Produce, {}, { apiVersion: 8, clientId: 'other' });
      expect(q).to.include({ action: 'error', when: 'before', errorCode: NOT_LEADER });
    });

    it('match sees the decoded request and its version and client id', () => {
      const f = new FaultInjector();
      const seen: unknown[] = [];
      f.add({ apiKey: ApiKey.Metadata, action: 'close', match: (req, i) => (seen.push([req, i.apiVersion, i.clientId]), false) });
      const req = { topics: null };
      expect(f.pick(ApiKey.Metadata, req, { apiVersion: 4, clientId: null })).to.equal(null);
      expect(seen).to.deep.equal([[req, 4, null]]);
    });

    it('probability draws from the injected random, only for matching rules with 0 < p < 1', () => {
      const r = cycle([0.1, 0.9]);
      const f = new FaultInjector({ random: r.random });
      const h = f.add({ apiKey: ApiKey.Produce, action: 'close', probability: 0.5 });
      const got = Array.from({ length: 6 }, () => f.pick(ApiKey.Produce, {}, { apiVersion: 8, clientId: null }) !== null);
      expect(got).to.deep.equal([true, false, true, false, true, false]);
      expect(h.applied).to.equal(3);
      expect(r.calls()).to.equal(6);
      h.remove();
      // probability 1 and 0 never draw; a rule whose match fails never draws
      f.add({ apiKey: ApiKey.Fetch, action: 'close', probability: 0 });
      f.add({ apiKey: ApiKey.Fetch, action: 'close', probability: 0.5, match: () => false });
      const always = f.add({ apiKey: ApiKey.Fetch, action: 'close' });
      for (let i = 0; i < 4; i++) expect(f.pick(ApiKey.Fetch, {}, { apiVersion: 11, clientId: null })).to.equal(always);
      expect(r.calls()).to.equal(6);
    });

    it('a rule is removed once applied `times` times; remove() and clear() take rules out', () => {
      const f = new FaultInjector();
      const info = { apiVersion: 0, clientId: null };
      const h = f.add({ apiKey: ApiKey.Metadata, action: 'close', times: 2 });
      expect(f.pick(ApiKey.Metadata, {}, info)).to.equal(h);
      expect(h.active).to.equal(true);
      expect(f.pick(ApiKey.Metadata, {}, info)).to.equal(h);
      expect(h.active).to.equal(false);
      expect(h.applied).to.equal(2);
      expect(f.pick(ApiKey.Metadata, {}, info)).to.equal(null);
      expect(f.rules).to.have.length(0);

      const a = f.add({ apiKey: ApiKey.Metadata, action: 'close' });
      const b = f.add({ apiKey: ApiKey.Metadata, action: 'delay', delayMs: 1 });
      a.remove();
      a.remove();
      expect(f.pick(ApiKey.Metadata, {}, info)).to.equal(b);
      expect(f.rules.map((r) => r.action)).to.deep.equal(['delay']);
      f.add({ apiKey: ApiKey.Fetch, action: 'close' });
      f.clear();
      expect(b.active).to.equal(false);
      expect(f.rules).to.have.length(0);
      expect(f.pick(ApiKey.Metadata, {}, info)).to.equal(null);
      expect(f.pick(ApiKey.Fetch, {}, info)).to.equal(null);
      b.remove(); // after clear: harmless
    });
  });

  describe('against a broker', function () {
    this.timeout(60_000);
    let b: TestBroker;
    let admin: RawClient;
    /** a connection that produces to its own topic throughout, unaffected by the rules under test */
    let bystander: RawClient;
    let bystanderCount = 0n;
    const clients: RawClient[] = [];
    const connect = async (): Promise<RawClient> => {
      const c = await RawClient.connect(b.bootstrap);
      clients.push(c);
      return c;
    };
    let topicSeq = 0;
    const newTopic = async (partitions = 1): Promise<string> => {
      const name = `faults-${++topicSeq}`;
      await rawCreateTopics(admin, [{ name, partitions }]);
      return name;
    };
    /** log end offset of partition 0 (or another) */
    const end = (topic: string, partition = 0): Promise<bigint> => rawListOffset(admin, topic, partition);
    /** the keys stored in a partition, in offset order */
    const keys = async (topic: string, partition = 0): Promise<(string | undefined)[]> => {
      const f = await rawFetch(admin, topic, partition, 0n);
      return decodeRecords(f.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records.map((x) => x.key?.toString());
    };
    /** The bystander is still connected and its produce is appended normally. */
    const bystanderWorks = async (): Promise<void> => {
      expect(bystander.closed, 'bystander connection closed').to.equal(false);
      const [r] = await rawProduce(bystander, 'bystander', [[0, batch(`b${bystanderCount}`)]]);
      expect(r).to.include({ errorCode: 0, baseOffset: bystanderCount });
      bystanderCount++;
    };

    const cleanup = new Cleanup();

    before(async () => {
      b = cleanup.add(await startTestBroker(), (t) => t.stop());
      admin = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
      bystander = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
      await rawCreateTopics(admin, [{ name: 'bystander', partitions: 1 }]);
      await bystanderWorks();
    });
    afterEach(async () => {
      b.broker.faults.clear();
      b.broker.faults.random = Math.random;
      for (const c of clients.splice(0)) c.destroy();
      await bystanderWorks();
    });
    after(() => cleanup.run());

    it("'error' after on Produce (times: 1): the client gets the error, but the record was appended", async () => {
      const topic = await newTopic();
      const h = b.broker.faults.add({
        apiKey: ApiKey.Produce,
        action: 'error',
        when: 'after',
        errorCode: NOT_LEADER,
        times: 1,
        match: produceTo(topic),
      });
      const c = await connect();
      const [r] = await rawProduce(c, topic, [[0, batch('k0')]]);
      expect(r?.errorCode).to.equal(NOT_LEADER);
      await bystanderWorks();
      expect(await end(topic)).to.equal(1n);
      const f = await rawFetch(admin, topic, 0, 0n);
      expect(f.highWatermark).to.equal(1n);
      expect(decodeRecords(f.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records.map((x) => x.key?.toString())).to.deep.equal([
        'k0',
      ]);
      expect(h.applied).to.equal(1);
      expect(h.active).to.equal(false);
      // used up: the retry succeeds and is appended again (the duplicate idempotence must prevent)
      const [again] = await rawProduce(c, topic, [[0, batch('k0')]]);
      expect(again).to.include({ errorCode: 0, baseOffset: 1n });
      expect(await end(topic)).to.equal(2n);
    });

    it("'error' before on Produce: the client gets the error and the handler did not run", async () => {
      const topic = await newTopic();
      const h = b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'error', errorCode: NOT_LEADER, match: produceTo(topic) });
      const c = await connect();
      for (let i = 0; i < 3; i++) expect((await rawProduce(c, topic, [[0, batch(`k${i}`)]]))[0]?.errorCode).to.equal(NOT_LEADER);
      await bystanderWorks();
      expect(await end(topic)).to.equal(0n);
      expect(h.applied).to.equal(3);
      expect(c.closed).to.equal(false);
      h.remove();
      expect((await rawProduce(c, topic, [[0, batch('ok')]]))[0]).to.include({ errorCode: 0, baseOffset: 0n });
      expect(await end(topic)).to.equal(1n);
    });

    it("'error' on a Produce with acks=0 sends nothing: after, the record is appended; before, it is not", async () => {
      const topic = await newTopic();
      const c = await connect();
      const h = b.broker.faults.add({
        apiKey: ApiKey.Produce,
        action: 'error',
        when: 'after',
        errorCode: NOT_LEADER,
        times: 1,
        match: produceTo(topic),
      });
      await c.send(ApiKey.Produce, PRODUCE_V, produceBody(topic, batch('acks0-after'), 0));
      // the next response on this connection is the ListOffsets one (rawListOffset checks the correlation id)
      expect(await rawListOffset(c, topic, 0)).to.equal(1n);
      expect(h.applied).to.equal(1);
      const h2 = b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'error', errorCode: NOT_LEADER, times: 1, match: produceTo(topic) });
      await c.send(ApiKey.Produce, PRODUCE_V, produceBody(topic, batch('acks0-before'), 0));
      expect(await rawListOffset(c, topic, 0)).to.equal(1n);
      expect(h2.applied).to.equal(1);
      expect(c.responses).to.have.length(2);
      expect(c.closed).to.equal(false);
    });

    it("'close' after on Produce: the connection closes without a response, and the record is in the log", async () => {
      const topic = await newTopic();
      const h = b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'close', when: 'after', match: produceTo(topic) });
      const c = await connect();
      await c.send(ApiKey.Produce, PRODUCE_V, produceBody(topic, batch('closed-after')));
      expect(await c.waitClosed(5000)).to.equal(true);
      expect(c.responses).to.have.length(0);
      expect(c.pendingBytes).to.equal(0);
      await bystanderWorks();
      expect(await end(topic)).to.equal(1n);
      const f = await rawFetch(admin, topic, 0, 0n);
      expect(decodeRecords(f.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records.map((x) => x.key?.toString())).to.deep.equal([
        'closed-after',
      ]);
      expect(h.applied).to.equal(1);
    });

    it("'close' before on Produce: the connection closes without a response, and nothing is appended", async () => {
      const topic = await newTopic();
      const h = b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'close', match: produceTo(topic) });
      const c = await connect();
      await c.send(ApiKey.Produce, PRODUCE_V, produceBody(topic, batch('closed-before')));
      expect(await c.waitClosed(5000)).to.equal(true);
      expect(c.responses).to.have.length(0);
      await bystanderWorks();
      expect(await end(topic)).to.equal(0n);
      expect(h.applied).to.equal(1);
    });

    it("'delay' before: the response comes no earlier than delayMs, the append happens after the wait, others are served meanwhile", async () => {
      const topic = await newTopic();
      const delayMs = 400;
      b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'delay', delayMs, match: produceTo(topic) });
      const c = await connect();
      const t0 = performance.now();
      const res = rawProduce(c, topic, [[0, batch('slow')]]);
      await sleep(50);
      const t1 = performance.now();
      await bystanderWorks();
      expect(await end(topic)).to.equal(0n); // not handled yet
      expect(performance.now() - t1).to.be.below(delayMs / 2);
      expect(c.responses).to.have.length(0);
      expect((await res)[0]).to.include({ errorCode: 0, baseOffset: 0n });
      expect(c.responses[0]!.at - t0).to.be.at.least(delayMs);
      expect(await end(topic)).to.equal(1n);
    });

    it("'delay' after: the handler runs at once (record appended), the response waits delayMs", async () => {
      const topic = await newTopic();
      const delayMs = 400;
      b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'delay', when: 'after', delayMs, match: produceTo(topic) });
      const c = await connect();
      const t0 = performance.now();
      const res = rawProduce(c, topic, [[0, batch('slow-answer')]]);
      await sleep(100);
      expect(await end(topic)).to.equal(1n); // already appended
      expect(c.responses).to.have.length(0); // but not answered
      expect((await res)[0]).to.include({ errorCode: 0, baseOffset: 0n });
      expect(c.responses[0]!.at - t0).to.be.at.least(delayMs);
    });

    it('probability with an injected random, and times: applies to the drawn requests only, until used up', async () => {
      const topic = await newTopic();
      const r = cycle([0.1, 0.9]);
      b.broker.faults.random = r.random;
      const h = b.broker.faults.add({
        apiKey: ApiKey.Produce,
        action: 'error',
        errorCode: NOT_LEADER,
        probability: 0.5,
        times: 2,
        match: produceTo(topic),
      });
      const c = await connect();
      const codes: number[] = [];
      for (let i = 0; i < 6; i++) codes.push((await rawProduce(c, topic, [[0, batch(`p${i}`)]]))[0]!.errorCode);
      expect(codes).to.deep.equal([NOT_LEADER, 0, NOT_LEADER, 0, 0, 0]);
      expect(r.calls()).to.equal(3); // no draws once the rule is gone
      expect(h.applied).to.equal(2);
      expect(b.broker.faults.rules).to.have.length(0);
      expect(await end(topic)).to.equal(4n);
    });

    it('rules on other APIs: Metadata closes until remove(); clear() restores everything', async () => {
      const metadata = (c: RawClient) =>
        c.request<{ brokers: unknown[] }>(ApiKey.Metadata, 4, { topics: null, allowAutoTopicCreation: false });
      const h = b.broker.faults.add({ apiKey: ApiKey.Metadata, action: 'close' });
      for (let i = 0; i < 2; i++) {
        const c = await connect();
        await c.send(ApiKey.Metadata, 4, { topics: null, allowAutoTopicCreation: false });
        expect(await c.waitClosed(5000)).to.equal(true);
        expect(c.responses).to.have.length(0);
      }
      await bystanderWorks(); // Produce is unaffected
      expect(h.applied).to.equal(2);
      h.remove();
      expect((await metadata(await connect())).brokers).to.have.length(1);

      const topic = await newTopic();
      b.broker.faults.add({ apiKey: ApiKey.Metadata, action: 'close' });
      b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'error', errorCode: NOT_LEADER });
      b.broker.faults.add({ apiKey: ApiKey.ListOffsets, action: 'delay', delayMs: 10_000 });
      const c = await connect();
      expect((await rawProduce(c, topic, [[0, batch('x')]]))[0]?.errorCode).to.equal(NOT_LEADER);
      b.broker.faults.clear();
      expect((await metadata(c)).brokers).to.have.length(1);
      expect((await rawProduce(c, topic, [[0, batch('y')]]))[0]).to.include({ errorCode: 0, baseOffset: 0n });
      const t0 = performance.now();
      expect(await end(topic)).to.equal(1n);
      expect(performance.now() - t0).to.be.below(2000);
    });

    it('header and version errors are unchanged: an unsupported ApiVersions still gets its v0 answer', async () => {
      const h = b.broker.faults.add({ apiKey: ApiKey.ApiVersions, action: 'close' });
      const c = await connect();
      await c.write(rawRequestFrame(ApiKey.ApiVersions, 999, 1, Buffer.alloc(0)));
      const [res] = await c.waitResponses(1);
      expect(res!.frame.readInt16BE(4)).to.equal(ErrorCode.UNSUPPORTED_VERSION); // correlation id, then error code
      expect(h.applied).to.equal(0);
      // a supported version is subject to the rule
      await c.send(ApiKey.ApiVersions, 3, { clientSoftwareName: 'raw', clientSoftwareVersion: '1' });
      expect(await c.waitClosed(5000)).to.equal(true);
      expect(c.responses).to.have.length(1);
      expect(h.applied).to.equal(1);
    });

    it('kafkajs (not idempotent) retries a Produce whose connection dropped after the append: the record is written twice', async () => {
      const topic = await newTopic();
      const h = b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'close', when: 'after', times: 1, match: produceTo(topic) });
      const kafka = new Kafka({
        brokers: [b.bootstrap],
        clientId: 'faults-test',
        logLevel: logLevel.NOTHING,
        retry: { initialRetryTime: 50, retries: 5 },
      });
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      try {
        const [r] = await producer.send({ topic, acks: -1, messages: [{ key: 'dup', value: 'once?', partition: 0 }] });
        expect(r?.errorCode).to.equal(0);
      } finally {
        await producer.disconnect();
      }
      expect(h.applied).to.equal(1);
      expect(await end(topic)).to.equal(2n);
      const f = await rawFetch(admin, topic, 0, 0n);
      expect(decodeRecords(f.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records.map((x) => x.key?.toString())).to.deep.equal([
        'dup',
        'dup',
      ]);
    });

    it("a topic/partition 'error' before on Produce errs only the partition named: the others are appended and answered", async () => {
      const topic = await newTopic(2);
      const other = await newTopic(1);
      const h = b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'error', errorCode: NOT_LEADER, topic, partition: 0 });
      const c = await connect();
      const res = await c.request<{
        responses: { name: string; partitionResponses: { index: number; errorCode: number; baseOffset: bigint }[] }[];
      }>(ApiKey.Produce, PRODUCE_V, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 10000,
        topicData: [
          {
            name: topic,
            partitionData: [
              { index: 1, records: batch('p1') },
              { index: 0, records: batch('p0') },
            ],
          },
          { name: other, partitionData: [{ index: 0, records: batch('o0') }] },
        ],
      });
      expect(res.responses.map((t) => [t.name, t.partitionResponses.map((p) => [p.index, p.errorCode, p.baseOffset])])).to.deep.equal([
        [
          topic,
          [
            [1, 0, 0n],
            [0, NOT_LEADER, -1n],
          ],
        ],
        [other, [[0, 0, 0n]]],
      ]);
      expect([await end(topic, 0), await end(topic, 1), await end(other)]).to.deep.equal([0n, 1n, 1n]);
      expect(h.applied).to.equal(1);
      // a request that names only partition 1 is not touched at all
      expect((await rawProduce(c, topic, [[1, batch('p1-again')]])).map((p) => [p.index, p.errorCode, p.baseOffset])).to.deep.equal([
        [1, 0, 1n],
      ]);
      expect(h.applied).to.equal(1);
      // one that names only partition 0 gets the error without the handler running
      expect((await rawProduce(c, topic, [[0, batch('p0-again')]]))[0]?.errorCode).to.equal(NOT_LEADER);
      expect(await end(topic, 0)).to.equal(0n);
      expect(h.applied).to.equal(2);
    });

    it("a topic 'error' after on Produce: every partition is appended, only the named one reports the error", async () => {
      const topic = await newTopic(2);
      b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'error', when: 'after', errorCode: NOT_LEADER, topic, partition: 1, times: 1 });
      const c = await connect();
      const r = await rawProduce(c, topic, [
        [0, batch('a0')],
        [1, batch('a1')],
      ]);
      expect(r.map((p) => [p.index, p.errorCode])).to.deep.equal([
        [0, 0],
        [1, NOT_LEADER],
      ]);
      expect([await end(topic, 0), await end(topic, 1)]).to.deep.equal([1n, 1n]);
    });

    it("a topic/partition 'error' on Fetch: the named partition carries the error, the other its records", async () => {
      const topic = await newTopic(2);
      const c = await connect();
      await rawProduce(c, topic, [
        [0, batch('f0')],
        [1, batch('f1')],
      ]);
      const h = b.broker.faults.add({ apiKey: ApiKey.Fetch, action: 'error', errorCode: NOT_LEADER, topic, partition: 1 });
      const res = await c.request<{ errorCode: number; responses: { topic: string; partitions: RawFetchPartition[] }[] }>(
        ApiKey.Fetch,
        FETCH_V,
        fetchBody(topic, [
          { partition: 0, fetchOffset: 0n },
          { partition: 1, fetchOffset: 0n },
        ]),
      );
      expect(res.errorCode).to.equal(0);
      const [p0, p1] = res.responses[0]!.partitions;
      expect([p0?.partitionIndex, p0?.errorCode, p0?.highWatermark]).to.deep.equal([0, 0, 1n]);
      expect(decodeRecords(p0?.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records.map((x) => x.key?.toString())).to.deep.equal([
        'f0',
      ]);
      expect([p1?.partitionIndex, p1?.errorCode, p1?.records?.length ?? 0]).to.deep.equal([1, NOT_LEADER, 0]);
      expect(h.applied).to.equal(1);
      expect((await rawFetch(c, topic, 0, 0n)).errorCode).to.equal(0); // partition 0 alone: not named, not touched
      expect(h.applied).to.equal(1);
    });

    it("'pause' holds a partition's appends (other partitions go ahead), then releases them in arrival order on remove()", async () => {
      const topic = await newTopic(2);
      const h = b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'pause', topic, partition: 0 });
      const producers = [await connect(), await connect(), await connect()];
      const pending: Promise<PartitionProduceResult[]>[] = [];
      for (const [i, c] of producers.entries()) {
        // one at a time, so the arrival order is known; the first also carries partition 1
        pending.push(
          rawProduce(
            c,
            topic,
            i === 0
              ? [
                  [0, batch('held-0')],
                  [1, batch('free-1')],
                ]
              : [[0, batch(`held-${i}`)]],
          ),
        );
        const until = performance.now() + 5000;
        while (b.broker.faults.list()[0]!.held !== i + 1 && performance.now() < until) await sleep(5);
      }
      await sleep(150);
      expect(producers.map((c) => c.responses.length)).to.deep.equal([0, 0, 0]); // held: no answers
      expect(await end(topic, 0)).to.equal(0n); // nothing appended to partition 0
      expect(await end(topic, 1)).to.equal(1n); // partition 1 of the same request was appended at once
      expect(b.broker.faults.list()[0]).to.include({ id: h.id, action: 'pause', held: 3, applied: 3 });
      await bystanderWorks(); // other topics are not held
      h.remove();
      const results = await Promise.all(pending);
      expect(results.map((r) => r.map((p) => [p.index, p.errorCode, p.baseOffset]))).to.deep.equal([
        [
          [0, 0, 0n],
          [1, 0, 0n],
        ],
        [[0, 0, 1n]],
        [[0, 0, 2n]],
      ]);
      expect(await keys(topic, 0)).to.deep.equal(['held-0', 'held-1', 'held-2']);
      expect(await keys(topic, 1)).to.deep.equal(['free-1']);
      // released: the next append goes straight through
      expect((await rawProduce(producers[0]!, topic, [[0, batch('after')]]))[0]).to.include({ errorCode: 0, baseOffset: 3n });
    });

    it("'pause' with ttlMs releases on its own: the client sees latency, not an error", async () => {
      const topic = await newTopic();
      const ttlMs = 400;
      b.broker.faults.add({ apiKey: ApiKey.Produce, action: 'pause', topic, ttlMs });
      const c = await connect();
      const t0 = performance.now();
      const [r] = await rawProduce(c, topic, [[0, batch('late')]]);
      expect(r).to.include({ errorCode: 0, baseOffset: 0n });
      expect(performance.now() - t0).to.be.at.least(ttlMs - 50);
      expect(b.broker.faults.list()).to.deep.equal([]);
    });
  });
});
