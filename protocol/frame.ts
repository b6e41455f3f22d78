/**
 * Whole frames: request/response header + body, for any API and version. Frames here exclude the 4-byte
 * size prefix unless `sizePrefix` is asked for.
 */
import { GregorErrorCode, ProtocolError } from './codec/errors.js';
import { Reader, type TaggedField } from './codec/reader.js';
import { type Chunk, takeSplicedBytes, Writer } from './codec/writer.js';
import { requestHeaderVersion, responseHeaderVersion } from './generated/api-keys.js';
import { readRequestHeader, sizeRequestHeader, writeRequestHeader } from './generated/data/request-header.js';
import { readResponseHeader, sizeResponseHeader, writeResponseHeader } from './generated/data/response-header.js';
import { API_CODECS, type ApiCodec } from './generated/index.js';
import { ApiKey } from './generated/api-keys.js';
import type { FetchRequestReuse } from './fetch-request-reuse.js';

export interface RequestHeaderInfo {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
  /** Request header version used on the wire (0, 1 or 2). */
  headerVersion: number;
  taggedFields?: TaggedField[];
}

export interface DecodedRequest {
  header: RequestHeaderInfo;
  body: unknown;
  /** Bytes left after the body (tolerated, as Kafka does). */
  trailingBytes: number;
}

export interface DecodedResponse {
  correlationId: number;
  headerVersion: number;
  taggedFields?: TaggedField[];
  body: unknown;
}

/** The first fields of any request header, readable before the API is known. Null when under 8 bytes. */
export function peekRequestHeader(frame: Buffer): { apiKey: number; apiVersion: number; correlationId: number } | null {
  if (frame.length < 8) return null;
  return { apiKey: frame.readInt16BE(0), apiVersion: frame.readInt16BE(2), correlationId: frame.readInt32BE(4) };
}

export function apiCodec(apiKey: number): ApiCodec | undefined {
  return API_CODECS.get(apiKey);
}

/**
 * Loads the codec module of `apiKey` now, if it is not loaded yet (the registry otherwise loads each
 * API's module on its first use); false for an unknown key.
 */
export function preloadCodec(apiKey: number): boolean {
  const codec = API_CODECS.get(apiKey);
  // the entry's request getter loads the module (and replaces both getters with the codec's sides)
  return codec !== undefined && typeof codec.request === 'object';
}

function codecFor(apiKey: number, apiVersion: number): ApiCodec {
  const codec = API_CODECS.get(apiKey);
  if (codec === undefined) throw new ProtocolError(GregorErrorCode.UNKNOWN_API_KEY, `unknown API key ${apiKey}`);
  if (apiVersion < codec.minVersion || apiVersion > codec.maxVersion) {
    throw new ProtocolError(
      GregorErrorCode.UNSUPPORTED_VERSION,
      `${codec.name} v${apiVersion} is outside ${codec.minVersion}-${codec.maxVersion}`,
    );
  }
  return codec;
}

/**
 * The client id a connection last sent, so that its next requests, which nearly always repeat it, get
 * the same string back without decoding it: the id's bytes are compared with the last ones (kept as a
 * copy, so no socket chunk is held), and decoded only when they differ.
 */
export class ClientIdCache {
  private bytes: Buffer | null = null;
  private value = '';

  /** The client id stored (UTF-8) in frame[start, start + length), which the caller has bounds-checked. */
  get(frame: Buffer, start: number, length: number): string {
    const last = this.bytes;
    if (last?.length === length && sameBytes(frame, start, last)) return this.value;
    this.value = frame.toString('utf8', start, start + length);
    this.bytes = Buffer.from(frame.subarray(start, start + length));
    return this.value;
  }
}

function sameBytes(frame: Buffer, start: number, b: Buffer): boolean {
  if (b.length > 32) return frame.compare(b, 0, b.length, start, start + b.length) === 0;
  for (let i = 0; i < b.length; i++) if (frame[start + i] !== b[i]) return false;
  return true;
}

/**
 * Reads the request header; returns it and a reader positioned at the body. With `clientIds` (one per
 * connection) the client id is taken from the cache when its bytes repeat.
 */
export function readRequestHeaderFrom(frame: Buffer, clientIds?: ClientIdCache): { header: RequestHeaderInfo; reader: Reader } {
  const peek = peekRequestHeader(frame);
  if (peek === null) throw new ProtocolError(GregorErrorCode.TRUNCATED, `request frame of ${frame.length} bytes has no header`);
  const hv = requestHeaderVersion(peek.apiKey, peek.apiVersion);
  if (clientIds !== undefined && hv >= 1 && frame.length >= 10) {
    // Header v1/v2 as readRequestHeader reads it, the client id through the cache. An id of any
    // other length than -1 (null) or one that fits in the frame takes the generic path for its error.
    const n = frame.readInt16BE(8);
    if (n >= -1 && 10 + n <= frame.length) {
      const r = new Reader(frame, 10);
      const header: RequestHeaderInfo = {
        apiKey: peek.apiKey,
        apiVersion: peek.apiVersion,
        correlationId: peek.correlationId,
        clientId: n === -1 ? null : clientIds.get(frame, 10, n),
        headerVersion: hv,
      };
      if (n > 0) r.offset += n;
      if (hv >= 2) {
        const tagged = r.taggedFields();
        if (tagged !== undefined) header.taggedFields = tagged;
      }
      r.check();
      return { header, reader: r };
    }
  }
  const r = new Reader(frame);
  const h = readRequestHeader(r, hv);
  r.check();
  const header: RequestHeaderInfo = {
    apiKey: h.requestApiKey,
    apiVersion: h.requestApiVersion,
    correlationId: h.correlationId,
    clientId: h.clientId ?? null,
    headerVersion: hv,
  };
  if (h._unknownTaggedFields !== undefined) header.taggedFields = h._unknownTaggedFields;
  return { header, reader: r };
}

