/**
 * Clusters: what the transaction machinery asks of other brokers. The coordinator's COMMIT/ABORT
 * markers for partitions another broker leads go to that leader as WriteTxnMarkers (Kafka's
 * TransactionMarkerChannelManager), and a partition leader's KIP-890 check of a transactional write
 * goes to the transaction coordinator of its id as AddPartitionsToTxn v4 with verifyOnly (Kafka's
 * AddPartitionsToTxnManager). One connection per destination broker, made on demand and made again
 * after a failure; what is due for one destination while a request to it is in flight goes out as
 * one request after it.
 */
import type { Logger } from 'pino';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type {
  AddPartitionsToTxnRequestAddPartitionsToTxnTransaction,
  AddPartitionsToTxnResponse,
} from '../../protocol/generated/add-partitions-to-txn.js';
import type { WriteTxnMarkersRequestWritableTxnMarker, WriteTxnMarkersResponse } from '../../protocol/generated/write-txn-markers.js';
import type { BrokerAddress } from '../client/address.js';
import { formatAddress } from '../client/address.js';
import { BrokerConnection } from '../client/connection.js';
import { ClientError, ClientErrorCode } from '../client/errors.js';
import { packageVersion } from '../cli/context.js';
import { type BrokerConfig, parseListener } from '../config.js';
import type { MetadataStore } from '../metadata/store.js';

export interface InterBrokerOptions {
  nodeId: number;
  /** The address of a broker on the inter-broker listener, undefined when unknown. */
  addressOf(nodeId: number): BrokerAddress | undefined;
  /** request.timeout.ms (Kafka's TransactionMarkerChannelManager and AddPartitionsToTxnManager use it). */
  requestTimeoutMs: number;
  logger: Logger;
  /** client id of the connections (gregor-txn-<node id> when absent) */
  clientId?: string;
}

/** Channels to the other brokers of the cluster on the inter-broker listener (request.timeout.ms). */
export function interBrokerChannels(c: BrokerConfig, metadata: MetadataStore, logger: Logger, clientId?: string): BrokerChannels {
  const listener = c.string('inter.broker.listener.name') ?? parseListener(c.list('listeners')[0] ?? 'PLAINTEXT://:9092').name;
  return new BrokerChannels({
    nodeId: c.nodeId,
    requestTimeoutMs: c.int('request.timeout.ms'),
    logger,
    ...(clientId === undefined ? {} : { clientId }),
    addressOf(nodeId) {
      const b = metadata.brokers().find((x) => x.nodeId === nodeId);
      const ep = b?.endpoints.find((e) => e.listener === listener) ?? b?.endpoints[0];
      return ep === undefined ? undefined : { host: ep.host, port: ep.port };
    },
  });
}

/** One connection per destination broker, opened on first use and again after a failure. */
export class BrokerChannels {
  private readonly conns = new Map<number, Promise<BrokerConnection>>();
  private closed = false;

  constructor(private readonly o: InterBrokerOptions) {}

  /** Sends a request to broker `nodeId`; rejects with a ClientError (the connection is then dropped). */
  async request<T>(nodeId: number, apiKey: number, build: (version: number) => unknown, minVersion?: number): Promise<T> {
    if (this.closed) throw new ClientError(ClientErrorCode.DISCONNECTED, 'inter-broker channels closed');
    let opening = this.conns.get(nodeId);
    if (opening === undefined) {
      opening = this.open(nodeId);
      this.conns.set(nodeId, opening);
    }
    const drop = () => {
      if (this.conns.get(nodeId) === opening) this.conns.delete(nodeId);
    };
    let conn: BrokerConnection;
    try {
      conn = await opening;
    } catch (e) {
      drop();
      throw e;
    }
    if (conn.closed) {
      drop();
      throw new ClientError(ClientErrorCode.DISCONNECTED, `connection to broker ${nodeId} closed`);
    }
    try {
      // the destination waits up to request.timeout.ms for its ISR: a little more here
      const res = await conn.request<T>(apiKey, build, {
        timeoutMs: this.o.requestTimeoutMs + 5000,
        ...(minVersion === undefined ? {} : { minVersion }),
      });
      return res.body;
    } catch (e) {
      conn.close();
      drop();
      throw e;
    }
  }

  private async open(nodeId: number): Promise<BrokerConnection> {
    const address = this.o.addressOf(nodeId);
    if (address === undefined)
      throw new ClientError(ClientErrorCode.NOT_FOUND, `broker ${nodeId} has no known address`, { broker: `broker ${nodeId}` });
    const conn = await BrokerConnection.open(address, `broker ${nodeId} (${formatAddress(address)})`, {
      clientId: this.o.clientId ?? `gregor-txn-${this.o.nodeId}`,
      connectTimeoutMs: Math.min(this.o.requestTimeoutMs, 10_000),
      requestTimeoutMs: this.o.requestTimeoutMs + 5000,
      softwareName: 'gregor-broker',
      softwareVersion: packageVersion(),
    });
    if (this.closed) conn.close();
    return conn;
  }

