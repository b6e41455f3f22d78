/**
 * Fetch request decoding that reuses, per connection, the topics of the previous Fetch whose bytes
 * are unchanged. A sessionless consumer (librdkafka: session id 0, epoch -1, always) names every
 * assigned partition in every Fetch; an idle one on 10,000 partitions sends the same entries again
 * and again (librdkafka only rotates the list's start by one partition per Fetch), and decoding them
 * (an object and two bigints per partition) was the largest part of what an idle long poll costs.
 *
 * Each topic block is first measured (a walk over its fixed-width fields and tagged-field sections,
 * no allocation), then compared byte for byte with the blocks of the previous request near the same
 * position; an equal block yields the object decoded from it last time (equal bytes decode to equal
 * values, so no staleness is possible), a different one is decoded by the generated reader and kept
 * for the next request. The decoded request is the generated reader's in every field; callers must
 * treat it as read-only (reused topics are shared between requests of one connection).
 */
import { GregorErrorCode } from './codec/errors.js';
import type { Reader, TaggedField } from './codec/reader.js';
import * as RT from './codec/runtime.js';
import {
  defaultFetchRequestReplicaState,
  type FetchRequest,
  type FetchRequestFetchTopic,
  type FetchRequestForgottenTopic,
  type FetchRequestReplicaState,
  readFetchRequestFetchTopic,
  readFetchRequestForgottenTopic,
  readFetchRequestReplicaState,
} from './generated/fetch.js';

interface TopicBlock {
  /** the topic's bytes as received (a copy) */
  readonly bytes: Buffer;
  readonly topic: FetchRequestFetchTopic;
}

/** Partition fields of fixed width in version `v`: partition, current leader epoch, fetch offset, last fetched epoch, log start offset, max bytes. */
function partitionFixedBytes(v: number): number {
  return 4 + (v >= 9 ? 4 : 0) + 8 + (v >= 12 ? 4 : 0) + (v >= 5 ? 8 : 0) + 4;
}

/** A small cursor for measuring: -1 once anything runs past `end`. */
let pos = 0;

function uvarintAt(buf: Buffer, end: number): number {
  let result = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (pos >= end) return -1;
    const b = buf[pos++] as number;
    result += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return result;
  }
  return -1;
}

/** Skips a tagged-field section at `pos`; false when it runs past `end`. */
function skipTags(buf: Buffer, end: number): boolean {
  const count = uvarintAt(buf, end);
  if (count < 0) return false;
  for (let i = 0; i < count; i++) {
    if (uvarintAt(buf, end) < 0) return false;
    const size = uvarintAt(buf, end);
    if (size < 0 || pos + size > end) return false;
    pos += size;
  }
  return true;
}

/** Where the topic block starting at `start` ends, or -1 (malformed or truncated: the generated reader then says why). */
export function fetchTopicEnd(buf: Buffer, start: number, end: number, v: number): number {
  pos = start;
  const flexible = v >= 12;
  if (v >= 13) pos += 16;
  else if (flexible) {
    const n = uvarintAt(buf, end);
    if (n < 1) return -1;
    pos += n - 1;
  } else {
    if (pos + 2 > end) return -1;
    const n = buf.readInt16BE(pos);
    if (n < 0) return -1;
    pos += 2 + n;
  }
  let count: number;
  if (flexible) {
    count = uvarintAt(buf, end) - 1;
  } else {
    if (pos + 4 > end) return -1;
    count = buf.readInt32BE(pos);
    pos += 4;
  }
  if (count < 0 || pos > end) return -1;
  const fixed = partitionFixedBytes(v);
  for (let i = 0; i < count; i++) {
    pos += fixed;
    if (pos > end) return -1;
    if (flexible && !skipTags(buf, end)) return -1;
  }
  if (flexible && !skipTags(buf, end)) return -1;
  return pos > end ? -1 : pos;
}

/** One connection's memory of its last Fetch's topic blocks (see the module's comment). */
export class FetchRequestReuse {
  private version = -1;
  private blocks: TopicBlock[] = [];
  /** topics decoded afresh, and reused, since the start (tests and diagnostics) */
  decoded = 0;
  reused = 0;