/**
 * Decodes a whole request frame. Unknown APIs and versions raise UNKNOWN_API_KEY / UNSUPPORTED_VERSION.
 * `clientIds`: the connection's client-id cache (readRequestHeaderFrom); `fetchReuse`: the
 * connection's memory of its last Fetch, whose unchanged topics a Fetch then reuses (fetch-request-reuse.ts).
 */
export function decodeRequest(frame: Buffer, clientIds?: ClientIdCache, fetchReuse?: FetchRequestReuse): DecodedRequest {
  const peek = peekRequestHeader(frame);
  if (peek === null) throw new ProtocolError(GregorErrorCode.TRUNCATED, `request frame of ${frame.length} bytes has no header`);
  const codec = codecFor(peek.apiKey, peek.apiVersion);
  const { header, reader } = readRequestHeaderFrom(frame, clientIds);
  const body =
    fetchReuse !== undefined && header.apiKey === ApiKey.Fetch
      ? fetchReuse.read(reader, header.apiVersion)
      : codec.request.read(reader, header.apiVersion);
  // Kafka ignores bytes after a complete request body, and some clients rely on it (librdkafka 2.15 sends
  // Metadata v9+ "all topics" requests with a 4-byte placeholder where a 1-byte compact null belongs).
  reader.finish(false);
  return { header, body, trailingBytes: reader.remaining };
}

export interface EncodeRequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
  taggedFields?: TaggedField[];
}

/** Encodes a request frame (header + body), optionally with the 4-byte size prefix. */
export function encodeRequest(header: EncodeRequestHeader, body: unknown, opts: { sizePrefix?: boolean } = {}): Buffer {
  const codec = codecFor(header.apiKey, header.apiVersion);
  const hv = requestHeaderVersion(header.apiKey, header.apiVersion);
  const h = {
    requestApiKey: header.apiKey,
    requestApiVersion: header.apiVersion,
    correlationId: header.correlationId,
    clientId: header.clientId,
    ...(header.taggedFields !== undefined ? { _unknownTaggedFields: header.taggedFields } : {}),
  };
  const prefix = opts.sizePrefix === true ? 4 : 0;
  const size = sizeRequestHeader(h, hv) + codec.request.size(body as never, header.apiVersion);
  const w = Writer.alloc(prefix + size);
  if (prefix !== 0) w.int32(size);
  writeRequestHeader(w, h, hv);
  codec.request.write(w, body as never, header.apiVersion);
  return w.done();
}

/** Decodes a response frame for a known API and version. */
export function decodeResponse(apiKey: number, apiVersion: number, frame: Buffer): DecodedResponse {
  const codec = codecFor(apiKey, apiVersion);
  const hv = responseHeaderVersion(apiKey, apiVersion);
  const r = new Reader(frame);
  const h = readResponseHeader(r, hv);
  const body = codec.response.read(r, apiVersion);
  r.finish(true);
  const out: DecodedResponse = { correlationId: h.correlationId, headerVersion: hv, body };
  if (h._unknownTaggedFields !== undefined) out.taggedFields = h._unknownTaggedFields;
  return out;
}

/** Encodes a response frame, optionally with the 4-byte size prefix (what goes on the socket). */
export function encodeResponse(
  apiKey: number,
  apiVersion: number,
  correlationId: number,
  body: unknown,
  opts: { sizePrefix?: boolean; taggedFields?: TaggedField[] } = {},
): Buffer {
  return writeResponse(apiKey, apiVersion, correlationId, body, opts, false).done();
}

/**
 * encodeResponse() as a list of buffers: the header and fields encoded, and the stored record
 * slices of `records` fields (W.RecordsValue) spliced in as they are, not copied (runs under
 * SPLICE_MIN_BYTES are copied). The same bytes as encodeResponse() in order; one buffer when nothing
 * was spliced.
 */
export function encodeResponseChunks(
  apiKey: number,
  apiVersion: number,
  correlationId: number,
  body: unknown,
  opts: { sizePrefix?: boolean; taggedFields?: TaggedField[] } = {},
): Chunk[] {
  return writeResponse(apiKey, apiVersion, correlationId, body, opts, true).doneChunks();
}

function writeResponse(
  apiKey: number,
  apiVersion: number,
  correlationId: number,
  body: unknown,
  opts: { sizePrefix?: boolean; taggedFields?: TaggedField[] },
  splice: boolean,
): Writer {
  const codec = codecFor(apiKey, apiVersion);
  const hv = responseHeaderVersion(apiKey, apiVersion);
  const h = { correlationId, ...(opts.taggedFields !== undefined ? { _unknownTaggedFields: opts.taggedFields } : {}) };
  const prefix = opts.sizePrefix === true ? 4 : 0;
  if (splice) takeSplicedBytes(); // drops a count another size pass left
  const size = sizeResponseHeader(h, hv) + codec.response.size(body as never, apiVersion);
  const w = splice ? Writer.splicing(prefix + size, takeSplicedBytes()) : Writer.alloc(prefix + size);
  if (prefix !== 0) w.int32(size);
  writeResponseHeader(w, h, hv);
  codec.response.write(w, body as never, apiVersion);
  return w;
}
