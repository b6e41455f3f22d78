/**
 * Client quotas against a child gregor: AlterClientQuotas / DescribeClientQuotas over the wire (kafkajs,
 * librdkafka and kafka-python 2.0 expose neither, so raw frames), with Kafka's filters, errors,
 * validate_only, removal and restart persistence; then throttling seen by librdkafka: a producer held
 * to its producer_byte_rate over 20 s while another client id on the same broker is not.
 */
import { expect } from 'chai';
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
    expect(freeRate).to.be.greaterThan(3 * MB);
    expect(free.maxThrottleMs).to.equal(0);
  });

  it('holds a librdkafka consumer to consumer_byte_rate while another client id reads at full speed', async () => {
    const ck = loadConfluent();
    await alterQuotas(broker.bootstrap, [{ entity: { 'client-id': 'slow-reader' }, ops: { consumer_byte_rate: MB } }]);
    // the topic holds 20+ MB from the producers above: a free reader takes it all at once
    const free = await consumeFor(ck, broker.bootstrap, 'quota-t', 'fast-reader', 5);
    console.log(`      free reader: ${(free.bytes / free.seconds / MB).toFixed(3)} MB/s, throttle max ${free.maxThrottleMs} ms`);
    expect(free.bytes).to.be.greaterThan(20 * MB);
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
