/**
 * Dynamic broker configs on the wire (IncrementalAlterConfigs v1 / DescribeConfigs v4 / CreateTopics,
 * which kafkajs cannot all send: it refuses the cluster-wide resource name ''): the cluster-wide
 * default, Kafka's refusals and messages, list operations on a broker key, a dynamic retention that
 * reaches an existing log without a restart, and invalid cleanup.policy values.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { CreateTopicsResponse } from '../../protocol/generated/create-topics.js';
import type { DescribeConfigsResponse } from '../../protocol/generated/describe-configs.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { IncrementalAlterConfigsResponse } from '../../protocol/generated/incremental-alter-configs.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { until } from '../helpers/cluster.js';
import { RawClient } from '../helpers/raw-client.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const BROKER = 4;
const TOPIC = 2;
const OP = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;

describe('dynamic broker configs on the wire', function () {
  this.timeout(60_000);
  let b: TestBroker;
  let raw: RawClient;
  before(async () => {
    b = await startTestBroker({
      'log.retention.check.interval.ms': '200',
      'log.segment.bytes': '1024',
      'log.segment.delete.delay.ms': '0',
    });
    raw = await RawClient.connect(b.bootstrap);
  });
  after(async () => {
    raw.destroy();
    await b.stop();
  });

  const alter = async (name: string, configs: { name: string; configOperation: number; value: string | null }[], validateOnly = false) => {
    const r = await raw.request<IncrementalAlterConfigsResponse>(ApiKey.IncrementalAlterConfigs, 1, {
      validateOnly,
      resources: [{ resourceType: BROKER, resourceName: name, configs }],
    });
    return r.responses[0];
  };
  const describe = async (type: number, name: string, keys: string[] | null = null) => {
    const r = await raw.request<DescribeConfigsResponse>(ApiKey.DescribeConfigs, 4, {
      includeSynonyms: true,
      includeDocumentation: true,
      resources: [{ resourceType: type, resourceName: name, configurationKeys: keys }],
    });
    return new Map((r.results[0]?.configs ?? []).map((c) => [c.name, c]));
  };

  it("the cluster-wide default ('') holds only what was set there, with source DYNAMIC_DEFAULT_BROKER_CONFIG", async () => {
    expect((await describe(BROKER, '')).size).to.equal(0);
    const docs = await describe(BROKER, '0', ['log.retention.bytes', 'zookeeper.connect']);
    expect(docs.get('log.retention.bytes')?.documentation).to.equal('Size a partition log is cut back to (-1: no limit).');
    expect(docs.get('zookeeper.connect')?.documentation).to.equal('A Kafka setting gregor accepts and reports without acting on it.');
    expect((await alter('', [{ name: 'log.retention.bytes', configOperation: OP.SET, value: '123456789' }]))?.errorCode).to.equal(
      ErrorCode.NONE,
    );
    const dflt = await describe(BROKER, '');
    expect([...dflt.keys()]).to.deep.equal(['log.retention.bytes']);
    expect(dflt.get('log.retention.bytes')).to.deep.include({ value: '123456789', configSource: 3, readOnly: false, configType: 5 });
    const self = await describe(BROKER, '0', ['log.retention.bytes']);
    expect(self.get('log.retention.bytes')?.synonyms).to.deep.equal([
      { name: 'log.retention.bytes', value: '123456789', source: 3 },
      { name: 'log.retention.bytes', value: '-1', source: 5 },
    ]);
    // per broker wins over the cluster default
    expect((await alter('0', [{ name: 'log.retention.bytes', configOperation: OP.SET, value: '5' }]))?.errorCode).to.equal(ErrorCode.NONE);
    expect((await describe(BROKER, '0', ['log.retention.bytes'])).get('log.retention.bytes')).to.deep.include({
      value: '5',
      configSource: 2,
    });
    for (const r of ['0', '']) await alter(r, [{ name: 'log.retention.bytes', configOperation: OP.DELETE, value: null }]);
    expect((await describe(BROKER, '0', ['log.retention.bytes'])).get('log.retention.bytes')).to.deep.include({
      value: '-1',
      configSource: 5,
    });
    expect((await describe(BROKER, '')).size).to.equal(0);
  });

  it("refuses what Kafka refuses, with Kafka's messages", async () => {
    const ro = await alter('0', [{ name: 'num.partitions', configOperation: OP.SET, value: '3' }]);
    expect(ro).to.deep.include({
      errorCode: ErrorCode.INVALID_REQUEST,
      errorMessage:
        "Invalid config value for resource ConfigResource(type=BROKER, name='0'): Cannot update these configs dynamically: Set(num.partitions)",
    });
    const perBroker = await alter('', [{ name: 'ssl.keystore.location', configOperation: OP.SET, value: '/ks' }]);
    expect(perBroker?.errorMessage).to.equal(
      "Invalid config value for resource ConfigResource(type=BROKER, name=''): Cannot update these configs at default cluster level, broker id must be specified: Set(ssl.keystore.location)",
    );
    expect((await alter('0', [{ name: 'ssl.keystore.location', configOperation: OP.SET, value: '/ks' }], true))?.errorCode).to.equal(
      ErrorCode.NONE,
    );
    // a listener-prefixed key is per broker too, and is listed once set
    expect(
      (await alter('0', [{ name: 'listener.name.internal.ssl.keystore.password', configOperation: OP.SET, value: 'pw' }]))?.errorCode,
    ).to.equal(ErrorCode.NONE);
    expect((await describe(BROKER, '0')).get('listener.name.internal.ssl.keystore.password')).to.deep.include({
      value: null,
      configSource: 2,
      isSensitive: true,
      readOnly: false,
    });
    await alter('0', [{ name: 'listener.name.internal.ssl.keystore.password', configOperation: OP.DELETE, value: null }]);
    const badValue = await alter('0', [{ name: 'message.max.bytes', configOperation: OP.SET, value: 'abc' }]);
    expect(badValue?.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    expect(badValue?.errorMessage).to.match(/message.max.bytes=abc: expected an integer/);
    // a Kafka key gregor only accepts is type-checked as Kafka does
    const kafkaOnly = await alter('', [{ name: 'background.threads', configOperation: OP.SET, value: 'many' }]);
    expect(kafkaOnly?.errorMessage).to.equal(
      "Invalid config value for resource ConfigResource(type=BROKER, name=''): Invalid value many for configuration background.threads: Not a number of type INT",
    );
    const otherBroker = await alter('7', [{ name: 'log.retention.bytes', configOperation: OP.SET, value: '1' }]);
    expect(otherBroker?.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    // nothing of the refused or validateOnly requests was stored
    expect((await describe(BROKER, '0', ['ssl.keystore.location'])).get('ssl.keystore.location')).to.deep.include({
      value: null,
      configSource: 5,
    });
  });

  it('APPEND and SUBTRACT work on a list broker key from its effective value', async () => {
    expect((await alter('0', [{ name: 'log.cleanup.policy', configOperation: OP.APPEND, value: 'compact' }]))?.errorCode).to.equal(
      ErrorCode.NONE,
    );
    expect((await describe(BROKER, '0', ['log.cleanup.policy'])).get('log.cleanup.policy')).to.deep.include({
      value: 'delete,compact',
      configSource: 2,
    });
    await alter('0', [{ name: 'log.cleanup.policy', configOperation: OP.SUBTRACT, value: 'compact' }]);
    expect((await describe(BROKER, '0', ['log.cleanup.policy'])).get('log.cleanup.policy')).to.deep.include({
      value: 'delete',
      configSource: 2,
    });
    const bad = await alter('0', [{ name: 'log.cleanup.policy', configOperation: OP.SET, value: 'forever' }]);
    expect(bad?.errorMessage).to.match(
      /Invalid value forever for configuration log.cleanup.policy: String must be one of: compact, delete/,
    );
    await alter('0', [{ name: 'log.cleanup.policy', configOperation: OP.DELETE, value: null }]);
  });

  it('a dynamic log.retention.ms reaches an existing log without a restart (its old segments are deleted)', async () => {
    const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'dyn', logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    const producer = kafka.producer();
    await admin.connect();
    await producer.connect();
    try {
      await admin.createTopics({ topics: [{ topic: 'dyn-ret', numPartitions: 1 }] });
      const old = String(Date.now() - 3_600_000);
      for (let i = 0; i < 20; i++) await producer.send({ topic: 'dyn-ret', messages: [{ value: 'x'.repeat(200), timestamp: old }] });
      const low = async () => Number((await admin.fetchTopicOffsets('dyn-ret'))[0]?.low ?? -1);
      expect(await low()).to.equal(0);
      expect((await alter('', [{ name: 'log.retention.ms', configOperation: OP.SET, value: '60000' }]))?.errorCode).to.equal(
        ErrorCode.NONE,
      );
      const moved = await until(async () => ((await low()) > 0 ? await low() : undefined), 20_000, 'log start offset moves');
      expect(moved).to.be.greaterThan(0);
      const topic = await describe(TOPIC, 'dyn-ret', ['retention.ms']);
      expect(topic.get('retention.ms')).to.deep.include({ value: '60000', configSource: 3 });
    } finally {
      await alter('', [{ name: 'log.retention.ms', configOperation: OP.DELETE, value: null }]);
      await producer.disconnect();
      await admin.disconnect();
    }
  });

  it("invalid cleanup.policy values are refused at CreateTopics and IncrementalAlterConfigs with Kafka's message", async () => {
    const r = await raw.request<CreateTopicsResponse>(ApiKey.CreateTopics, 5, {
      topics: [
        {
          name: 'bad-policy',
          numPartitions: 1,
          replicationFactor: 1,
          assignments: [],
          configs: [{ name: 'cleanup.policy', value: 'compact,forever' }],
        },
      ],
      timeoutMs: 5000,
      validateOnly: false,
    });
    expect(r.topics[0]).to.deep.include({
      errorCode: ErrorCode.INVALID_CONFIG,
      errorMessage: 'Invalid value forever for configuration cleanup.policy: String must be one of: compact, delete',
    });
    await raw.request(ApiKey.CreateTopics, 5, {
      topics: [{ name: 'good-policy', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 5000,
      validateOnly: false,
    });
    const a = await raw.request<IncrementalAlterConfigsResponse>(ApiKey.IncrementalAlterConfigs, 1, {
      validateOnly: false,
      resources: [
        { resourceType: TOPIC, resourceName: 'good-policy', configs: [{ name: 'cleanup.policy', configOperation: OP.SET, value: 'nope' }] },
      ],
    });
    expect(a.responses[0]).to.deep.include({
      errorCode: ErrorCode.INVALID_CONFIG,
      errorMessage: 'Invalid value nope for configuration cleanup.policy: String must be one of: compact, delete',
    });
  });
});
