/**
 * The log cleaner's settings changed through kafkajs's AlterConfigs while the broker runs, as Kafka's
 * LogCleaner is reconfigured (issue 16): per broker, log.cleaner.io.max.bytes.per.second frees a
 * cleaning throttled to a crawl and log.cleaner.threads adds a thread; cluster-wide (through an
 * IncrementalAlterConfigs request of our own codec: kafkajs refuses the resource name '', and
 * librdkafka 2.15 dies on it), the topic default
 * log.cleaner.min.compaction.lag.ms lets a log that was too young be cleaned. A consumer
 * then reads one record per key, and DescribeConfigs shows DYNAMIC_BROKER_CONFIG /
 * DYNAMIC_DEFAULT_BROKER_CONFIG, with no restart.
 */
import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { createCompacted, expectOnePerKey, writeDirty } from '../helpers/compacted.js';
import { sleep, until } from '../helpers/eos.js';
import { RawClient } from '../helpers/raw-client.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DescribeConfigsResponse } from '../../protocol/generated/describe-configs.js';
import type { IncrementalAlterConfigsResponse } from '../../protocol/generated/incremental-alter-configs.js';

const { Kafka, logLevel, ConfigResourceTypes } = kafkajs;
const SRC = { DYNAMIC_BROKER: 2, DYNAMIC_DEFAULT: 3, STATIC: 4 } as const;

async function describeConfig(
  admin: kafkajs.Admin,
  type: kafkajs.ConfigResourceTypes,
  name: string,
  key: string,
): Promise<{ value: string | null; source: number }> {
  const r = await admin.describeConfigs({ resources: [{ type, name, configNames: [key] }], includeSynonyms: false });
  const e = r.resources[0]?.configEntries.find((c) => c.configName === key) as
    { configValue: string | null; configSource: number } | undefined;
  return { value: e?.configValue ?? null, source: e?.configSource ?? -1 };
}

/** IncrementalAlterConfigs SET of `key` on the cluster-wide default (resource ''); then its [value, source] as DescribeConfigs of '' answers. */
async function setClusterDefault(
  bootstrap: string,
  key: string,
  value: string,
): Promise<{ errorCode: number | undefined; described: unknown[] }> {
  const raw = await RawClient.connect(bootstrap);
  try {
    const set = await raw.request<IncrementalAlterConfigsResponse>(ApiKey.IncrementalAlterConfigs, 1, {
      validateOnly: false,
      resources: [{ resourceType: ConfigResourceTypes.BROKER, resourceName: '', configs: [{ name: key, configOperation: 0, value }] }],
    });
    const d = await raw.request<DescribeConfigsResponse>(ApiKey.DescribeConfigs, 4, {
      includeSynonyms: false,
      includeDocumentation: false,
      resources: [{ resourceType: ConfigResourceTypes.BROKER, resourceName: '', configurationKeys: [key] }],
    });
    const e = d.results[0]?.configs.find((c) => c.name === key);
    return { errorCode: set.responses[0]?.errorCode, described: [e?.value, e?.configSource] };
  } finally {
    raw.destroy();
  }
}

async function alterBroker(admin: kafkajs.Admin, name: string, configs: Record<string, string>): Promise<void> {
  const configEntries = Object.entries(configs).map(([k, value]) => ({ name: k, value }));
  await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.BROKER, name, configEntries }] });
}

