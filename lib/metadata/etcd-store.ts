/**
 * Cluster metadata in etcd (`metadata.store=etcd`). The store loads the cluster's keys with one range
 * read, then keeps its copy current with a watch from the next revision; reads come from the copy,
 * and a write resolves once the watch has brought it into the copy. The broker's session (lease and
 * registration, lib/metadata/etcd-session.ts) and the controller (lib/cluster/controller.ts) run beside.
 * Key layout: lib/metadata/etcd-state.ts.
 */
import { plainBinding } from '../security/acl/store-values.js';
import type { AclBinding } from '../security/acl/types.js';
import { Etcd3, type ITxnRequest, type ITxnResponse, type IWatchResponse, type Watcher } from 'etcd3';
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { Controller, type ControllerOptions } from '../cluster/controller.js';
import { alterPartitionReassignments, electLeaders, resignLeadership } from '../cluster/partition-admin.js';
import { placeReplicas, validateAssignments, checkReplicationFactor } from '../cluster/placement.js';
import { createdAt, delPrefix, del, get, modifiedAt, put, rangedKeyValues, revisionOf, toKeyValue } from './etcd-ops.js';
import { checkIdentity, clientOptions, load } from './etcd-open.js';
import { EtcdSession } from './etcd-session.js';
import { BadValueError, EtcdKeys, EtcdState, type StoredTopic, type TopicEntry } from './etcd-state.js';
import { newTopicId } from './local-store.js';
import {
  GregorMetadataErrorCode,
  MetadataError,
  MetadataWriteError,
  type BrokerInfo,
  type ElectionType,
  type MetadataChange,
  type MetadataListener,
  type MetadataStore,
  type NewTopic,
  type PartitionResult,
  type PartitionState,
  type ReassignmentRequest,
  type ClientQuotas,
  type ScramCredentials,
  type TopicPartitionRef,
  type TopicRecord,
} from './store.js';

export interface EtcdStoreOptions {
  /** Client URLs (`http://host:port`). */
  endpoints: string[];
  clusterId: string;
  nodeId: number;
  /** broker.session.timeout.ms: the registration lease lives ceil(this / 1000) s without keep-alives. */
  sessionTimeoutMs: number;
  logger: Logger;
  dataDir: string;
  /** Campaign for the controllership once registered (default true). */
  controller?: boolean;
  /** The controller's settings (auto.leader.rebalance.enable and its check). */
  controllerOptions?: ControllerOptions;
}

/** Compare-and-swap rewrites of a topic key retry this many times on a conflict. */
const CAS_ATTEMPTS = 5;

export class EtcdMetadataStore implements MetadataStore {
  readonly kind = 'etcd' as const;
  readonly clusterId: string;
  readonly nodeId: number;
  readonly keys: EtcdKeys;
  readonly state: EtcdState;
  readonly logger: Logger;
  readonly client: Etcd3;
  readonly session: EtcdSession;
  /** Present unless opened with `controller: false`. */
  readonly controller: Controller | undefined;
  private watcher: Watcher | undefined;
  private watchDown = false;
  private readonly listeners: MetadataListener[] = [];
  private waiters: { revision: number; resolve: () => void; reject: (e: Error) => void }[] = [];
  private readonly pending = new Set<Promise<unknown>>();
  private closed = false;

  private constructor(opts: EtcdStoreOptions, client: Etcd3, state: EtcdState) {
    this.clusterId = opts.clusterId;
    this.nodeId = opts.nodeId;
    this.keys = state.keys;
    this.state = state;
    this.logger = opts.logger;
    this.client = client;
    this.session = new EtcdSession(this, Math.max(1, Math.ceil(opts.sessionTimeoutMs / 1000)), opts.dataDir);
    this.controller = opts.controller === false ? undefined : new Controller(this, opts.controllerOptions);
  }

