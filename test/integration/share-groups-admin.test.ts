/**
 * Share-group configs and offset admin (KIP-932 with Kafka 4.x's GROUP config resources) against a
 * real gregor, with librdkafka 2.15 share consumers (test/helpers/native/rdkafka-share.c) as members.
 * librdkafka 2.15 has no admin call for share-group offsets, and its config resource type GROUP is the
 * ACL number (3) rather than the config one (32), so the admin side speaks raw frames:
 * - IncrementalAlterConfigs on GROUP `share.auto.offset.reset=earliest` → a new share group reads the
 *   records produced before it existed; without it a group starts at the log end;
 * - group configs are validated within the broker's group.share.* bounds and survive a restart;
 * - AlterShareGroupOffsets moves where members start (refused with NON_EMPTY_GROUP while a member is
 *   in), DescribeShareGroupOffsets reports start offset and lag, DeleteShareGroupOffsets forgets the
 *   state so the group starts again from share.auto.offset.reset.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { until } from '../helpers/eos.js';
import { RawClient } from '../helpers/raw-client.js';
import type { DescribedOffsets, OffsetsChange } from '../helpers/share-admin.js';
import { librdkafkaMissing, ShareConsumer, shareMembersJoined } from '../helpers/share-consumer.js';
import { makeTempDir } from '../helpers/temp-dirs.js';
import type { ShareService } from '../../lib/share/index.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const GROUP = 32;
const SET = 0;
const DELETE = 1;

interface AlterResult {
  errorCode: number;
  errorMessage: string | null;
  resourceName: string;
}
interface DescribedConfig {
  name: string;
  value: string | null;
  configSource: number;
}

describe('share groups: group configs and offset admin (raw admin frames, librdkafka 2.15 share consumers)', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  const dataDir = makeTempDir('gregor-share-admin-');
  let b: TestBroker;
  let raw: RawClient;
  let producer: import('kafkajs').Producer;
  const consumers: ShareConsumer[] = [];
  const share = () => (b.broker as unknown as { services: { share: ShareService } }).services.share;
  const BROKER_CONFIG = { 'group.share.min.record.lock.duration.ms': 1000, 'group.share.record.lock.duration.ms': 5000 };

  async function start(): Promise<void> {
    b = await startTestBroker(BROKER_CONFIG, { dataDir, keepData: true });
    raw = await RawClient.connect(b.bootstrap);
    const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'share-admin-test', logLevel: logLevel.NOTHING });
    producer = kafka.producer();
    await producer.connect();
  }
  async function stop(): Promise<void> {
    raw.destroy();
    await producer.disconnect();
    await b.stop();
  }

  before(async () => {
    const missing = librdkafkaMissing();
    if (missing !== null) throw new Error(missing);
    await start();
    const admin = new Kafka({ brokers: [b.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: ['early', 'reset'].map((topic) => ({ topic, numPartitions: 1 })) });
    await admin.disconnect();
    cleanup.add(null, () => stop());
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.kill()));
  });
  after(() => cleanup.run());

  function consumer(group: string, topic: string): ShareConsumer {
    const c = new ShareConsumer(b.bootstrap, group, topic);
    consumers.push(c);
    return c;
  }
  const joined = (group: string, n: number): Promise<void> => shareMembersJoined(share, group, n);
  async function produce(topic: string, n: number, from = 0): Promise<void> {
    await producer.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ value: `v${from + i}` })) });
  }

  async function alterGroupConfigs(group: string, ops: { name: string; op: number; value: string | null }[]): Promise<AlterResult> {
    const res = await raw.request<{ responses: AlterResult[] }>(ApiKey.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: GROUP,
          resourceName: group,
          configs: ops.map((o) => ({ name: o.name, configOperation: o.op, value: o.value })),
        },
      ],
      validateOnly: false,
    });
    return res.responses[0]!;
  }
  async function describeGroupConfigs(group: string): Promise<Map<string, DescribedConfig>> {
    const res = await raw.request<{ results: { errorCode: number; configs: DescribedConfig[] }[] }>(ApiKey.DescribeConfigs, 4, {
      resources: [{ resourceType: GROUP, resourceName: group, configurationKeys: null }],
      includeSynonyms: false,
      includeDocumentation: false,
    });
    expect(res.results[0]?.errorCode).to.equal(ErrorCode.NONE);
    return new Map((res.results[0]?.configs ?? []).map((c) => [c.name, c]));
  }
  const describeOffsets = (group: string, topics: { topicName: string; partitions: number[] }[] | null) =>
    raw.request<DescribedOffsets>(ApiKey.DescribeShareGroupOffsets, 1, { groups: [{ groupId: group, topics }] });
  const alterOffsets = (group: string, topic: string, startOffset: bigint) =>
    raw.request<OffsetsChange>(ApiKey.AlterShareGroupOffsets, 0, {
      groupId: group,
      topics: [{ topicName: topic, partitions: [{ partitionIndex: 0, startOffset }] }],
    });
  const deleteOffsets = (group: string, topic: string) =>
    raw.request<OffsetsChange>(ApiKey.DeleteShareGroupOffsets, 0, { groupId: group, topics: [{ topicName: topic }] });

  it('share.auto.offset.reset=earliest set by IncrementalAlterConfigs on GROUP: a new share group reads from the start', async () => {
    await produce('early', 20);
    expect(await alterGroupConfigs('g-earliest', [{ name: 'share.auto.offset.reset', op: SET, value: 'earliest' }])).to.include({
      errorCode: ErrorCode.NONE,
    });
    const described = await describeGroupConfigs('g-earliest');
    expect(described.get('share.auto.offset.reset')).to.include({ value: 'earliest', configSource: 8 });
    expect(described.get('share.record.lock.duration.ms')).to.include({ value: '5000', configSource: 5 });

    const early = consumer('g-earliest', 'early');
    const late = consumer('g-latest', 'early');
    await joined('g-earliest', 1);
    await joined('g-latest', 1);
    await produce('early', 5, 20);
    await until(
      () => early.deliveries.length >= 25 && late.deliveries.length >= 5,
      60_000,
      () => `early ${early.deliveries.length}/25, latest ${late.deliveries.length}/5`,
    );
    expect(early.deliveries.map((d) => d.offset)).to.deep.equal(Array.from({ length: 25 }, (_, i) => i));
    // the default (latest): only what came after the group's share partition was initialised
    expect(late.deliveries.map((d) => d.offset)).to.deep.equal([20, 21, 22, 23, 24]);
  });

  it('group configs are checked against the broker bounds and Kafka rules, and survive a restart', async () => {
    const refused = async (name: string, value: string): Promise<string> => {
      const r = await alterGroupConfigs('g-bounds', [{ name, op: SET, value }]);
      expect(r.errorCode, `${name}=${value}`).to.equal(ErrorCode.INVALID_CONFIG);
      return r.errorMessage ?? '';
    };
    expect(await refused('share.record.lock.duration.ms', '120000')).to.contain('group.share.max.record.lock.duration.ms');
    expect(await refused('share.session.timeout.ms', '1000')).to.contain('group.share.min.session.timeout.ms');
    expect(await refused('share.auto.offset.reset', 'sometimes')).to.contain('share.auto.offset.reset');
    expect(await refused('no.such.key', '1')).to.contain('Unknown group config name');
    const blank = await alterGroupConfigs('', [{ name: 'share.auto.offset.reset', op: SET, value: 'earliest' }]);
    expect(blank.errorCode).to.equal(ErrorCode.INVALID_REQUEST);

    expect(
      await alterGroupConfigs('g-bounds', [
        { name: 'share.auto.offset.reset', op: SET, value: 'by_duration:PT1H' },
        { name: 'share.record.lock.duration.ms', op: SET, value: '2000' },
      ]),
    ).to.include({ errorCode: ErrorCode.NONE });
    expect(await alterGroupConfigs('g-bounds', [{ name: 'share.record.lock.duration.ms', op: DELETE, value: null }])).to.include({
      errorCode: ErrorCode.NONE,
    });
    await stop();
    await start();
    const after = await describeGroupConfigs('g-bounds');
    expect(after.get('share.auto.offset.reset')).to.include({ value: 'by_duration:PT1H', configSource: 8 });
    expect(after.get('share.record.lock.duration.ms')).to.include({ value: '5000', configSource: 5 });
  });

  it('AlterShareGroupOffsets moves where members start (only while the group is empty); Describe and Delete', async () => {
    const first = consumer('g-reset', 'reset');
    await joined('g-reset', 1);
    await produce('reset', 30);
    await until(
      () => first.deliveries.length >= 30,
      60_000,
      () => `${first.deliveries.length}/30 deliveries`,
    );
    expect(first.deliveries.map((d) => d.offset)).to.deep.equal(Array.from({ length: 30 }, (_, i) => i));
    // a member is in: the offsets stay
    const busy = await alterOffsets('g-reset', 'reset', 10n);
    expect(busy.errorCode).to.equal(ErrorCode.NON_EMPTY_GROUP);
    await until(
      () => share().partitions.get('g-reset', share().metadata.topic('reset')!.topicId, 0)?.startOffset === 30n,
      30_000,
      'all 30 accepted',
    );
    await first.close();
    consumers.splice(consumers.indexOf(first), 1);
    await until(() => share().coordinator.groups.get('g-reset')?.members.size === 0, 30_000, 'g-reset empty');

    const before = await describeOffsets('g-reset', null);
    expect(before.groups[0]?.topics[0]?.partitions[0]).to.include({ partitionIndex: 0, startOffset: 30n, lag: 0n, errorCode: 0 });

    const moved = await alterOffsets('g-reset', 'reset', 10n);
    expect(moved.errorCode).to.equal(ErrorCode.NONE);
    expect(moved.responses[0]?.partitions?.[0]).to.include({ partitionIndex: 0, errorCode: ErrorCode.NONE });
    const unknownTopic = await alterOffsets('g-reset', 'no-such-topic', 0n);
    expect(unknownTopic.responses[0]?.partitions?.[0]?.errorCode).to.equal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    const after = await describeOffsets('g-reset', [{ topicName: 'reset', partitions: [0] }]);
    expect(after.groups[0]?.topics[0]?.partitions[0]).to.include({ startOffset: 10n, lag: 20n });

    const again = consumer('g-reset', 'reset');
    await until(
      () => again.deliveries.length >= 20,
      60_000,
      () => `${again.deliveries.length}/20 redeliveries`,
    );
    expect(again.deliveries.map((d) => d.offset)).to.deep.equal(Array.from({ length: 20 }, (_, i) => 10 + i));
    await again.close();
    consumers.splice(consumers.indexOf(again), 1);
    await until(() => share().coordinator.groups.get('g-reset')?.members.size === 0, 30_000, 'g-reset empty again');

    const deleted = await deleteOffsets('g-reset', 'reset');
    expect(deleted.errorCode).to.equal(ErrorCode.NONE);
    expect(deleted.responses[0]).to.include({ topicName: 'reset', errorCode: ErrorCode.NONE });
    const gone = await describeOffsets('g-reset', [{ topicName: 'reset', partitions: [0] }]);
    expect(gone.groups[0]?.topics[0]?.partitions[0]).to.include({ startOffset: -1n });

    const classic = await describeOffsets('never-seen', null);
    expect(classic.groups[0]?.errorCode).to.equal(ErrorCode.GROUP_ID_NOT_FOUND);
  });
});
