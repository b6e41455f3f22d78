/**
 * Kafka's controller refuses a CreateTopics or CreatePartitions request that would write more than
 * 10,000 metadata records (a topic record, one per partition, one per config) with POLICY_VIOLATION
 * for every topic. Found by the whole-server fuzzer: a request for 2^31-1 partitions made gregor build
 * its assignment until the process held gigabytes, answering nobody meanwhile.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import type { CreatePartitionsResponse } from '../../../protocol/generated/create-partitions.js';
import type { CreateTopicsResponse } from '../../../protocol/generated/create-topics.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { EXCESSIVE_BATCH_MESSAGE } from '../../../lib/handlers/user-op-limit.js';
import { startTestBroker, type TestBroker } from '../../helpers/broker.js';
import { Cleanup } from '../../helpers/cleanup.js';
import { RawClient, rawCreateTopics } from '../../helpers/raw-client.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

describe("CreateTopics / CreatePartitions: at most 10,000 metadata records per request (Kafka's MAX_RECORDS_PER_USER_OP)", function () {
  this.timeout(60_000);
  const cleanup = new Cleanup();
  let b: TestBroker;
  let c: RawClient;

  before(async () => {
    b = cleanup.add(await startTestBroker(), (x) => x.stop());
    c = cleanup.add(await RawClient.connect(b.bootstrap), (x) => x.destroy());
    await rawCreateTopics(c, [{ name: 'grow-me', partitions: 1 }]);
  });
  after(() => cleanup.run());

  const topic = (name: string, numPartitions: number, configs: { name: string; value: string }[] = []) => ({
    name,
    numPartitions,
    replicationFactor: -1,
    assignments: [],
    configs,
  });

  async function createTopics(topics: ReturnType<typeof topic>[], validateOnly: boolean) {
    const res = await c.request<CreateTopicsResponse>(ApiKey.CreateTopics, 5, { topics, timeoutMs: 30_000, validateOnly }, 20_000);
    return res.topics.map((t) => ({ name: t.name, errorCode: t.errorCode, errorMessage: t.errorMessage ?? null }));
  }

  async function createPartitions(name: string, count: number, validateOnly: boolean) {
    const res = await c.request<CreatePartitionsResponse>(
      ApiKey.CreatePartitions,
      1,
      { topics: [{ name, count, assignments: null }], timeoutMs: 30_000, validateOnly },
      20_000,
    );
    return res.results.map((r) => ({ errorCode: r.errorCode, errorMessage: r.errorMessage }));
  }

  const refused = { errorCode: ErrorCode.POLICY_VIOLATION, errorMessage: EXCESSIVE_BATCH_MESSAGE };

  it('a topic of 2^31-1 partitions is refused at once (was: memory grew by gigabytes, no answer)', async () => {
    expect(await createTopics([topic('huge', 0x7fffffff)], false)).to.deep.equal([{ name: 'huge', ...refused }]);
    expect(await createTopics([topic('huge', 0x7fffffff)], true)).to.deep.equal([{ name: 'huge', ...refused }]);
    // nothing was created, and the broker serves on
    const md = await c.request<{ topics: { name: string | null; errorCode: number }[] }>(ApiKey.Metadata, 9, {
      topics: [{ name: 'huge' }],
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
    });
    expect(md.topics[0]?.errorCode).to.equal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  });

  it('counts every topic, partition and config of the request: 10,000 records pass, 10,001 are refused, for every topic', async () => {
    // 1 topic record + 9,998 partitions + 1 config = 10,000
    const limit = [topic('at-limit', 9998, [{ name: 'retention.ms', value: '60000' }])];
    expect(await createTopics(limit, true)).to.deep.equal([{ name: 'at-limit', errorCode: 0, errorMessage: null }]);
    const over = [topic('a', 5000), topic('b', 4999, [{ name: 'retention.ms', value: '60000' }])]; // 5001 + 5001
    expect(await createTopics(over, true)).to.deep.equal([
      { name: 'a', ...refused },
      { name: 'b', ...refused },
    ]);
    // a topic that fails its own checks writes nothing and is not counted
    const withInvalid = [topic('ok', 9999), topic('bad', -5)];
    expect((await createTopics(withInvalid, true)).map((t) => t.errorCode)).to.deep.equal([0, ErrorCode.INVALID_PARTITIONS]);
  });

  it('CreatePartitions: one record per new partition; 2^31-1 is refused at once', async () => {
    expect(await createPartitions('grow-me', 0x7fffffff, false)).to.deep.equal([refused]);
    expect(await createPartitions('grow-me', 10_002, true)).to.deep.equal([refused]);
    expect(await createPartitions('grow-me', 10_001, true)).to.deep.equal([{ errorCode: 0, errorMessage: null }]);
  });

  it('kafkajs sees the refusal as POLICY_VIOLATION', async () => {
    const admin = new Kafka({
      brokers: [b.bootstrap],
      clientId: 'user-op-limit',
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    }).admin();
    await admin.connect();
    try {
      const err = await admin.createTopics({ topics: [{ topic: 'too-big', numPartitions: 20_000 }] }).then(
        () => null,
        (e: unknown) => e as { errors?: { type?: string }[]; type?: string },
      );
      expect(err, 'createTopics should be refused').to.not.equal(null);
      const types = [err?.type, ...(err?.errors ?? []).map((e) => e.type)];
      expect(types).to.include('POLICY_VIOLATION');
    } finally {
      await admin.disconnect();
    }
  });
});