  static async open(opts: EtcdStoreOptions): Promise<EtcdMetadataStore> {
    const prefix = `/gregor/${opts.clusterId}/`;
    if (opts.clusterId === '' || opts.clusterId.includes('/')) {
      throw new MetadataError(GregorMetadataErrorCode.CLUSTER_ID, prefix, 'metadata.store=etcd needs cluster.id (no "/" in it)');
    }
    await checkIdentity(opts.dataDir, opts.clusterId, opts.nodeId);
    const client = new Etcd3(clientOptions(opts.endpoints));
    try {
      const state = new EtcdState(new EtcdKeys(opts.clusterId));
      await load(client, state, opts.logger);
      const store = new EtcdMetadataStore(opts, client, state);
      await store.session.adoptPredecessor();
      store.watch();
      opts.logger.info({ endpoints: opts.endpoints, prefix, revision: state.revision }, 'etcd metadata loaded');
      return store;
    } catch (e) {
      client.close();
      if (e instanceof MetadataError) throw e;
      throw new MetadataError(GregorMetadataErrorCode.ETCD, prefix, `etcd at ${opts.endpoints.join(',')}: ${(e as Error).message}`, {
        cause: e,
      });
    }
  }

  topics(): TopicRecord[] {
    return [...this.state.topics.values()].map((t) => t.record);
  }
  topic(name: string): TopicRecord | undefined {
    return this.state.topics.get(name)?.record;
  }
  topicById(id: string): TopicRecord | undefined {
    return this.state.topicsById.get(id)?.record;
  }
  /** Replicas of every partition of the topic (preferred leader first). */
  assignment(name: string): readonly (readonly number[])[] | undefined {
    return this.state.topics.get(name)?.replicas;
  }
  partitionState(topic: string, partition: number): PartitionState | undefined {
    return this.state.partition(topic, partition)?.state;
  }
  brokers(): readonly BrokerInfo[] {
    return [...this.state.brokers.values()].map((b) => b.info).sort((a, b) => a.nodeId - b.nodeId);
  }
  controllerId(): number {
    return this.state.controller?.nodeId ?? -1;
  }
  /** True while this broker's controller holds the controllership and may act. */
  isController(): boolean {
    return this.controller?.isActive() ?? false;
  }

  async createTopic(t: NewTopic): Promise<TopicRecord> {
    return this.track(async () => {
      if (this.state.topics.has(t.name)) throw alreadyExists(t.name);
      const live = this.brokers();
      let replicas: number[][];
      if (t.assignments !== undefined) {
        validateAssignments(t.assignments, new Set(live.map((b) => b.nodeId)));
        replicas = t.assignments.map((r) => [...r]);
      } else {
        replicas = placeReplicas(live, t.partitions, t.replicationFactor);
      }
      const record: TopicRecord = {
        name: t.name,
        topicId: t.topicId ?? newTopicId(),
        partitions: replicas.length,
        replicationFactor: replicas[0]?.length ?? t.replicationFactor,
        configs: { ...t.configs },
        internal: t.internal,
      };
      const key = this.keys.topic(t.name);
      const stored: StoredTopic = { ...record, replicas };
      const res = await this.txn({ compare: [createdAt(key, 0)], success: [put(key, JSON.stringify(stored))], failure: [get(key)] });
      if (!res.succeeded) {
        await this.caughtUpWith(res);
        throw alreadyExists(t.name);
      }
      await this.caughtUp(revisionOf(res));
      return this.state.topics.get(t.name)?.record ?? record;
    });
  }

