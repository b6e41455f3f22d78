/**
 * Fetch long polling through the purgatory: a fetch waiting at the log end returns as soon as an
 * append satisfies min_bytes (not at max_wait), returns empty at max_wait when nothing arrives, and
 * keeps waiting while the appended bytes stay under min_bytes. Raw Fetch v11 frames on one connection,
 * produces on another; the broker runs as a child process so its timers are not shared with the test.
 *
 * Timing margins hold on a loaded 2-core machine: fetches that an append must wake wait up to
 * WAKE_WAIT (5 s) and must return within half of it, long after any scheduling noise and long before
 * their timeout; fetches that must time out only have to return no earlier than their max wait.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { buildRecordBatch, decodeRecords } from '../../protocol/records/index.js';
import { startChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import {
  FETCH_V,
  fetchBody,
  RawClient,
  rawCreateTopics,
  rawListOffset,
  rawProduce,
  type RawFetchPartition,
} from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';
import { asError } from '../../lib/as-error.js';

const TOPIC = 'long-poll';
/** max_wait of the fetches an append must wake: they must return in well under half of it */
const WAKE_WAIT = 5000;
const WOKEN_WITHIN = WAKE_WAIT / 2;
/** max_wait of the fetches that must run to their timeout */
const MAX_WAIT = 1500;

function batch(n: number, tag: string, valueSize = 10): Buffer {
  const now = BigInt(Date.now());
  return buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`${tag}-${i}`), value: Buffer.alloc(valueSize, 120), timestamp: now })),
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The bits of @confluentinc/kafka-javascript's node-rdkafka-style consumer used here. */
interface RdMessage {
  topic: string;
  partition: number;
  key?: Buffer;
}
interface RdConsumer {
  connect(opts: { timeout: number }, cb: (e: unknown) => void): void;
  assign(assignments: { topic: string; partition: number; offset: number }[]): void;
  consume(n: number, cb: (e: unknown, messages: RdMessage[]) => void): void;
  disconnect(cb: () => void): void;
}

/** A connected librdkafka consumer in `groupId` (nothing committed) long-polling up to `waitMs`. */
async function rdConsumerAt(bootstrap: string, groupId: string, waitMs: number): Promise<RdConsumer> {
  const ck = loadConfluent() as unknown as { KafkaConsumer: new (conf: object, topicConf: object) => RdConsumer };
  const c = new ck.KafkaConsumer(
    { 'bootstrap.servers': bootstrap, 'group.id': groupId, 'enable.auto.commit': false, 'fetch.wait.max.ms': waitMs, log_level: 0 },
    {},
  );
  await new Promise<void>((resolve, reject) => c.connect({ timeout: 10_000 }, (e: unknown) => (e ? reject(asError(e)) : resolve())));
  return c;
}

/** Up to 100 messages, or none after the binding's consume timeout (1 s). */
function consumeSome(c: RdConsumer): Promise<RdMessage[]> {
  return new Promise((resolve, reject) => c.consume(100, (e, m) => (e ? reject(asError(e)) : resolve(m))));
}

