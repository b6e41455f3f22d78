/**
 * DescribeConfigs and dynamic broker configs through kafkajs, compared with what Kafka 3.9 answers for
 * the same settings (names, values, sources, read-only and sensitive flags, synonyms), the expectations
 * derived from the key catalogue (lib/config/kafka-keys.ts); AlterConfigs on BROKER resources (this
 * broker's id and the cluster-wide ''), Kafka's refusals, and a restart that keeps them.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { rmSync } from 'node:fs';
import { KAFKA_BROKER_KEYS, KAFKA_TOPIC_KEYS } from '../../lib/config/kafka-keys.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel, ConfigResourceTypes } = require('kafkajs') as typeof import('kafkajs');
type Admin = import('kafkajs').Admin;

const SRC = { TOPIC: 1, DYNAMIC_BROKER: 2, DYNAMIC_DEFAULT: 3, STATIC: 4, DEFAULT: 5 } as const;
interface Entry {
  configName: string;
  configValue: string | null;
  configSource: number;
  readOnly: boolean;
  isSensitive: boolean;
  configSynonyms: { configName: string; configValue: string | null; configSource: number }[];
}

async function describe1(admin: Admin, type: import('kafkajs').ConfigResourceTypes, name: string): Promise<Map<string, Entry>> {
  const r = await admin.describeConfigs({ resources: [{ type, name }], includeSynonyms: true });
  const entries = (r.resources[0]?.configEntries ?? []) as unknown as Entry[];
  return new Map(entries.map((e) => [e.configName, e]));
}

const syn = (e: Entry | undefined) => e?.configSynonyms.map((s) => [s.configName, s.configValue, s.configSource]);

describe('DescribeConfigs and dynamic broker configs (kafkajs)', function () {
  this.timeout(60_000);
  const dataDir = tempDir();
  const STATIC = { 'log.retention.ms': '86400000', 'ssl.keystore.password': 'secret', 'num.io.threads': '4' };
  let b: TestBroker;
  let admin: Admin;
  const start = async () => {
    b = await startTestBroker(STATIC, { dataDir });
    admin = new Kafka({ brokers: [b.bootstrap], clientId: 'configs', logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
  };
  const stop = async () => {
    await admin.disconnect();
    await b.stop();
  };
  before(start);
  after(async () => {
    await stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("a topic: every Kafka topic key, with Kafka's sources and synonyms for an override, a static broker value and a default", async () => {
    await admin.createTopics({ topics: [{ topic: 'cfg', configEntries: [{ name: 'segment.bytes', value: '1048576' }] }] });
    const got = await describe1(admin, ConfigResourceTypes.TOPIC, 'cfg');
    expect([...got.keys()]).to.include.members([...KAFKA_TOPIC_KEYS.keys()]);
    const seg = got.get('segment.bytes');
    expect(seg).to.include({ configValue: '1048576', configSource: SRC.TOPIC, readOnly: false, isSensitive: false });
    expect(syn(seg)).to.deep.equal([
      ['segment.bytes', '1048576', SRC.TOPIC],
      ['log.segment.bytes', '1073741824', SRC.DEFAULT],
    ]);
    const ret = got.get('retention.ms');
    expect(ret).to.include({ configValue: '86400000', configSource: SRC.STATIC });
    // Kafka: the chain from log.retention.ms on, each source tier in turn (static, then defaults)
    expect(syn(ret)).to.deep.equal([
      ['log.retention.ms', '86400000', SRC.STATIC],
      ['log.retention.hours', '168', SRC.DEFAULT],
    ]);
    expect(got.get('max.message.bytes')).to.include({ configValue: '1048588', configSource: SRC.DEFAULT });
    expect(got.get('remote.storage.enable')).to.include({ configValue: 'false', configSource: SRC.DEFAULT });
  });

  it("the broker: Kafka 3.9's broker keys, read-only unless dynamically updatable, passwords hidden", async () => {
    const got = await describe1(admin, ConfigResourceTypes.BROKER, '0');
    for (const k of KAFKA_BROKER_KEYS.values()) {
      if (k.since4) continue;
      const e = got.get(k.name);
      expect(e, k.name).to.not.equal(undefined);
      expect(e?.readOnly, k.name).to.equal(k.mode === 'read-only');
      expect(e?.isSensitive, k.name).to.equal(k.type === 'password');
      if (k.type === 'password') expect(e?.configValue, k.name).to.equal(null);
    }
    expect(got.get('log.retention.ms')).to.include({ configValue: '86400000', configSource: SRC.STATIC, readOnly: false });
    expect(got.get('num.io.threads')).to.include({ configValue: '4', configSource: SRC.STATIC, readOnly: false });
    expect(got.get('num.partitions')).to.include({ configValue: '1', configSource: SRC.DEFAULT, readOnly: true });
    expect(got.get('ssl.keystore.password')).to.include({ configValue: null, configSource: SRC.STATIC, isSensitive: true });
    expect(got.get('zookeeper.connect')).to.include({ configValue: null, configSource: SRC.DEFAULT, readOnly: true });
    expect(syn(got.get('log.retention.hours'))).to.deep.equal([['log.retention.hours', '168', SRC.DEFAULT]]);
  });

  // kafkajs refuses the cluster-wide resource name '' client-side, so this test alters this broker's own configs
  it("dynamic configs on this broker: sources as Kafka's, reaching topics; Kafka's refusal of read-only keys; validateOnly stores nothing", async () => {
    // a 1.2 MB record is too large for the topic until message.max.bytes is raised dynamically
    const producer = new Kafka({ brokers: [b.bootstrap], clientId: 'configs-p', logLevel: logLevel.NOTHING }).producer({
      retry: { retries: 0 },
    });
    await producer.connect();
    await admin.createTopics({ topics: [{ topic: 'cfg-big' }] });
    const big = { value: Buffer.alloc(1_200_000, 1) };
    const tooLarge = await producer.send({ topic: 'cfg-big', messages: [big], acks: 1 }).then(
      () => 'accepted',
      (e: unknown) => (e as { type?: string }).type,
    );
    expect(tooLarge).to.equal('MESSAGE_TOO_LARGE');
    await admin.alterConfigs({
      resources: [
        {
          type: ConfigResourceTypes.BROKER,
          name: '0',
          configEntries: [
            { name: 'log.retention.ms', value: '3600000' },
            { name: 'message.max.bytes', value: '2000000' },
          ],
        },
      ],
      validateOnly: false,
    });
    let got = await describe1(admin, ConfigResourceTypes.BROKER, '0');
    expect(got.get('log.retention.ms')).to.include({ configValue: '3600000', configSource: SRC.DYNAMIC_BROKER });
    expect(syn(got.get('log.retention.ms'))).to.deep.equal([
      ['log.retention.ms', '3600000', SRC.DYNAMIC_BROKER],
      ['log.retention.ms', '86400000', SRC.STATIC],
      ['log.retention.hours', '168', SRC.DEFAULT],
    ]);
    expect(got.get('message.max.bytes')).to.include({ configValue: '2000000', configSource: SRC.DYNAMIC_BROKER });
    // applied without a restart, to the existing topic too
    const sent = await producer.send({ topic: 'cfg-big', messages: [big], acks: 1 });
    expect(sent[0]?.errorCode).to.equal(0);
    await producer.disconnect();
    // reaches topics without an override
    const topic = await describe1(admin, ConfigResourceTypes.TOPIC, 'cfg');
    expect(topic.get('retention.ms')).to.include({ configValue: '3600000', configSource: SRC.DYNAMIC_BROKER });
    expect(topic.get('max.message.bytes')).to.include({ configValue: '2000000', configSource: SRC.DYNAMIC_BROKER });

    const refused = async (name: string, key: string, value: string) => {
      const e = await admin
        .alterConfigs({
          resources: [{ type: ConfigResourceTypes.BROKER, name, configEntries: [{ name: key, value }] }],
          validateOnly: false,
        })
        .then(
          () => undefined,
          (err: unknown) => err as { type?: string; message?: string },
        );
      return e;
    };
    const ro = await refused('0', 'num.partitions', '3');
    expect(ro?.type).to.equal('INVALID_REQUEST');
    // (kafkajs replaces the broker's message, "... Cannot update these configs dynamically: Set(num.partitions)", with its own)
    await admin.alterConfigs({
      resources: [{ type: ConfigResourceTypes.BROKER, name: '0', configEntries: [{ name: 'log.cleaner.threads', value: '2' }] }],
      validateOnly: true,
    });
    got = await describe1(admin, ConfigResourceTypes.BROKER, '0');
    expect(got.get('log.cleaner.threads')).to.include({ configValue: '1', configSource: SRC.DEFAULT });
    // validateOnly stored nothing: the per-broker set is unchanged
    expect(got.get('message.max.bytes')).to.include({ configValue: '2000000', configSource: SRC.DYNAMIC_BROKER });
  });

  it('a restart keeps the dynamic configs', async () => {
    await stop();
    await start();
    const got = await describe1(admin, ConfigResourceTypes.BROKER, '0');
    expect(got.get('log.retention.ms')).to.include({ configValue: '3600000', configSource: SRC.DYNAMIC_BROKER });
    expect(got.get('message.max.bytes')).to.include({ configValue: '2000000', configSource: SRC.DYNAMIC_BROKER });
  });
});