  async deleteTopic(name: string): Promise<TopicRecord | undefined> {
    return this.track(async () => {
      for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
        const t = this.state.topics.get(name);
        if (t === undefined) return undefined;
        const key = this.keys.topic(name);
        const res = await this.txn({
          compare: [createdAt(key, t.createRevision)],
          success: [del(key), delPrefix(this.keys.partitionPrefix(name))],
          failure: [get(key)],
        });
        if (res.succeeded) {
          await this.caughtUp(revisionOf(res));
          return t.record;
        }
        if (!(await this.caughtUpWith(res))) return undefined; // gone already
      }
      throw conflict(name);
    });
  }

  async setPartitionCount(name: string, partitions: number): Promise<void> {
    await this.rewriteTopic(name, (t) => {
      const have = t.record.partitions;
      if (partitions === have) return undefined;
      if (!Number.isInteger(partitions) || partitions < have) {
        throw new MetadataWriteError(
          ErrorCode.INVALID_PARTITIONS,
          `Topic currently has ${have} partitions, which is higher than the requested ${partitions}.`,
        );
      }
      const rf = t.replicas[0]?.length ?? t.record.replicationFactor;
      const live = this.brokers();
      checkReplicationFactor(rf, live.length);
      // keep going round the brokers from where partition 0's leader sits, as Kafka does
      const leader0 = t.replicas[0]?.[0];
      const ids = [...live].sort((a, b) => a.nodeId - b.nodeId).map((b) => b.nodeId);
      const startIndex = leader0 === undefined ? -1 : ids.indexOf(leader0);
      const added = placeReplicas(live, partitions - have, rf, {
        firstPartition: have,
        ...(startIndex >= 0 ? { startIndex } : {}),
      });
      return { ...t.record, partitions, replicas: [...t.replicas, ...added] };
    });
  }

  brokerConfigs(resource: string): Record<string, string> {
    return { ...(this.state.brokerConfigs.get(resource) ?? {}) };
  }

  /** One put (or delete) of broker-configs/<resource>; resolves once the watch has it in the copy. */
  async setBrokerConfigs(resource: string, configs: Record<string, string>): Promise<void> {
    const key = this.keys.brokerConfig(resource);
    await this.track(async () => {
      const res = await this.txn({ success: [Object.keys(configs).length > 0 ? put(key, JSON.stringify(configs)) : del(key)] });
      await this.caughtUp(revisionOf(res));
    });
  }

  groupConfigs(groupId: string): Record<string, string> {
    return { ...(this.state.groupConfigs.get(groupId) ?? {}) };
  }

  /** One put (or delete) of group-configs/<group>; resolves once the watch has it in the copy. */
  async setGroupConfigs(groupId: string, configs: Record<string, string>): Promise<void> {
    const key = this.keys.groupConfig(groupId);
    await this.track(async () => {
      const res = await this.txn({ success: [Object.keys(configs).length > 0 ? put(key, JSON.stringify(configs)) : del(key)] });
      await this.caughtUp(revisionOf(res));
    });
  }

  scramCredentials(): ScramCredentials {
    return this.state.scram;
  }

  /** One transaction of puts (and deletes) of scram/<user>; resolves once the watch has it in the copy. */
  async setScramCredentials(users: ScramCredentials): Promise<void> {
    const ops = [...users].map(([user, creds]) =>
      Object.keys(creds).length > 0 ? put(this.keys.scramUser(user), JSON.stringify(creds)) : del(this.keys.scramUser(user)),
    );
    if (ops.length === 0) return;
    await this.track(async () => {
      const res = await this.txn({ success: ops });
      await this.caughtUp(revisionOf(res));
    });
  }

  clientQuotas(): ClientQuotas {
    return this.state.clientQuotas;
  }

  /** One transaction of puts (and deletes) of client-quotas/<entity>; resolves once the watch has it in the copy. */
  async setClientQuotas(entities: ClientQuotas): Promise<void> {
    const ops = [...entities].map(([entity, values]) =>
      Object.keys(values).length > 0 ? put(this.keys.clientQuota(entity), JSON.stringify(values)) : del(this.keys.clientQuota(entity)),
    );
    if (ops.length === 0) return;
    await this.track(async () => {
      const res = await this.txn({ success: ops });
      await this.caughtUp(revisionOf(res));
    });
  }

  acls(): readonly AclBinding[] {
    return [...this.state.acls.values()];
  }

  /** One transaction of puts and deletes of acls/<binding>; resolves once the watch has it in the copy. */
  async alterAcls(add: readonly AclBinding[], remove: readonly AclBinding[]): Promise<void> {
    const ops = [...remove.map((b) => del(this.keys.acl(b))), ...add.map((b) => put(this.keys.acl(b), JSON.stringify(plainBinding(b))))];
    if (ops.length === 0) return;
    await this.track(async () => {
      const res = await this.txn({ success: ops });
      await this.caughtUp(revisionOf(res));
    });
  }

  async setConfigs(name: string, configs: Record<string, string>): Promise<void> {
    await this.rewriteTopic(name, (t) => ({ ...t.record, configs: { ...configs }, replicas: t.replicas }));
  }

  alterIsr(
    topic: string,
    partition: number,
    req: { leaderEpoch: number; partitionEpoch: number; isr: readonly number[] },
  ): Promise<PartitionState> {
    if (this.controller === undefined) return Promise.reject(noController());
    return this.controller.alterPartition(topic, partition, req, { asLeader: true });
  }

  async resignLeadership(): Promise<number> {
    return this.controller === undefined ? 0 : resignLeadership(this, this.controller);
  }

  electLeaders(type: ElectionType, partitions: readonly TopicPartitionRef[] | null): Promise<PartitionResult[]> {
    if (this.controller === undefined) return Promise.reject(noController());
    return this.track(() => electLeaders(this, this.controller as Controller, type, partitions));
  }

  alterPartitionReassignments(reqs: readonly ReassignmentRequest[]): Promise<PartitionResult[]> {
    if (this.controller === undefined) return Promise.reject(noController());
    return this.track(() => alterPartitionReassignments(this, this.controller as Controller, reqs));
  }

  async register(info: Omit<BrokerInfo, 'brokerEpoch'>): Promise<void> {
    if (info.nodeId !== this.nodeId) throw new Error(`register: node id ${info.nodeId} is not this store's ${this.nodeId}`);
    await this.session.register({ nodeId: info.nodeId, rack: info.rack, endpoints: [...info.endpoints] });
    this.controller?.start();
  }

  onChange(listener: MetadataListener): void {
    this.listeners.push(listener);
  }

  async persisted(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.controller?.stop();
    await this.session.close();
    const w = this.watcher;
    this.watcher = undefined;
    await w?.cancel().catch(() => undefined);
    for (const waiter of this.waiters) waiter.reject(new MetadataWriteError(ErrorCode.REQUEST_TIMED_OUT, 'metadata store closed'));
    this.waiters = [];
    this.client.close();
  }

  isClosed(): boolean {
    return this.closed;
  }

  /** Resolves once the copy reflects every change up to `revision`. */
  caughtUp(revision: number): Promise<void> {
    if (this.state.revision >= revision) return Promise.resolve();
    if (this.closed) return Promise.reject(new MetadataWriteError(ErrorCode.REQUEST_TIMED_OUT, 'metadata store closed'));
    return new Promise((resolve, reject) => this.waiters.push({ revision, resolve, reject }));
  }

  /**
   * After a transaction whose compares failed: waits until the copy holds the keys its failure branch
   * read (their latest change). False when none of them exists.
   */
  async caughtUpWith(res: ITxnResponse): Promise<boolean> {
    const kvs = rangedKeyValues(res);
    if (kvs.length === 0) return false;
    await this.caughtUp(Math.max(...kvs.map((kv) => kv.modRevision)));
    return true;
  }

  /** One etcd transaction; a failure to reach etcd becomes REQUEST_TIMED_OUT. */
  async txn(req: ITxnRequest): Promise<ITxnResponse> {
    try {
      return await this.client.kv.txn(req);
    } catch (e) {
      throw new MetadataWriteError(ErrorCode.REQUEST_TIMED_OUT, `etcd did not commit the change: ${(e as Error).message}`);
    }
  }

  private async rewriteTopic(name: string, change: (t: TopicEntry) => StoredTopic | undefined): Promise<void> {
    await this.track(async () => {
      for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
        const t = this.state.topics.get(name);
        if (t === undefined) throw new MetadataWriteError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${name}' does not exist.`);
        const next = change(t);
        if (next === undefined) return;
        const key = this.keys.topic(name);
        const res = await this.txn({
          compare: [modifiedAt(key, t.modRevision)],
          success: [put(key, JSON.stringify(next))],
          failure: [get(key)],
        });
        if (res.succeeded) return this.caughtUp(revisionOf(res));
        await this.caughtUpWith(res);
      }
      throw conflict(name);
    });
  }

  private track<T>(op: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new MetadataWriteError(ErrorCode.REQUEST_TIMED_OUT, 'metadata store closed'));
    const p = op();
    this.pending.add(p);
    const forget = (): void => void this.pending.delete(p);
    p.then(forget, forget);
    return p;
  }

  private watch(): void {
    const w = this.client
      .watch()
      .prefix(this.keys.prefix)
      .startRevision(String(this.state.revision + 1))
      .watcher();
    this.watcher = w;
    // The client resumes a broken watch from the revision its last answer named, which can be past
    // events not delivered yet; resume from what the copy has applied instead.
    const resumeFromCopy = (): void => void (w.request.start_revision = String(this.state.revision + 1));
    w.on('connected', () => {
      resumeFromCopy();
      if (this.watchDown) this.logger.info({ revision: this.state.revision }, 'etcd watch restored');
      this.watchDown = false;
    });
    w.on('disconnected', (err) => {
      resumeFromCopy();
      if (!this.watchDown && !this.closed) this.logger.warn({ err: err.message }, 'etcd watch disconnected; retrying');
      this.watchDown = true;
    });
    w.on('data', (res: IWatchResponse) => {
      this.applyWatch(res);
      resumeFromCopy();
    });
    w.on('error', (err) => {
      if (this.closed || this.watcher !== w) return;
      this.logger.warn({ err: err.message }, 'etcd watch cancelled; reloading the metadata');
      void this.reload();
    });
  }

  private applyWatch(res: IWatchResponse): void {
    if (this.closed) return;
    const changes: MetadataChange[] = [];
    for (const ev of res.events) {
      const kv = toKeyValue(ev.kv);
      const deleted = ev.type === 'Delete';
      if (deleted) this.session.beforeDelete(kv.key);
      try {
        const change = this.state.apply(kv, deleted);
        if (change !== undefined) changes.push(change);
      } catch (e) {
        if (!(e instanceof BadValueError)) throw e;
        this.logger.error({ key: kv.key, err: e.message }, 'etcd metadata value skipped');
      }
    }
    const revision = Number(res.header.revision);
    if (revision > this.state.revision) this.state.revision = revision;
    this.publish(changes);
  }

  /** Listeners hear the changes (the controller first), then writes waiting for this revision resolve. */
  private publish(changes: MetadataChange[]): void {
    for (const change of changes) {
      this.controller?.onChange(change);
      this.session.onChange(change);
      for (const l of this.listeners) {
        try {
          l(change);
        } catch (e) {
          this.logger.error({ err: e }, 'metadata listener failed');
        }
      }
    }
    const ready = this.waiters.filter((w) => w.revision <= this.state.revision);
    this.waiters = this.waiters.filter((w) => w.revision > this.state.revision);
    for (const w of ready) w.resolve();
  }

  /** After a watch cancelled by etcd (its revision compacted): a full read, then a new watch. */
  private async reload(): Promise<void> {
    const old = this.watcher;
    this.watcher = undefined;
    await old?.cancel().catch(() => undefined);
    for (;;) {
      if (this.closed) return;
      try {
        const fresh = new EtcdState(this.keys);
        await load(this.client, fresh, this.logger);
        this.publish(this.state.replaceWith(fresh));
        this.watch();
        return;
      } catch (e) {
        this.logger.warn({ err: (e as Error).message }, 'etcd metadata reload failed; retrying');
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
}

function alreadyExists(name: string): MetadataWriteError {
  return new MetadataWriteError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${name}' already exists.`);
}

function noController(): MetadataWriteError {
  return new MetadataWriteError(ErrorCode.INVALID_REQUEST, 'this store was opened without a controller');
}

function conflict(name: string): MetadataWriteError {
  return new MetadataWriteError(ErrorCode.REQUEST_TIMED_OUT, `Topic '${name}' kept changing under the update; try again.`);
}
