/**
 * Produce's error paths at the handler, through a real in-process broker (raw Produce v8 requests, and
 * kafkajs for what a real client makes of them), as Kafka answers them:
 * - acks other than -1, 0, 1 → INVALID_REQUIRED_ACKS (21) for every partition that exists (Kafka's
 *   ReplicaManager checks acks after KafkaApis has answered unknown partitions);
 * - a partition or topic that does not exist → UNKNOWN_TOPIC_OR_PARTITION (3), even with
 *   auto.create.topics.enable (only Metadata creates topics), next to partitions that succeed;
 * - min.insync.replicas above the replicas in sync with acks=-1 → NOT_ENOUGH_REPLICAS (19) before
 *   anything is written; acks=1 and acks=0 are not held to it.
 * Every refused append leaves the log end offset where it was.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { ProduceResponse } from '../../../protocol/generated/produce.js';
import { buildRecordBatch } from '../../../protocol/records/index.js';
import { startTestBroker, type TestBroker } from '../../helpers/broker.js';
import { PRODUCE_V, RawClient, rawCreateTopics, rawListOffset } from '../../helpers/raw-client.js';
import { Cleanup } from '../../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const TOPIC = 'produce-errors';
const MISR = 'produce-errors-misr';

function batch(tag: string, n = 1): Buffer {
  const now = BigInt(Date.now());
  return buildRecordBatch(Array.from({ length: n }, (_, i) => ({ key: null, value: Buffer.from(`${tag}-${i}`), timestamp: now })));
}

type Result = [topic: string, partition: number, errorCode: number, baseOffset: bigint];

describe('Produce error paths at the handler', function () {
  this.timeout(30_000);
  let b: TestBroker;
  let c: RawClient;

  /** One Produce request with acks over `parts` ([topic, partition, records]); resolves with its per-partition results in order. */
  async function produce(acks: number, parts: [string, number, Buffer][]): Promise<Result[]> {
    const topics = [...new Set(parts.map(([t]) => t))];
    const res = await c.request<ProduceResponse>(ApiKey.Produce, PRODUCE_V, {
      transactionalId: null,
      acks,
      timeoutMs: 5000,
      topicData: topics.map((name) => ({
        name,
        partitionData: parts.filter(([t]) => t === name).map(([, index, records]) => ({ index, records })),
      })),
    });
    return res.responses.flatMap((t) => t.partitionResponses.map((p): Result => [t.name, p.index, p.errorCode, p.baseOffset]));
  }

  async function ends(topic: string, partitions: number[]): Promise<bigint[]> {
    const out: bigint[] = [];
    for (const p of partitions) out.push(await rawListOffset(c, topic, p));
    return out;
  }

  const cleanup = new Cleanup();

  before(async () => {
    // auto-creation on (the default): a Produce to a missing topic must still not create it
    b = cleanup.add(await startTestBroker({ 'auto.create.topics.enable': true }), (t) => t.stop());
    c = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    await rawCreateTopics(c, [
      { name: TOPIC, partitions: 2 },
      { name: MISR, partitions: 1, configs: { 'min.insync.replicas': '2' } },
    ]);
    expect(await produce(1, [[TOPIC, 0, batch('warm', 2)]])).to.deep.equal([[TOPIC, 0, 0, 0n]]);
  });

  after(() => cleanup.run());

  it('acks outside -1, 0, 1 → INVALID_REQUIRED_ACKS for every partition, and nothing is written', async () => {
    const before = await ends(TOPIC, [0, 1]);
    for (const acks of [2, -2, 5, 32767]) {
      expect(
        await produce(acks, [
          [TOPIC, 0, batch(`a${acks}`)],
          [TOPIC, 1, batch(`b${acks}`)],
        ]),
        `acks=${acks}`,
      ).to.deep.equal([
        [TOPIC, 0, ErrorCode.INVALID_REQUIRED_ACKS, -1n],
        [TOPIC, 1, ErrorCode.INVALID_REQUIRED_ACKS, -1n],
      ]);
    }
    expect(await ends(TOPIC, [0, 1])).to.deep.equal(before);
  });

  it('invalid acks on a partition that does not exist → UNKNOWN_TOPIC_OR_PARTITION (checked first, as Kafka)', async () => {
    expect(
      await produce(2, [
        [TOPIC, 0, batch('x')],
        [TOPIC, 9, batch('y')],
      ]),
    ).to.deep.equal([
      [TOPIC, 0, ErrorCode.INVALID_REQUIRED_ACKS, -1n],
      [TOPIC, 9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n],
    ]);
  });

  it('an unknown partition or topic → UNKNOWN_TOPIC_OR_PARTITION, while the known partition in the same request is written', async () => {
    const [end0] = await ends(TOPIC, [0]);
    const res = await produce(1, [
      [TOPIC, 2, batch('p2')],
      [TOPIC, 0, batch('p0', 3)],
      [TOPIC, -1, batch('neg')],
      ['produce-errors-no-such-topic', 0, batch('nt')],
    ]);
    expect(res).to.deep.equal([
      [TOPIC, 2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n],
      [TOPIC, 0, ErrorCode.NONE, end0],
      [TOPIC, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n],
      ['produce-errors-no-such-topic', 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n],
    ]);
    expect(await ends(TOPIC, [0])).to.deep.equal([end0! + 3n]);
    // Produce does not auto-create (Metadata does): the topic is still unknown
    const md = await c.request<{ topics: { name: string; errorCode: number }[] }>(ApiKey.Metadata, 12, {
      topics: [{ topicId: '0'.repeat(32), name: 'produce-errors-no-such-topic' }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    expect(md.topics.map((t) => [t.name, t.errorCode])).to.deep.equal([
      ['produce-errors-no-such-topic', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
    ]);
  });

  it('a successful acks=0 Produce gets no response, and the connection stays open', async () => {
    await c.send(ApiKey.Produce, PRODUCE_V, {
      transactionalId: null,
      acks: 0,
      timeoutMs: 5000,
      topicData: [{ name: TOPIC, partitionData: [{ index: 0, records: batch('zero') }] }],
    });
    const before = c.responses.length;
    // the next request's answer is the next response: nothing came for the acks=0 one
    const [end] = await ends(TOPIC, [0]);
    expect(c.responses.length).to.equal(before + 1);
    expect(await produce(1, [[TOPIC, 0, batch('after-zero')]])).to.deep.equal([[TOPIC, 0, ErrorCode.NONE, end]]);
  });

  it('a failed acks=0 Produce closes the connection, as Kafka does so that the producer notices', async () => {
    // Kafka's KafkaApis closes the connection when an acks=0 Produce has any partition error: there is
    // no response to carry it, and the producer refreshes its metadata on the disconnect.
    const other = await RawClient.connect(b.bootstrap);
    try {
      await other.send(ApiKey.Produce, PRODUCE_V, {
        transactionalId: null,
        acks: 0,
        timeoutMs: 5000,
        topicData: [{ name: TOPIC, partitionData: [{ index: 9, records: batch('lost') }] }],
      });
      expect(await other.waitClosed(5000)).to.equal(true);
    } finally {
      other.destroy();
    }
    // the partitions that did not fail are still written, as Kafka's are, before the close
    const [end1] = await ends(TOPIC, [1]);
    const third = await RawClient.connect(b.bootstrap);
    try {
      await third.send(ApiKey.Produce, PRODUCE_V, {
        transactionalId: null,
        acks: 0,
        timeoutMs: 5000,
        topicData: [
          {
            name: TOPIC,
            partitionData: [
              { index: 1, records: batch('kept', 2) },
              { index: 9, records: batch('lost') },
            ],
          },
        ],
      });
      expect(await third.waitClosed(5000)).to.equal(true);
    } finally {
      third.destroy();
    }
    expect(await ends(TOPIC, [1])).to.deep.equal([end1! + 2n]);
  });

  it('min.insync.replicas=2 on one replica with acks=-1 → NOT_ENOUGH_REPLICAS and nothing written; acks=1 and 0 are written', async () => {
    expect(await ends(MISR, [0])).to.deep.equal([0n]);
    expect(await produce(-1, [[MISR, 0, batch('all', 2)]])).to.deep.equal([[MISR, 0, ErrorCode.NOT_ENOUGH_REPLICAS, -1n]]);
    expect(await ends(MISR, [0])).to.deep.equal([0n]);
    // in the same request, a topic with the default min.insync.replicas=1 is written
    const [end0] = await ends(TOPIC, [0]);
    expect(
      await produce(-1, [
        [MISR, 0, batch('all2')],
        [TOPIC, 0, batch('ok')],
      ]),
    ).to.deep.equal([
      [MISR, 0, ErrorCode.NOT_ENOUGH_REPLICAS, -1n],
      [TOPIC, 0, ErrorCode.NONE, end0],
    ]);
    expect(await produce(1, [[MISR, 0, batch('leader', 2)]])).to.deep.equal([[MISR, 0, ErrorCode.NONE, 0n]]);
    await c.send(ApiKey.Produce, PRODUCE_V, {
      transactionalId: null,
      acks: 0,
      timeoutMs: 5000,
      topicData: [{ name: MISR, partitionData: [{ index: 0, records: batch('fire') }] }],
    });
    expect(await ends(MISR, [0])).to.deep.equal([3n]);
  });

  it('several topics of several partitions in one request: answers grouped by topic in request order, each at its own offset (acks=1 and -1)', async () => {
    const OTHER = 'produce-errors-other';
    await rawCreateTopics(c, [{ name: OTHER, partitions: 3 }]);
    for (const acks of [1, -1]) {
      const [t0, t1] = await ends(TOPIC, [0, 1]);
      const [o0, o1, o2] = await ends(OTHER, [0, 1, 2]);
      // topics interleaved in the parts list: produce() sends them grouped, TOPIC first
      const res = await produce(acks, [
        [TOPIC, 1, batch(`t1-${acks}`, 2)],
        [OTHER, 2, batch(`o2-${acks}`, 4)],
        [TOPIC, 0, batch(`t0-${acks}`, 1)],
        [OTHER, 0, batch(`o0-${acks}`, 3)],
        [OTHER, 1, batch(`o1-${acks}`, 5)],
      ]);
      expect(res, `acks=${acks}`).to.deep.equal([
        [TOPIC, 1, ErrorCode.NONE, t1],
        [TOPIC, 0, ErrorCode.NONE, t0],
        [OTHER, 2, ErrorCode.NONE, o2],
        [OTHER, 0, ErrorCode.NONE, o0],
        [OTHER, 1, ErrorCode.NONE, o1],
      ]);
      expect(await ends(TOPIC, [0, 1])).to.deep.equal([t0! + 1n, t1! + 2n]);
      expect(await ends(OTHER, [0, 1, 2])).to.deep.equal([o0! + 3n, o1! + 5n, o2! + 4n]);
    }
  });

  it('kafkajs (acks=-1) gets NOT_ENOUGH_REPLICAS from a min.insync.replicas=2 topic, and writes with acks=1', async () => {
    const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'produce-errors', logLevel: logLevel.NOTHING, retry: { retries: 0 } });
    const producer = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 0 } });
    await producer.connect();
    try {
      const before = await ends(MISR, [0]);
      let err: unknown = null;
      try {
        await producer.send({ topic: MISR, acks: -1, messages: [{ value: 'kjs', partition: 0 }] });
      } catch (e) {
        err = e;
      }
      expect(err, 'send with acks=-1 must fail').to.not.equal(null);
      // kafkajs gives up after its (zero) retries; the broker's error is the cause
      const cause = (err as { cause?: { type?: string; code?: number } }).cause;
      expect([cause?.type, cause?.code]).to.deep.equal(['NOT_ENOUGH_REPLICAS', ErrorCode.NOT_ENOUGH_REPLICAS]);
      expect(await ends(MISR, [0])).to.deep.equal(before);
      const [meta] = await producer.send({ topic: MISR, acks: 1, messages: [{ value: 'kjs-1', partition: 0 }] });
      expect([meta?.errorCode, meta?.baseOffset]).to.deep.equal([0, String(before[0])]);
    } finally {
      await producer.disconnect();
    }
  });
});
