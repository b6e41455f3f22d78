/**
 * kafkajs has no assign()-style consumer (its consumer always joins a group), so partition reads go
 * through kafkajs's own cluster and broker code: real kafkajs Fetch requests and decoding, no group.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export interface KjsMessage {
  offset: string;
  /** the record batch the record came in (kafkajs's decoder attaches it to each record) */
  batchContext?: { firstOffset: string; lastOffsetDelta: number };
  key: Buffer | null;
  value: Buffer | null;
  timestamp: string;
  headers: Record<string, Buffer | Buffer[] | undefined>;
}

interface KjsPartitionData {
  partition: number;
  errorCode: number;
  highWatermark: string;
  messages: KjsMessage[];
}

interface KjsBroker {
  fetch(args: {
    replicaId?: number;
    isolationLevel?: number;
    maxWaitTime?: number;
    minBytes?: number;
    maxBytes?: number;
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
  }): Promise<{
    responses: {
      topicName: string;
      partitions: KjsPartitionData[];
    }[];
  }>;
}

interface KjsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addTargetTopic(topic: string): Promise<void>;
  refreshMetadata(): Promise<void>;
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  findBroker(b: { nodeId: string }): Promise<KjsBroker>;
}

export class KafkajsPartitionReader {
  private readonly cluster: KjsCluster;

  constructor(brokers: string[]) {
    const Cluster = require('kafkajs/src/cluster') as new (opts: object) => KjsCluster;
    const { createLogger, LEVELS } = require('kafkajs/src/loggers') as {
      createLogger: (o: object) => object;
      LEVELS: Record<string, number>;
    };
    const socketFactory = (require('kafkajs/src/network/socketFactory') as () => unknown)();
    const logger = createLogger({ level: LEVELS['NOTHING'], logCreator: () => () => undefined });
    this.cluster = new Cluster({
      brokers,
      clientId: 'gregor-test-reader',
      logger,
      socketFactory,
      connectionTimeout: 5000,
      requestTimeout: 30000,
      retry: { retries: 3 },
    });
  }

  async connect(topic: string): Promise<void> {
    await this.cluster.connect();
    await this.cluster.addTargetTopic(topic);
  }

  private async leader(topic: string, partition: number): Promise<KjsBroker> {
    const leaders = this.cluster.findLeaderForPartitions(topic, [partition]);
    const nodeId = Object.keys(leaders)[0];
    if (nodeId === undefined) throw new Error(`no leader for ${topic}-${partition}`);
    return this.cluster.findBroker({ nodeId });
  }

  /**
   * Reads partition `partition` of `topic` from `from` until `until` (exclusive). Throws, naming the
   * offset it is stuck at and what the last Fetch returned, when no fetch moves the read on for
   * `stallMs` (a read that could otherwise loop forever, e.g. on a batch left empty).
   */
  async readAll(
    topic: string,
    partition: number,
    from: bigint,
    until: bigint,
    opts: { maxWaitTime?: number; stallMs?: number } = {},
  ): Promise<KjsMessage[]> {
    const out: KjsMessage[] = [];
    await this.fetchLoop(topic, partition, from, until, opts, (p, next) => {
      for (const m of p.messages) {
        if (BigInt(m.offset) < next || BigInt(m.offset) >= until) continue;
        out.push(m);
        next = BigInt(m.offset) + 1n;
      }
      return afterBatches(p.messages, next);
    });
    return out;
  }

  /**
   * What a kafkajs consumer hands its application from [from, until) at read_committed: each Fetch
   * response goes through kafkajs's own consumer Batch, which drops aborted transactions (by the
   * response's aborted list) and control records. Bounded like readAll.
   */
  async readCommitted(
    topic: string,
    partition: number,
    from: bigint,
    until: bigint,
    opts: { stallMs?: number } = {},
  ): Promise<KjsMessage[]> {
    const Batch = require('kafkajs/src/consumer/batch') as new (
      topic: string,
      fetchedOffset: string,
      partitionData: unknown,
    ) => { messages: KjsMessage[] };
    const out: KjsMessage[] = [];
    await this.fetchLoop(topic, partition, from, until, opts, (p, next) => {
      for (const m of new Batch(topic, next.toString(), p).messages) if (BigInt(m.offset) < until) out.push(m);
      const last = p.messages[p.messages.length - 1];
      return afterBatches(p.messages, last === undefined ? next : BigInt(last.offset) + 1n);
    });
    return out;
  }

  /**
   * Fetches from `from` while the offset `take` returns (the next to fetch) is below `until`; throws
   * when the offset has not moved for `stallMs` (default 30 s), with the last response's shape.
   */
  private async fetchLoop(
    topic: string,
    partition: number,
    from: bigint,
    until: bigint,
    opts: { maxWaitTime?: number; stallMs?: number },
    take: (p: KjsPartitionData, next: bigint) => bigint,
  ): Promise<void> {
    const broker = await this.leader(topic, partition);
    const stallMs = opts.stallMs ?? 30_000;
    let next = from;
    let movedAt = Date.now();
    let fetches = 0;
    while (next < until) {
      const res = await broker.fetch({
        isolationLevel: 1,
        maxWaitTime: opts.maxWaitTime ?? 100,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [{ topic, partitions: [{ partition, fetchOffset: next.toString(), maxBytes: 1 << 20 }] }],
      });
      const p = res.responses[0]?.partitions[0];
      if (p === undefined) throw new Error('empty fetch response');
      if (p.errorCode !== 0) throw new Error(`fetch error ${p.errorCode}`);
      fetches++;
      const after = take(p, next);
      if (after > next) {
        next = after;
        movedAt = Date.now();
        fetches = 0;
      } else if (Date.now() - movedAt > stallMs) {
        const offs = p.messages.map((m) => m.offset);
        throw new Error(
          `reading ${topic}-${partition} [${from}, ${until}): stuck at offset ${next} for ${stallMs} ms (${fetches} fetches); ` +
            `the last returned ${offs.length} messages${offs.length > 0 ? ` at ${offs[0]}..${offs[offs.length - 1]}` : ''}, high watermark ${p.highWatermark}`,
        );
      }
    }
  }

  async disconnect(): Promise<void> {
    await this.cluster.disconnect();
  }
}

/**
 * Where the next fetch starts: past the last batch returned, not just past its last record. A batch
 * the cleaner compacted keeps its original last offset while its trailing records are gone; when
 * it ends a segment, a fetch from after its last record returns that batch again (Kafka reads one
 * segment per fetch), so a reader that only follows record offsets would fetch it forever, as
 * Java's consumer does not (it moves to the batch's next offset).
 */
function afterBatches(messages: readonly KjsMessage[], next: bigint): bigint {
  const b = messages[messages.length - 1]?.batchContext;
  if (b === undefined) return next;
  const batchEnd = BigInt(b.firstOffset) + BigInt(b.lastOffsetDelta) + 1n;
  return batchEnd > next ? batchEnd : next;
}

/** The kafkajs protocol error type (e.g. KAFKA_STORAGE_ERROR) of `e`, under a retries-exceeded wrapper, or undefined. */
export function errorType(e: unknown): string | undefined {
  for (let x: unknown = e, depth = 0; x instanceof Error && depth < 4; x = (x as { cause?: unknown }).cause, depth++) {
    const type = (x as { type?: unknown }).type;
    if (typeof type === 'string') return type;
  }
  return undefined;
}