  /** Reads a Fetch request body of version `v`, as readFetchRequest does. */
  read(r: Reader, v: number): FetchRequest {
    const replicaId = v <= 14 ? r.int32() : -1;
    const maxWaitMs = r.int32();
    const minBytes = r.int32();
    const maxBytes = v >= 3 ? r.int32() : 2147483647;
    const isolationLevel = v >= 4 ? r.int8() : 0;
    const sessionId = v >= 7 ? r.int32() : 0;
    const sessionEpoch = v >= 7 ? r.int32() : -1;
    const topics = this.readTopics(r, v);
    const forgottenTopicsData: FetchRequestForgottenTopic[] =
      v >= 7 ? RT.readArrayNonNull(r, v >= 12, (ir: Reader) => readFetchRequestForgottenTopic(ir, v)) : [];
    const rackId = v >= 11 ? (v >= 12 ? r.compactString() : r.string()) : '';
    let clusterId: string | null = null;
    let replicaState: FetchRequestReplicaState = defaultFetchRequestReplicaState();
    let unknown: TaggedField[] | undefined;
    if (v >= 12) {
      const tc = r.uvarint();
      if (tc !== 0)
        unknown = r.taggedFieldsOf(tc, (tag, tr) => {
          if (tag === 0) clusterId = tr.compactNullableString();
          else if (tag === 1 && v >= 15) replicaState = readFetchRequestReplicaState(tr, v);
          else return false;
          return true;
        });
    }
    const m: FetchRequest = {
      clusterId,
      replicaId,
      replicaState,
      maxWaitMs,
      minBytes,
      maxBytes,
      isolationLevel,
      sessionId,
      sessionEpoch,
      topics,
      forgottenTopicsData,
      rackId,
    };
    if (unknown !== undefined) m._unknownTaggedFields = unknown;
    return m;
  }

  private readTopics(r: Reader, v: number): FetchRequestFetchTopic[] {
    const n = v >= 12 ? r.compactArrayLength() : r.arrayLength();
    if (n < 0) {
      r.fail(GregorErrorCode.NULL_NOT_ALLOWED, 'null array in a non-nullable field');
      return [];
    }
    const prev = this.version === v ? this.blocks : [];
    const next: TopicBlock[] = [];
    const out: FetchRequestFetchTopic[] = [];
    const buf = r.buf;
    for (let i = 0; i < n && r.error === undefined; i++) {
      const start = r.offset;
      const end = fetchTopicEnd(buf, start, r.end, v);
      // the block at the same place last time, or one off (the list's start moved past a topic boundary)
      const same =
        end < 0
          ? undefined
          : (sameBlock(prev[i], buf, start, end) ??
            sameBlock(prev[i + 1], buf, start, end) ??
            // prev[-1] would be a named-property lookup through V8's runtime (~1 µs), not an element load
            (i > 0 ? sameBlock(prev[i - 1], buf, start, end) : undefined));
      if (same !== undefined) {
        r.offset = end;
        this.reused++;
        next.push(same);
        out.push(same.topic);
        continue;
      }
      const topic = readFetchRequestFetchTopic(r, v);
      out.push(topic);
      this.decoded++;
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the read sets r.error, which narrowing does not see
      if (r.error === undefined) next.push({ bytes: Buffer.from(buf.subarray(start, r.offset)), topic });
    }
    this.version = v;
    this.blocks = next;
    return out;
  }
}

/** Blocks up to this many bytes are compared in a loop here; longer ones with Buffer.compare (a native call). */
const LOOP_COMPARE_MAX = 96;

function sameBlock(b: TopicBlock | undefined, buf: Buffer, start: number, end: number): TopicBlock | undefined {
  if (b === undefined) return undefined;
  const bytes = b.bytes;
  const n = end - start;
  if (bytes.length !== n) return undefined;
  if (n > LOOP_COMPARE_MAX) return bytes.compare(buf, start, end) === 0 ? b : undefined;
  // from the end: a one-partition block that changed differs in its fetch offset, past the topic's id or name
  for (let i = n - 1; i >= 0; i--) if (bytes[i] !== buf[start + i]) return undefined;
  return b;
}

const reuses = new WeakMap<object, FetchRequestReuse>();

/** The Fetch decoding memory of a connection (any object that lives as long as it), made on first use. */
export function fetchRequestReuseFor(conn: object): FetchRequestReuse {
  let f = reuses.get(conn);
  if (f === undefined) reuses.set(conn, (f = new FetchRequestReuse()));
  return f;
}
