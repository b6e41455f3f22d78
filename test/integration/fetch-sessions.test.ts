/**
 * Fetch sessions (KIP-227) over TCP against a `gregor start` child broker, with raw Fetch frames of
 * v7 to v16 (v13+ name topics by id): a full Fetch opens a session, incremental ones answer only the
 * partitions that changed, forgotten partitions leave the session, a wrong epoch and an unknown
 * session are refused, epoch -1 closes it; an incremental Fetch long-polls on every partition of its
 * session and is woken by a kafkajs produce; sessionless consumers (kafkajs, librdkafka) read as
 * before and open no session (the broker's fetch-session gauge says so).
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { FetchRequest, FetchResponse } from '../../protocol/generated/fetch.js';
import type { MetadataResponse } from '../../protocol/generated/metadata.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { startChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { RawClient, rawCreateTopics, rawProduce } from '../helpers/raw-client.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const TOPIC = 'sessions';
const VERSIONS = [7, 10, 12, 13, 16];

function batch(tag: string): Buffer {
  return buildRecordBatch([{ key: Buffer.from(tag), value: Buffer.from(`value-${tag}`), timestamp: BigInt(Date.now()) }]);
}

/** What a response names: `partition:records?` for each partition answered. */
function answered(res: FetchResponse): string[] {
  return res.responses.flatMap((t) =>
    t.partitions.map((p) => `${p.partitionIndex}${p.records !== null && p.records.length > 0 ? '+data' : ''}`),
  );
}

/** The value of an unlabelled (or `kind`-labelled) sample of a family in /metrics. */
async function gauge(admin: string, name: string, kind?: string): Promise<number> {
  const text = await (await fetch(`http://${admin}/metrics`)).text();
  const label = kind === undefined ? '' : `\\{kind="${kind}"\\}`;
  const m = new RegExp(`^${name}${label} (\\S+)$`, 'm').exec(text);
  if (m?.[1] === undefined) throw new Error(`no ${name}${kind ?? ''} in /metrics`);
  return Number(m[1]);
}

