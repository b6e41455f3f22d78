/**
 * Fetch over 10,000 partitions, as a consumer without fetch sessions sends it on every poll: every
 * requested partition is answered, in request order, with its error code, high watermark, last stable
 * offset and log start offset (records where there are some), and a long poll over all of them is
 * woken by an append to any one, the last as well as the first, however often the same list repeats
 * and in whatever order it comes. Raw Fetch v11 frames; the broker runs as a child process.
 *
 * The long polls wait up to LONG_WAIT (30 s) and the test gives up on them after GIVE_UP (20 s): a
 * fetch that is not woken by the append cannot return in time, whatever the machine's load.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DeleteRecordsResponse } from '../../protocol/generated/delete-records.js';
import { buildRecordBatch, decodeRecords } from '../../protocol/records/index.js';
import { startChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';
import { FETCH_V, RawClient, rawCreateTopics, rawProduce } from '../helpers/raw-client.js';

const TOPICS = 100;
const PARTITIONS = 100;
const LONG_WAIT = 30_000;
const GIVE_UP = 20_000;
const UNKNOWN_TOPIC_OR_PARTITION = 3;
const OFFSET_OUT_OF_RANGE = 1;

interface PartitionOut {
  partitionIndex: number;
  errorCode: number;
  highWatermark: bigint;
  lastStableOffset: bigint;
  logStartOffset: bigint;
  abortedTransactions: unknown;
  records: Buffer | null;
}
interface FetchOut {
  errorCode: number;
  responses: { topic: string; partitions: PartitionOut[] }[];
}

const topicName = (t: number) => `fm-${String(t).padStart(3, '0')}`;

function batch(n: number, tag: string): Buffer {
  const now = BigInt(Date.now());
  return buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`${tag}-${i}`), value: Buffer.from('v'), timestamp: now })),
  );
}

function keys(records: Buffer | null): string[] {
  return decodeRecords(records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records.map((r) => r.key?.toString() ?? '');
}

type Want = { topic: string; partition: number; fetchOffset: bigint }[];

function body(want: Want, maxWaitMs: number) {
  const topics: { topic: string; partitions: object[] }[] = [];
  for (const w of want) {
    let t = topics[topics.length - 1];
    if (t?.topic !== w.topic) topics.push((t = { topic: w.topic, partitions: [] }));
    t.partitions.push({
      partition: w.partition,
      currentLeaderEpoch: -1,
      fetchOffset: w.fetchOffset,
      logStartOffset: -1n,
      partitionMaxBytes: 1 << 20,
    });
  }
  return {
    replicaId: -1,
    maxWaitMs,
    minBytes: 1,
    maxBytes: 50 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics,
    forgottenTopicsData: [],
    rackId: '',
  };
}

/** The answered partitions flattened in response order, as [topic, partition, partition data]. */
function flat(res: FetchOut): [string, number, PartitionOut][] {
  return res.responses.flatMap((t) => t.partitions.map((p) => [t.topic, p.partitionIndex, p] as [string, number, PartitionOut]));
}

