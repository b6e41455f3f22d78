/**
 * Cluster metadata in etcd (`metadata.store=etcd`). The store loads the cluster's keys with one range
 * read, then keeps its copy current with a watch from the next revision; reads come from the copy,
 * and a write resolves once the watch has brought it into the copy. The broker's session (lease and
 * registration, lib/metadata/etcd-session.ts) and the controller (lib/cluster/controller.ts) run beside.
 * Key layout: lib/metadata/etcd-state.ts.
 */
import type { AclBinding } from '../security/acl/types.js';
import { Etcd3, type ITxnRequest, type ITxnResponse, type IWatchResponse, type Watcher } from 'etcd3';
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { Controller, type ControllerOptions } from '../cluster/controller.js';
import { alterPartitionReassignments, electLeaders, resignLeadership } from '../cluster/partition-admin.js';
import { del, put, rangedKeyValues, revisionOf, toKeyValue } from './etcd-ops.js';
import { checkIdentity, clientOptions, load } from './etcd-open.js';
import { EtcdSession } from './etcd-session.js';
import { BadValueError, EtcdKeys, EtcdState } from './etcd-state.js';
import { createTopic, deleteTopic, rewriteTopic, withPartitions } from './etcd-topics.js';
import { aclRecords } from './records/acls.js';
import type { RecordMap } from './records/record-map.js';
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

  createTopic(t: NewTopic): Promise<TopicRecord> {
    return this.track(() => createTopic(this, t));
  }

  deleteTopic(name: string): Promise<TopicRecord | undefined> {
    return this.track(() => deleteTopic(this, name));
  }

  setPartitionCount(name: string, partitions: number): Promise<void> {
    return this.track(() => rewriteTopic(this, name, (t) => withPartitions(this, t, partitions)));
  }

  brokerConfigs(resource: string): Record<string, string> {
    return this.state.brokerConfigs.get(resource);
  }

  /** One put (or delete) of broker-configs/<resource>; resolves once the watch has it in the copy. */
  setBrokerConfigs(resource: string, configs: Record<string, string>): Promise<void> {
    return this.writeRecords(this.state.brokerConfigs, [[resource, configs]]);
  }

  groupConfigs(groupId: string): Record<string, string> {
    return this.state.groupConfigs.get(groupId);
  }

  /** One put (or delete) of group-configs/<group>; resolves once the watch has it in the copy. */
  setGroupConfigs(groupId: string, configs: Record<string, string>): Promise<void> {
    return this.writeRecords(this.state.groupConfigs, [[groupId, configs]]);
  }

  scramCredentials(): ScramCredentials {
    return this.state.scram.all();
  }

  /** One transaction of puts (and deletes) of scram/<user>; resolves once the watch has it in the copy. */
  setScramCredentials(users: ScramCredentials): Promise<void> {
    return this.writeRecords(this.state.scram, users);
  }

  clientQuotas(): ClientQuotas {
    return this.state.clientQuotas.all();
  }

  /** One transaction of puts (and deletes) of client-quotas/<entity>; resolves once the watch has it in the copy. */
  setClientQuotas(entities: ClientQuotas): Promise<void> {
    return this.writeRecords(this.state.clientQuotas, entities);
  }

  acls(): readonly AclBinding[] {
    return [...this.state.acls.values()];
  }

  /** One transaction of puts and deletes of acls/<binding>; resolves once the watch has it in the copy. */
  async alterAcls(add: readonly AclBinding[], remove: readonly AclBinding[]): Promise<void> {
    const ops = [...remove.map((b) => del(this.keys.acl(b))), ...add.map((b) => put(this.keys.acl(b), aclRecords.value(b)))];
    await this.commit(ops);
  }

  /** One transaction putting each record (deleting an empty one). */
  private async writeRecords<L>(records: RecordMap<L>, entries: Iterable<readonly [string, Readonly<Record<string, L>>]>): Promise<void> {
    const ops = [...entries].map(([k, values]) => {
      const key = this.keys.record(records.kind, k);
      return Object.keys(values).length > 0 ? put(key, JSON.stringify(values)) : del(key);
    });
    await this.commit(ops);
  }

  /** One transaction of `ops` (none: nothing to do); resolves once the watch has it in the copy. */
  private async commit(ops: NonNullable<ITxnRequest['success']>): Promise<void> {
    if (ops.length === 0) return;
    await this.track(async () => {
      const res = await this.txn({ success: ops });
      await this.caughtUp(revisionOf(res));
    });
  }

  setConfigs(name: string, configs: Record<string, string>): Promise<void> {
    return this.track(() => rewriteTopic(this, name, (t) => ({ ...t.record, configs: { ...configs }, replicas: t.replicas })));
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

  /** Runs a write, which persisted() waits for; refused once the store is closed. */
  track<T>(op: () => Promise<T>): Promise<T> {
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

function noController(): MetadataWriteError {
  return new MetadataWriteError(ErrorCode.INVALID_REQUEST, 'this store was opened without a controller');
}
