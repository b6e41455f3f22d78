/**
 * The leader side of a follower's Fetch (lib/handlers/fetch-replica.ts): a follower caught up on every
 * partition it asks for parks its fetch on the connection's fetch watch until one of them changes (an
 * append, a high watermark move) or max_wait_ms passes, as Kafka's DelayedFetch does, instead of being
 * answered at once (which turned every idle follower into a busy loop of empty fetches: KAFKA-1952's
 * cost). Stand-ins for the services; the purgatory is the real one.
 */
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { RecordsValue } from '../../../protocol/codec/writer.js';
import type { FetchRequest, FetchResponse } from '../../../protocol/generated/fetch.js';
import { replicaFetch } from '../../../lib/handlers/fetch-replica.js';

/** No fetch session: every answer is built. */
const SESSIONLESS = { kind: 'sessionless', idle: null, unchanged: () => false } as const;
import type { RequestContext } from '../../../lib/handlers/types.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { Purgatory } from '../../../lib/replica/purgatory.js';
import type { Replication } from '../../../lib/replica/replication.js';

const TOPIC = 'replicated';

function fakeLog(end: bigint): PartitionLog {
  return {
    servable: true,
    logEndOffset: end,
    logStartOffset: 0n,
    highWatermark: end,
    lastStableOffset: end,
  } as unknown as PartitionLog;
}

function setup(log: PartitionLog) {
  const purgatory = new Purgatory();
  let closeConn: () => void = () => undefined;
  const conn = { closed: new Promise<void>((r) => (closeConn = r)) };
  const fetched: bigint[] = [];
  const replication = {
    now: () => Date.now(),
    generation: 0,
    follower: () => ({}),
    fetchedBy: (_f: unknown, _r: number, offset: bigint) => {
      fetched.push(offset);
    },
  } as unknown as Replication;
  const timing = { remoteMs: 0 };
  const ctx = {
    apiVersion: 12,
    conn,
    timing,
    services: {
      purgatory,
      metadata: { topic: (name: string) => (name === TOPIC ? { name, topicId: 'a'.repeat(32) } : undefined) },
      topics: {
        logsOf: (t: string) => (t === TOPIC ? [log] : undefined),
        generation: 0,
        leaderEpoch: () => 3,
        notHereError: () => ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      },
    },
  } as unknown as RequestContext;
  const req = (maxWaitMs: number, fetchOffset: bigint): FetchRequest => ({
    replicaId: 2,
    maxWaitMs,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      {
        topic: TOPIC,
        partitions: [{ partition: 0, currentLeaderEpoch: 3, fetchOffset, logStartOffset: 0n, partitionMaxBytes: 1 << 20 }],
      },
    ],
  });
  return { purgatory, ctx, req, replication, fetched, timing, close: () => closeConn() };
}

/** Lets pending I/O callbacks and microtasks run a few times. */
async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

describe('Fetch from a follower (leader side): long poll', () => {
  it('a caught-up follower parks until an append to a fetched partition, and the wait counts as remote time', async () => {
    const log = fakeLog(5n);
    const s = setup(log);
    let settled: FetchResponse<RecordsValue>['responses'] | undefined;
    const pending = replicaFetch(s.req(60_000, 5n), s.ctx, 2, s.replication, SESSIONLESS).then((r) => (settled = r));
    await turns();
    expect(settled, 'answered at once instead of parking').to.equal(undefined);
    expect(s.purgatory.size).to.equal(1);
    expect(s.fetched).to.deep.equal([5n]);
    s.purgatory.checkAndComplete(log, { appendedBytes: 100, readableBytes: 0 }); // an append of 100 bytes
    await pending;
    expect(settled?.[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.NONE);
    expect(s.purgatory.size).to.equal(0);
    expect(s.fetched, "the follower's state is updated once per Fetch, from the read before the wait").to.deep.equal([5n]);
    expect(s.timing.remoteMs).to.be.greaterThan(0);
    s.close();
  });

  it('each of several fetches in a row on one connection parks again', async () => {
    const log = fakeLog(1n);
    const s = setup(log);
    for (let i = 0; i < 3; i++) {
      let done = false;
      const pending = replicaFetch(s.req(60_000, 1n), s.ctx, 2, s.replication, SESSIONLESS).then(() => (done = true));
      await turns();
      expect(done, `fetch ${i} answered at once`).to.equal(false);
      s.purgatory.checkAndComplete(log, { appendedBytes: 1, readableBytes: 0 });
      await pending;
    }
    s.close();
  });

  it('ends at max_wait_ms when nothing changes', async () => {
    const s = setup(fakeLog(0n));
    const res = await replicaFetch(s.req(20, 0n), s.ctx, 2, s.replication, SESSIONLESS);
    expect(res[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.NONE);
    expect(s.purgatory.size).to.equal(0);
    s.close();
  });

  it('a log that grew between the read and the wait (its append notified before the wait) is not waited on', async () => {
    // the first read sees the end at 5 (the follower is caught up); every later look sees 6
    let looks = 0;
    const log = {
      servable: true,
      get logEndOffset() {
        return looks++ === 0 ? 5n : 6n;
      },
      logStartOffset: 0n,
      highWatermark: 5n,
      lastStableOffset: 5n,
      read: () => Promise.resolve({ records: [Buffer.from('r')], size: 1 }),
    } as unknown as PartitionLog;
    const s = setup(log);
    let settled: FetchResponse<RecordsValue>['responses'] | undefined;
    const pending = replicaFetch(s.req(60_000, 5n), s.ctx, 2, s.replication, SESSIONLESS).then((r) => (settled = r));
    await turns();
    expect(settled, 'parked although the log had grown').to.not.equal(undefined);
    expect(settled?.[0]?.partitions[0]?.records, 'the stored slices, uncopied').to.deep.equal([Buffer.from('r')]);
    expect(s.purgatory.size).to.equal(0);
    await pending;
    s.close();
  });

  it('a follower behind the log end is answered without waiting', async () => {
    const log = fakeLog(3n);
    (log as unknown as { read: unknown }).read = () => Promise.resolve({ records: [Buffer.from('xyz')], size: 3 });
    const s = setup(log);
    const res = await replicaFetch(s.req(60_000, 1n), s.ctx, 2, s.replication, SESSIONLESS);
    expect(res[0]?.partitions[0]?.records, 'the stored slices, uncopied').to.deep.equal([Buffer.from('xyz')]);
    expect(s.purgatory.size).to.equal(0);
    s.close();
  });
});