describe('log cleaner: dynamic settings through AlterConfigs (kafkajs)', function () {
  this.timeout(90_000);
  let b: TestBroker | null = null;
  let admin: kafkajs.Admin | null = null;
  let producer: kafkajs.Producer | null = null;
  const start = async (config: Record<string, string>): Promise<{ b: TestBroker; admin: kafkajs.Admin; producer: kafkajs.Producer }> => {
    const broker = await startTestBroker({ 'log.cleaner.backoff.ms': '200', ...config });
    b = broker;
    const kafka = new Kafka({ clientId: 'cleaner-dynamic', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    admin = kafka.admin();
    producer = kafka.producer();
    await admin.connect();
    await producer.connect();
    return { b: broker, admin, producer };
  };
  afterEach(async () => {
    await producer?.disconnect();
    await admin?.disconnect();
    await b?.stop();
    [b, admin, producer] = [null, null, null];
  });

  it('per broker: raising log.cleaner.io.max.bytes.per.second frees a throttled cleaning, log.cleaner.threads adds a thread', async () => {
    // 100 bytes/s: the cleaning of this topic (~70 KB) would take many minutes
    const s = await start({ 'log.cleaner.io.max.bytes.per.second': '100', 'log.cleaner.threads': '1' });
    const cleaner = s.b.broker.cleaner;
    if (cleaner === null) throw new Error('no cleaner');
    await createCompacted(s.admin, 'throttled');
    const [want] = await writeDirty(s.producer, 'throttled', 1);
    if (want === undefined) throw new Error('nothing written');
    // the cleaner picked the log (it found it dirty) and is cleaning it, at 100 bytes/s
    await until(() => cleaner.stats.maxDirtyPercent > 0, 30_000, 'the cleaner to pick the log');
    await sleep(500);
    expect(cleaner.stats.cleanings).to.equal(0);
    expect(await describeConfig(s.admin, ConfigResourceTypes.BROKER, '0', 'log.cleaner.io.max.bytes.per.second')).to.deep.equal({
      value: '100.0',
      source: SRC.STATIC,
    });

    await alterBroker(s.admin, '0', { 'log.cleaner.io.max.bytes.per.second': '1000000000', 'log.cleaner.threads': '2' });
    await until(() => (cleaner.firstDirtyOffset('throttled', 0) ?? 0n) >= want.end - 1n, 30_000, 'the cleaning to finish');
    await expectOnePerKey(s.b.bootstrap, 'throttled', 0, want);
    for (const [key, value] of [
      ['log.cleaner.io.max.bytes.per.second', 1e9],
      ['log.cleaner.threads', 2],
    ] as const) {
      const d = await describeConfig(s.admin, ConfigResourceTypes.BROKER, '0', key);
      expect([Number(d.value), d.source], key).to.deep.equal([value, SRC.DYNAMIC_BROKER]);
    }
    expect(cleaner.currentSettings.threads).to.equal(2);
    expect(cleaner.currentSettings.ioMaxBytesPerSecond).to.equal(1e9);
    // Kafka's bounds on a change of log.cleaner.threads: at most double, at least half, at least one
    for (const threads of ['5', '0']) {
      const refused = await alterBroker(s.admin, '0', { 'log.cleaner.threads': threads }).then(
        () => null,
        (err: unknown) => err as { type?: string },
      );
      expect(refused?.type, threads).to.equal('INVALID_REQUEST');
    }
    expect(cleaner.currentSettings.threads).to.equal(2);
    expect(await describeConfig(s.admin, ConfigResourceTypes.BROKER, '0', 'log.cleaner.threads')).to.deep.equal({
      value: '2',
      source: SRC.DYNAMIC_BROKER,
    });
  });

  it('cluster-wide: log.cleaner.min.compaction.lag.ms, a topic default, is re-resolved for the log and lets it be cleaned', async () => {
    // every record is younger than an hour: nothing may be cleaned
    const s = await start({ 'log.cleaner.min.compaction.lag.ms': '3600000' });
    const cleaner = s.b.broker.cleaner;
    if (cleaner === null) throw new Error('no cleaner');
    await createCompacted(s.admin, 'young');
    const [want] = await writeDirty(s.producer, 'young', 1);
    if (want === undefined) throw new Error('nothing written');
    expect(await describeConfig(s.admin, ConfigResourceTypes.TOPIC, 'young', 'min.compaction.lag.ms')).to.deep.equal({
      value: '3600000',
      source: SRC.STATIC,
    });
    // a few cleaner rounds (log.cleaner.backoff.ms=200) pass without a cleaning
    await sleep(1000);
    expect(cleaner.stats.cleanings).to.equal(0);
    expect(cleaner.firstDirtyOffset('young', 0)).to.equal(undefined);

    expect(await setClusterDefault(s.b.bootstrap, 'log.cleaner.min.compaction.lag.ms', '0')).to.deep.equal({
      errorCode: 0,
      described: ['0', SRC.DYNAMIC_DEFAULT],
    });
    await until(() => (cleaner.firstDirtyOffset('young', 0) ?? 0n) >= want.end - 1n, 30_000, 'the cleaning to finish');
    await expectOnePerKey(s.b.bootstrap, 'young', 0, want);
    expect(await describeConfig(s.admin, ConfigResourceTypes.TOPIC, 'young', 'min.compaction.lag.ms')).to.deep.equal({
      value: '0',
      source: SRC.DYNAMIC_DEFAULT,
    });
  });
});
