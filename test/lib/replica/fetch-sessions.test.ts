/**
 * The fetch session cache (KIP-227, leader side) and the fetcher's session client, without a broker:
 * sessions opened by full Fetches, incremental Fetches and their responses (only what changed),
 * epochs, closing, topic ids, eviction; the client's full → incremental → full-again cycle, with the
 * cache as its leader.
 */
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { RecordsValue } from '../../../protocol/codec/writer.js';
import type { FetchRequest, FetchRequestFetchTopic, FetchResponse, FetchResponsePartitionData } from '../../../protocol/generated/fetch.js';
import { FetchSessionClient } from '../../../lib/replica/fetch-session-client.js';
import { EVICTION_MS, type FetchContext, FetchSessionCache, nextEpoch, UNCHANGED } from '../../../lib/replica/fetch-sessions.js';

const V = 12; // topics by name
const part = (partition: number, fetchOffset = 0n) => ({
  partition,
  fetchOffset,
  partitionMaxBytes: 1000,
  logStartOffset: -1n,
  currentLeaderEpoch: 0,
});

function fetch(
  sessionId: number,
  sessionEpoch: number,
  topics: FetchRequestFetchTopic[],
  forgotten: FetchRequest['forgottenTopicsData'] = [],
): FetchRequest {
  return { maxWaitMs: 0, minBytes: 0, sessionId, sessionEpoch, topics, forgottenTopicsData: forgotten };
}

function answer(partitionIndex: number, highWatermark: bigint, records = Buffer.alloc(0), errorCode = 0): FetchResponsePartitionData {
  return {
    partitionIndex,
    errorCode,
    highWatermark,
    lastStableOffset: highWatermark,
    logStartOffset: 0n,
    abortedTransactions: null,
    preferredReadReplica: -1,
    records,
  };
}

/** Answers every partition of the context: `hw(topic, partition)` as its high watermark, records where `data` says. */
function respond(
  ctx: FetchContext,
  hw: (t: string, p: number) => bigint,
  data: (t: string, p: number) => boolean = () => false,
): FetchResponse<RecordsValue>['responses'] {
  return ctx.respond(
    ctx.topics.map((t) => ({
      topic: t.topic ?? '',
      topicId: t.topicId ?? '',
      partitions: t.partitions.map((p) =>
        answer(p.partition, hw(t.topic ?? '', p.partition), data(t.topic ?? '', p.partition) ? Buffer.from('x') : Buffer.alloc(0)),
      ),
    })),
  );
}

const named = (responses: FetchResponse<RecordsValue>['responses']) =>
  responses.flatMap((t) => t.partitions.map((p) => `${t.topic}-${p.partitionIndex}`));

