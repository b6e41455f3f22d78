/**
 * Turns the fuzz model's frame descriptions into bytes: schema-driven valid requests of any API and
 * version, the same with structural edits (bit flips, truncation, int32/int16 lies, varint overflows,
 * tagged-field garbage), headers with any API key/version, Produce requests carrying record batches
 * with bad CRCs, lengths, counts, magic or compression, raw garbage, TLS and HTTP on the Kafka port.
 * Every frame with a Kafka header carries its correlation id at bytes 8..12 (after the size prefix),
 * so the runner can stamp a fresh one on each copy it sends.
 */
import { encodeRequest } from '../../protocol/frame.js';
import { requestHeaderVersion } from '../../protocol/generated/api-keys.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { crc32c } from '../../protocol/records/native.js';
import { Rng, SCHEMA, randomStruct, type MessageDescriptor } from '../../test/helpers/schema-values.js';
import type { BatchEdit, Edit, FrameSpec, SizeLie } from './model.js';

export const CLIENT_ID = 'gregor-fuzz';
/** The topic fuzzed Produce requests write to (created by the harness; auto-created names are fuzzed too). */
export const FUZZ_TOPIC = 'fuzz-target';

const REQUESTS = new Map<number, MessageDescriptor>();
for (const m of Object.values(SCHEMA)) if (m.kind === 'request' && m.apiKey !== undefined) REQUESTS.set(m.apiKey, m);

/** A rendered frame: the bytes (size prefix included) and what the runner needs to check the answer. */
export interface Rendered {
  bytes: Buffer;
  /** API key and version of the header, when the frame has a well-formed one the broker can answer */
  apiKey: number | null;
  apiVersion: number;
  /** false when the bytes may carry any correlation id (raw garbage): answers cannot be matched */
  structured: boolean;
  /** a Produce with acks=0: no answer is due */
  noResponse: boolean;
}

function headerLength(apiKey: number, v: number): number {
  const hv = requestHeaderVersion(apiKey, v);
  return 8 + (hv >= 1 ? 2 + Buffer.byteLength(CLIENT_ID) : 0) + (hv >= 2 ? 1 : 0);
}

function sized(frame: Buffer, lie: SizeLie): Buffer {
  const size = Buffer.alloc(4);
  let declared = frame.length;
  if (lie.kind === 'delta') declared += lie.delta;
  else if (lie.kind === 'value') declared = lie.value;
  size.writeInt32BE(declared | 0, 0);
  return Buffer.concat([size, frame]);
}

/** A request of `apiKey` v`v` with schema-driven random field values (seeded); null if it cannot encode. */
export function validBody(apiKey: number, v: number, seed: number): Buffer | null {
  const msg = REQUESTS.get(apiKey);
  if (msg === undefined) return null;
  try {
    const rng = new Rng(mixSeed(seed));
    const body = steer(randomStruct(msg, msg.root, v, rng), rng, 0);
    return encodeRequest({ apiKey, apiVersion: v, correlationId: 0, clientId: CLIENT_ID }, body);
  } catch {
    return null;
  }
}

/**
 * fast-check's integers lean towards small values, and a xorshift generator seeded with a small number
 * starts with small outputs (so the schema's arrays came out empty): the seed is scrambled first.
 */
function mixSeed(seed: number): number {
  let x = (seed + 0x9e3779b9) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

const STEER_STRINGS: Record<string, string> = {
  name: FUZZ_TOPIC,
  topic: FUZZ_TOPIC,
  topicName: FUZZ_TOPIC,
  groupId: 'fuzz-group',
  group: 'fuzz-group',
  transactionalId: 'fuzz-txn',
};
const STEER_INDEXES = new Set(['partitionIndex', 'partition', 'index']);

/**
 * Points about half of the schema's random names at things that exist (the fuzz topic, one group, one
 * transactional id, partitions 0 and 1) and gives Produce real record batches, so that requests reach
 * the broker's logic instead of stopping at UNKNOWN_TOPIC_OR_PARTITION.
 */
function steer<T>(v: T, rng: Rng, depth: number): T {
  if (depth > 8 || typeof v !== 'object' || v === null || Buffer.isBuffer(v)) return v;
  if (Array.isArray(v)) {
    for (const x of v) steer(x, rng, depth + 1);
    return v;
  }
  const o = v as Record<string, unknown>;
  for (const [k, x] of Object.entries(o)) {
    const s = STEER_STRINGS[k];
    if (s !== undefined && typeof x === 'string' && rng.next() < 0.5) o[k] = s;
    else if (STEER_INDEXES.has(k) && typeof x === 'number' && rng.next() < 0.6) o[k] = rng.int(0, 1);
    else if (k === 'replicationFactor' && typeof x === 'number' && rng.next() < 0.6) o[k] = rng.pick([-1, 1]);
    else if (k === 'records' && rng.next() < 0.5)
      o[k] = fuzzBatch(rng.int(0, 1e6), rng.int(1, 5), rng.pick([0, 0, 1, 2, 3, 4]), { kind: 'none' });
    else steer(x, rng, depth + 1);
  }
  return v;
}

const VARINT_OVERFLOW = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);

