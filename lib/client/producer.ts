/**
 * A simple producer for one topic: records are partitioned (explicit, murmur2 of the key as Kafka's
 * default partitioner, or round-robin per batch when unkeyed), batched per partition, and sent to
 * each leader. Flushes are serialized, so records of a partition keep their order. Not idempotent:
 * a retried batch whose first attempt did land is written twice (as with enable.idempotence=false).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ProduceResponse } from '../../protocol/generated/produce.js';
import { buildRecordBatch, buildMessageSet, CompressionCodec, type RecordHeader } from '../../protocol/records/index.js';
import type { KafkaClient } from './client.js';
import type { BrokerConnection } from './connection.js';
import { ClientError, ClientErrorCode, kafkaError } from './errors.js';
import { partitionForKey } from './murmur2.js';
import { isLeaderError } from './offsets.js';

export interface ProduceRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
  /** default: now */
  timestamp?: bigint;
  /** default: the producer's partition, else chosen by key */
  partition?: number;
}

export interface ProducerOptions {
  /** -1 (all), 0 or 1 */
  acks: number;
  compression: number;
  /** every record goes here when set */
  partition?: number;
  /** records of a partition are sent once this many bytes are waiting (default 1 MiB) */
  batchBytes?: number;
  /** a batch waits at most this long for more records (default 5 ms) */
  lingerMs?: number;
  timeoutMs?: number;
}

export interface PartitionStats {
  partition: number;
  records: number;
  /** -1 with acks=0 */
  firstOffset: bigint;
  lastOffset: bigint;
}

interface Pending {
  records: ProduceRecord[];
  bytes: number;
}

const RETRIABLE_PRODUCE: ReadonlySet<number> = new Set([
  ErrorCode.NOT_ENOUGH_REPLICAS,
  ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
  ErrorCode.REQUEST_TIMED_OUT,
  ErrorCode.KAFKA_STORAGE_ERROR,
]);
const MAX_ATTEMPTS = 5;

export class Producer {
  private partitions = 0;
  private readonly pending = new Map<number, Pending>();
  private pendingBytes = 0;
  private rr = 0;
  private chain: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  private linger: NodeJS.Timeout | null = null;
  readonly stats = new Map<number, PartitionStats>();
  /** records acknowledged (or written, with acks=0) */
  sent = 0;
  sentBytes = 0;

  constructor(
    private readonly client: KafkaClient,
    readonly topic: string,
    private readonly opts: ProducerOptions,
  ) {}

  /** Reads the topic's partitions; throws NOT_FOUND when the topic does not exist. */
  async init(): Promise<void> {
    const t = await this.client.topic(this.topic);
    this.partitions = t.partitions.length;
    if (this.opts.partition !== undefined) this.client.partition(t, this.opts.partition);
  }

  private choose(rec: ProduceRecord): number {
    const explicit = rec.partition ?? this.opts.partition;
    if (explicit !== undefined) {
      if (explicit < 0 || explicit >= this.partitions) {
        throw new ClientError(
          ClientErrorCode.NOT_FOUND,
          `partition ${this.topic}-${explicit} does not exist (the topic has ${this.partitions}): UNKNOWN_TOPIC_OR_PARTITION (3)`,
          { kafkaCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION },
        );
      }
      return explicit;
    }
    if (rec.key !== null) return partitionForKey(rec.key, this.partitions);
    return this.rr % this.partitions;
  }

  /** Queues a record; resolves at once unless enough is waiting to send (then after that flush). */
  async add(rec: ProduceRecord): Promise<void> {
    if (this.failure !== null) throw this.failure;
    const p = this.choose(rec);
    let q = this.pending.get(p);
    if (q === undefined) this.pending.set(p, (q = { records: [], bytes: 0 }));
    q.records.push(rec);
    const size =
      20 +
      (rec.key?.length ?? 0) +
      (rec.value?.length ?? 0) +
      rec.headers.reduce((n, h) => n + h.key.length + (h.value?.length ?? 0) + 4, 0);
    q.bytes += size;
    this.pendingBytes += size;
    if (this.pendingBytes >= (this.opts.batchBytes ?? 1 << 20)) {
      await this.flush();
      return;
    }
    if (this.linger === null) {
      this.linger = setTimeout(() => {
        this.linger = null;
        this.flush().catch(() => undefined); // kept in this.failure
      }, this.opts.lingerMs ?? 5);
    }
  }

