import { Reader } from '../../protocol/codec/reader.js';
import { apiCodec } from '../../protocol/frame.js';
import { responseHeaderVersion } from '../../protocol/generated/api-keys.js';
import { readResponseHeader } from '../../protocol/generated/data/response-header.js';

/**
 * Decodes a response frame's body, tolerating bytes after it as Kafka's own clients do (the
 * librdkafka mock, for one, ends flexible Metadata responses with a second empty tagged-field section).
 */
export function decodeResponseBody(apiKey: number, version: number, frame: Buffer): unknown {
  const codec = apiCodec(apiKey);
  if (codec === undefined) throw new Error(`no codec for API key ${apiKey}`);
  const r = new Reader(frame);
  readResponseHeader(r, responseHeaderVersion(apiKey, version));
  const body = codec.response.read(r, version);
  r.finish(false);
  return body;
}

/** Bytes of the response header at the start of `frame`. */
export function responseHeaderSize(apiKey: number, version: number, frame: Buffer): number {
  const r = new Reader(frame);
  readResponseHeader(r, responseHeaderVersion(apiKey, version));
  r.check();
  return r.offset;
}
