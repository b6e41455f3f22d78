/**
 * Admin APIs against a real broker (in-process, fresh data dir, port 0): kafkajs 2.2.4's admin client,
 * plus raw frames for the versions no client here sends (CreateTopics v7, DeleteTopics v6 by id,
 * DescribeConfigs v4, IncrementalAlterConfigs v1, DescribeCluster v1).
 */
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { type Broker, startBroker } from '../../lib/broker.js';
import { createLogger, silentLogger } from '../../lib/observability/logger.js';
import { decodeResponse, encodeRequest } from '../../protocol/frame.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { CreateTopicsResponse } from '../../protocol/generated/create-topics.js';
import type { DeleteTopicsResponse } from '../../protocol/generated/delete-topics.js';
import type { DescribeClusterResponse } from '../../protocol/generated/describe-cluster.js';
import type { DescribeConfigsResponse } from '../../protocol/generated/describe-configs.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { FetchResponse } from '../../protocol/generated/fetch.js';
import type { IncrementalAlterConfigsResponse } from '../../protocol/generated/incremental-alter-configs.js';
import type { AlterConfigsResponse } from '../../protocol/generated/alter-configs.js';
import { Cleanup } from '../helpers/cleanup.js';

const { Kafka, logLevel, ConfigResourceTypes } = kafkajs;

/** One connection speaking raw Kafka frames, one request at a time. */
export class RawClient {
  private buf = Buffer.alloc(0);
  private waiting: ((frame: Buffer) => void) | null = null;
  private correlationId = 1;
  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.pump();
    });
  }

  static connect(hostPort: string): Promise<RawClient> {
    const [host, port] = hostPort.split(':');
    return new Promise((resolve, reject) => {
      const s = net.connect(Number(port), host ?? '127.0.0.1', () => resolve(new RawClient(s)));
      s.once('error', reject);
    });
  }

  private pump(): void {
    if (this.buf.length < 4 || this.waiting === null) return;
    const size = this.buf.readInt32BE(0);
    if (this.buf.length < 4 + size) return;
    const frame = this.buf.subarray(4, 4 + size);
    this.buf = this.buf.subarray(4 + size);
    const w = this.waiting;
    this.waiting = null;
    w(frame);
  }

  async send<T>(apiKey: number, apiVersion: number, body: unknown): Promise<T> {
    const correlationId = this.correlationId++;
    const frame = new Promise<Buffer>((resolve) => {
      this.waiting = resolve;
    });
    this.socket.write(encodeRequest({ apiKey, apiVersion, correlationId, clientId: 'raw-admin-test' }, body, { sizePrefix: true }));
    this.pump();
    const res = decodeResponse(apiKey, apiVersion, await frame);
    expect(res.correlationId).to.equal(correlationId);
    return res.body as T;
  }

  close(): void {
    this.socket.destroy();
  }
}

const ZERO_UUID = '0'.repeat(32);

/** Broker logs stay quiet unless TEST_LOG names a level. */
const testLogger = () => (process.env['TEST_LOG'] !== undefined ? createLogger({ level: process.env['TEST_LOG'] }) : silentLogger());