  /** Sends everything queued; rejects with the first failure. */
  flush(): Promise<void> {
    if (this.linger !== null) {
      clearTimeout(this.linger);
      this.linger = null;
    }
    const batch = new Map(this.pending);
    this.pending.clear();
    this.pendingBytes = 0;
    this.rr++;
    const run = this.chain.then(() => {
      if (this.failure !== null) throw this.failure;
      return this.send(batch);
    });
    this.chain = run.catch((e: unknown) => {
      this.failure ??= e instanceof Error ? e : new Error(String(e));
    });
    return run;
  }

  private encode(version: number, records: ProduceRecord[]): Buffer {
    const now = BigInt(Date.now());
    if (version >= 3) {
      return buildRecordBatch(
        records.map((r) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp ?? now })),
        { compression: this.opts.compression },
      );
    }
    if (records.some((r) => r.headers.length > 0)) {
      throw new ClientError(
        ClientErrorCode.UNSUPPORTED_API,
        `the broker only speaks Produce v${version} (message format before 0.11): record headers are not supported`,
        { api: 'Produce' },
      );
    }
    if (this.opts.compression === CompressionCodec.ZSTD) {
      throw new ClientError(ClientErrorCode.UNSUPPORTED_API, `the broker only speaks Produce v${version}: zstd needs v7 or later`, {
        api: 'Produce',
      });
    }
    return buildMessageSet(
      records.map((r) => ({ key: r.key, value: r.value, timestamp: r.timestamp ?? now })),
      { magic: version >= 2 ? 1 : 0, compression: this.opts.compression },
    );
  }

  private async send(batch: Map<number, Pending>): Promise<void> {
    let todo = [...batch].filter(([, q]) => q.records.length > 0);
    for (let attempt = 1; todo.length > 0; attempt++) {
      const byLeader = new Map<BrokerConnection, [number, Pending][]>();
      for (const entry of todo) {
        const c = await this.client.leader(this.topic, entry[0], attempt > 1);
        byLeader.set(c, [...(byLeader.get(c) ?? []), entry]);
      }
      const retry: [number, Pending][] = [];
      // assigned inside the per-partition callbacks below, which control-flow narrowing does not see
      let lastError = null as ClientError | null;
      await Promise.all(
        [...byLeader].map(async ([c, entries]) => {
          try {
            await this.sendTo(c, entries, attempt, retry);
          } catch (e) {
            if (e instanceof ClientError && e.code === ClientErrorCode.DISCONNECTED && attempt < MAX_ATTEMPTS) {
              retry.push(...entries);
              lastError = e;
              return;
            }
            throw e;
          }
        }),
      );
      todo = retry;
      if (todo.length > 0) {
        if (attempt >= MAX_ATTEMPTS)
          throw lastError ?? new ClientError(ClientErrorCode.GAVE_UP, `gave up producing to ${this.topic} after ${attempt} attempts`);
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
  }

  private async sendTo(c: BrokerConnection, entries: [number, Pending][], attempt: number, retry: [number, Pending][]): Promise<void> {
    const acks = this.opts.acks;
    const version = c.version(ApiKey.Produce);
    const partitionData = entries.map(([index, q]) => ({ index, records: this.encode(version, q.records) }));
    const res = await c.request<ProduceResponse>(
      ApiKey.Produce,
      () => ({ transactionalId: null, acks, timeoutMs: this.opts.timeoutMs ?? 30000, topicData: [{ name: this.topic, partitionData }] }),
      { noResponse: acks === 0, minVersion: version, maxVersion: version },
    );
    if (acks === 0) {
      for (const [index, q] of entries) this.record(index, q, -1n);
      return;
    }
    for (const t of res.body.responses) {
      for (const p of t.partitionResponses) {
        const entry = entries.find(([i]) => i === p.index);
        if (entry === undefined) continue;
        if (p.errorCode !== 0) {
          if ((isLeaderError(p.errorCode) || RETRIABLE_PRODUCE.has(p.errorCode)) && attempt < MAX_ATTEMPTS) {
            retry.push(entry);
            continue;
          }
          throw kafkaError(p.errorCode, {
            api: 'Produce',
            broker: c.label,
            subject: `${this.topic}-${p.index}`,
            message: p.errorMessage ?? null,
          });
        }
        this.record(p.index, entry[1], p.baseOffset);
      }
    }
  }

  private record(partition: number, q: Pending, baseOffset: bigint): void {
    const n = q.records.length;
    const s = this.stats.get(partition);
    const last = baseOffset < 0n ? -1n : baseOffset + BigInt(n - 1);
    if (s === undefined) this.stats.set(partition, { partition, records: n, firstOffset: baseOffset, lastOffset: last });
    else {
      s.records += n;
      s.lastOffset = last;
    }
    this.sent += n;
    this.sentBytes += q.bytes;
  }
}