/** Applies structural edits to the body part of a frame (the header stays intact so answers can be matched). */
export function applyEdits(frame: Buffer, bodyStart: number, edits: readonly Edit[], flexible: boolean): Buffer {
  let f = Buffer.from(frame);
  for (const e of edits) {
    const span = Math.max(1, f.length - bodyStart);
    const at = bodyStart + (e.pos % span);
    switch (e.kind) {
      case 'flip':
        if (at < f.length) f[at] = (f[at] ?? 0) ^ (1 << e.bit);
        break;
      case 'truncate':
        f = f.subarray(0, at);
        break;
      case 'insert':
        f = Buffer.concat([f.subarray(0, at), Buffer.from(e.bytes), f.subarray(at)]);
        break;
      case 'int32':
        if (at + 4 <= f.length) f.writeInt32BE(e.value, at);
        break;
      case 'int16':
        if (at + 2 <= f.length) f.writeInt16BE(e.value, at);
        break;
      case 'varintOverflow':
        f = Buffer.concat([f.subarray(0, at), VARINT_OVERFLOW, f.subarray(at + 1)]);
        break;
      case 'taggedGarbage':
        // replaces the body's last byte (the top-level tag section's count in flexible versions)
        if (flexible && f.length > bodyStart) f = Buffer.concat([f.subarray(0, f.length - 1), Buffer.from(e.section)]);
        else f = Buffer.concat([f, Buffer.from(e.section)]);
        break;
    }
  }
  return f;
}

const RECORD_COUNT_AT = 57;
const CRC_AT = 17;
const ATTRIBUTES_AT = 21;

/** A record batch, then one edit that breaks (or keeps) it; `recrc` recomputes the CRC so the edit passes the CRC check. */
export function fuzzBatch(seed: number, records: number, compression: number, edit: BatchEdit): Buffer {
  const rng = new Rng(mixSeed(seed));
  const now = BigInt(Date.now());
  const recs = Array.from({ length: records }, (_, i) => ({
    key: rng.next() < 0.2 ? null : Buffer.from(`k${seed}-${i}`),
    value: Buffer.alloc(rng.int(0, 200), 97 + (i % 26)),
    timestamp: now,
  }));
  let b = buildRecordBatch(recs, { compression });
  const recrc = (): void => {
    b.writeUInt32BE(crc32c(b.subarray(ATTRIBUTES_AT)) >>> 0, CRC_AT);
  };
  switch (edit.kind) {
    case 'none':
      break;
    case 'crc':
      b.writeUInt32BE((b.readUInt32BE(CRC_AT) ^ 0x5a5a5a5a) >>> 0, CRC_AT);
      break;
    case 'batchLength':
      b.writeInt32BE(edit.value, 8);
      break;
    case 'magic':
      b.writeInt8(edit.value, 16);
      break;
    case 'attributes':
      b.writeInt16BE(edit.value, ATTRIBUTES_AT);
      if (edit.recrc) recrc();
      break;
    case 'recordCount':
      b.writeInt32BE(edit.value, RECORD_COUNT_AT);
      if (edit.recrc) recrc();
      break;
    case 'lastOffsetDelta':
      b.writeInt32BE(edit.value, 23);
      if (edit.recrc) recrc();
      break;
    case 'payloadFlip': {
      const at = 61 + (edit.pos % Math.max(1, b.length - 61));
      if (at < b.length) b[at] = (b[at] ?? 0) ^ 0xff;
      if (edit.recrc) recrc();
      break;
    }
    case 'truncate':
      b = b.subarray(0, edit.keep % (b.length + 1));
      break;
    case 'twice':
      b = Buffer.concat([b, b]);
      break;
  }
  return b;
}

