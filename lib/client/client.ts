/**
 * A Kafka client over gregor's own codec: bootstrap, Metadata, one connection per broker, leader and
 * coordinator routing. The API-specific operations live beside it (admin.ts, groups.ts, offsets.ts,
 * producer.ts, fetcher.ts) and take a KafkaClient.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { FindCoordinatorResponse } from '../../protocol/generated/find-coordinator.js';
import type { MetadataResponse } from '../../protocol/generated/metadata.js';
import { formatAddress, parseBootstrap, type BrokerAddress } from './address.js';
import { BrokerConnection, type ConnectionOptions } from './connection.js';
import { ClientError, ClientErrorCode, kafkaError } from './errors.js';
import { metadataRequest, parseMetadata, type BrokerInfo, type ClusterMetadata, type PartitionInfo, type TopicInfo } from './metadata.js';

export interface ClientOptions {
  /** "host:port[,host:port...]" or parsed addresses */
  bootstrap: string | readonly BrokerAddress[];
  clientId?: string;
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  softwareName?: string;
  softwareVersion?: string;
}

/** Retries `fn` while it throws a retriable error, until `deadline` (Date.now() ms). */
export async function withRetries<T>(
  fn: () => Promise<T>,
  deadline: number,
  retriable: (e: unknown) => boolean,
  backoffMs = 100,
): Promise<T> {
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (!retriable(e) || Date.now() + backoffMs > deadline) throw e;
      await new Promise((r) => setTimeout(r, backoffMs));
      backoffMs = Math.min(backoffMs * 2, 1000);
    }
  }
}

export function isRetriableError(e: unknown): boolean {
  return e instanceof ClientError && e.retriable;
}

export class KafkaClient {
  readonly bootstrapAddresses: readonly BrokerAddress[];
  readonly options: ConnectionOptions;
  /** Brokers from the last Metadata, by node id. */
  readonly brokers = new Map<number, BrokerInfo>();
  private readonly conns = new Map<string, Promise<BrokerConnection>>();
  private readonly topics = new Map<string, TopicInfo>();
  private readonly coordinators = new Map<string, Promise<BrokerConnection>>();
  private last: ClusterMetadata | null = null;
  private closed = false;

  constructor(opts: ClientOptions) {
    this.bootstrapAddresses = typeof opts.bootstrap === 'string' ? parseBootstrap(opts.bootstrap) : opts.bootstrap;
    this.options = {
      clientId: opts.clientId ?? 'gregor-cli',
      requestTimeoutMs: opts.requestTimeoutMs ?? 30000,
      connectTimeoutMs: opts.connectTimeoutMs ?? 10000,
      softwareName: opts.softwareName ?? 'gregor-cli',
      softwareVersion: opts.softwareVersion ?? '0.0.0',
    };
  }

  /** The label errors use for a broker at `address`, by node id when Metadata told us. */
  private labelFor(address: BrokerAddress, nodeId?: number): string {
    const endpoint = formatAddress(address);
    const id = nodeId ?? [...this.brokers.values()].find((b) => formatAddress(b) === endpoint)?.nodeId;
    return id === undefined ? `bootstrap ${endpoint}` : `broker ${id} (${endpoint})`;
  }

  /** The (cached) connection to `address`; a closed one is replaced. */
  connect(address: BrokerAddress, nodeId?: number): Promise<BrokerConnection> {
    if (this.closed) return Promise.reject(new ClientError(ClientErrorCode.DISCONNECTED, 'client is closed'));
    const key = formatAddress(address);
    const have = this.conns.get(key);
    if (have !== undefined) {
      return have.then(
        (c) => {
          if (!c.closed) {
            if (nodeId !== undefined) c.label = this.labelFor(address, nodeId);
            return c;
          }
          if (this.conns.get(key) === have) this.conns.delete(key);
          return this.connect(address, nodeId);
        },
        () => {
          if (this.conns.get(key) === have) this.conns.delete(key);
          return this.connect(address, nodeId);
        },
      );
    }
    const p = BrokerConnection.open(address, this.labelFor(address, nodeId), this.options);
    this.conns.set(key, p);
    p.then(
      (c) => c.onClosed(() => this.conns.get(key) === p && this.conns.delete(key)),
      () => this.conns.get(key) === p && this.conns.delete(key),
    );
    return p;
  }

