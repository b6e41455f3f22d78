import { expect } from 'chai';
import { ProtocolError } from '../../protocol/codec/errors.js';
import { FetchRequestReuse } from '../../protocol/fetch-request-reuse.js';
import { decodeRequest, encodeRequest } from '../../protocol/frame.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { FetchRequest, FetchRequestFetchTopic } from '../../protocol/generated/fetch.js';
import { Rng, SCHEMA, randomStruct } from '../helpers/schema-values.js';

const fetchSchema = Object.values(SCHEMA).find((m) => m.kind === 'request' && m.apiKey === ApiKey.Fetch);

function frameOf(body: unknown, v: number, correlationId = 1): Buffer {
  return encodeRequest({ apiKey: ApiKey.Fetch, apiVersion: v, correlationId, clientId: 'rdkafka' }, body);
}

function randomFrame(v: number, seed: number): Buffer {
  if (fetchSchema === undefined) throw new Error('no Fetch schema');
  return frameOf(randomStruct(fetchSchema, fetchSchema.root, v, new Rng(seed)), v, seed);
}

/** The outcome of decoding: the body, or the ProtocolError's code. */
function outcome(fn: () => { body: unknown }): unknown {
  try {
    return fn().body;
  } catch (e) {
    if (!(e instanceof ProtocolError)) throw e;
    return { protocolError: e.code };
  }
}

const TOPIC_IDS = Array.from({ length: 100 }, (_, i) => (i + 1).toString(16).padStart(32, '0'));

/** A sessionless consumer Fetch as librdkafka sends it: every partition, the list starting `start` partitions in. */
function librdkafkaFetch(topics: number, perTopic: number, start: number, offsetOf: (t: number, p: number) => bigint): FetchRequest {
  const all: [number, number][] = [];
  for (let t = 0; t < topics; t++) for (let p = 0; p < perTopic; p++) all.push([t, p]);
  const rotated = [...all.slice(start % all.length), ...all.slice(0, start % all.length)];
  const out: FetchRequestFetchTopic[] = [];
  let last = -1;
  for (const [t, p] of rotated) {
    if (t !== last) out.push({ topic: `pc-${t}`, topicId: TOPIC_IDS[t]!, partitions: [] });
    last = t;
    out[out.length - 1]!.partitions.push({
      partition: p,
      currentLeaderEpoch: 0,
      fetchOffset: offsetOf(t, p),
      lastFetchedEpoch: -1,
      logStartOffset: -1n,
      partitionMaxBytes: 1048576,
    });
  }
  return {
    replicaId: -1,
    maxWaitMs: 500,
    minBytes: 1,
    maxBytes: 52428800,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: out,
    forgottenTopicsData: [],
    rackId: '',
  };
}

describe('FetchRequestReuse (a connection reuses the unchanged topics of its last Fetch)', () => {
  it('decodes random Fetch requests of every version (0-17) exactly as the generated reader, in one sequence', () => {
    const reuse = new FetchRequestReuse();
    for (let v = 0; v <= 17; v++)
      for (let seed = 1; seed <= 60; seed++) {
        const frame = randomFrame(v, seed * 31 + v);
        const plain = decodeRequest(frame);
        expect(decodeRequest(frame, undefined, reuse), `v${v} seed ${seed}`).to.deep.equal(plain);
        // the same bytes again: served from the kept topics, still equal
        expect(decodeRequest(frame, undefined, reuse), `v${v} seed ${seed} again`).to.deep.equal(plain);
      }
    expect(reuse.reused).to.be.greaterThan(0);
  });

  it('mutated frames: the same value or the same ProtocolError as without reuse', () => {
    const reuse = new FetchRequestReuse();
    const rng = new Rng(7);
    for (let i = 0; i < 3000; i++) {
      const v = i % 18;
      const frame = Buffer.from(randomFrame(v, 1000 + i));
      // decode it once whole so its topics are kept, then the mutated one against them
      decodeRequest(frame, undefined, reuse);
      const at = 8 + (rng.int(0, 1 << 30) % Math.max(1, frame.length - 8));
      const mutated = Buffer.from(frame);
      if (i % 3 === 0) mutated[at] = (mutated[at] ?? 0) ^ (1 << rng.int(0, 7));
      else if (i % 3 === 1 && at + 4 <= mutated.length) mutated.writeInt32BE(0x7fffffff, at);
      const cut = i % 3 === 2 ? mutated.subarray(0, at) : mutated;
      expect(
        outcome(() => decodeRequest(cut, undefined, reuse)),
        `v${v} case ${i}`,
      ).to.deep.equal(outcome(() => decodeRequest(cut)));
    }
  });

  for (const v of [11, 12, 13, 15]) {
    it(`v${v}: a librdkafka-style rotating list of 480 partitions reuses all but the split topics, and a changed offset is never stale`, () => {
      const reuse = new FetchRequestReuse();
      const offsets = new Map<string, bigint>();
      const offsetOf = (t: number, p: number) => offsets.get(`${t}/${p}`) ?? 0n;
      for (let i = 0; i < 130; i++) {
        if (i === 70) offsets.set('7/22', 99n); // a record consumed in the middle of the list
        if (i === 100) offsets.set('11/39', 5n); // and in the last partition
        const frame = frameOf(librdkafkaFetch(12, 40, i, offsetOf), v, i);
        const before = reuse.reused;
        const got = decodeRequest(frame, undefined, reuse);
        expect(got, `request ${i}`).to.deep.equal(decodeRequest(frame));
        const body = got.body as FetchRequest;
        const p22 = body.topics
          .flatMap((t) => (t.topic === 'pc-7' || t.topicId === TOPIC_IDS[7] ? t.partitions : []))
          .find((p) => p.partition === 22);
        expect(p22?.fetchOffset, `request ${i}: partition 7/22`).to.equal(i >= 70 ? 99n : 0n);
        // every topic but the one split at the list's start and end, and one changed since
        if (i > 0 && i !== 70 && i !== 100) expect(reuse.reused - before, `request ${i}`).to.be.at.least(body.topics.length - 3);
      }
    });
  }

  it('a different version decodes afresh (the same bytes mean different fields)', () => {
    const reuse = new FetchRequestReuse();
    const f12 = frameOf(
      librdkafkaFetch(3, 10, 0, () => 0n),
      12,
    );
    decodeRequest(f12, undefined, reuse);
    const decodedBefore = reuse.decoded;
    const f11 = frameOf(
      librdkafkaFetch(3, 10, 0, () => 0n),
      11,
    );
    expect(decodeRequest(f11, undefined, reuse)).to.deep.equal(decodeRequest(f11));
    expect(reuse.decoded - decodedBefore).to.equal(3);
  });
});