describe('long-poll fetch (purgatory woken by appends)', function () {
  this.timeout(60_000);
  let dataDir: string;
  let b: ChildBroker;
  let fetcher: RawClient;
  let producer: RawClient;

  const cleanup = new Cleanup();

  before(async () => {
    dataDir = cleanup.add(tempDir('gregor-long-poll-'), (d) => rmSync(d, { recursive: true, force: true }));
    b = cleanup.add(await startChildBroker(dataDir, 0, {}), async (child) => {
      child.child.kill('SIGKILL');
      await child.exited;
    });
    producer = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    fetcher = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    await rawCreateTopics(producer, [{ name: TOPIC, partitions: 3 }]);
    // warm both connections and the partitions' logs
    for (let p = 0; p < 3; p++) expect((await rawProduce(producer, TOPIC, [[p, batch(1, 'warm')]]))[0]?.errorCode).to.equal(0);
  });

  after(() => cleanup.run());

  const rdConsumer = (groupId: string, waitMs: number): Promise<RdConsumer> => rdConsumerAt(b.bootstrap, groupId, waitMs);

  /** Sends a fetch at `offset` and returns a promise of [partition data, ms after sending]. */
  async function startFetch(
    partition: number,
    offset: bigint,
    minBytes: number,
    maxWaitMs: number,
  ): Promise<{ t0: number; done: Promise<{ p: RawFetchPartition; at: number }> }> {
    const want = fetcher.responses.length + 1;
    const t0 = performance.now();
    const cid = await fetcher.send(1, FETCH_V, fetchBody(TOPIC, [{ partition, fetchOffset: offset }], { maxWaitMs, minBytes }));
    const done = fetcher.waitResponses(want, maxWaitMs + 10_000).then((rs) => {
      const r = rs[want - 1]!;
      const decoded = fetcher.decode(want - 1, 1, FETCH_V);
      expect(decoded.correlationId).to.equal(cid);
      const p = (decoded.body as { responses: { partitions: RawFetchPartition[] }[] }).responses[0]?.partitions[0];
      if (p === undefined) throw new Error('empty fetch response');
      return { p, at: r.at };
    });
    return { t0, done };
  }

  it('is woken by a produce landing, long before max_wait', async () => {
    for (let round = 0; round < 3; round++) {
      const end = await rawListOffset(producer, TOPIC, 0);
      const { t0, done } = await startFetch(0, end, 1, WAKE_WAIT);
      await sleep(100);
      const tp = performance.now();
      const res = await rawProduce(producer, TOPIC, [[0, batch(3, `lp${round}`)]]);
      expect(res[0]?.errorCode).to.equal(0);
      const { p, at } = await done;
      expect(p.errorCode).to.equal(0);
      const recs = decodeRecords(p.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records;
      expect(recs.map((r) => r.key?.toString())).to.deep.equal([`lp${round}-0`, `lp${round}-1`, `lp${round}-2`]);
      expect(recs[0]?.offset).to.equal(end);
      // the fetch must not have returned before the produce was sent...
      expect(at).to.be.above(tp);
      // ...and the append, not the timeout, must have completed it
      expect(at - t0, `round ${round}: fetch returned ms after it was sent (max_wait ${WAKE_WAIT})`).to.be.below(WOKEN_WITHIN);
    }
  });

  it('returns empty at max_wait when nothing is produced (not before it)', async () => {
    const end = await rawListOffset(producer, TOPIC, 1);
    const { t0, done } = await startFetch(1, end, 1, MAX_WAIT);
    const { p, at } = await done;
    expect(p.errorCode).to.equal(0);
    expect(p.records === null || p.records.length === 0, 'no records').to.equal(true);
    // a timer may fire a few ms early by the test's clock, never a lot; late is only load
    expect(at - t0).to.be.above(MAX_WAIT - 50);
    expect(p.highWatermark).to.equal(end);
  });

  it('min_bytes larger than the appended data waits for more, then returns soon after min_bytes is reached', async () => {
    const end = await rawListOffset(producer, TOPIC, 2);
    const small = batch(1, 'small'); // ~80 bytes
    const large = batch(20, 'large', 100); // ~2.4 KB
    const minBytes = small.length + 500;
    expect(large.length + small.length).to.be.above(minBytes);
    const { t0, done } = await startFetch(2, end, minBytes, WAKE_WAIT);
    let returned = false;
    void done.then(() => (returned = true));
    await sleep(100);
    await rawProduce(producer, TOPIC, [[2, small]]);
    await sleep(150);
    expect(returned, 'returned before min_bytes were available').to.equal(false);
    const tp = performance.now();
    await rawProduce(producer, TOPIC, [[2, large]]);
    const { p, at } = await done;
    expect(at, 'fetch returned after the second produce was sent').to.be.above(tp);
    expect(at - t0, `fetch returned ms after it was sent (max_wait ${WAKE_WAIT})`).to.be.below(WOKEN_WITHIN);
    const recs = decodeRecords(p.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records;
    expect(recs).to.have.length(21);
    expect(recs[0]?.key?.toString()).to.equal('small-0');
    expect(recs[20]?.offset).to.equal(end + 20n);
  });

  it('min_bytes never reached: returns what there is at max_wait', async () => {
    const end = await rawListOffset(producer, TOPIC, 2);
    const { t0, done } = await startFetch(2, end, 1 << 20, MAX_WAIT);
    await sleep(100);
    await rawProduce(producer, TOPIC, [[2, batch(2, 'under')]]);
    const { p, at } = await done;
    expect(at - t0).to.be.above(MAX_WAIT - 50);
    const recs = decodeRecords(p.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records;
    expect(recs.map((r) => r.key?.toString())).to.deep.equal(['under-0', 'under-1']);
  });

  it('a fetch naming the same partitions in a rotated order (as librdkafka does) is woken by a produce to any of them', async () => {
    // The connection keeps one standing watch over the partitions it fetches: a changed order must
    // leave it in place, a changed set must move it.
    const orders = [
      [0, 1, 2],
      [1, 2, 0],
      [2, 0, 1],
    ];
    for (const [round, order] of orders.entries()) {
      const target = order[order.length - 1]!;
      const ends: bigint[] = [];
      for (const p of order) ends.push(await rawListOffset(producer, TOPIC, p));
      const want = fetcher.responses.length + 1;
      const body = fetchBody(
        TOPIC,
        order.map((partition, i) => ({ partition, fetchOffset: ends[i]! })),
        { maxWaitMs: WAKE_WAIT, minBytes: 1 },
      );
      const t0 = performance.now();
      await fetcher.send(1, FETCH_V, body);
      const done = fetcher.waitResponses(want, WAKE_WAIT + 10_000);
      await sleep(100);
      const tp = performance.now();
      await rawProduce(producer, TOPIC, [[target, batch(1, `rot${round}`)]]);
      const at = (await done)[want - 1]!.at;
      expect(at, `round ${round}: fetch returned after the produce was sent`).to.be.above(tp);
      expect(at - t0, `round ${round}: fetch returned ms after it was sent (max_wait ${WAKE_WAIT})`).to.be.below(WOKEN_WITHIN);
      const parts = (fetcher.decode(want - 1, 1, FETCH_V).body as { responses: { partitions: RawFetchPartition[] }[] }).responses[0]!
        .partitions;
      expect(parts.map((p) => p.partitionIndex)).to.deep.equal(order);
      const got = parts.find((p) => p.partitionIndex === target)!;
      expect(decodeRecords(got.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records.map((r) => r.key?.toString())).to.deep.equal([
        `rot${round}-0`,
      ]);
    }
  });

  it('librdkafka long-polling 300 partitions (fetch.wait.max.ms=6000) gets a record produced to any of them well before max wait', async () => {
    // librdkafka names every assigned partition in each Fetch, starting one later each time: the
    // connection's standing watch must follow it and wake the parked fetch on the append.
    const topics = ['lp-many-0', 'lp-many-1', 'lp-many-2'];
    await rawCreateTopics(
      producer,
      topics.map((name) => ({ name, partitions: 100 })),
    );
    const c = await rdConsumer('long-poll-many', 6000);
    try {
      c.assign(topics.flatMap((topic) => Array.from({ length: 100 }, (_, partition) => ({ topic, partition, offset: 0 }))));
      const consume = (): Promise<RdMessage[]> => consumeSome(c);
      // let it settle into an idle long poll; each round's wake-up then sends the next, rotated, request
      const settle = Date.now() + 4000;
      while (Date.now() < settle) expect(await consume()).to.have.length(0);
      for (const [round, [topic, partition]] of (
        [
          ['lp-many-0', 57],
          ['lp-many-2', 3],
          ['lp-many-1', 99],
        ] as const
      ).entries()) {
        await sleep(300);
        const tp = performance.now();
        expect((await rawProduce(producer, topic, [[partition, batch(1, `many${round}`)]]))[0]?.errorCode).to.equal(0);
        const got: RdMessage[] = [];
        while (got.length === 0 && performance.now() - tp < 10_000) got.push(...(await consume()));
        const ms = performance.now() - tp;
        expect(got.map((m) => [m.topic, m.partition, m.key?.toString()])).to.deep.equal([[topic, partition, `many${round}-0`]]);
        expect(ms, `round ${round}: ms from produce to the consumer having the record (fetch.wait.max.ms 6000)`).to.be.below(3000);
      }
    } finally {
      await new Promise<void>((resolve) => c.disconnect(() => resolve()));
    }
  });

  it('librdkafka whose assignment changes while it long-polls (fetch.wait.max.ms=20000) gets records produced to its new partitions well before max wait', async () => {
    // Each new assignment reaches the broker as a Fetch naming other partitions on the same
    // connection: the standing watch must drop the old partitions' logs and watch the new ones. A
    // watch left on the old logs would let the parked Fetch sleep to its 20 s max wait.
    const topic = 'lp-reassign';
    await rawCreateTopics(producer, [{ name: topic, partitions: 8 }]);
    const c = await rdConsumer('long-poll-reassign', 20_000);
    try {
      const assignments: [assigned: number[], nudge: number | null, target: number][] = [
        [[0, 1, 2, 3], null, 2],
        [[4, 5, 6, 7], 1, 6], // all partitions swapped
        [[0, 1, 2, 3, 4, 5, 6, 7], 5, 3], // grown (the nudge's partition stays: its record is read)
        [[3, 7], 0, 7], // shrunk
      ];
      for (const [round, [assigned, nudge, target]] of assignments.entries()) {
        const ends: bigint[] = [];
        for (const partition of assigned) ends.push(await rawListOffset(producer, topic, partition)); // one request at a time
        c.assign(assigned.map((partition, i) => ({ topic, partition, offset: Number(ends[i]) })));
        if (round === 0) {
          // librdkafka may send its first Fetch before every assigned partition has joined the
          // broker's fetch list (seen: a Fetch naming [0] and [1] only, parked 20 s while [2] and [3]
          // joined), and it adds the rest only to the next Fetch. One record per partition, all read,
          // brings the consumer to a Fetch naming all four.
          for (const partition of assigned) {
            expect((await rawProduce(producer, topic, [[partition, batch(1, `prime${partition}`)]]))[0]?.errorCode).to.equal(0);
          }
          const primed: RdMessage[] = [];
          const t0 = performance.now();
          while (primed.length < assigned.length && performance.now() - t0 < 25_000) primed.push(...(await consumeSome(c)));
          expect(primed.map((m) => [m.partition, m.key?.toString()]).sort()).to.deep.equal(assigned.map((p) => [p, `prime${p}-0`]));
        } else {
          // The Fetch parked for the old assignment stays parked for up to 20 s: a record to one of
          // the old partitions wakes it (the consumer drops what it no longer owns), and the next
          // Fetch names the new partitions. The pause lets the new partitions join librdkafka's
          // fetch list before that Fetch is built (see round 0).
          await sleep(300);
          expect((await rawProduce(producer, topic, [[nudge!, batch(1, `nudge${round}`)]]))[0]?.errorCode).to.equal(0);
        }
        const early: RdMessage[] = [];
        const settle = Date.now() + 1500;
        while (Date.now() < settle) early.push(...(await consumeSome(c)));
        const kept = nudge !== null && assigned.includes(nudge) ? [[nudge, `nudge${round}-0`]] : [];
        expect(
          early.map((m) => [m.partition, m.key?.toString()]),
          `round ${round}: before the produce`,
        ).to.deep.equal(kept);
        const tp = performance.now();
        expect((await rawProduce(producer, topic, [[target, batch(1, `reassign${round}`)]]))[0]?.errorCode).to.equal(0);
        const got: RdMessage[] = [];
        while (got.length === 0 && performance.now() - tp < 25_000) got.push(...(await consumeSome(c)));
        const ms = performance.now() - tp;
        expect(got.map((m) => [m.partition, m.key?.toString()])).to.deep.equal([[target, `reassign${round}-0`]]);
        expect(ms, `round ${round}: ms from produce to the consumer having the record (fetch.wait.max.ms 20000)`).to.be.below(5000);
      }
    } finally {
      await new Promise<void>((resolve) => c.disconnect(() => resolve()));
    }
  });

  it('a produce to another partition does not complete the fetch', async () => {
    const end = await rawListOffset(producer, TOPIC, 1);
    const { t0, done } = await startFetch(1, end, 1, MAX_WAIT);
    await sleep(100);
    await rawProduce(producer, TOPIC, [[0, batch(1, 'elsewhere')]]);
    const { p, at } = await done;
    expect(at - t0).to.be.above(MAX_WAIT - 50);
    expect(p.records === null || p.records.length === 0).to.equal(true);
  });
});
