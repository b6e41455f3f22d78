/**
 * Client quotas against a child gregor: AlterClientQuotas / DescribeClientQuotas over the wire (kafkajs,
 * librdkafka and kafka-python 2.0 expose neither, so raw frames), with Kafka's filters, errors,
 * validate_only, removal and restart persistence; then throttling seen by librdkafka: a producer held
 * to its producer_byte_rate over 20 s while another client id on the same broker is not.
 */
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { RawClient } from '../helpers/raw-client.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { startChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';
import { alterQuotas, consumeFor, describeQuotas, produceFor, quotaMap } from '../helpers/quotas.js';

const EXACT = 0;
const DEFAULT = 1;
const SPECIFIED = 2;
const MB = 1024 * 1024;

describe('client quotas (AlterClientQuotas, DescribeClientQuotas, throttling)', function () {
  this.timeout(120_000);
  const dataDir = tempDir('gregor-quotas-');
  let broker: ChildBroker;

  async function start(): Promise<void> {
    // Kafka's Rate lets a greedy client send a whole window's worth at once each time its oldest sample
    // expires, so its rate repeats every quota.window.num × quota.window.size.seconds: 10 windows of 1 s
    // make that 10 s, and the 20 s measured hold two whole periods (11, Kafka's default, would not).
    broker = await startChildBroker(dataDir, 0, { 'quota.window.num': '10' }, {}, ['--topic', 'quota-t:1']);
  }
  async function stop(): Promise<void> {
    broker.child.kill('SIGTERM');
    await broker.exited;
  }

  before(start);
  after(async () => {
    if (broker.child.exitCode === null) await stop();
  });

  it('sets, describes (filters, strict, defaults) and removes quotas with Kafka’s errors; validate_only changes nothing', async () => {
    const res = await alterQuotas(broker.bootstrap, [
      { entity: { user: 'alice', 'client-id': null }, ops: { producer_byte_rate: 1024 } },
      { entity: { user: null }, ops: { consumer_byte_rate: 2048, request_percentage: 50.5 } },
      { entity: { 'client-id': 'c1' }, ops: { controller_mutation_rate: 10 } },
      { entity: { ip: '10.0.0.1' }, ops: { connection_creation_rate: 5 } },
      { entity: { user: 'bob' }, ops: { producer_byte_rate: 1.5 } },
      { entity: { user: 'bob' }, ops: { no_such_key: 1 } },
      { entity: { ip: '10.0.0.2', user: 'x' }, ops: { connection_creation_rate: 1 } },
      { entity: { ip: 'not-an-ip' }, ops: { connection_creation_rate: 1 } },
      { entity: { group: 'g' }, ops: { producer_byte_rate: 1 } },
    ]);
    expect(res.entries.map((e) => [e.errorCode, e.errorMessage])).to.deep.equal([
      [ErrorCode.NONE, null],
      [ErrorCode.NONE, null],
      [ErrorCode.NONE, null],
      [ErrorCode.NONE, null],
      [ErrorCode.INVALID_REQUEST, 'Configuration producer_byte_rate must be a Long value'],
      [ErrorCode.INVALID_REQUEST, 'Invalid configuration key no_such_key'],
      [ErrorCode.INVALID_REQUEST, 'Invalid quota entity combination, IP entity should not be combined with User or ClientId'],
      [ErrorCode.INVALID_REQUEST, 'not-an-ip is not a valid IP or resolvable host.'],
      [ErrorCode.UNSUPPORTED_VERSION, 'Unhandled client quota entity type: group'],
    ]);
    expect(res.entries[0]?.entity).to.deep.equal([
      { entityType: 'user', entityName: 'alice' },
      { entityType: 'client-id', entityName: null },
    ]);
    const dry = await alterQuotas(broker.bootstrap, [{ entity: { user: 'carol' }, ops: { producer_byte_rate: 1 } }], {
      validateOnly: true,
    });
    expect(dry.entries[0]?.errorCode).to.equal(ErrorCode.NONE);

    const all = {
      'user=alice|client-id=<default>': { producer_byte_rate: 1024 },
      'user=<default>': { consumer_byte_rate: 2048, request_percentage: 50.5 },
      'client-id=c1': { controller_mutation_rate: 10 },
      'ip=10.0.0.1': { connection_creation_rate: 5 },
    };
    expect(quotaMap(await describeQuotas(broker.bootstrap, []))).to.deep.equal(all);
    expect(quotaMap(await describeQuotas(broker.bootstrap, [], false, 0))).to.deep.equal(all);
    expect(quotaMap(await describeQuotas(broker.bootstrap, [['user', EXACT, 'alice']]))).to.deep.equal({
      'user=alice|client-id=<default>': { producer_byte_rate: 1024 },
    });
    expect(quotaMap(await describeQuotas(broker.bootstrap, [['user', EXACT, 'alice']], true))).to.deep.equal({});
    expect(quotaMap(await describeQuotas(broker.bootstrap, [['user', DEFAULT, null]], true))).to.deep.equal({
      'user=<default>': { consumer_byte_rate: 2048, request_percentage: 50.5 },
    });
    expect(quotaMap(await describeQuotas(broker.bootstrap, [['user', SPECIFIED, null]]))).to.have.keys(
      'user=alice|client-id=<default>',
      'user=<default>',
    );
    expect(quotaMap(await describeQuotas(broker.bootstrap, [['client-id', SPECIFIED, null]], true))).to.have.keys('client-id=c1');

    const dup = await describeQuotas(broker.bootstrap, [
      ['user', EXACT, 'a'],
      ['user', DEFAULT, null],
    ]);
    expect([dup.errorCode, dup.errorMessage, dup.entries]).to.deep.equal([
      ErrorCode.INVALID_REQUEST,
      'Entity type user cannot appear more than once in the filter.',
      null,
    ]);
    const ipUser = await describeQuotas(broker.bootstrap, [
      ['ip', SPECIFIED, null],
      ['user', SPECIFIED, null],
    ]);
    expect(ipUser.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    const exactNull = await describeQuotas(broker.bootstrap, [['user', EXACT, null]]);
    expect(exactNull.errorMessage).to.equal('Request specified MATCH_TYPE_EXACT, but set match string to null.');

    // removal: one key, then the entity's last key (the entity goes)
    await alterQuotas(broker.bootstrap, [
      { entity: { user: null }, ops: { request_percentage: null } },
      { entity: { 'client-id': 'c1' }, ops: { controller_mutation_rate: null } },
    ]);
    expect(quotaMap(await describeQuotas(broker.bootstrap, []))).to.deep.equal({
      'user=alice|client-id=<default>': { producer_byte_rate: 1024 },
      'user=<default>': { consumer_byte_rate: 2048 },
      'ip=10.0.0.1': { connection_creation_rate: 5 },
    });
  });

  it('keeps quotas across a restart', async () => {
    const before = quotaMap(await describeQuotas(broker.bootstrap, []));
    expect(Object.keys(before)).to.have.length.greaterThan(0);
    await stop();
    await start();
    expect(quotaMap(await describeQuotas(broker.bootstrap, []))).to.deep.equal(before);
    // clean slate for the throttling tests
    await alterQuotas(broker.bootstrap, [
      { entity: { user: 'alice', 'client-id': null }, ops: { producer_byte_rate: null } },
      { entity: { user: null }, ops: { consumer_byte_rate: null } },
      { entity: { ip: '10.0.0.1' }, ops: { connection_creation_rate: null } },
    ]);
    expect(quotaMap(await describeQuotas(broker.bootstrap, []))).to.deep.equal({});
  });

  it('holds a librdkafka producer to producer_byte_rate=1 MB/s (±10% over 20 s), reporting the throttle; another client id is not held', async () => {
    const ck = loadConfluent();
    await alterQuotas(broker.bootstrap, [{ entity: { 'client-id': 'limited' }, ops: { producer_byte_rate: MB } }]);
    const limited = await produceFor(ck, broker.bootstrap, 'quota-t', 'limited', 20);
    const rate = limited.bytes / limited.seconds;
    console.log(`      limited: ${(rate / MB).toFixed(3)} MB/s, librdkafka throttle max ${limited.maxThrottleMs} ms`);
    expect(rate / MB).to.be.within(0.9, 1.1);
    expect(limited.maxThrottleMs).to.be.greaterThan(0);
    const free = await produceFor(ck, broker.bootstrap, 'quota-t', 'free', 5);
    const freeRate = free.bytes / free.seconds;
    console.log(`      free: ${(freeRate / MB).toFixed(3)} MB/s, librdkafka throttle max ${free.maxThrottleMs} ms`);
    // not throttled at all, and past the other's quota (how far depends on the machine's load)
    expect(freeRate).to.be.greaterThan(1.5 * MB);
    expect(free.maxThrottleMs).to.equal(0);
  });

  it('holds a librdkafka consumer to consumer_byte_rate while another client id reads at full speed', async () => {
    const ck = loadConfluent();
    await alterQuotas(broker.bootstrap, [{ entity: { 'client-id': 'slow-reader' }, ops: { consumer_byte_rate: MB } }]);
    // the topic holds 20+ MB from the producers above
    const free = await consumeFor(ck, broker.bootstrap, 'quota-t', 'fast-reader', 5);
    console.log(`      free reader: ${(free.bytes / free.seconds / MB).toFixed(3)} MB/s, throttle max ${free.maxThrottleMs} ms`);
    // not throttled, and well past what the quota allows in the same time (how far depends on the machine's load)
    expect(free.bytes).to.be.greaterThan(2 * free.seconds * MB);
    expect(free.maxThrottleMs).to.equal(0);
    // one quota period (10 s): one window's worth (a fetch is cut to it), then the throttle
    const slow = await consumeFor(ck, broker.bootstrap, 'quota-t', 'slow-reader', 10);
    const rate = slow.bytes / slow.seconds;
    console.log(`      slow reader: ${(rate / MB).toFixed(3)} MB/s, throttle max ${slow.maxThrottleMs} ms`);
    expect(rate / MB).to.be.within(0.7, 1.3);
    expect(slow.maxThrottleMs).to.be.greaterThan(0);
  });

  it('controller_mutation_rate: CreateTopics v6 refuses with THROTTLING_QUOTA_EXCEEDED once over; v5 creates and is throttled', async () => {
    // raw frames carry client id raw-client; 1 partition/s with 11 windows lets 10 partitions through at once
    await alterQuotas(broker.bootstrap, [{ entity: { 'client-id': 'raw-client' }, ops: { controller_mutation_rate: 1 } }]);
    type Res = { throttleTimeMs: number; topics: { name: string; errorCode: number; errorMessage?: string | null }[] };
    const create = async (version: number, name: string, partitions: number): Promise<Res> => {
      const c = await RawClient.connect(broker.bootstrap);
      try {
        return await c.request<Res>(
          ApiKey.CreateTopics,
          version,
          {
            topics: [{ name, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: [] }],
            timeoutMs: 30000,
            validateOnly: false,
          },
          15_000,
        );
      } finally {
        c.destroy();
      }
    };
    const first = await create(6, 'mut-a', 20); // under the quota when asked: created, and now 20 over 10 s
    expect(first.topics[0]?.errorCode).to.equal(ErrorCode.NONE);
    expect(first.throttleTimeMs).to.be.greaterThan(0);
    const second = await create(6, 'mut-b', 1);
    expect(second.topics.map((t) => [t.name, t.errorCode])).to.deep.equal([['mut-b', ErrorCode.THROTTLING_QUOTA_EXCEEDED]]);
    expect(second.throttleTimeMs).to.be.greaterThan(0);
    const old = await create(5, 'mut-c', 1); // permissive: created, throttled
    expect(old.topics[0]?.errorCode).to.equal(ErrorCode.NONE);
    expect(old.throttleTimeMs).to.be.greaterThan(0);
    await alterQuotas(broker.bootstrap, [{ entity: { 'client-id': 'raw-client' }, ops: { controller_mutation_rate: null } }]);
    expect((await create(6, 'mut-d', 1)).topics[0]?.errorCode).to.equal(ErrorCode.NONE);
  });
});

describe('connection creation rates (KIP-612)', function () {
  this.timeout(60_000);
  const dataDir = tempDir('gregor-conn-rate-');
  let broker: ChildBroker;
  // two 1 s windows: a burst of about one second's worth, then the rate
  before(async () => {
    broker = await startChildBroker(dataDir, 0, { 'max.connection.creation.rate': '5', 'quota.window.num': '2' });
  });
  after(async () => {
    broker.child.kill('SIGTERM');
    await broker.exited;
  });

  /** Opens n connections at once; each sends ApiVersions: when each was answered (ms from the start), or null when closed unanswered. */
  async function burst(n: number): Promise<(number | null)[]> {
    const t0 = performance.now();
    return Promise.all(
      Array.from({ length: n }, async () => {
        const c = await RawClient.connect(broker.bootstrap);
        try {
          await c.request(ApiKey.ApiVersions, 0, {}, 20_000);
          return performance.now() - t0;
        } catch {
          return null;
        } finally {
          c.destroy();
        }
      }),
    );
  }

  it('max.connection.creation.rate: connections over the rate wait their turn, none is refused', async () => {
    const answered = await burst(20);
    expect(answered.every((t) => t !== null)).to.equal(true);
    const times = (answered as number[]).sort((a, b) => a - b);
    // 20 connections at 5/s after a burst of ~10: the last ones are served seconds after the first
    expect((times[19] ?? 0) - (times[0] ?? 0)).to.be.greaterThan(1000);
  });

  it('an ip entity’s connection_creation_rate closes the connections over it, unanswered', async () => {
    const res = await alterQuotas(broker.bootstrap, [{ entity: { ip: '127.0.0.1' }, ops: { connection_creation_rate: 1 } }]);
    expect(res.entries[0]?.errorCode).to.equal(ErrorCode.NONE);
    const answered = await burst(8);
    expect(answered.filter((t) => t === null).length).to.be.greaterThan(0);
    expect(answered.filter((t) => t !== null).length).to.be.greaterThan(0);
    // the removal's own connection is subject to the rate until it has fallen back
    for (let i = 0; ; i++) {
      try {
        await alterQuotas(broker.bootstrap, [{ entity: { ip: '127.0.0.1' }, ops: { connection_creation_rate: null } }]);
        break;
      } catch (e) {
        if (i >= 20) throw e;
        await sleep(1000);
      }
    }
    expect((await burst(3)).every((t) => t !== null)).to.equal(true);
  });
});