describe('Fetch over 10,000 partitions', function () {
  this.timeout(120_000);
  let dataDir: string | undefined;
  let b: ChildBroker | undefined;
  let clientConn: RawClient | undefined;
  let producerConn: RawClient | undefined;
  const client = () => clientConn!;
  /** end offset of every partition, by "topic/partition" (absent: 0) */
  const ends = new Map<string, bigint>();
  const all: { topic: string; partition: number }[] = [];

  async function produce(topic: string, partition: number, n: number, tag: string): Promise<void> {
    const r = await rawProduce(producerConn!, topic, [[partition, batch(n, tag)]]);
    expect(r[0]?.errorCode).to.equal(0);
    ends.set(`${topic}/${partition}`, (ends.get(`${topic}/${partition}`) ?? 0n) + BigInt(n));
  }
  const endOf = (topic: string, partition: number) => ends.get(`${topic}/${partition}`) ?? 0n;

  before(async () => {
    dataDir = tempDir('gregor-fetch-many-');
    b = await startChildBroker(dataDir, 0, {});
    const producer = (producerConn = await RawClient.connect(b.bootstrap));
    clientConn = await RawClient.connect(b.bootstrap);
    for (let t = 0; t < TOPICS; t += 10) {
      await rawCreateTopics(
        producer,
        Array.from({ length: 10 }, (_, i) => ({ name: topicName(t + i), partitions: PARTITIONS })),
      );
    }
    await rawCreateTopics(producer, [{ name: 'fm-extra', partitions: 1 }]);
    for (let t = 0; t < TOPICS; t++) for (let p = 0; p < PARTITIONS; p++) all.push({ topic: topicName(t), partition: p });
    await produce(topicName(0), 0, 1, 'first');
    await produce(topicName(42), 17, 3, 'middle');
    await produce(topicName(TOPICS - 1), PARTITIONS - 1, 2, 'last');
  });

  after(async () => {
    clientConn?.destroy();
    producerConn?.destroy();
    if (b !== undefined) {
      b.child.kill('SIGKILL');
      await b.exited;
    }
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers every partition in request order with its error code and offsets, records where there are some', async () => {
    const want: Want = all.map((x) => ({ ...x, fetchOffset: 0n }));
    // a partition the topic does not have and a topic that does not exist, in the middle of the list
    want.splice(
      5000,
      0,
      { topic: topicName(50), partition: PARTITIONS, fetchOffset: 0n },
      { topic: 'fm-missing', partition: 0, fetchOffset: 0n },
    );
    const res = await client().request<FetchOut>(1, FETCH_V, body(want, 0), 30_000);
    expect(res.errorCode).to.equal(0);
    const got = flat(res);
    expect(got.map(([t, p]) => `${t}/${p}`)).to.deep.equal(want.map((w) => `${w.topic}/${w.partition}`));
    for (const [i, [topic, partition, p]] of got.entries()) {
      const unknown = i === 5000 || i === 5001;
      const hw = unknown ? -1n : endOf(topic, partition);
      expect(
        [p.errorCode, p.highWatermark, p.lastStableOffset, p.logStartOffset, p.abortedTransactions],
        `${topic}/${partition}`,
      ).to.deep.equal([unknown ? UNKNOWN_TOPIC_OR_PARTITION : 0, hw, hw, unknown ? -1n : 0n, null]);
      if (hw <= 0n) expect(p.records === null || p.records.length === 0, `${topic}/${partition} records`).to.equal(true);
    }
    const recordsOf = (topic: string, partition: number) => keys(got.find(([t, p]) => t === topic && p === partition)?.[2].records ?? null);
    expect(recordsOf(topicName(0), 0)).to.deep.equal(['first-0']);
    expect(recordsOf(topicName(42), 17)).to.deep.equal(['middle-0', 'middle-1', 'middle-2']);
    expect(recordsOf(topicName(TOPICS - 1), PARTITIONS - 1)).to.deep.equal(['last-0', 'last-1']);
  });

  it('a long poll over all of them, repeated and reordered, is woken by an append to the last, the first, and one in between', async () => {
    const at = (order: typeof all): Want => order.map((x) => ({ ...x, fetchOffset: endOf(x.topic, x.partition) }));
    const last = all[all.length - 1]!;
    const rotated = [...all.slice(7001), ...all.slice(0, 7001)];
    const extra = { topic: 'fm-extra', partition: 0 };
    const swapped = [...rotated.slice(0, 9999), extra];
    const rounds: { order: typeof all; target: { topic: string; partition: number } }[] = [
      { order: all, target: last },
      // the same list again: the connection's watch is kept as it is
      { order: all, target: all[0]! },
      { order: all, target: all[4321]! },
      // the same partitions in another order (librdkafka rotates its list)
      { order: rotated, target: all[7000]! },
      { order: rotated, target: last },
      // as many partitions, one of them another: the watch must move to it
      { order: swapped, target: extra },
    ];
    for (const [round, { order, target }] of rounds.entries()) {
      const want = at(order);
      const n = client().responses.length + 1;
      await client().send(1, FETCH_V, body(want, LONG_WAIT));
      // the fetch is parked (nothing to read anywhere); nothing comes back until the append
      await new Promise((r) => setTimeout(r, 200));
      expect(client().responses.length, `round ${round}: answered before the append`).to.equal(n - 1);
      await produce(target.topic, target.partition, 1, `wake${round}`);
      await client().waitResponses(n, GIVE_UP);
      const res = client().decode(n - 1, 1, FETCH_V).body as FetchOut;
      const got = flat(res);
      expect(got).to.have.length(want.length);
      for (const [i, [topic, partition, p]] of got.entries()) {
        expect(`${topic}/${partition}`).to.equal(`${want[i]!.topic}/${want[i]!.partition}`);
        expect([p.errorCode, p.highWatermark], `${topic}/${partition}`).to.deep.equal([0, endOf(topic, partition)]);
        const isTarget = topic === target.topic && partition === target.partition;
        expect(keys(p.records), `round ${round}: records of ${topic}/${partition}`).to.deep.equal(isTarget ? [`wake${round}-0`] : []);
      }
    }
  });

  it('idle polls of an unchanged, rotating list (reused on the broker) answer current offsets: a log start move, an out-of-range offset, an append to the last partition', async () => {
    // librdkafka's list starts one partition later each time, with the same bytes per partition: the
    // broker reuses the decoded topics and its last answers for them, and must never answer stale state
    let start = 1;
    const poll = async (maxWaitMs: number, offsetOf = (topic: string, partition: number) => endOf(topic, partition)) => {
      const order = [...all.slice(start), ...all.slice(0, start)];
      start++;
      const want: Want = order.map((x) => ({ ...x, fetchOffset: offsetOf(x.topic, x.partition) }));
      const res = await client().request<FetchOut>(1, FETCH_V, body(want, maxWaitMs), GIVE_UP);
      const got = new Map(flat(res).map(([t, p, d]) => [`${t}/${p}`, d]));
      expect(got.size).to.equal(want.length);
      return got;
    };
    const target = { topic: topicName(50), partition: 3 };
    const key = `${target.topic}/${target.partition}`;
    await produce(target.topic, target.partition, 4, 'del');
    for (let i = 0; i < 3; i++) {
      const got = await poll(0);
      expect([got.get(key)?.highWatermark, got.get(key)?.logStartOffset], `poll ${i}`).to.deep.equal([4n, 0n]);
    }
    const deleted = await producerConn!.request<DeleteRecordsResponse>(
      ApiKey.DeleteRecords,
      2,
      { topics: [{ name: target.topic, partitions: [{ partitionIndex: target.partition, offset: 3n }] }], timeoutMs: 10_000 },
      20_000,
    );
    expect(deleted.topics[0]?.partitions[0]?.errorCode).to.equal(0);
    for (let i = 0; i < 2; i++) {
      // the same bytes as before for this partition (fetch offset 4): its answer carries the new log start
      const got = await poll(0);
      const p = got.get(key);
      expect([p?.errorCode, p?.highWatermark, p?.logStartOffset], `after the delete, poll ${i}`).to.deep.equal([0, 4n, 3n]);
      expect(got.get(`${topicName(0)}/0`)?.highWatermark).to.equal(endOf(topicName(0), 0));
    }
    for (let i = 0; i < 2; i++) {
      // an offset below the new log start: out of range, every time
      const got = await poll(0, (t, p) => (`${t}/${p}` === key ? 1n : endOf(t, p)));
      expect(got.get(key)?.errorCode, `offset 1 after the delete, poll ${i}`).to.equal(OFFSET_OUT_OF_RANGE);
    }
    // a long poll over the same rotating list is woken by an append to partition 9,999 and returns it
    const last = all[all.length - 1]!;
    const n = client().responses.length + 1;
    const order = [...all.slice(start), ...all.slice(0, start)];
    await client().send(
      1,
      FETCH_V,
      body(
        order.map((x) => ({ ...x, fetchOffset: endOf(x.topic, x.partition) })),
        LONG_WAIT,
      ),
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(client().responses.length, 'answered before the append').to.equal(n - 1);
    await produce(last.topic, last.partition, 1, 'rotated');
    await client().waitResponses(n, GIVE_UP);
    const got = flat(client().decode(n - 1, 1, FETCH_V).body as FetchOut);
    const answer = got.find(([t, p]) => t === last.topic && p === last.partition)?.[2];
    expect(keys(answer?.records ?? null)).to.deep.equal(['rotated-0']);
    expect(got.filter(([, , p]) => (p.records?.length ?? 0) > 0)).to.have.length(1);
  });
});
