/**
 * A minimal Kafka connection built on the project's own protocol codec. The runner uses it for what no
 * client under test should do for itself: probing ApiVersions, seeding topics, reading stored bytes to
 * check what a client really wrote, and sending bad input on purpose.
 */
import net from 'node:net';
import { decodeResponse, encodeRequest } from '../../protocol/frame.js';
import { API_KEYS } from '../../protocol/generated/api-keys.js';
import { errorName, isRetriable } from '../../protocol/generated/error-codes.js';
import { buildRecordBatch } from '../../protocol/records/index.js';

export interface ApiRange {
  apiKey: number;
  name: string;
  minVersion: number;
  maxVersion: number;
}

export function splitHostPort(bootstrap: string): { host: string; port: number } {
  const first = bootstrap.split(',')[0] ?? bootstrap;
  const i = first.lastIndexOf(':');
  return { host: first.slice(0, i), port: Number(first.slice(i + 1)) };
}

export class RawConnection {
  private buf: Buffer = Buffer.alloc(0);
  private readonly frames: Buffer[] = [];
  private waiter: (() => void) | null = null;
  private correlation = 0;
  closed = false;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      while (this.buf.length >= 4 && this.buf.length >= 4 + this.buf.readInt32BE(0)) {
        const size = this.buf.readInt32BE(0);
        this.frames.push(this.buf.subarray(4, 4 + size));
        this.buf = this.buf.subarray(4 + size);
      }
      this.waiter?.();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
  }

  static connect(bootstrap: string, timeoutMs = 5000): Promise<RawConnection> {
    const { host, port } = splitHostPort(bootstrap);
    return new Promise((resolve, reject) => {
      const s = net.connect({ host, port });
      const t = setTimeout(() => {
        s.destroy();
        reject(new Error(`connect to ${bootstrap} timed out`));
      }, timeoutMs);
      s.once('connect', () => {
        clearTimeout(t);
        s.removeAllListeners('error');
        resolve(new RawConnection(s));
      });
      s.once('error', (e) => {
        clearTimeout(t);
        reject(e);
      });
    });
  }

  write(bytes: Buffer): Promise<void> {
    return new Promise((resolve) => (this.socket.destroyed ? resolve() : this.socket.write(bytes, () => resolve())));
  }

  /** Waits for the next response frame, or null if the connection closed (or `timeoutMs` passed). */
  async next(timeoutMs = 10000): Promise<Buffer | null> {
    const deadline = Date.now() + timeoutMs;
    while (this.frames.length === 0 && !this.closed && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, deadline - Date.now());
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.waiter = null;
    }
    return this.frames.shift() ?? null;
  }

  /** Resolves true once the broker closed the connection within `timeoutMs`. */
  async waitClosed(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < deadline) await this.next(deadline - Date.now());
    return this.closed;
  }

  async request<T>(apiKey: number, apiVersion: number, body: unknown, timeoutMs = 15000): Promise<T> {
    const correlationId = ++this.correlation;
    await this.write(encodeRequest({ apiKey, apiVersion, correlationId, clientId: 'gregor-compat' }, body, { sizePrefix: true }));
    const frame = await this.next(timeoutMs);
    if (frame === null)
      throw new Error(
        `no response to ${API_KEYS.get(apiKey)?.name ?? apiKey} v${apiVersion} (connection ${this.closed ? 'closed' : 'timed out'})`,
      );
    const res = decodeResponse(apiKey, apiVersion, frame);
    if (res.correlationId !== correlationId) throw new Error(`correlation id ${res.correlationId}, expected ${correlationId}`);
    return res.body as T;
  }

  close(): void {
    this.socket.destroy();
  }
}

/** One request on a fresh connection. */
export async function rawRequest<T>(bootstrap: string, apiKey: number, apiVersion: number, body: unknown): Promise<T> {
  const c = await RawConnection.connect(bootstrap);
  try {
    return await c.request<T>(apiKey, apiVersion, body);
  } finally {
    c.close();
  }
}