  /**
   * Any live connection, else the first bootstrap address that accepts one. The first connection
   * also fetches the broker list, so that errors can name brokers by node id.
   */
  async any(): Promise<BrokerConnection> {
    for (const p of this.conns.values()) {
      const c = await p.catch(() => null);
      if (c !== null && !c.closed) return c;
    }
    const errors: string[] = [];
    const candidates = [...this.bootstrapAddresses, ...[...this.brokers.values()].map((b) => ({ host: b.host, port: b.port }))];
    for (const a of candidates) {
      try {
        const c = await this.connect(a);
        if (this.last === null) await this.metadataOn(c, []);
        return c;
      } catch (e) {
        if (!(e instanceof ClientError) || e.code !== ClientErrorCode.CONNECT) throw e;
        errors.push(e.message);
      }
    }
    const broker = this.bootstrapAddresses.map(formatAddress).join(',');
    throw new ClientError(
      ClientErrorCode.CONNECT,
      errors.length === 1 ? (errors[0] as string) : `cannot connect to any bootstrap broker: ${errors.join('; ')}`,
      { broker: `bootstrap ${broker}` },
    );
  }

  /** The connection to broker `nodeId` (from Metadata). */
  async node(nodeId: number): Promise<BrokerConnection> {
    let b = this.brokers.get(nodeId);
    if (b === undefined) {
      await this.metadata([]);
      b = this.brokers.get(nodeId);
    }
    if (b === undefined)
      throw new ClientError(ClientErrorCode.NOT_FOUND, `broker ${nodeId} is not in the cluster metadata`, { broker: `broker ${nodeId}` });
    return this.connect({ host: b.host, port: b.port }, nodeId);
  }

  /** Metadata of `topics` (null: all topics; []: brokers only). Updates the broker and topic caches. */
  async metadata(topics: readonly string[] | null, opts: { allowAutoTopicCreation?: boolean } = {}): Promise<ClusterMetadata> {
    return this.metadataOn(await this.any(), topics, opts);
  }

  private async metadataOn(
    c: BrokerConnection,
    topics: readonly string[] | null,
    opts: { allowAutoTopicCreation?: boolean } = {},
  ): Promise<ClusterMetadata> {
    const res = await c.request<MetadataResponse>(ApiKey.Metadata, (v) => metadataRequest(v, topics, opts.allowAutoTopicCreation ?? false));
    const md = parseMetadata(res.body);
    this.brokers.clear();
    for (const b of md.brokers) this.brokers.set(b.nodeId, b);
    for (const t of md.topics) {
      if (t.errorCode === 0) this.topics.set(t.name, t);
      else this.topics.delete(t.name);
    }
    c.label = this.labelFor(c.address);
    this.last = md;
    return md;
  }

  get lastMetadata(): ClusterMetadata | null {
    return this.last;
  }

  /** One topic's metadata (cached unless `refresh`); NOT_FOUND with Kafka's code when it does not exist. */
  async topic(name: string, refresh = false): Promise<TopicInfo> {
    const cached = this.topics.get(name);
    if (cached !== undefined && !refresh) return cached;
    const md = await this.metadata([name]);
    const t = md.topics.find((x) => x.name === name);
    if (t === undefined || t.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) {
      throw new ClientError(ClientErrorCode.NOT_FOUND, `topic '${name}' does not exist: UNKNOWN_TOPIC_OR_PARTITION (3)`, {
        kafkaCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        subject: `topic '${name}'`,
        api: 'Metadata',
      });
    }
    if (t.errorCode !== 0)
      throw kafkaError(t.errorCode, { api: 'Metadata', broker: this.labelFor((await this.any()).address), subject: `topic '${name}'` });
    return t;
  }

