/**
 * Deleting and re-creating a topic while producers write to it without pause. A raw producer
 * (Produce v8, acks=1, one record per request, each awaited: the broker handles one connection's
 * requests in order, so its acknowledgements fall into "old topic", "no topic", "new topic" in that
 * order) writes to partition 0; kafkajs (acks=-1, retrying) writes to partition 1; a third producer
 * writes to a bystander topic. The topic is deleted, left absent for a while, and created again.
 * Asserted, as Kafka behaves:
 * - while the topic is absent the raw producer gets UNKNOWN_TOPIC_OR_PARTITION, and kafkajs logs it and
 *   retries; once it is back both write again;
 * - the new topic has a new topic id, both partitions start at offset 0, and the acknowledgements
 *   after re-creation count from offset 0;
 * - the new topic holds exactly what was acknowledged into it, and no record written to the old one;
 * - the bystander topic never sees an error, and the broker keeps serving afterwards.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { inspect } from 'node:util';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { MetadataResponse } from '../../protocol/generated/metadata.js';
import type { ProduceResponse } from '../../protocol/generated/produce.js';
import { buildRecordBatch, decodeRecords } from '../../protocol/records/index.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { PRODUCE_V, RawClient, rawCreateTopics, rawFetch, rawListOffset } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const TOPIC = 'recreate-under-load';
const BYSTANDER = 'recreate-bystander';
const ZERO_ID = '0'.repeat(32);
/** how long the topic stays deleted before it is created again */
const GAP_MS = 500;