/** The broker's advertised API ranges (ApiVersions v0, which every broker answers). */
export async function probeApiVersions(bootstrap: string): Promise<ApiRange[]> {
  const res = await rawRequest<{ errorCode: number; apiKeys: { apiKey: number; minVersion: number; maxVersion: number }[] }>(
    bootstrap,
    18,
    0,
    {},
  );
  if (res.errorCode !== 0) throw new Error(`ApiVersions error ${res.errorCode}`);
  return res.apiKeys.map((k) => ({ ...k, name: API_KEYS.get(k.apiKey)?.name ?? `api-${k.apiKey}` })).sort((a, b) => a.apiKey - b.apiKey);
}

/** Highest version both we and the broker speak for `apiKey`, capped at `cap`; throws when none. */
export function pickVersion(ranges: ApiRange[], apiKey: number, cap: number): number {
  const r = ranges.find((x) => x.apiKey === apiKey);
  if (r === undefined || r.minVersion > cap)
    throw new Error(`broker does not offer ${API_KEYS.get(apiKey)?.name ?? apiKey} at v${cap} or lower`);
  return Math.min(r.maxVersion, cap);
}

/**
 * Creates a topic with CreateTopics v4 (Kafka 2.4+), replication factor -1: the broker's
 * default.replication.factor, as an admin client that names none gets (1 on a single node, 3 on the
 * suite's 3-broker cluster). An existing topic is fine. Returns once every broker shows it with leaders.
 */
export async function rawCreateTopic(
  bootstrap: string,
  name: string,
  partitions: number,
  configs: Record<string, string> = {},
): Promise<void> {
  const res = await rawRequest<{ topics: { name: string; errorCode: number; errorMessage?: string | null }[] }>(bootstrap, 19, 4, {
    topics: [
      {
        name,
        numPartitions: partitions,
        replicationFactor: -1,
        assignments: [],
        configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })),
      },
    ],
    timeoutMs: 30000,
    validateOnly: false,
  });
  for (const t of res.topics)
    if (t.errorCode !== 0 && t.errorCode !== 36) throw new Error(`CreateTopics ${t.name}: error ${t.errorCode} ${t.errorMessage ?? ''}`);
  await waitForTopic(bootstrap, name, partitions);
}

interface MetadataV1 {
  brokers: { nodeId: number; host: string; port: number }[];
  topics: {
    name: string;
    errorCode: number;
    partitions: { partitionIndex: number; errorCode: number; leaderId: number; replicaNodes: number[] }[];
  }[];
}

const metadataV1 = (bootstrap: string, topics: string[]) =>
  rawRequest<MetadataV1>(bootstrap, 3, 1, { topics: topics.map((name) => ({ name })) });

/** Whether `topic` shows `partitions` partitions, each with a leader, in `md`. */
function ready(md: MetadataV1, topic: string, partitions: number): boolean {
  const t = md.topics.find((x) => x.name === topic);
  return (
    t !== undefined &&
    t.errorCode === 0 &&
    t.partitions.length === partitions &&
    t.partitions.every((p) => p.errorCode === 0 && p.leaderId >= 0)
  );
}

/**
 * Polls Metadata v1 until `topic` shows `partitions` partitions with leaders on every broker of the
 * cluster (each broker answers from its own view of the metadata; one broker in a single-node run).
 */