  /** Waits until every partition of `names` has a leader (after creating topics or partitions). */
  async waitForLeaders(names: readonly string[], deadline: number, partitions?: Map<string, number>): Promise<void> {
    for (;;) {
      const md = await this.metadata(names);
      const ready = names.every((n) => {
        const t = md.topics.find((x) => x.name === n);
        if (t === undefined || t.errorCode !== 0) return false;
        const want = partitions?.get(n);
        if (want !== undefined && t.partitions.length < want) return false;
        return t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0);
      });
      if (ready) return;
      if (Date.now() > deadline) throw new ClientError(ClientErrorCode.GAVE_UP, `topics ${names.join(', ')} have no leaders yet`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  partition(t: TopicInfo, partition: number): PartitionInfo {
    const p = t.partitions.find((x) => x.partition === partition);
    if (p === undefined) {
      throw new ClientError(
        ClientErrorCode.NOT_FOUND,
        `partition ${t.name}-${partition} does not exist (the topic has ${t.partitions.length}): UNKNOWN_TOPIC_OR_PARTITION (3)`,
        {
          kafkaCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          subject: `${t.name}-${partition}`,
        },
      );
    }
    return p;
  }

  /** The leader of a partition (refreshing metadata when it has none). */
  async leader(topic: string, partition: number, refresh = false): Promise<BrokerConnection> {
    let p = this.partition(await this.topic(topic, refresh), partition);
    if (p.leader < 0 && !refresh) p = this.partition(await this.topic(topic, true), partition);
    if (p.leader < 0) {
      throw kafkaError(p.errorCode !== 0 ? p.errorCode : ErrorCode.LEADER_NOT_AVAILABLE, {
        api: 'Metadata',
        broker: (await this.any()).label,
        subject: `${topic}-${partition}`,
      });
    }
    return this.node(p.leader);
  }

  /** The controller (CreateTopics and friends go there), or any broker when unknown. */
  async controller(): Promise<BrokerConnection> {
    const md = this.last ?? (await this.metadata([]));
    if (md.controllerId >= 0 && this.brokers.has(md.controllerId)) return this.node(md.controllerId);
    return this.any();
  }

  /** The group coordinator of `groupId` (FindCoordinator, retried while it is loading). */
  coordinator(groupId: string, refresh = false): Promise<BrokerConnection> {
    const have = this.coordinators.get(groupId);
    if (have !== undefined && !refresh) {
      return have.then((c) => (c.closed ? this.coordinator(groupId, true) : c));
    }
    const p = withRetries(() => this.findCoordinator(groupId), Date.now() + this.options.requestTimeoutMs, isRetriableError);
    this.coordinators.set(groupId, p);
    p.catch(() => this.coordinators.get(groupId) === p && this.coordinators.delete(groupId));
    return p;
  }

  private async findCoordinator(groupId: string): Promise<BrokerConnection> {
    const c = await this.any();
    const res = await c.request<FindCoordinatorResponse>(ApiKey.FindCoordinator, (v) =>
      v >= 4 ? { keyType: 0, coordinatorKeys: [groupId] } : { key: groupId, keyType: 0 },
    );
    const b = res.version >= 4 ? res.body.coordinators?.[0] : res.body;
    if (b === undefined)
      throw new ClientError(ClientErrorCode.PROTOCOL, `FindCoordinator on ${c.label} answered no coordinator for group '${groupId}'`, {
        broker: c.label,
        api: 'FindCoordinator',
      });
    c.check(b.errorCode, ApiKey.FindCoordinator, `group '${groupId}'`, b.errorMessage);
    return this.connect({ host: b.host ?? '', port: b.port ?? 0 }, b.nodeId);
  }

  /** Every broker's connection (for ListGroups, health). */
  async allBrokers(): Promise<BrokerConnection[]> {
    if (this.brokers.size === 0) await this.metadata([]);
    return Promise.all([...this.brokers.keys()].map((id) => this.node(id)));
  }

  close(): void {
    this.closed = true;
    for (const p of this.conns.values())
      p.then(
        (c) => c.close(),
        () => undefined,
      );
    this.conns.clear();
    this.coordinators.clear();
  }
}