  close(): void {
    this.closed = true;
    for (const c of this.conns.values())
      void c.then(
        (x) => x.close(),
        () => undefined,
      );
    this.conns.clear();
  }
}

/**
 * Items due for destination brokers: each destination has at most one request in flight; what is
 * queued meanwhile (and what is queued in the same turn of the event loop) goes in the next one.
 */
class PerDestination<T, R> {
  private readonly queues = new Map<number, { items: { item: T; resolve(r: R): void }[]; busy: boolean; scheduled: boolean }>();

  constructor(
    private readonly send: (nodeId: number, items: T[]) => Promise<R[]>,
    /** what each item gets when `send` throws */
    private readonly failed: R,
  ) {}

  enqueue(nodeId: number, item: T): Promise<R> {
    let q = this.queues.get(nodeId);
    if (q === undefined) this.queues.set(nodeId, (q = { items: [], busy: false, scheduled: false }));
    const queue = q;
    return new Promise<R>((resolve) => {
      queue.items.push({ item, resolve });
      if (!queue.busy && !queue.scheduled) {
        queue.scheduled = true;
        setImmediate(() => {
          queue.scheduled = false;
          void this.drain(nodeId);
        });
      }
    });
  }

  private async drain(nodeId: number): Promise<void> {
    const q = this.queues.get(nodeId);
    if (q === undefined || q.busy || q.items.length === 0) return;
    q.busy = true;
    const batch = q.items.splice(0);
    try {
      const results = await this.send(
        nodeId,
        batch.map((b) => b.item),
      );
      batch.forEach((b, i) => b.resolve(results[i] as R));
    } catch {
      for (const b of batch) b.resolve(this.failed);
    } finally {
      q.busy = false;
      if (q.items.length > 0) void this.drain(nodeId);
      else this.queues.delete(nodeId);
    }
  }
}

/** Splits items into rounds in which no key appears with two different values of `same` (one request each). */
function rounds<T>(items: readonly T[], key: (t: T) => string, same: (t: T) => string): T[][] {
  const out: { items: T[]; seen: Map<string, string> }[] = [];
  for (const t of items) {
    const k = key(t);
    const s = same(t);
    let r = out.find((x) => (x.seen.get(k) ?? s) === s);
    if (r === undefined) out.push((r = { items: [], seen: new Map() }));
    r.seen.set(k, s);
    r.items.push(t);
  }
  return out.map((r) => r.items);
}

function transportFailure(logger: Logger, what: string, nodeId: number, e: unknown): void {
  const err = e instanceof ClientError ? e.message : e;
  logger.debug({ err, broker: nodeId }, `${what} to broker ${nodeId} failed`);
}

export interface RemoteMarker {
  topic: string;
  partition: number;
  producerId: bigint;
  producerEpoch: number;
  commit: boolean;
  coordinatorEpoch: number;
}

/**
 * The coordinator's markers for partitions other brokers lead: WriteTxnMarkers to the partition's
 * current leader. Answers a Kafka error code per marker, which TxnMarkerWriter.write maps to done or
 * retry: LEADER_NOT_AVAILABLE while the partition has no leader, NETWORK_EXCEPTION when the request
 * failed, UNKNOWN_TOPIC_OR_PARTITION only when the topic is gone from the metadata (a leader that
 * does not know it yet is retried).
 */
export class RemoteTxnMarkers {
  private readonly queue: PerDestination<RemoteMarker, number>;

  constructor(
    private readonly channels: BrokerChannels,
    private readonly o: {
      nodeId: number;
      /** The partition's leader (-1: none), undefined when the topic or partition does not exist. */
      leaderOf(topic: string, partition: number): number | undefined;
      logger: Logger;
    },
  ) {
    this.queue = new PerDestination((nodeId, items) => this.sendTo(nodeId, items), ErrorCode.UNKNOWN_SERVER_ERROR);
  }