export async function waitForTopic(bootstrap: string, topic: string, partitions: number, timeoutMs = 10000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const md = await metadataV1(bootstrap, [topic]);
    if (ready(md, topic, partitions)) {
      const views = await Promise.all(md.brokers.map((b) => metadataV1(`${b.host}:${b.port}`, [topic])));
      if (views.every((v) => ready(v, topic, partitions))) return;
    }
    if (Date.now() > deadline) throw new Error(`topic ${topic} not ready with ${partitions} partitions on every broker`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The node ids of the replicas of `topic`-`partition` (Metadata v1). */
export async function partitionReplicas(bootstrap: string, topic: string, partition: number): Promise<number[]> {
  const md = await metadataV1(bootstrap, [topic]);
  const p = md.topics.find((t) => t.name === topic)?.partitions.find((x) => x.partitionIndex === partition);
  if (p === undefined || p.errorCode !== 0) throw new Error(`Metadata of ${topic}-${partition}: error ${p?.errorCode ?? 'missing'}`);
  return p.replicaNodes;
}

/** A Kafka error code a partition answered with. */
class PartitionError extends Error {
  constructor(
    readonly errorCode: number,
    what: string,
  ) {
    super(`${what}: error ${errorCode} ${errorName(errorCode)}`);
  }
}

/**
 * Runs `fn` against the leader of `topic`-`partition` (host:port from the bootstrap broker's Metadata),
 * again while it fails with a retriable partition error (NOT_LEADER_OR_FOLLOWER while a new leader's
 * view catches up, …), for up to 10 s. On a single node the leader is the bootstrap broker itself.
 */
async function atLeader<T>(bootstrap: string, topic: string, partition: number, fn: (leader: string) => Promise<T>): Promise<T> {
  const deadline = Date.now() + 10000;
  for (;;) {
    const md = await metadataV1(bootstrap, [topic]);
    const id = md.topics.find((t) => t.name === topic)?.partitions.find((p) => p.partitionIndex === partition)?.leaderId;
    const b = md.brokers.find((x) => x.nodeId === id);
    try {
      if (b === undefined) throw new PartitionError(5, `${topic}-${partition} has no leader`);
      return await fn(`${b.host}:${b.port}`);
    } catch (e) {
      if (!(e instanceof PartitionError) || !isRetriable(e.errorCode) || Date.now() > deadline) throw e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Writes records with the project's own encoder (Produce v3, one batch per partition, acks=all) to each partition's leader. */
export async function rawProduce(
  bootstrap: string,
  topic: string,
  records: { partition: number; key: string | null; value: string; timestamp: number }[],
): Promise<void> {
  const byPartition = new Map<number, typeof records>();
  for (const r of records) byPartition.set(r.partition, [...(byPartition.get(r.partition) ?? []), r]);
  for (const [index, rs] of byPartition) {
    const batch = buildRecordBatch(
      rs.map((r) => ({ key: r.key === null ? null : Buffer.from(r.key), value: Buffer.from(r.value), timestamp: BigInt(r.timestamp) })),
    );
    await atLeader(bootstrap, topic, index, async (leader) => {
      const res = await rawRequest<{ responses: { partitionResponses: { index: number; errorCode: number }[] }[] }>(leader, 0, 3, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 10000,
        topicData: [{ name: topic, partitionData: [{ index, records: batch }] }],
      });
      const p = res.responses[0]?.partitionResponses[0];
      if (p === undefined || p.errorCode !== 0) throw new PartitionError(p?.errorCode ?? -1, `seed produce to ${topic}-${index}`);
    });
  }
}

/** ListOffsets v1 at the partition's leader: earliest (-2), latest (-1) or by timestamp. */
export async function rawListOffset(bootstrap: string, topic: string, partition: number, timestamp: number): Promise<number> {
  return atLeader(bootstrap, topic, partition, async (leader) => {
    const res = await rawRequest<{ topics: { partitions: { errorCode: number; offset: bigint }[] }[] }>(leader, 2, 1, {
      replicaId: -1,
      topics: [{ name: topic, partitions: [{ partitionIndex: partition, timestamp: BigInt(timestamp) }] }],
    });
    const p = res.topics[0]?.partitions[0];
    if (p === undefined || p.errorCode !== 0) throw new PartitionError(p?.errorCode ?? -1, `ListOffsets ${topic}-${partition}`);
    return Number(p.offset);
  });
}

interface FetchedPartition {
  errorCode: number;
  highWatermark: bigint;
  lastStableOffset?: bigint;
  abortedTransactions?: { producerId?: bigint; firstOffset?: bigint }[] | null;
  records: Buffer | null;
}

/** Fetch v4 of a partition from offset 0 at `leader` (stored bytes, no down-conversion), at the isolation level given. */
async function fetchV4(leader: string, topic: string, partition: number, isolationLevel: 0 | 1): Promise<FetchedPartition> {
  const res = await rawRequest<{ responses: { partitions: FetchedPartition[] }[] }>(leader, 1, 4, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 16 << 20,
    isolationLevel,
    topics: [{ topic, partitions: [{ partition, fetchOffset: 0n, partitionMaxBytes: 16 << 20 }] }],
  });
  const p = res.responses[0]?.partitions[0];
  if (p === undefined || p.errorCode !== 0)
    throw new PartitionError(p?.errorCode ?? -1, `Fetch v4${isolationLevel === 1 ? ' read_committed' : ''} ${topic}-${partition}`);
  return p;
}

/** The raw record bytes of a partition from offset 0, from its leader (Fetch v4: stored bytes, no down-conversion). */
export async function rawFetchBytes(bootstrap: string, topic: string, partition: number): Promise<Buffer> {
  return atLeader(bootstrap, topic, partition, async (leader) => (await fetchV4(leader, topic, partition, 0)).records ?? Buffer.alloc(0));
}

export interface ReadCommittedView {
  highWatermark: number;
  lastStableOffset: number;
  /** the aborted-transaction list a read_committed Fetch from offset 0 returns */
  aborted: { producerId: number; firstOffset: number }[];
  /** ListOffsets v2 latest with isolation_level=read_committed */
  latestCommitted: number;
}

/** How the partition's leader presents it to read_committed consumers (Fetch v4 and ListOffsets v2, isolation level 1). */
export async function rawReadCommittedView(bootstrap: string, topic: string, partition: number): Promise<ReadCommittedView> {
  return atLeader(bootstrap, topic, partition, async (leader) => {
    const p = await fetchV4(leader, topic, partition, 1);
    const l = await rawRequest<{ topics: { partitions: { errorCode: number; offset?: bigint }[] }[] }>(leader, 2, 2, {
      replicaId: -1,
      isolationLevel: 1,
      topics: [{ name: topic, partitions: [{ partitionIndex: partition, timestamp: -1n }] }],
    });
    const o = l.topics[0]?.partitions[0];
    if (o === undefined || o.errorCode !== 0)
      throw new PartitionError(o?.errorCode ?? -1, `ListOffsets v2 read_committed ${topic}-${partition}`);
    return {
      highWatermark: Number(p.highWatermark),
      lastStableOffset: Number(p.lastStableOffset ?? -1n),
      aborted: (p.abortedTransactions ?? []).map((a) => ({
        producerId: Number(a.producerId ?? -1n),
        firstOffset: Number(a.firstOffset ?? -1n),
      })),
      latestCommitted: Number(o.offset ?? -1n),
    };
  });
}

/**
 * Broker-level config values of the first broker of Metadata v1, asked of that broker (as Kafka wants a
 * broker resource described by the broker itself); null for names it does not know.
 */
export async function rawBrokerConfigs(bootstrap: string, names: string[]): Promise<Record<string, string | null>> {
  const md = await metadataV1(bootstrap, []);
  const broker = md.brokers[0];
  if (broker === undefined) throw new Error('Metadata listed no broker');
  const res = await rawRequest<{
    results: { errorCode: number; errorMessage: string | null; configs: { name: string; value: string | null }[] }[];
  }>(`${broker.host}:${broker.port}`, 32, 1, {
    resources: [{ resourceType: 4, resourceName: String(broker.nodeId), configurationKeys: names }],
    includeSynonyms: false,
  });
  const r = res.results[0];
  if (r === undefined || r.errorCode !== 0)
    throw new Error(`DescribeConfigs of broker ${broker.nodeId}: error ${r?.errorCode} ${r?.errorMessage ?? ''}`);
  return Object.fromEntries(names.map((n) => [n, r.configs.find((c) => c.name === n)?.value ?? null]));
}
