/**
 * A tiny raw TCP Kafka client for tests that need to put exact bytes on the wire: send arbitrary
 * bytes or encoded request frames, read 4-byte size-prefixed responses in order, and observe when the
 * broker closes the connection.
 */
import net from 'node:net';
import { decodeResponse, encodeRequest, type DecodedResponse } from '../../protocol/frame.js';

export interface RawResponse {
  /** the frame without its size prefix (response header + body) */
  frame: Buffer;
  /** when it was complete (performance.now()) */
  at: number;
}

export class RawClient {
  readonly responses: RawResponse[] = [];
  /** performance.now() when the socket closed, or null while open */
  closedAt: number | null = null;
  /** true if the peer reset the connection (ECONNRESET / EPIPE) rather than ending it */
  reset = false;
  private buf: Buffer = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  private nextCorrelation = 1;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      while (this.buf.length >= 4) {
        const size = this.buf.readInt32BE(0);
        if (this.buf.length < 4 + size) break;
        this.responses.push({ frame: this.buf.subarray(4, 4 + size), at: performance.now() });
        this.buf = this.buf.subarray(4 + size);
      }
      this.wake();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') this.reset = true;
    });
    socket.on('close', () => {
      this.closedAt = performance.now();
      this.wake();
    });
  }

  static connect(bootstrap: string): Promise<RawClient> {
    const i = bootstrap.lastIndexOf(':');
    const host = bootstrap.slice(0, i);
    const port = Number(bootstrap.slice(i + 1));
    return new Promise((resolve, reject) => {
      const s = net.connect({ host, port });
      s.setNoDelay(true);
      s.once('connect', () => {
        s.removeListener('error', reject);
        resolve(new RawClient(s));
      });
      s.once('error', reject);
    });
  }

  get closed(): boolean {
    return this.closedAt !== null;
  }

  /** Bytes still buffered that do not make a whole response (a partial frame). */
  get pendingBytes(): number {
    return this.buf.length;
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private waitChange(deadline: number): Promise<boolean> {
    const left = deadline - performance.now();
    if (left <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), left);
      this.waiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /** Writes raw bytes (resolves once handed to the kernel, or on error). */
  write(bytes: Buffer | Uint8Array | string): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.destroyed) {
        resolve();
        return;
      }
      this.socket.write(bytes, () => resolve());
    });
  }

  /** Encodes and sends a request; returns its correlation id. */
  async send(apiKey: number, apiVersion: number, body: unknown, correlationId = this.nextCorrelation++): Promise<number> {
    await this.write(encodeRequest({ apiKey, apiVersion, correlationId, clientId: 'raw-client' }, body, { sizePrefix: true }));
    return correlationId;
  }

  /** Waits until at least `n` responses arrived; throws on timeout or close before that. */
  async waitResponses(n: number, timeoutMs = 5000): Promise<RawResponse[]> {
    const deadline = performance.now() + timeoutMs;
    while (this.responses.length < n) {
      if (this.closed) throw new Error(`connection closed after ${this.responses.length} of ${n} responses`);
      if (!(await this.waitChange(deadline))) throw new Error(`timed out waiting for response ${n} (have ${this.responses.length})`);
    }
    return this.responses.slice(0, n);
  }

  /** Sends a request and decodes its response (the next unread one, in order). */
  async request<T = unknown>(apiKey: number, apiVersion: number, body: unknown, timeoutMs = 5000): Promise<T & { correlationId: number }> {
    const want = this.responses.length + 1;
    const cid = await this.send(apiKey, apiVersion, body);
    const res = (await this.waitResponses(want, timeoutMs))[want - 1]!;
    const decoded = decodeResponse(apiKey, apiVersion, res.frame);
    if (decoded.correlationId !== cid) throw new Error(`correlation id ${decoded.correlationId}, expected ${cid}`);
    return { ...(decoded.body as T), correlationId: cid };
  }

  /** Decodes response i for a given API and version. */
  decode(i: number, apiKey: number, apiVersion: number): DecodedResponse {
    const r = this.responses[i];
    if (r === undefined) throw new Error(`no response ${i}`);
    return decodeResponse(apiKey, apiVersion, r.frame);
  }

  /** Resolves true once the peer has closed the connection, false after timeoutMs. */
  async waitClosed(timeoutMs = 5000): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (!this.closed) if (!(await this.waitChange(deadline))) return this.closed;
    return true;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** A request frame with an arbitrary header (any API key/version) and raw body bytes, size-prefixed. */