describe('lib/replica fetch sessions: the cache', () => {
  it('a full Fetch with epoch 0 opens a session; incremental Fetches read every partition and answer only what changed', () => {
    const cache = new FetchSessionCache(10);
    const full = cache.newContext(
      fetch(0, 0, [
        { topic: 'a', partitions: [part(0), part(1)] },
        { topic: 'b', partitions: [part(0)] },
      ]),
      V,
      true,
    );
    expect(full.kind).to.equal('full');
    expect(full.sessionId).to.not.equal(0);
    expect(named(respond(full, () => 5n))).to.deep.equal(['a-0', 'a-1', 'b-0']);
    expect(cache.stats()).to.include({ sessions: 1, followerSessions: 1, partitions: 3 });

    // nothing named, nothing changed: every partition read, none answered
    const inc1 = cache.newContext(fetch(full.sessionId, 1, []), V, true);
    expect(inc1.kind).to.equal('incremental');
    expect(inc1.topics.flatMap((t) => t.partitions.map((p) => `${t.topic}-${p.partition}`))).to.deep.equal(['a-0', 'a-1', 'b-0']);
    expect(named(respond(inc1, () => 5n))).to.deep.equal([]);
    // the handlers ask first and answer UNCHANGED instead of building what would be left out
    const first = inc1.topics[0]!.partitions[0]!;
    expect(inc1.unchanged(first, 5n, 5n, 0n)).to.equal(true);
    expect(inc1.unchanged(first, 6n, 5n, 0n)).to.equal(false);
    expect(full.unchanged(first, 5n, 5n, 0n), 'a full response answers everything').to.equal(false);
    expect(
      inc1.respond([
        { topic: 'a', partitions: [UNCHANGED, UNCHANGED] },
        { topic: 'b', partitions: [UNCHANGED] },
      ]),
    ).to.deep.equal([]);

    // a-1 moved its fetch offset; b-0's high watermark moved; a-0 has records
    const inc2 = cache.newContext(fetch(full.sessionId, 2, [{ topic: 'a', partitions: [part(1, 5n)] }]), V, true);
    const a1 = inc2.topics[0]?.partitions[1];
    expect(a1?.fetchOffset).to.equal(5n);
    expect(
      named(
        respond(
          inc2,
          (t) => (t === 'b' ? 6n : 5n),
          (t, p) => t === 'a' && p === 0,
        ),
      ),
    ).to.deep.equal(['a-0', 'b-0']);
    // a-0 returned records: it goes last in the session's order
    const inc3 = cache.newContext(fetch(full.sessionId, 3, []), V, true);
    expect(inc3.topics.map((t) => `${t.topic}:${t.partitions.map((p) => p.partition).join(',')}`)).to.deep.equal(['a:1', 'b:0', 'a:0']);
  });

  it('forgotten_topics_data removes partitions; a new partition in an incremental Fetch is answered', () => {
    const cache = new FetchSessionCache(10);
    const full = cache.newContext(fetch(0, 0, [{ topic: 'a', partitions: [part(0), part(1)] }]), V, false);
    respond(full, () => 1n);
    const inc = cache.newContext(
      fetch(full.sessionId, 1, [{ topic: 'c', partitions: [part(3)] }], [{ topic: 'a', partitions: [0] }]),
      V,
      false,
    );
    expect(named(respond(inc, () => 1n))).to.deep.equal(['c-3']);
    expect(cache.get(full.sessionId)?.size).to.equal(2);
  });

  it('errors: an unknown session, a wrong epoch, a session of the other topic naming; errors are always answered', () => {
    const cache = new FetchSessionCache(10);
    expect(cache.newContext(fetch(12345, 1, []), V, false).errorCode).to.equal(ErrorCode.FETCH_SESSION_ID_NOT_FOUND);
    expect(cache.newContext(fetch(0, 1, []), V, false).errorCode).to.equal(ErrorCode.FETCH_SESSION_ID_NOT_FOUND);
    const full = cache.newContext(fetch(0, 0, [{ topic: 'a', partitions: [part(0)] }]), V, false);
    respond(full, () => 1n);
    expect(cache.newContext(fetch(full.sessionId, 2, []), V, false).errorCode).to.equal(ErrorCode.INVALID_FETCH_SESSION_EPOCH);
    expect(cache.newContext(fetch(full.sessionId, 1, []), 13, false).errorCode).to.equal(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR);
    const inc = cache.newContext(fetch(full.sessionId, 1, []), V, false);
    expect(inc.kind).to.equal('incremental');
    const out = inc.respond([{ topic: 'a', partitions: [answer(0, 1n, Buffer.alloc(0), ErrorCode.NOT_LEADER_OR_FOLLOWER)] }]);
    expect(out[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    // the error gone, the partition is answered again even with the offsets it had
    const after = cache.newContext(fetch(full.sessionId, 2, []), V, false);
    expect(named(respond(after, () => 1n))).to.deep.equal(['a-0']);
    // an old epoch again (a retried request): refused
    expect(cache.newContext(fetch(full.sessionId, 2, []), V, false).errorCode).to.equal(ErrorCode.INVALID_FETCH_SESSION_EPOCH);
  });

  it('epoch -1 is sessionless and closes the session named; epoch 0 with a session id replaces it', () => {
    const cache = new FetchSessionCache(10);
    const sessionless = cache.newContext(fetch(0, -1, [{ topic: 'a', partitions: [part(0)] }]), V, false);
    expect(sessionless.kind).to.equal('sessionless');
    expect(sessionless.sessionId).to.equal(0);
    expect(cache.size).to.equal(0);
    // Fetch v0-6 have no sessions
    expect(cache.newContext(fetch(0, 0, [{ topic: 'a', partitions: [part(0)] }]), 6, false).kind).to.equal('sessionless');
    const one = cache.newContext(fetch(0, 0, [{ topic: 'a', partitions: [part(0)] }]), V, false).sessionId;
    const two = cache.newContext(fetch(one, 0, [{ topic: 'a', partitions: [part(0)] }]), V, false).sessionId;
    expect(two).to.not.equal(one);
    expect(cache.get(one)).to.equal(undefined);
    const closing = cache.newContext(fetch(two, -1, [{ topic: 'a', partitions: [part(0)] }]), V, false);
    expect(closing.kind).to.equal('sessionless');
    expect(cache.size).to.equal(0);
    expect(nextEpoch(0x7fffffff)).to.equal(1);
  });

  it('v13+: sessions by topic id', () => {
    const cache = new FetchSessionCache(10);
    const id = 'ab'.repeat(16);
    const full = cache.newContext(fetch(0, 0, [{ topicId: id, partitions: [part(0)] }]), 13, false);
    respond(full, () => 1n);
    const inc = cache.newContext(fetch(full.sessionId, 1, [], [{ topicId: id, partitions: [0] }]), 13, false);
    expect(inc.topics).to.deep.equal([]);
    expect(cache.newContext(fetch(full.sessionId, 2, []), 12, false).errorCode).to.equal(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR);
  });

  it('eviction: stale sessions first, then consumers for followers; a full cache otherwise gives no session', () => {
    let now = 1_000_000;
    const cache = new FetchSessionCache(2, () => now);
    const one = (follower: boolean, n = 1) =>
      cache.newContext(fetch(0, 0, [{ topic: 't', partitions: Array.from({ length: n }, (_, i) => part(i)) }]), V, follower).sessionId;
    const consumer = one(false);
    const follower = one(true);
    expect(cache.size).to.equal(2);
    // a consumer: the other consumer session is young, the follower's privileged
    expect(one(false, 5)).to.equal(0);
    // a follower takes the consumer's place
    const follower2 = one(true);
    expect(follower2).to.not.equal(0);
    expect(cache.get(consumer)).to.equal(undefined);
    expect(cache.stats()).to.include({ sessions: 2, followerSessions: 2, evictions: 1 });
    // nothing evictable for anyone now, until the least recently used goes stale
    expect(one(true)).to.equal(0);
    now += EVICTION_MS / 2;
    cache.newContext(fetch(follower2, 1, []), V, true); // touches follower2
    now += EVICTION_MS / 2;
    expect(one(false)).to.not.equal(0);
    expect(cache.get(follower)).to.equal(undefined);
    expect(cache.get(follower2)).to.not.equal(undefined);
  });
});

describe('lib/replica fetch sessions: the client', () => {
  const topics = (offsets: Record<number, bigint>): FetchRequestFetchTopic[] => [
    { topic: 't', partitions: Object.entries(offsets).map(([p, o]) => part(Number(p), o)) },
  ];

  /** One round against `cache`: the client's request, the cache's context, an answer with high watermark 9. */
  function round(client: FetchSessionClient, cache: FetchSessionCache, offsets: Record<number, bigint>, version = V) {
    const { body, incremental } = client.request(version, fetch(0, -1, topics(offsets)));
    const ctx = cache.newContext(body, version, true);
    const res: FetchResponse =
      ctx.kind === 'error'
        ? { errorCode: ctx.errorCode, sessionId: 0, responses: [] }
        : // the answers built here hold plain buffers
          { errorCode: 0, sessionId: ctx.sessionId, responses: respond(ctx, () => 9n) as FetchResponse['responses'] };
    const sessionError = client.response(res, incremental);
    return { body, incremental, sessionError, res };
  }

  it('full, then only changed partitions and forgotten ones; a lost session goes back to full at once', () => {
    const cache = new FetchSessionCache(10);
    const client = new FetchSessionClient();
    const r1 = round(client, cache, { 0: 1n, 1: 1n });
    expect(r1.incremental).to.equal(false);
    expect(r1.body.sessionEpoch).to.equal(0);
    expect(client.id).to.equal(r1.res.sessionId).and.not.equal(0);
    const r2 = round(client, cache, { 0: 1n, 1: 4n });
    expect(r2.incremental).to.equal(true);
    expect(r2.body.sessionEpoch).to.equal(1);
    expect(r2.body.topics).to.deep.equal([{ topic: 't', partitions: [part(1, 4n)] }]);
    const r3 = round(client, cache, { 1: 4n, 2: 0n });
    expect(r3.body.topics).to.deep.equal([{ topic: 't', partitions: [part(2, 0n)] }]);
    expect(r3.body.forgottenTopicsData).to.deep.equal([{ topic: 't', partitions: [0] }]);
    expect(cache.get(client.id)?.size).to.equal(2);
    // the leader forgot the session (a restart, an eviction)
    cache.newContext(fetch(client.id, -1, []), V, true);
    const r4 = round(client, cache, { 1: 4n, 2: 0n });
    expect(r4.sessionError).to.equal(true);
    expect(r4.res.errorCode).to.equal(ErrorCode.FETCH_SESSION_ID_NOT_FOUND);
    const r5 = round(client, cache, { 1: 4n, 2: 0n });
    expect(r5.incremental).to.equal(false);
    expect(r5.body.sessionId).to.equal(0);
    expect(round(client, cache, { 1: 4n, 2: 0n }).incremental).to.equal(true);
    // a request without an answer: the epoch may be spent, so the next one is full (closing the old session)
    client.reset();
    const old = client.id;
    const r6 = round(client, cache, { 1: 4n });
    expect(r6.incremental).to.equal(false);
    expect(r6.body.sessionId).to.equal(old);
    expect(cache.get(old)).to.equal(undefined);
    expect(client.counts).to.deep.equal({ full: 3, incremental: 4 });
  });

  it('Fetch v0-6: always full and sessionless', () => {
    const client = new FetchSessionClient();
    const cache = new FetchSessionCache(10);
    for (let i = 0; i < 2; i++) {
      const r = round(client, cache, { 0: 1n }, 6);
      expect(r.incremental).to.equal(false);
      expect(r.body.sessionEpoch).to.equal(-1);
    }
    expect(cache.size).to.equal(0);
  });
});