  send(m: RemoteMarker): Promise<number> {
    const leader = this.o.leaderOf(m.topic, m.partition);
    if (leader === undefined) return Promise.resolve(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    if (leader < 0) return Promise.resolve(ErrorCode.LEADER_NOT_AVAILABLE);
    // our view says we lead it but the log is not served here (yet): try again
    if (leader === this.o.nodeId) return Promise.resolve(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    return this.queue.enqueue(leader, m);
  }

  private async sendTo(nodeId: number, items: RemoteMarker[]): Promise<number[]> {
    const codes = new Map<RemoteMarker, number>();
    for (const round of rounds(
      items,
      (m) => m.producerId.toString(),
      (m) => `${m.producerEpoch}/${m.commit}/${m.coordinatorEpoch}`,
    )) {
      const byProducer = new Map<bigint, WriteTxnMarkersRequestWritableTxnMarker>();
      for (const m of round) {
        let w = byProducer.get(m.producerId);
        if (w === undefined) {
          w = {
            producerId: m.producerId,
            producerEpoch: m.producerEpoch,
            transactionResult: m.commit,
            topics: [],
            coordinatorEpoch: m.coordinatorEpoch,
          };
          byProducer.set(m.producerId, w);
        }
        let t = w.topics.find((x) => x.name === m.topic);
        if (t === undefined) w.topics.push((t = { name: m.topic, partitionIndexes: [] }));
        if (!t.partitionIndexes.includes(m.partition)) t.partitionIndexes.push(m.partition);
      }
      let res: WriteTxnMarkersResponse;
      try {
        res = await this.channels.request<WriteTxnMarkersResponse>(nodeId, ApiKey.WriteTxnMarkers, () => ({
          markers: [...byProducer.values()],
        }));
      } catch (e) {
        transportFailure(this.o.logger, 'WriteTxnMarkers', nodeId, e);
        for (const m of round) codes.set(m, ErrorCode.NETWORK_EXCEPTION);
        continue;
      }
      for (const m of round) {
        const p = res.markers
          .find((x) => x.producerId === m.producerId)
          ?.topics.find((t) => t.name === m.topic)
          ?.partitions.find((x) => x.partitionIndex === m.partition);
        let code = p?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR;
        // the leader does not know the partition (yet): only a topic gone from our metadata is dropped
        if (code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION && this.o.leaderOf(m.topic, m.partition) !== undefined)
          code = ErrorCode.NOT_LEADER_OR_FOLLOWER;
        codes.set(m, code);
      }
    }
    return items.map((m) => codes.get(m) ?? ErrorCode.UNKNOWN_SERVER_ERROR);
  }
}

export interface RemoteVerification {
  transactionalId: string;
  producerId: bigint;
  producerEpoch: number;
  topic: string;
  partition: number;
}

/**
 * KIP-890's check of a transactional write whose transactional id another broker coordinates:
 * AddPartitionsToTxn v4 with verifyOnly to that broker. Answers the coordinator's code for the
 * partition (NONE when it is in the ongoing transaction); COORDINATOR_NOT_AVAILABLE when the
 * coordinator is unknown or could not be asked (the callers map it to their API's retriable error).
 */
export class RemoteTxnVerifier {
  private readonly queue: PerDestination<RemoteVerification, number>;

  constructor(
    private readonly channels: BrokerChannels,
    private readonly o: {
      nodeId: number;
      /** The broker coordinating the transactional id (-1: none). */
      coordinatorOf(transactionalId: string): number;
      logger: Logger;
    },
  ) {
    this.queue = new PerDestination((nodeId, items) => this.sendTo(nodeId, items), ErrorCode.COORDINATOR_NOT_AVAILABLE);
  }

  verify(v: RemoteVerification): Promise<number> {
    const coordinator = this.o.coordinatorOf(v.transactionalId);
    if (coordinator < 0 || coordinator === this.o.nodeId) return Promise.resolve(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    return this.queue.enqueue(coordinator, v);
  }

  private async sendTo(nodeId: number, items: RemoteVerification[]): Promise<number[]> {
    const codes = new Map<RemoteVerification, number>();
    for (const round of rounds(
      items,
      (v) => v.transactionalId,
      (v) => `${v.producerId}/${v.producerEpoch}`,
    )) {
      const byId = new Map<
        string,
        AddPartitionsToTxnRequestAddPartitionsToTxnTransaction & { topics: { name: string; partitions: number[] }[] }
      >();
      for (const v of round) {
        let t = byId.get(v.transactionalId);
        if (t === undefined) {
          t = {
            transactionalId: v.transactionalId,
            producerId: v.producerId,
            producerEpoch: v.producerEpoch,
            verifyOnly: true,
            topics: [],
          };
          byId.set(v.transactionalId, t);
        }
        let topic = t.topics.find((x) => x.name === v.topic);
        if (topic === undefined) t.topics.push((topic = { name: v.topic, partitions: [] }));
        if (!topic.partitions.includes(v.partition)) topic.partitions.push(v.partition);
      }
      let res: AddPartitionsToTxnResponse;
      try {
        res = await this.channels.request<AddPartitionsToTxnResponse>(
          nodeId,
          ApiKey.AddPartitionsToTxn,
          () => ({ transactions: [...byId.values()] }),
          4,
        );
      } catch (e) {
        transportFailure(this.o.logger, 'AddPartitionsToTxn (verify only)', nodeId, e);
        for (const v of round) codes.set(v, ErrorCode.COORDINATOR_NOT_AVAILABLE);
        continue;
      }
      for (const v of round) {
        if ((res.errorCode ?? ErrorCode.NONE) !== ErrorCode.NONE) {
          codes.set(v, res.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR);
          continue;
        }
        const p = res.resultsByTransaction
          ?.find((x) => x.transactionalId === v.transactionalId)
          ?.topicResults?.find((t) => t.name === v.topic)
          ?.resultsByPartition.find((x) => x.partitionIndex === v.partition);
        codes.set(v, p?.partitionErrorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR);
      }
    }
    return items.map((v) => codes.get(v) ?? ErrorCode.UNKNOWN_SERVER_ERROR);
  }
}