describe('admin APIs (integration)', function () {
  let dataDir: string;
  let broker: Broker;
  let kafka: InstanceType<typeof Kafka>;
  let admin: ReturnType<InstanceType<typeof Kafka>['admin']>;

  const cleanup = new Cleanup();

  before(async function () {
    dataDir = cleanup.add(await mkdtemp(join(tmpdir(), 'gregor-admin-')), (d) => rm(d, { recursive: true, force: true }));
    // log.segment.bytes is set explicitly so that describeConfigs shows a STATIC_BROKER_CONFIG source.
    broker = cleanup.add(await startBroker({ port: 0, dataDir, logger: testLogger(), config: { 'log.segment.bytes': '1048576' } }), (b) =>
      b.stop(),
    );
    kafka = new Kafka({ clientId: 'admin-test', brokers: [broker.bootstrapServers], logLevel: logLevel.NOTHING });
    admin = cleanup.add(kafka.admin(), (a) => a.disconnect());
    await admin.connect();
  });

  after(() => cleanup.run());

  /** Runs `fn`, expecting it to fail; returns the error. */
  async function failure(
    fn: () => Promise<unknown>,
  ): Promise<{ type?: string; errors?: { type?: string }[]; partitions?: { error: { type?: string } }[] }> {
    try {
      await fn();
    } catch (e) {
      return e as never;
    }
    throw new Error('expected a failure');
  }

  describe('with kafkajs', function () {
    it('creates topics, and refuses an existing one', async function () {
      expect(await admin.createTopics({ topics: [{ topic: 'kj-created', numPartitions: 3 }] })).to.equal(true);
      const md = await admin.fetchTopicMetadata({ topics: ['kj-created'] });
      expect(md.topics[0]?.partitions).to.have.length(3);
      // kafkajs answers false when every error is TOPIC_ALREADY_EXISTS.
      expect(await admin.createTopics({ topics: [{ topic: 'kj-created', numPartitions: 1 }] })).to.equal(false);
    });

    it('reports INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR and INVALID_CONFIG per topic', async function () {
      let e = await failure(() => admin.createTopics({ topics: [{ topic: 'kj-zero', numPartitions: 0 }] }));
      expect(e.errors?.[0]?.type).to.equal('INVALID_PARTITIONS');
      e = await failure(() => admin.createTopics({ topics: [{ topic: 'kj-rf3', numPartitions: 1, replicationFactor: 3 }] }));
      expect(e.errors?.[0]?.type).to.equal('INVALID_REPLICATION_FACTOR');
      e = await failure(() =>
        admin.createTopics({ topics: [{ topic: 'kj-badcfg', configEntries: [{ name: 'retention.ms', value: 'soon' }] }] }),
      );
      expect(e.errors?.[0]?.type).to.equal('INVALID_CONFIG');
      e = await failure(() =>
        admin.createTopics({ topics: [{ topic: 'kj-unknowncfg', configEntries: [{ name: 'no.such.key', value: '1' }] }] }),
      );
      expect(e.errors?.[0]?.type).to.equal('INVALID_CONFIG');
      const topics = await admin.listTopics();
      for (const t of ['kj-zero', 'kj-rf3', 'kj-badcfg', 'kj-unknowncfg']) expect(topics).to.not.include(t);
    });

    it('validateOnly creates nothing', async function () {
      expect(
        await admin.createTopics({ validateOnly: true, waitForLeaders: false, topics: [{ topic: 'kj-validate', numPartitions: 2 }] }),
      ).to.equal(true);
      expect(await admin.listTopics()).to.not.include('kj-validate');
      const e = await failure(() =>
        admin.createTopics({ validateOnly: true, waitForLeaders: false, topics: [{ topic: 'kj-validate', numPartitions: 0 }] }),
      );
      expect(e.errors?.[0]?.type).to.equal('INVALID_PARTITIONS');
    });

    it('deletes topics, and reports unknown ones', async function () {
      await admin.createTopics({ topics: [{ topic: 'kj-doomed' }] });
      await admin.deleteTopics({ topics: ['kj-doomed'] });
      expect(await admin.listTopics()).to.not.include('kj-doomed');
      // kafkajs retries UNKNOWN_TOPIC_OR_PARTITION; with no retries the cause shows at once.
      const impatient = kafka.admin({ retry: { retries: 0 } });
      await impatient.connect();
      try {
        const e = (await failure(() => impatient.deleteTopics({ topics: ['kj-never-existed'] }))) as {
          type?: string;
          cause?: { type?: string };
        };
        expect(e.cause?.type ?? e.type).to.equal('UNKNOWN_TOPIC_OR_PARTITION');
      } finally {
        await impatient.disconnect();
      }
    });

    it('grows partitions and refuses to shrink', async function () {
      await admin.createTopics({ topics: [{ topic: 'kj-grow', numPartitions: 1 }] });
      await admin.createPartitions({ topicPartitions: [{ topic: 'kj-grow', count: 4 }] });
      const md = await admin.fetchTopicMetadata({ topics: ['kj-grow'] });
      expect(md.topics[0]?.partitions.map((p) => p.partitionId).sort()).to.deep.equal([0, 1, 2, 3]);
      const e = await failure(() => admin.createPartitions({ topicPartitions: [{ topic: 'kj-grow', count: 2 }] }));
      expect(e.type).to.equal('INVALID_PARTITIONS');
      const same = await failure(() => admin.createPartitions({ topicPartitions: [{ topic: 'kj-grow', count: 4 }] }));
      expect(same.type).to.equal('INVALID_PARTITIONS');
      // The new partitions take data.
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: 'kj-grow', messages: [{ value: 'p3', partition: 3 }] });
      await producer.disconnect();
      const offsets = await admin.fetchTopicOffsets('kj-grow');
      expect(offsets.find((o) => o.partition === 3)?.high).to.equal('1');
    });

    it('describes topic and broker configs with their sources', async function () {
      await admin.createTopics({ topics: [{ topic: 'kj-described', configEntries: [{ name: 'retention.ms', value: '3600000' }] }] });
      const { resources } = await admin.describeConfigs({
        includeSynonyms: true,
        resources: [
          { type: ConfigResourceTypes.TOPIC, name: 'kj-described' },
          { type: ConfigResourceTypes.BROKER, name: '0', configNames: ['log.segment.bytes', 'num.partitions'] },
        ],
      });
      const topic = resources.find((r) => r.resourceType === ConfigResourceTypes.TOPIC);
      const entry = (name: string) => topic?.configEntries.find((c) => c.configName === name);
      expect(topic?.errorCode).to.equal(0);
      expect(entry('retention.ms')).to.include({ configValue: '3600000', configSource: 1, isDefault: false });
      expect(entry('segment.bytes')).to.include({ configValue: '1048576', configSource: 4 });
      expect(entry('segment.bytes')?.configSynonyms.map((s) => `${s.configSource}:${s.configName}=${s.configValue}`)).to.deep.equal([
        '4:log.segment.bytes=1048576',
        '5:log.segment.bytes=1073741824',
      ]);
      expect(entry('cleanup.policy')).to.include({ configValue: 'delete', configSource: 5, isDefault: true });
      const brokerRes = resources.find((r) => r.resourceType === ConfigResourceTypes.BROKER);
      expect(brokerRes?.configEntries.map((c) => [c.configName, c.configValue, c.configSource])).to.deep.equal([
        ['log.segment.bytes', '1048576', 4],
        ['num.partitions', '1', 5],
      ]);
    });

    it('reports an unknown topic in describeConfigs', async function () {
      const e = await failure(() =>
        admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kj-nope' }] }),
      );
      expect(e.type).to.equal('UNKNOWN_TOPIC_OR_PARTITION');
    });

    it('alterConfigs replaces the overrides, and describe shows the new values', async function () {
      await admin.createTopics({ topics: [{ topic: 'kj-altered', configEntries: [{ name: 'retention.ms', value: '1000' }] }] });
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kj-altered', configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }],
      });
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kj-altered', configNames: ['cleanup.policy', 'retention.ms'] }],
      });
      const byName = new Map(resources[0]?.configEntries.map((c) => [c.configName, c]));
      expect(byName.get('cleanup.policy')).to.include({ configValue: 'compact', configSource: 1 });
      // retention.ms was not named, so it went back to the broker default (7 days).
      expect(byName.get('retention.ms')).to.include({ configValue: '604800000', configSource: 5 });
      await admin.alterConfigs({
        validateOnly: true,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kj-altered', configEntries: [{ name: 'cleanup.policy', value: 'delete' }] }],
      });
      const again = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kj-altered', configNames: ['cleanup.policy'] }],
      });
      expect(again.resources[0]?.configEntries[0]?.configValue).to.equal('compact');
      const bad = await failure(() =>
        admin.alterConfigs({
          validateOnly: false,
          resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kj-altered', configEntries: [{ name: 'segment.bytes', value: 'big' }] }],
        }),
      );
      expect(bad.type).to.equal('INVALID_CONFIG');
      const brokerAlter = await failure(() =>
        admin.alterConfigs({
          validateOnly: false,
          resources: [{ type: ConfigResourceTypes.BROKER, name: '0', configEntries: [{ name: 'num.partitions', value: '3' }] }],
        }),
      );
      expect(brokerAlter.type).to.equal('INVALID_REQUEST');
    });

    it('deleteTopicRecords moves the low watermark; later records stay readable', async function () {
      await admin.createTopics({ topics: [{ topic: 'kj-records', numPartitions: 1 }] });
      const producer = kafka.producer();
      await producer.connect();
      for (let i = 0; i < 10; i++) await producer.send({ topic: 'kj-records', messages: [{ value: `m${i}` }] });
      await producer.disconnect();
      // kafkajs looks the leader up in metadata it already holds; fetchTopicOffsets loads the topic's.
      expect(await admin.fetchTopicOffsets('kj-records')).to.deep.equal([{ partition: 0, offset: '10', high: '10', low: '0' }]);
      await admin.deleteTopicRecords({ topic: 'kj-records', partitions: [{ partition: 0, offset: '4' }] });
      expect(await admin.fetchTopicOffsets('kj-records')).to.deep.equal([{ partition: 0, offset: '10', high: '10', low: '4' }]);

      const raw = await RawClient.connect(broker.bootstrapServers);
      try {
        const fetchAt = (offset: bigint) =>
          raw.send<FetchResponse>(ApiKey.Fetch, 5, {
            replicaId: -1,
            maxWaitMs: 0,
            minBytes: 0,
            maxBytes: 1 << 20,
            isolationLevel: 0,
            topics: [
              { topic: 'kj-records', partitions: [{ partition: 0, fetchOffset: offset, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }] },
            ],
          });
        const ok = (await fetchAt(4n)).responses[0]?.partitions[0];
        expect(ok?.errorCode).to.equal(ErrorCode.NONE);
        expect(ok?.logStartOffset).to.equal(4n);
        expect(ok?.records?.readBigInt64BE(0)).to.equal(4n); // first batch's base offset
        const gone = (await fetchAt(2n)).responses[0]?.partitions[0];
        expect(gone?.errorCode).to.equal(ErrorCode.OFFSET_OUT_OF_RANGE);
      } finally {
        raw.close();
      }

      // -1 means "up to the high watermark"; beyond it is out of range.
      await admin.deleteTopicRecords({ topic: 'kj-records', partitions: [{ partition: 0, offset: '-1' }] });
      expect((await admin.fetchTopicOffsets('kj-records'))[0]?.low).to.equal('10');
      // kafkajs wraps the per-partition error (non-retriable) in its retrier's error.
      const e = (await failure(() => admin.deleteTopicRecords({ topic: 'kj-records', partitions: [{ partition: 0, offset: '50' }] }))) as {
        cause?: { partitions?: { error: { type?: string } }[] };
      };
      expect(e.cause?.partitions?.[0]?.error.type).to.equal('OFFSET_OUT_OF_RANGE');
    });
  });

  describe('wire level (versions no client here sends)', function () {
    let raw: RawClient;
    const rawCleanup = new Cleanup();
    before(async function () {
      raw = rawCleanup.add(await RawClient.connect(broker.bootstrapServers), (r) => r.close());
    });
    after(() => rawCleanup.run());

    it('CreateTopics v7 returns the topic id, counts and configs; duplicates are INVALID_REQUEST', async function () {
      const res = await raw.send<CreateTopicsResponse>(ApiKey.CreateTopics, 7, {
        timeoutMs: 5000,
        validateOnly: false,
        topics: [
          {
            name: 'raw-v7',
            numPartitions: 2,
            replicationFactor: -1,
            assignments: [],
            configs: [{ name: 'cleanup.policy', value: 'compact' }],
          },
          { name: 'raw-dup', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] },
          { name: 'raw-dup', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] },
          {
            name: 'raw-nullcfg',
            numPartitions: 1,
            replicationFactor: 1,
            assignments: [],
            configs: [{ name: 'retention.ms', value: null }],
          },
        ],
      });
      const [created, nullCfg, dup] = res.topics;
      expect(created).to.include({ name: 'raw-v7', errorCode: 0, numPartitions: 2, replicationFactor: 1 });
      expect(created?.topicId)
        .to.match(/^[0-9a-f]{32}$/)
        .and.not.equal(ZERO_UUID);
      expect(created?.configs?.find((c) => c.name === 'cleanup.policy')).to.include({
        value: 'compact',
        configSource: 1,
        readOnly: false,
        isSensitive: false,
      });
      expect(created?.configs?.find((c) => c.name === 'segment.bytes')).to.include({ value: '1048576', configSource: 4 });
      expect(nullCfg).to.include({ name: 'raw-nullcfg', errorCode: ErrorCode.INVALID_CONFIG });
      expect(dup).to.include({ name: 'raw-dup', errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Duplicate topic name.' });
      const again = await raw.send<CreateTopicsResponse>(ApiKey.CreateTopics, 0, {
        timeoutMs: 5000,
        topics: [{ name: 'raw-v7', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      });
      expect(again.topics[0]).to.include({ name: 'raw-v7', errorCode: ErrorCode.TOPIC_ALREADY_EXISTS });
    });

    it('DeleteTopics v6 deletes by id and reports UNKNOWN_TOPIC_ID', async function () {
      const created = await raw.send<CreateTopicsResponse>(ApiKey.CreateTopics, 7, {
        timeoutMs: 5000,
        validateOnly: false,
        topics: [{ name: 'raw-by-id', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      });
      const id = created.topics[0]?.topicId ?? '';
      const missing = 'f'.repeat(32);
      const res = await raw.send<DeleteTopicsResponse>(ApiKey.DeleteTopics, 6, {
        timeoutMs: 5000,
        topics: [
          { name: null, topicId: id },
          { name: null, topicId: missing },
        ],
      });
      expect(res.responses[0]).to.include({ name: 'raw-by-id', topicId: id, errorCode: 0 });
      expect(res.responses[1]).to.include({ name: null, topicId: missing, errorCode: ErrorCode.UNKNOWN_TOPIC_ID });
      const byName = await raw.send<DeleteTopicsResponse>(ApiKey.DeleteTopics, 5, { timeoutMs: 5000, topicNames: ['raw-by-id'] });
      expect(byName.responses[0]).to.include({ name: 'raw-by-id', errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION });
    });

    it('DescribeConfigs v4 gives types, synonyms and documentation; v0 gives isDefault', async function () {
      const res = await raw.send<DescribeConfigsResponse>(ApiKey.DescribeConfigs, 4, {
        includeSynonyms: true,
        includeDocumentation: true,
        resources: [
          { resourceType: 2, resourceName: 'raw-v7', configurationKeys: ['cleanup.policy', 'retention.ms', 'min.cleanable.dirty.ratio'] },
          { resourceType: 4, resourceName: '7', configurationKeys: null },
          { resourceType: 3, resourceName: 'some-group', configurationKeys: null },
        ],
      });
      const [topic, otherBroker, group] = res.results;
      const entry = (n: string) => topic?.configs.find((c) => c.name === n);
      expect(entry('cleanup.policy')).to.deep.include({
        value: 'compact',
        configSource: 1,
        configType: 7,
        documentation: 'delete (retention), compact (latest value per key), or both.',
      });
      expect(entry('cleanup.policy')?.synonyms?.map((s) => s.source)).to.deep.equal([1, 5]);
      expect(entry('retention.ms')).to.deep.include({ value: '604800000', configSource: 5, configType: 5, synonyms: [] });
      expect(entry('min.cleanable.dirty.ratio')).to.include({ value: '0.5', configType: 6 });
      expect(otherBroker?.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
      expect(group?.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
      const v0 = await raw.send<DescribeConfigsResponse>(ApiKey.DescribeConfigs, 0, {
        resources: [{ resourceType: 2, resourceName: 'raw-v7', configurationKeys: ['cleanup.policy', 'segment.ms'] }],
      });
      expect(v0.results[0]?.configs.map((c) => [c.name, c.isDefault])).to.deep.equal([
        ['cleanup.policy', false],
        ['segment.ms', true],
      ]);
    });

    it('IncrementalAlterConfigs v1: SET, DELETE, APPEND and SUBTRACT', async function () {
      const alter = (configs: { name: string; configOperation: number; value: string | null }[], validateOnly = false) =>
        raw.send<IncrementalAlterConfigsResponse>(ApiKey.IncrementalAlterConfigs, 1, {
          validateOnly,
          resources: [{ resourceType: 2, resourceName: 'raw-v7', configs }],
        });
      const describe = async () => {
        const r = await raw.send<DescribeConfigsResponse>(ApiKey.DescribeConfigs, 1, {
          includeSynonyms: false,
          resources: [
            { resourceType: 2, resourceName: 'raw-v7', configurationKeys: ['cleanup.policy', 'retention.ms', 'max.message.bytes'] },
          ],
        });
        return Object.fromEntries(r.results[0]?.configs.map((c) => [c.name, `${c.value}@${c.configSource}`]) ?? []);
      };
      expect(
        (
          await alter([
            { name: 'cleanup.policy', configOperation: 2, value: 'delete' },
            { name: 'retention.ms', configOperation: 0, value: '5000' },
          ])
        ).responses[0]?.errorCode,
      ).to.equal(0);
      expect(await describe()).to.deep.include({ 'cleanup.policy': 'compact,delete@1', 'retention.ms': '5000@1' });
      expect(
        (
          await alter([
            { name: 'cleanup.policy', configOperation: 3, value: 'compact' },
            { name: 'retention.ms', configOperation: 1, value: null },
          ])
        ).responses[0]?.errorCode,
      ).to.equal(0);
      expect(await describe()).to.deep.include({ 'cleanup.policy': 'delete@1', 'retention.ms': '604800000@5' });
      const notList = await alter([{ name: 'max.message.bytes', configOperation: 2, value: '5' }]);
      expect(notList.responses[0]).to.include({
        errorCode: ErrorCode.INVALID_CONFIG,
        errorMessage: "Can't APPEND to key max.message.bytes because its type is not LIST.",
      });
      const dupKeys = await alter([
        { name: 'retention.ms', configOperation: 0, value: '1' },
        { name: 'retention.ms', configOperation: 1, value: null },
      ]);
      expect(dupKeys.responses[0]?.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
      expect((await alter([{ name: 'retention.ms', configOperation: 0, value: '7' }], true)).responses[0]?.errorCode).to.equal(0);
      expect((await describe())['retention.ms']).to.equal('604800000@5');
      const broker0 = await raw.send<IncrementalAlterConfigsResponse>(ApiKey.IncrementalAlterConfigs, 0, {
        validateOnly: false,
        resources: [{ resourceType: 4, resourceName: '0', configs: [{ name: 'num.partitions', configOperation: 0, value: '2' }] }],
      });
      expect(broker0.responses[0]?.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
    });

    it('AlterConfigs v2 answers per resource, unknown topics included', async function () {
      const res = await raw.send<AlterConfigsResponse>(ApiKey.AlterConfigs, 2, {
        validateOnly: false,
        resources: [
          { resourceType: 2, resourceName: 'raw-missing', configs: [] },
          { resourceType: 2, resourceName: 'raw-v7', configs: [{ name: 'retention.ms', value: null }] },
        ],
      });
      expect(res.responses.map((r) => r.errorCode)).to.deep.equal([ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_CONFIG]);
    });

    it('DescribeCluster v1 lists this broker as the cluster', async function () {
      const res = await raw.send<DescribeClusterResponse>(ApiKey.DescribeCluster, 1, {
        includeClusterAuthorizedOperations: true,
        endpointType: 1,
      });
      expect(res).to.include({ errorCode: 0, controllerId: 0, endpointType: 1 });
      expect(res.clusterId).to.be.a('string').with.length.greaterThan(0);
      expect(res.brokers).to.deep.equal([{ brokerId: 0, host: '127.0.0.1', port: broker.port, rack: null }]);
      expect(res.clusterAuthorizedOperations).to.be.greaterThan(0);
      const controller = await raw.send<DescribeClusterResponse>(ApiKey.DescribeCluster, 1, {
        includeClusterAuthorizedOperations: false,
        endpointType: 2,
      });
      expect(controller.errorCode).to.equal(ErrorCode.UNSUPPORTED_ENDPOINT_TYPE);
    });
  });
});
