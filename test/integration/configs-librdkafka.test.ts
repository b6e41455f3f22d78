/**
 * DescribeConfigs and IncrementalAlterConfigs through librdkafka (its C admin API; the Node bindings
 * expose none), compared with what Kafka 3.9 answers for the same settings: the expectations come
 * from the key catalogue (lib/config/kafka-keys.ts). Fails (never skips) when librdkafka is not built.
 */
import { expect } from 'chai';
import { KAFKA_BROKER_KEYS, KAFKA_TOPIC_KEYS } from '../../lib/config/kafka-keys.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { librdkafkaMissing, rdkAlter, rdkDescribe, type RdkConfigEntry } from '../helpers/rdkafka-configs.js';
import { RawClient } from '../helpers/raw-client.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';

const SRC = { TOPIC: 1, DYNAMIC_BROKER: 2, DYNAMIC_DEFAULT: 3, STATIC: 4, DEFAULT: 5 } as const;

const byName = (configs: RdkConfigEntry[]) => new Map(configs.map((c) => [c.name, c]));

describe('DescribeConfigs and IncrementalAlterConfigs through librdkafka', function () {
  this.timeout(60_000);
  let b: TestBroker;
  before(async () => {
    const missing = librdkafkaMissing();
    if (missing !== null) throw new Error(missing);
    b = await startTestBroker({ 'log.retention.ms': '86400000', 'ssl.truststore.password': 'secret' });
    const raw = await RawClient.connect(b.bootstrap);
    await raw.request(ApiKey.CreateTopics, 5, {
      topics: [
        {
          name: 'rdk-cfg',
          numPartitions: 1,
          replicationFactor: 1,
          assignments: [],
          configs: [{ name: 'retention.bytes', value: '1000000' }],
        },
      ],
      timeoutMs: 5000,
      validateOnly: false,
    });
    raw.destroy();
  });
  after(() => b.stop());

  it("a topic: every Kafka topic key, an override, a static broker value and defaults with Kafka's sources", async () => {
    const r = await rdkDescribe(b.bootstrap, 'topic', 'rdk-cfg');
    expect(r.err).to.equal(0);
    const got = byName(r.configs);
    expect([...got.keys()]).to.include.members([...KAFKA_TOPIC_KEYS.keys()]);
    expect(got.get('retention.bytes')).to.deep.include({ value: '1000000', source: SRC.TOPIC, readOnly: false, sensitive: false });
    expect(got.get('retention.bytes')?.synonyms).to.deep.equal([
      ['retention.bytes', '1000000', SRC.TOPIC],
      ['log.retention.bytes', '-1', SRC.DEFAULT],
    ]);
    expect(got.get('retention.ms')).to.deep.include({ value: '86400000', source: SRC.STATIC });
    for (const [name, k] of KAFKA_TOPIC_KEYS) {
      if (name === 'retention.ms' || name === 'retention.bytes') continue;
      // every other key is Kafka's default here (gregor's defaults are Kafka's for topic keys)
      expect(got.get(name), name).to.deep.include({ value: k.default === '' && k.type === 'list' ? '' : k.default, source: SRC.DEFAULT });
    }
  });

  it("the broker: Kafka 3.9's keys with read-only and sensitive flags as Kafka's, passwords without a value", async () => {
    const r = await rdkDescribe(b.bootstrap, 'broker', '0');
    expect(r.err).to.equal(0);
    const got = byName(r.configs);
    const wrong: string[] = [];
    for (const k of KAFKA_BROKER_KEYS.values()) {
      if (k.since4) continue;
      const e = got.get(k.name);
      if (e === undefined) wrong.push(`${k.name}: missing`);
      else if (e.readOnly !== (k.mode === 'read-only') || e.sensitive !== (k.type === 'password') || (e.sensitive && e.value !== null))
        wrong.push(`${k.name}: readOnly ${e.readOnly}, sensitive ${e.sensitive}, value ${e.value}`);
    }
    expect(wrong).to.deep.equal([]);
    expect(got.get('ssl.truststore.password')).to.deep.include({ value: null, source: SRC.STATIC, sensitive: true, readOnly: false });
    expect(got.get('log.retention.ms')).to.deep.include({ value: '86400000', source: SRC.STATIC, readOnly: false });
    expect(got.get('background.threads')).to.deep.include({ value: '10', source: SRC.DEFAULT, readOnly: false });
    expect(got.get('log.dir')).to.deep.include({ source: SRC.STATIC, readOnly: true });
  });

  it('IncrementalAlterConfigs SET and DELETE on the broker, seen by DescribeConfigs; a read-only key refused', async () => {
    expect(await rdkAlter(b.bootstrap, 'broker', '0', 'log.retention.ms', '1800000')).to.deep.equal({ err: 0, msg: null });
    let got = byName((await rdkDescribe(b.bootstrap, 'broker', '0')).configs);
    expect(got.get('log.retention.ms')).to.deep.include({ value: '1800000', source: SRC.DYNAMIC_BROKER });
    expect(got.get('log.retention.ms')?.synonyms.slice(0, 2)).to.deep.equal([
      ['log.retention.ms', '1800000', SRC.DYNAMIC_BROKER],
      ['log.retention.ms', '86400000', SRC.STATIC],
    ]);
    const topic = byName((await rdkDescribe(b.bootstrap, 'topic', 'rdk-cfg')).configs);
    expect(topic.get('retention.ms')).to.deep.include({ value: '1800000', source: SRC.DYNAMIC_BROKER });
    const refused = await rdkAlter(b.bootstrap, 'broker', '0', 'log.dirs', '/elsewhere');
    expect(refused.err).to.equal(42); // INVALID_REQUEST
    expect(refused.msg).to.match(/Cannot update these configs dynamically: Set\(log.dirs\)/);
    expect(await rdkAlter(b.bootstrap, 'broker', '0', 'log.retention.ms', null)).to.deep.equal({ err: 0, msg: null });
    got = byName((await rdkDescribe(b.bootstrap, 'broker', '0')).configs);
    expect(got.get('log.retention.ms')).to.deep.include({ value: '86400000', source: SRC.STATIC });
  });
});
