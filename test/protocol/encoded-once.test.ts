/**
 * EncodedOnce (protocol/codec/writer.ts): a Fetch response topic carrying `_encoded` is encoded once
 * per version and its bytes copied after that. The first encoding equals the plain one; later ones in
 * the same version send the kept bytes (so whoever attaches it must keep the value unchanged, as the
 * Fetch handler's idle answers do); another version encodes afresh; a topic whose records were spliced
 * in (zero-copy) keeps nothing, since those bytes are not in the writer's buffer. The chunked encoder
 * passes kept bytes of at least SPLICE_MIN_BYTES by reference, as it does records.
 */
import { expect } from 'chai';
import { encodeOnce, SPLICE_MIN_BYTES, type RecordsValue } from '../../protocol/codec/writer.js';
import { encodeResponse, encodeResponseChunks } from '../../protocol/frame.js';
import { buffersOf } from '../helpers/chunks.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { FetchResponse, FetchResponseFetchableTopicResponse } from '../../protocol/generated/fetch.js';

const EMPTY = Buffer.alloc(0);

function idleTopic(name: string, highWatermark: bigint, records: RecordsValue = EMPTY): FetchResponseFetchableTopicResponse<RecordsValue> {
  return {
    topic: name,
    topicId: 'ab'.repeat(16),
    partitions: Array.from({ length: 3 }, (_, p) => ({
      partitionIndex: p,
      errorCode: 0,
      highWatermark: highWatermark + BigInt(p),
      lastStableOffset: highWatermark + BigInt(p),
      logStartOffset: 0n,
      abortedTransactions: null,
      preferredReadReplica: -1,
      records,
    })),
  };
}

const response = (...topics: FetchResponseFetchableTopicResponse<RecordsValue>[]): FetchResponse<RecordsValue> => ({
  throttleTimeMs: 0,
  errorCode: 0,
  sessionId: 0,
  responses: topics,
});

const encode = (v: number, body: FetchResponse<RecordsValue>) => encodeResponse(ApiKey.Fetch, v, 7, body);

describe('EncodedOnce: a Fetch response topic encoded once per version', () => {
  for (const v of [4, 11, 12, 16]) {
    it(`v${v}: the first encoding equals the plain one and is kept; later ones send the kept bytes`, () => {
      const kept = { ...idleTopic('t', 5n), _encoded: encodeOnce() };
      const plain = encode(v, response(idleTopic('u', 9n), idleTopic('t', 5n)));
      expect(encode(v, response(idleTopic('u', 9n), kept)).equals(plain)).to.equal(true);
      expect(kept._encoded.version).to.equal(v);
      expect(kept._encoded.bytes).to.not.equal(null);
      // the value changed behind the kept bytes: they are sent all the same (the holder's contract)
      (kept.partitions[0] as { highWatermark: bigint }).highWatermark = 99n;
      expect(encode(v, response(idleTopic('u', 9n), kept)).equals(plain)).to.equal(true);
      // through the chunked (zero-copy) encoder too
      const chunks = buffersOf(encodeResponseChunks(ApiKey.Fetch, v, 7, response(idleTopic('u', 9n), kept)));
      expect(Buffer.concat(chunks).equals(plain)).to.equal(true);
    });
  }

  it('another version encodes the value afresh and keeps that', () => {
    const kept = { ...idleTopic('t', 5n), _encoded: encodeOnce() };
    encode(12, response(kept));
    expect(encode(11, response(kept)).equals(encode(11, response(idleTopic('t', 5n))))).to.equal(true);
    expect(kept._encoded.version).to.equal(11);
    expect(encode(12, response(kept)).equals(encode(12, response(idleTopic('t', 5n))))).to.equal(true);
  });

  it('records spliced in by the chunked encoder: nothing kept, and the output still right', () => {
    const records = Buffer.alloc(SPLICE_MIN_BYTES + 10, 7);
    const kept = { ...idleTopic('t', 5n, records), _encoded: encodeOnce() };
    const chunks = buffersOf(encodeResponseChunks(ApiKey.Fetch, 12, 7, response(kept)));
    expect(Buffer.concat(chunks).equals(encode(12, response(idleTopic('t', 5n, records))))).to.equal(true);
    expect(chunks.some((c) => c.buffer === records.buffer)).to.equal(true);
    expect(kept._encoded.bytes).to.equal(null);
  });

  it('the chunked encoder passes kept bytes of SPLICE_MIN_BYTES or more by reference and copies smaller ones', () => {
    // 3 partitions answer about 130 bytes; a topic of 100 partitions (an idle consumer's) about 4 KB
    const big = (name: string): FetchResponseFetchableTopicResponse<RecordsValue> => {
      const t = idleTopic(name, 5n);
      const p0 = t.partitions[0]!;
      return { ...t, partitions: Array.from({ length: 100 }, (_, p) => ({ ...p0, partitionIndex: p })) };
    };
    const small = { ...idleTopic('s', 5n), _encoded: encodeOnce() };
    const large1 = { ...big('l1'), _encoded: encodeOnce() };
    const large2 = { ...big('l2'), _encoded: encodeOnce() };
    const plain = encode(12, response(big('l1'), idleTopic('s', 5n), big('l2')));
    // the first encoding fills the kept bytes (copied into the writer's buffer)
    expect(Buffer.concat(buffersOf(encodeResponseChunks(ApiKey.Fetch, 12, 7, response(large1, small, large2)))).equals(plain)).to.equal(
      true,
    );
    const l1 = large1._encoded.bytes as Buffer;
    const l2 = large2._encoded.bytes as Buffer;
    expect(l1.length).to.be.at.least(SPLICE_MIN_BYTES);
    expect((small._encoded.bytes as Buffer).length).to.be.below(SPLICE_MIN_BYTES);
    for (let i = 0; i < 2; i++) {
      const chunks = buffersOf(encodeResponseChunks(ApiKey.Fetch, 12, 7, response(large1, small, large2)));
      expect(Buffer.concat(chunks).equals(plain)).to.equal(true);
      expect(chunks.filter((c) => c === l1 || c === l2)).to.have.length(2);
      expect(chunks.some((c) => c === small._encoded.bytes)).to.equal(false);
      // the plain encoder copies them all, with the same bytes
      expect(encode(12, response(large1, small, large2)).equals(plain)).to.equal(true);
    }
  });
});