export function rawRequestFrame(
  apiKey: number,
  apiVersion: number,
  correlationId: number,
  body: Buffer,
  opts: { clientId?: string; flexibleHeader?: boolean } = {},
): Buffer {
  const clientId = Buffer.from(opts.clientId ?? 'raw-client');
  const header = Buffer.alloc(8 + 2 + clientId.length + (opts.flexibleHeader === true ? 1 : 0));
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(apiVersion, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(clientId.length, 8);
  clientId.copy(header, 10);
  // header v2: an empty tagged-field section (0 = no tags) is already the zero byte at the end
  const size = Buffer.alloc(4);
  size.writeInt32BE(header.length + body.length, 0);
  return Buffer.concat([size, header, body]);
}

/** VmRSS of a process in bytes, from /proc/<pid>/status. */
export async function processRss(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  if (m?.[1] === undefined) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

// ---- convenience requests over a RawClient (fixed, widely supported versions) ----

export const PRODUCE_V = 8;
export const FETCH_V = 11;
export const LIST_OFFSETS_V = 5;

export interface PartitionProduceResult {
  index: number;
  errorCode: number;
  baseOffset: bigint;
}

/** Produce v8 of `batches` (partition → records bytes) to one topic; resolves with the per-partition results. */
/** Produce v8; `timeoutMs` is the request's (how long acks=all may wait), the answer is awaited 5 s past it when given. */
export async function rawProduce(
  c: RawClient,
  topic: string,
  batches: [number, Buffer][],
  acks = 1,
  timeoutMs?: number,
): Promise<PartitionProduceResult[]> {
  const res = await c.request<{ responses: { name: string; partitionResponses: PartitionProduceResult[] }[] }>(
    0,
    PRODUCE_V,
    {
      transactionalId: null,
      acks,
      timeoutMs: timeoutMs ?? 10000,
      topicData: [{ name: topic, partitionData: batches.map(([index, records]) => ({ index, records })) }],
    },
    timeoutMs === undefined ? undefined : timeoutMs + 5000,
  );
  return res.responses.flatMap((t) => t.partitionResponses);
}

export interface RawFetchPartition {
  partitionIndex: number;
  errorCode: number;
  highWatermark: bigint;
  records: Buffer | null;
}

export function fetchBody(
  topic: string,
  partitions: { partition: number; fetchOffset: bigint }[],
  opts: { maxWaitMs?: number; minBytes?: number; maxBytes?: number } = {},
) {
  return {
    replicaId: -1,
    maxWaitMs: opts.maxWaitMs ?? 0,
    minBytes: opts.minBytes ?? 1,
    maxBytes: opts.maxBytes ?? 50 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      {
        topic,
        partitions: partitions.map((p) => ({
          partition: p.partition,
          currentLeaderEpoch: -1,
          fetchOffset: p.fetchOffset,
          logStartOffset: -1n,
          partitionMaxBytes: opts.maxBytes ?? 10 << 20,
        })),
      },
    ],
    forgottenTopicsData: [],
    rackId: '',
  };
}

/** Fetch v11 of one partition; resolves with that partition's data. */
export async function rawFetch(
  c: RawClient,
  topic: string,
  partition: number,
  fetchOffset: bigint,
  opts: { maxWaitMs?: number; minBytes?: number; maxBytes?: number; timeoutMs?: number } = {},
): Promise<RawFetchPartition> {
  const res = await c.request<{ responses: { partitions: RawFetchPartition[] }[] }>(
    1,
    FETCH_V,
    fetchBody(topic, [{ partition, fetchOffset }], opts),
    opts.timeoutMs ?? 10000,
  );
  const p = res.responses[0]?.partitions[0];
  if (p === undefined) throw new Error('empty fetch response');
  return p;
}

/** ListOffsets v5 latest (-1) or earliest (-2) of one partition. */
export async function rawListOffset(c: RawClient, topic: string, partition: number, timestamp = -1n): Promise<bigint> {
  const res = await c.request<{ topics: { partitions: { errorCode: number; offset: bigint }[] }[] }>(2, LIST_OFFSETS_V, {
    replicaId: -1,
    isolationLevel: 0,
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp }] }],
  });
  const p = res.topics[0]?.partitions[0];
  if (p === undefined) throw new Error('empty ListOffsets response');
  if (p.errorCode !== 0) throw new Error(`ListOffsets error ${p.errorCode}`);
  return p.offset;
}

/** Creates topics with CreateTopics v4 (errors other than TOPIC_ALREADY_EXISTS throw). */
export async function rawCreateTopics(
  c: RawClient,
  topics: { name: string; partitions: number; configs?: Record<string, string> }[],
  timeoutMs = 60000,
): Promise<void> {
  const res = await c.request<{ topics: { name: string; errorCode: number; errorMessage?: string | null }[] }>(
    19,
    4,
    {
      topics: topics.map((t) => ({
        name: t.name,
        numPartitions: t.partitions,
        replicationFactor: 1,
        assignments: [],
        configs: Object.entries(t.configs ?? {}).map(([name, value]) => ({ name, value })),
      })),
      timeoutMs: 30000,
      validateOnly: false,
    },
    timeoutMs,
  );
  for (const t of res.topics)
    if (t.errorCode !== 0 && t.errorCode !== 36) throw new Error(`CreateTopics ${t.name}: error ${t.errorCode} ${t.errorMessage ?? ''}`);
}