describe('fetch sessions (KIP-227) over TCP', function () {
  this.timeout(90_000);
  const cleanup = new Cleanup();
  let b: ChildBroker;
  let admin: string;
  let raw: RawClient;
  let topicId: string;

  before(async () => {
    const dir = cleanup.add(tempDir('gregor-fetch-sessions-'), (d) => rmSync(d, { recursive: true, force: true }));
    b = cleanup.add(await startChildBroker(dir, 0, { 'admin.listener': '127.0.0.1:0' }), async (child) => {
      child.child.kill('SIGKILL');
      await child.exited;
    });
    if (b.admin === null) throw new Error('the broker has no admin listener');
    admin = b.admin;
    raw = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    await rawCreateTopics(raw, [{ name: TOPIC, partitions: 3 }]);
    const md = await raw.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: [{ name: TOPIC, topicId: '0'.repeat(32) }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    topicId = md.topics[0]?.topicId ?? '';
    expect(topicId)
      .to.match(/^[0-9a-f]{32}$/)
      .and.not.equal('0'.repeat(32));
  });
  after(() => cleanup.run());

  /** The current end offset of each partition (a sessionless Fetch v12). */
  async function ends(): Promise<bigint[]> {
    const res = await fetchV(12, {
      sessionId: 0,
      sessionEpoch: -1,
      topics: topics(
        12,
        [0, 1, 2].map((p) => [p, 0n]),
      ),
    });
    return res.responses[0]!.partitions.map((p) => p.highWatermark);
  }

  function topics(v: number, parts: [number, bigint][]): FetchRequest['topics'] {
    if (parts.length === 0) return [];
    const partitions = parts.map(([partition, fetchOffset]) => ({
      partition,
      fetchOffset,
      partitionMaxBytes: 1 << 20,
      logStartOffset: -1n,
      currentLeaderEpoch: -1,
    }));
    return [v >= 13 ? { topicId, partitions } : { topic: TOPIC, partitions }];
  }

  function forgotten(v: number, parts: number[]): NonNullable<FetchRequest['forgottenTopicsData']> {
    return [v >= 13 ? { topicId, partitions: parts } : { topic: TOPIC, partitions: parts }];
  }

  function fetchV(
    v: number,
    body: Partial<FetchRequest> & Pick<FetchRequest, 'topics'>,
    c = raw,
    timeoutMs = 5000,
  ): Promise<FetchResponse> {
    return c.request<FetchResponse>(
      ApiKey.Fetch,
      v,
      { replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes: 1 << 20, isolationLevel: 0, forgottenTopicsData: [], rackId: '', ...body },
      timeoutMs,
    );
  }

  /** A full Fetch of the three partitions from their ends, with epoch 0 (opening a session). */
  async function openSession(v: number, c = raw): Promise<{ full: FetchResponse; ends: bigint[] }> {
    const at = await ends();
    const full = await fetchV(
      v,
      {
        sessionId: 0,
        sessionEpoch: 0,
        topics: topics(
          v,
          at.map((end, p) => [p, end]),
        ),
      },
      c,
    );
    return { full, ends: at };
  }

  async function produce(partition: number, tag: string): Promise<void> {
    expect((await rawProduce(raw, TOPIC, [[partition, batch(tag)]]))[0]?.errorCode).to.equal(ErrorCode.NONE);
  }

  for (const v of VERSIONS) {
    it(`Fetch v${v}: full → incremental (only what changed) → forgotten → bad epoch, unknown session, close`, async () => {
      const { full, ends: at } = await openSession(v);
      const e1 = at[1]!;
      expect(full.errorCode).to.equal(ErrorCode.NONE);
      const id = full.sessionId ?? 0;
      expect(id, 'a session id').to.not.equal(0);
      expect(answered(full)).to.deep.equal(['0', '1', '2']);
      if (v >= 13) expect(full.responses[0]?.topicId).to.equal(topicId);

      // nothing changed: an incremental Fetch naming nothing is answered with nothing
      const quiet = await fetchV(v, { sessionId: id, sessionEpoch: 1, topics: [] });
      expect([quiet.errorCode, quiet.sessionId, answered(quiet)]).to.deep.equal([ErrorCode.NONE, id, []]);

      // data on partition 1 only: only it is answered, with its records, though the Fetch named nothing
      await produce(1, `v${v}-a`);
      const one = await fetchV(v, { sessionId: id, sessionEpoch: 2, topics: [] });
      expect(answered(one)).to.deep.equal(['1+data']);
      expect(one.responses[0]?.partitions[0]?.highWatermark).to.equal(e1 + 1n);

      // partition 1 moves its fetch offset on (caught up: nothing to answer); partition 2 is forgotten
      const moved = await fetchV(v, {
        sessionId: id,
        sessionEpoch: 3,
        topics: topics(v, [[1, e1 + 1n]]),
        forgottenTopicsData: forgotten(v, [2]),
      });
      expect(answered(moved)).to.deep.equal([]);
      await produce(2, `v${v}-b`);
      await produce(0, `v${v}-c`);
      const after = await fetchV(v, { sessionId: id, sessionEpoch: 4, topics: [] });
      expect(answered(after), 'the forgotten partition 2 is not answered').to.deep.equal(['0+data']);

      const badEpoch = await fetchV(v, { sessionId: id, sessionEpoch: 9, topics: [] });
      expect([badEpoch.errorCode, badEpoch.responses.length]).to.deep.equal([ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0]);
      const unknown = await fetchV(v, { sessionId: id + 1, sessionEpoch: 1, topics: [] });
      expect(unknown.errorCode).to.equal(ErrorCode.FETCH_SESSION_ID_NOT_FOUND);
      // the session survives a refused request: epoch 5 is still the next one
      expect((await fetchV(v, { sessionId: id, sessionEpoch: 5, topics: [] })).errorCode).to.equal(ErrorCode.NONE);

      // epoch -1 closes it (and the Fetch is answered sessionless, in full)
      const closing = await fetchV(v, { sessionId: id, sessionEpoch: -1, topics: topics(v, [[0, 0n]]) });
      expect([closing.errorCode, closing.sessionId, answered(closing)]).to.deep.equal([ErrorCode.NONE, 0, ['0+data']]);
      expect((await fetchV(v, { sessionId: id, sessionEpoch: 6, topics: [] })).errorCode).to.equal(ErrorCode.FETCH_SESSION_ID_NOT_FOUND);
    });
  }

  it('a session of one topic naming (v12: names) refuses Fetches of the other (v13: ids)', async () => {
    const [e0] = (await ends()) as [bigint];
    const full = await fetchV(12, { sessionId: 0, sessionEpoch: 0, topics: topics(12, [[0, e0]]) });
    const id = full.sessionId ?? 0;
    expect(id).to.not.equal(0);
    expect((await fetchV(13, { sessionId: id, sessionEpoch: 1, topics: [] })).errorCode).to.equal(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR);
    await fetchV(12, { sessionId: id, sessionEpoch: -1, topics: [] });
  });

  it('an incremental Fetch naming nothing long-polls on its whole session and is woken by a kafkajs produce', async () => {
    const v = 16;
    const c = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    const { full } = await openSession(v, c);
    const id = full.sessionId ?? 0;
    const maxWaitMs = 30_000;
    const sentAt = performance.now();
    const waiting = fetchV(v, { sessionId: id, sessionEpoch: 1, topics: [], maxWaitMs, minBytes: 1 }, c, maxWaitMs + 10_000);
    let settled = false;
    void waiting.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(settled, 'answered before anything was produced').to.equal(false);
    const producer = new Kafka({ clientId: 'fs-producer', brokers: [b.bootstrap], logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    try {
      await producer.send({ topic: TOPIC, messages: [{ partition: 2, key: 'wake', value: 'up' }] });
    } finally {
      await producer.disconnect();
    }
    const res = await waiting;
    expect(answered(res)).to.deep.equal(['2+data']);
    // woken by the append, not by max_wait_ms
    expect(performance.now() - sentAt).to.be.below(maxWaitMs / 2);
    await fetchV(v, { sessionId: id, sessionEpoch: -1, topics: [] }, c);
  });

  it('sessionless consumers (kafkajs, librdkafka) read everything and open no fetch session', async () => {
    const sessionsBefore = await gauge(admin, 'kafka_server_fetchsessioncache_numincrementalfetchsessions');
    const kafka = new Kafka({ clientId: 'fs-kafkajs', brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
    const topic = 'sessionless';
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })) });
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: 'fs-kafkajs-group' });
    await consumer.connect();
    const seen: string[] = [];
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        consumer
          .run({
            eachMessage: ({ message }) => {
              seen.push(message.key?.toString() ?? '');
              if (seen.length === 20) resolve();
              return Promise.resolve();
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect();
    }
    expect(seen.sort()).to.deep.equal(Array.from({ length: 20 }, (_, i) => `k${i}`).sort());

    const { KafkaJS } = loadConfluent();
    const rd = new KafkaJS.Kafka({ kafkaJS: { brokers: [b.bootstrap], logLevel: KafkaJS.logLevel.NOTHING } }).consumer({
      kafkaJS: { groupId: 'fs-rdkafka-group', fromBeginning: true },
    });
    await rd.connect();
    const rdSeen: string[] = [];
    try {
      await rd.subscribe({ topics: [topic] });
      await new Promise<void>((resolve, reject) => {
        rd.run({
          eachMessage: ({ message }: { message: { key: Buffer | null } }) => {
            rdSeen.push(message.key?.toString() ?? '');
            if (rdSeen.length === 20) resolve();
            return Promise.resolve();
          },
        }).catch(reject);
      });
    } finally {
      await rd.disconnect();
    }
    expect(rdSeen.sort()).to.deep.equal(seen);
    expect(await gauge(admin, 'kafka_server_fetchsessioncache_numincrementalfetchsessions')).to.equal(sessionsBefore);
    expect(await gauge(admin, 'kafka_server_fetchsessioncache_sessions', 'follower')).to.equal(0);
  });
});