function produceFrame(spec: Extract<FrameSpec, { kind: 'produce' }>): Buffer {
  const batch = fuzzBatch(spec.seed, spec.records, spec.compression, spec.edit);
  const body = {
    transactionalId: null,
    acks: spec.acks,
    timeoutMs: 5000,
    topicData: [{ name: spec.topic, partitionData: [{ index: spec.partition, records: batch }] }],
  };
  return encodeRequest({ apiKey: 0, apiVersion: spec.version, correlationId: 0, clientId: CLIENT_ID }, body);
}

/** A TLS 1.2 ClientHello's first bytes (record header + handshake header + some of the hello). */
const TLS_HELLO = Buffer.from('16030100a5010000a10303' + '00'.repeat(32) + '000004c02fc030', 'hex');
const HTTP_GET = Buffer.from('GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n');

export function render(spec: FrameSpec): Rendered {
  switch (spec.kind) {
    case 'valid':
    case 'mutated': {
      const frame = validBody(spec.apiKey, spec.version, spec.seed);
      if (frame === null) return render({ kind: 'garbage', bytes: [0, 0, 0, 0] });
      const flexible = requestHeaderVersion(spec.apiKey, spec.version) >= 2;
      const body = spec.kind === 'valid' ? frame : applyEdits(frame, headerLength(spec.apiKey, spec.version), spec.edits, flexible);
      return {
        bytes: sized(body, spec.kind === 'valid' ? { kind: 'none' } : spec.lie),
        apiKey: spec.apiKey,
        apiVersion: spec.version,
        structured: true,
        noResponse: spec.apiKey === 0 && body.length > 0 && isAcksZero(spec),
      };
    }
    case 'header': {
      const h = Buffer.alloc(8 + 2 + Buffer.byteLength(CLIENT_ID) + (spec.flexibleHeader ? 1 : 0));
      h.writeInt16BE(spec.apiKey, 0);
      h.writeInt16BE(spec.version, 2);
      h.writeInt32BE(0, 4);
      h.writeInt16BE(Buffer.byteLength(CLIENT_ID), 8);
      h.write(CLIENT_ID, 10);
      return {
        bytes: sized(Buffer.concat([h, Buffer.from(spec.body)]), spec.lie),
        apiKey: spec.apiKey,
        apiVersion: spec.version,
        structured: true,
        noResponse: false,
      };
    }
    case 'produce':
      return {
        bytes: sized(produceFrame(spec), { kind: 'none' }),
        apiKey: 0,
        apiVersion: spec.version,
        structured: true,
        noResponse: spec.acks === 0,
      };
    case 'garbage':
      return { bytes: Buffer.from(spec.bytes), apiKey: null, apiVersion: 0, structured: false, noResponse: true };
    case 'tls':
      return { bytes: TLS_HELLO, apiKey: null, apiVersion: 0, structured: false, noResponse: true };
    case 'http':
      return { bytes: HTTP_GET, apiKey: null, apiVersion: 0, structured: false, noResponse: true };
  }
}

/** Produce requests generated from the schema have a random acks; 0 means no answer is due. */
function isAcksZero(spec: Extract<FrameSpec, { kind: 'valid' | 'mutated' }>): boolean {
  const msg = REQUESTS.get(0);
  if (msg === undefined) return false;
  const rng = new Rng(mixSeed(spec.seed));
  const body = steer(randomStruct(msg, msg.root, spec.version, rng), rng, 0);
  return body['acks'] === 0;
}

/** Writes `cid` into a rendered frame that has a Kafka header (bytes 8..12 after the size prefix). */
export function stampCorrelationId(r: Rendered, cid: number): Buffer {
  if (!r.structured || r.bytes.length < 12) return r.bytes;
  const b = Buffer.from(r.bytes);
  b.writeInt32BE(cid, 8);
  return b;
}