interface Ack {
  value: string;
  errorCode: number;
  baseOffset: bigint;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A raw producer writing one record per request to `topic`/`partition` until stopped; every answer is kept. */
function rawProducerLoop(c: RawClient, topic: string, partition: number, tag: string): { acks: Ack[]; stop: () => Promise<void> } {
  const acks: Ack[] = [];
  let running = true;
  // a named function, not an IIFE (TypeScript would follow an IIFE inline and take `running` for always true)
  const loop = async () => {
    for (let seq = 0; running; seq++) {
      const value = `${tag}-${seq}`;
      const res = await c.request<ProduceResponse>(ApiKey.Produce, PRODUCE_V, {
        transactionalId: null,
        acks: 1,
        timeoutMs: 10_000,
        topicData: [
          {
            name: topic,
            partitionData: [
              { index: partition, records: buildRecordBatch([{ key: null, value: Buffer.from(value), timestamp: BigInt(Date.now()) }]) },
            ],
          },
        ],
      });
      const p = res.responses[0]?.partitionResponses[0];
      if (p === undefined) throw new Error('empty produce response');
      acks.push({ value, errorCode: p.errorCode, baseOffset: p.baseOffset });
      if (p.errorCode !== 0) await sleep(2); // as a client backs off on an error
    }
  };
  const done = loop();
  return {
    acks,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** Values stored in a partition from offset 0 to its high watermark, with their offsets. */
async function readAll(c: RawClient, topic: string, partition: number): Promise<[bigint, string][]> {
  const end = await rawListOffset(c, topic, partition);
  const out: [bigint, string][] = [];
  let offset = 0n;
  while (offset < end) {
    const p = await rawFetch(c, topic, partition, offset, { maxBytes: 1 << 20 });
    expect(p.errorCode, `fetch ${topic}-${partition}@${offset}`).to.equal(0);
    const recs = decodeRecords(p.records ?? Buffer.alloc(0), { maxOutput: 1 << 24 }).records.filter((r) => r.offset >= offset);
    if (recs.length === 0) throw new Error(`no progress reading ${topic}-${partition} at ${offset} (end ${end})`);
    for (const r of recs) out.push([r.offset, r.value?.toString() ?? '']);
    offset = recs[recs.length - 1]!.offset + 1n;
  }
  return out;
}

async function topicId(c: RawClient, topic: string): Promise<string> {
  const md = await c.request<MetadataResponse>(ApiKey.Metadata, 12, {
    topics: [{ topicId: ZERO_ID, name: topic }],
    allowAutoTopicCreation: false,
    includeTopicAuthorizedOperations: false,
  });
  const t = md.topics[0];
  expect(t?.errorCode, `Metadata ${topic}`).to.equal(0);
  return t!.topicId ?? ZERO_ID;
}

/** Splits sequential acknowledgements into [before the first error, errors, after the last error]; the errors must be one run. */
function phases(acks: Ack[]): { old: Ack[]; gap: Ack[]; fresh: Ack[] } {
  const first = acks.findIndex((a) => a.errorCode !== 0);
  const last = acks.length - 1 - [...acks].reverse().findIndex((a) => a.errorCode !== 0);
  expect(first, 'the producer saw the topic missing').to.be.at.least(0);
  const gap = acks.slice(first, last + 1);
  expect(
    gap.filter((a) => a.errorCode === 0),
    'no write succeeds while the topic is absent',
  ).to.deep.equal([]);
  return { old: acks.slice(0, first), gap, fresh: acks.slice(last + 1) };
}

describe('delete and re-create a topic under load', function () {
  this.timeout(120_000);
  let b: TestBroker;

  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker({ 'auto.create.topics.enable': false, 'delete.topic.enable': true }), (t) => t.stop());
  });
  after(() => cleanup.run());

  it('producers see UNKNOWN_TOPIC_OR_PARTITION and retry; the new topic has a new id, starts at 0 and holds none of the old records', async () => {
    const admin = await RawClient.connect(b.bootstrap);
    const rawConn = await RawClient.connect(b.bootstrap);
    const byConn = await RawClient.connect(b.bootstrap);
    await rawCreateTopics(admin, [
      { name: TOPIC, partitions: 2 },
      { name: BYSTANDER, partitions: 1 },
    ]);

    // kafkajs: sequential sends to partition 1; what it logs is kept
    const kjsLogs: string[] = [];
    const kafka = new Kafka({
      brokers: [b.bootstrap],
      clientId: 'recreate-kafkajs',
      logLevel: logLevel.ERROR,
      logCreator: () => (entry) => {
        const error = (entry.log as { error?: unknown }).error;
        kjsLogs.push(`${entry.log.message} ${typeof error === 'string' ? error : error === undefined ? '' : inspect(error)}`);
      },
      retry: { retries: 30, initialRetryTime: 50, maxRetryTime: 500 },
    });
    const producer = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 30, initialRetryTime: 50, maxRetryTime: 500 } });
    await producer.connect();
    const kjs: Ack[] = [];
    const kjsFailures: string[] = [];
    let kjsRunning = true;
    // a named function, not an IIFE (TypeScript would follow an IIFE inline and take `kjsRunning` for always true)
    const kjsLoop = async () => {
      for (let seq = 0; kjsRunning; seq++) {
        const value = `kjs-${seq}`;
        try {
          const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages: [{ value, partition: 1 }] });
          kjs.push({ value, errorCode: meta?.errorCode ?? -1, baseOffset: BigInt(meta?.baseOffset ?? '-1') });
        } catch (e) {
          kjsFailures.push(`${value}: ${(e as Error).message}`);
          await sleep(50);
        }
      }
    };
    const kjsDone = kjsLoop();

    const raw = rawProducerLoop(rawConn, TOPIC, 0, 'raw');
    const bystander = rawProducerLoop(byConn, BYSTANDER, 0, 'by');
    try {
      await until('writes to the first topic', () => raw.acks.length >= 200 && kjs.length >= 20);
      const oldId = await topicId(admin, TOPIC);

      const del = await admin.request<{ responses: { name: string | null; errorCode: number }[] }>(ApiKey.DeleteTopics, 4, {
        topicNames: [TOPIC],
        timeoutMs: 30_000,
      });
      expect(del.responses.map((r) => [r.name, r.errorCode])).to.deep.equal([[TOPIC, 0]]);
      const rawAtDelete = raw.acks.length;
      await sleep(GAP_MS);
      await until('the raw producer to hit the missing topic', () => raw.acks.slice(rawAtDelete).some((a) => a.errorCode !== 0));
      const md = await admin.request<MetadataResponse>(ApiKey.Metadata, 12, {
        topics: [{ topicId: ZERO_ID, name: TOPIC }],
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false,
      });
      expect(md.topics[0]?.errorCode, 'the topic is gone while deleted').to.equal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);

      await rawCreateTopics(admin, [{ name: TOPIC, partitions: 2 }]);
      const newId = await topicId(admin, TOPIC);
      expect(newId)
        .to.match(/^[0-9a-f]{32}$/)
        .and.not.equal(ZERO_ID);
      expect(newId, 'a re-created topic gets a new id').to.not.equal(oldId);
      const kjsAtCreate = kjs.length;
      await until(
        'writes to the new topic',
        () => raw.acks.length >= rawAtDelete + 400 && kjs.length >= kjsAtCreate + 20 && phases(raw.acks).fresh.length >= 100,
      );
    } finally {
      kjsRunning = false;
      await Promise.all([raw.stop(), bystander.stop(), kjsDone]);
      await producer.disconnect();
    }

    try {
      // raw producer: old topic, then only UNKNOWN_TOPIC_OR_PARTITION, then the new topic from offset 0
      const { old, gap, fresh } = phases(raw.acks);
      expect(gap.length).to.be.greaterThan(0);
      expect([...new Set(gap.map((a) => a.errorCode))]).to.deep.equal([ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]);
      expect(old.map((a) => a.baseOffset)).to.deep.equal(old.map((_, i) => BigInt(i)));
      expect(
        fresh.map((a) => a.baseOffset),
        'the new topic counts from 0',
      ).to.deep.equal(fresh.map((_, i) => BigInt(i)));

      // the new topic holds exactly what was acknowledged into it, and nothing of the old one
      expect(await rawListOffset(admin, TOPIC, 0, -2n)).to.equal(0n);
      expect(await rawListOffset(admin, TOPIC, 1, -2n)).to.equal(0n);
      const p0 = await readAll(admin, TOPIC, 0);
      expect(p0).to.deep.equal(fresh.map((a) => [a.baseOffset, a.value]));
      const oldValues = new Set(old.map((a) => a.value));
      expect(p0.filter(([, v]) => oldValues.has(v))).to.deep.equal([]);

      // kafkajs: its acknowledgements restart at 0 exactly once (old topic → new topic), and
      // partition 1 holds exactly what it acknowledged after that
      const resets = kjs.map((a, i) => (i > 0 && a.baseOffset < kjs[i - 1]!.baseOffset ? i : -1)).filter((i) => i >= 0);
      expect(resets, 'kafkajs offsets restart once').to.have.length(1);
      const kOld = kjs.slice(0, resets[0]);
      const kNew = kjs.slice(resets[0]);
      expect(kOld.map((a) => a.baseOffset)).to.deep.equal(kOld.map((_, i) => BigInt(i)));
      expect(kNew.map((a) => a.baseOffset)).to.deep.equal(kNew.map((_, i) => BigInt(i)));
      const p1 = await readAll(admin, TOPIC, 1);
      expect(p1).to.deep.equal(kNew.map((a) => [a.baseOffset, a.value]));
      const kOldValues = new Set(kOld.map((a) => a.value));
      expect(p1.filter(([, v]) => kOldValues.has(v) || v.startsWith('raw-'))).to.deep.equal([]);
      // kafkajs was told the partition is missing (UNKNOWN_TOPIC_OR_PARTITION is "This server does not
      // host this topic-partition" in its words) and retried: logged on retry, or a send gave up on it
      const sawMissing = [...kjsLogs, ...kjsFailures].some((l) => /does not host this topic-partition/.test(l));
      expect(sawMissing, `kafkajs logs: ${kjsLogs.slice(0, 5).join(' | ')}; failures: ${kjsFailures.slice(0, 5).join(' | ')}`).to.equal(
        true,
      );

      // the bystander topic never noticed, and the broker keeps serving
      expect(bystander.acks.filter((a) => a.errorCode !== 0)).to.deep.equal([]);
      expect(bystander.acks.map((a) => a.baseOffset)).to.deep.equal(bystander.acks.map((_, i) => BigInt(i)));
      expect(await readAll(admin, BYSTANDER, 0)).to.have.length(bystander.acks.length);
      const after = await RawClient.connect(b.bootstrap);
      try {
        const end = await rawListOffset(after, TOPIC, 0);
        const again = rawProducerLoop(after, TOPIC, 0, 'after');
        await until('one more write', () => again.acks.length >= 1);
        await again.stop();
        expect(again.acks[0]).to.include({ errorCode: 0, baseOffset: end });
      } finally {
        after.destroy();
      }
    } finally {
      admin.destroy();
      rawConn.destroy();
      byConn.destroy();
    }
  });
});
