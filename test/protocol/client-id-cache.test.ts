import { expect } from 'chai';
import { GregorErrorCode, ProtocolError } from '../../protocol/codec/errors.js';
import { ClientIdCache, decodeRequest, encodeRequest, readRequestHeaderFrom } from '../../protocol/frame.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';

/** A Metadata request (header v1 at v8, v2 at v12) from `clientId`. */
function metadata(clientId: string | null, apiVersion = 12, correlationId = 1): Buffer {
  return encodeRequest(
    { apiKey: ApiKey.Metadata, apiVersion, correlationId, clientId },
    { topics: null, allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false },
  );
}

function protocolErrorCode(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).to.be.instanceOf(ProtocolError);
    return (e as ProtocolError).code;
  }
  throw new Error('expected a ProtocolError');
}

describe('ClientIdCache (one per connection)', () => {
  it('gives each request its own client id as a connection changes ids', () => {
    const cache = new ClientIdCache();
    // same length, different bytes; empty; null; multi-byte UTF-8; a long id (compared as a block)
    const long = 'c'.repeat(200);
    const ids = ['rdkafka', 'rdkafka', 'rdkafkb', 'rdkafka', '', null, 'rdkafka', 'prodüçer', 'prodüçer', long, `${long.slice(1)}d`, long];
    ids.forEach((id, i) => {
      const frame = metadata(id, i % 2 === 0 ? 12 : 8, i);
      const d = decodeRequest(frame, cache);
      expect(d.header.clientId, `request ${i}`).to.equal(id);
      expect(d.header.correlationId).to.equal(i);
      expect(d).to.deep.equal(decodeRequest(frame), `request ${i} decodes as without the cache`);
    });
  });

  it('keeps a copy of the id, not a view of the frame', () => {
    const cache = new ClientIdCache();
    const first = metadata('abc');
    expect(readRequestHeaderFrom(first, cache).header.clientId).to.equal('abc');
    first.write('xyz', 10, 'latin1'); // the socket chunk is reused for other bytes
    expect(readRequestHeaderFrom(metadata('xyz'), cache).header.clientId).to.equal('xyz');
    expect(readRequestHeaderFrom(metadata('abc'), cache).header.clientId).to.equal('abc');
  });

  it('rejects the same malformed headers as the decoder without a cache', () => {
    const cache = new ClientIdCache();
    const negative = metadata('abc');
    negative.writeInt16BE(-2, 8);
    const tooLong = metadata('abc');
    tooLong.writeInt16BE(tooLong.length, 8);
    const noTags = metadata('abc').subarray(0, 13); // header v2 without its tagged-field count
    for (const [frame, code] of [
      [negative, GregorErrorCode.NEGATIVE_LENGTH],
      [tooLong, GregorErrorCode.LENGTH_EXCEEDS_FRAME],
      [noTags, GregorErrorCode.TRUNCATED],
    ] as const) {
      expect(protocolErrorCode(() => decodeRequest(frame, cache))).to.equal(code);
      expect(protocolErrorCode(() => decodeRequest(frame))).to.equal(code);
    }
    // and a good request after them still decodes
    expect(decodeRequest(metadata('abc'), cache).header.clientId).to.equal('abc');
  });
});
