/**
 * Single-node metadata: the cluster id and the topics (id, partition count, per-topic configs), kept in
 * memory and persisted atomically (tmp → fsync → rename → fsync dir) in the data dir. Mutations are
 * synchronous; persistence is queued and coalesced, and `persisted()` waits for it.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isNoSpace } from '../log/errors.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { AclBinding } from '../security/acl/types.js';
import { cancelReassignment, preferredElection, targetError, uncleanElection } from '../cluster/partition-changes.js';
import { FILE, missingError, parseState, partitionDirs, type StoredState, writeFileAtomic } from './local-file.js';
import { newClusterId, newTopicId } from './names.js';
import { aclRecords } from './records/acls.js';
import { brokerConfigRecords } from './records/broker-configs.js';
import { clientQuotaRecords } from './records/client-quotas.js';
import { groupConfigRecords } from './records/group-configs.js';
import { RecordMap } from './records/record-map.js';
import { scramRecords } from './records/scram-credentials.js';
import {
  type BrokerInfo,
  ElectionType,
  GregorMetadataErrorCode,
  MetadataError,
  type MetadataChange,
  type MetadataListener,
  MetadataWriteError,
  type MetadataStore,
  type NewTopic,
  type PartitionResult,
  type PartitionState,
  type ReassignmentRequest,
  type ClientQuotas,
  type ScramCredentials,
  type StoredScramCredential,
  type TopicPartitionRef,
  type TopicRecord,
} from './store.js';

const noop = (): void => undefined;

export { GregorMetadataErrorCode, MetadataError, type TopicRecord } from './store.js';
export { invalidTopicName, MAX_TOPIC_NAME_LENGTH, newClusterId, newTopicId } from './names.js';
export { writeFileAtomic } from './local-file.js';

export class LocalMetadataStore implements MetadataStore {
  readonly kind = 'local' as const;
  readonly dir: string;
  readonly clusterId: string;
  readonly nodeId: number;
  private readonly byName = new Map<string, TopicRecord>();
  private readonly byId = new Map<string, TopicRecord>();
  private writing: Promise<void> = Promise.resolve();
  /** The latest write failed (a full disk): the file is behind the state until one succeeds. */
  private writeFailed = false;
  private dirty = false;
  private self: BrokerInfo | null = null;
  private readonly listeners: MetadataListener[] = [];
  private readonly dynamic: RecordMap<string>;
  private readonly groupDynamic: RecordMap<string>;
  private readonly scram: RecordMap<StoredScramCredential>;
  private readonly quotas: RecordMap<number>;
  private aclList: readonly AclBinding[];

  private constructor(dir: string, state: StoredState) {
    this.dir = dir;
    this.clusterId = state.clusterId;
    this.nodeId = state.nodeId;
    this.dynamic = new RecordMap(brokerConfigRecords, state.brokerConfigs);
    this.groupDynamic = new RecordMap(groupConfigRecords, state.groupConfigs);
    this.scram = new RecordMap(scramRecords, state.scramCredentials);
    this.quotas = new RecordMap(clientQuotaRecords, state.clientQuotas);
    this.aclList = state.acls ?? [];
    for (const t of state.topics) this.index(t);
  }

  /**
   * Loads `gregor-metadata.json` from `dir`, or starts a new cluster when the data dir holds no
   * partition directories. Refuses (MetadataError) a file it cannot read as the store's state, and a
   * missing file next to partition directories (as Kafka refuses a log dir without meta.properties):
   * either way nothing on disk is touched.
   */
  static async open(dir: string, opts: { nodeId: number; clusterId?: string | null }): Promise<LocalMetadataStore> {
    await mkdir(dir, { recursive: true });
    const file = join(dir, FILE);
    let text: string | null = null;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    let state: StoredState;
    if (text !== null) {
      state = parseState(file, text);
      if (opts.clusterId != null && opts.clusterId !== state.clusterId) {
        throw new MetadataError(
          GregorMetadataErrorCode.CLUSTER_ID,
          file,
          `data dir ${dir} belongs to cluster ${state.clusterId}, not ${opts.clusterId}`,
        );
      }
    } else {
      const orphans = await partitionDirs(dir);
      if (orphans.length > 0) throw missingError(dir, file, orphans);
      state = { version: 1, clusterId: opts.clusterId ?? newClusterId(), nodeId: opts.nodeId, topics: [] };
    }
    const store = new LocalMetadataStore(dir, { ...state, nodeId: opts.nodeId });
    store.markDirty();
    // on a full disk the file already there serves (the next change writes it again): the broker
    // starts and serves reads, as it does once full
    await store.persisted().catch((err: unknown) => {
      if (text === null || !isNoSpace(err)) throw err;
    });
    return store;
  }

  private index(t: TopicRecord): void {
    this.byName.set(t.name, t);
    this.byId.set(t.topicId, t);
  }

  topics(): TopicRecord[] {
    return [...this.byName.values()];
  }

  topic(name: string): TopicRecord | undefined {
    return this.byName.get(name);
  }

  topicById(id: string): TopicRecord | undefined {
    return this.byId.get(id);
  }

  /** One node leads every partition, at leader epoch 0. */
  partitionState(topic: string, partition: number): PartitionState | undefined {
    const t = this.byName.get(topic);
    if (t === undefined || partition < 0 || partition >= t.partitions) return undefined;
    return { leader: this.nodeId, leaderEpoch: 0, replicas: [this.nodeId], isr: [this.nodeId], partitionEpoch: 0 };
  }

  brokers(): readonly BrokerInfo[] {
    return this.self === null ? [] : [this.self];
  }

  controllerId(): number {
    return this.nodeId;
  }

  alterIsr(topic: string, partition: number): Promise<PartitionState> {
    return Promise.reject(
      new MetadataWriteError(ErrorCode.INVALID_REQUEST, `${topic}-${partition}: one node has no followers, its ISR never changes`),
    );
  }

  resignLeadership(): Promise<number> {
    return Promise.resolve(0);
  }

  /** As Kafka with one broker: it leads every partition already (ELECTION_NOT_NEEDED), none is left out. */
  electLeaders(type: ElectionType, partitions: readonly TopicPartitionRef[] | null): Promise<PartitionResult[]> {
    const live = new Set([this.nodeId]);
    const elect = type === ElectionType.UNCLEAN ? uncleanElection : preferredElection;
    const refs = partitions ?? [];
    return Promise.resolve(
      refs.map((ref) => {
        const st = this.partitionState(ref.topic, ref.partition);
        if (st === undefined) return { ...ref, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null };
        const d = elect(st, live);
        return { ...ref, errorCode: d.errorCode, errorMessage: d.errorMessage };
      }),
    );
  }

  /** As Kafka with one broker: this node is the only replica there can be, so nothing is ever in progress. */
  alterPartitionReassignments(reqs: readonly ReassignmentRequest[]): Promise<PartitionResult[]> {
    return Promise.resolve(
      reqs.map(({ topic, partition, replicas }) => {
        const ref = { topic, partition };
        const st = this.partitionState(topic, partition);
        if (st === undefined) return { ...ref, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null };
        if (replicas === null) {
          const d = cancelReassignment(st, new Set([this.nodeId]));
          return { ...ref, errorCode: d.errorCode, errorMessage: d.errorMessage };
        }
        const bad = targetError(replicas, new Set([this.nodeId]));
        return { ...ref, errorCode: bad === undefined ? ErrorCode.NONE : ErrorCode.INVALID_REPLICA_ASSIGNMENT, errorMessage: bad ?? null };
      }),
    );
  }

  register(info: Omit<BrokerInfo, 'brokerEpoch'>): Promise<void> {
    this.self = { ...info, brokerEpoch: 0 };
    this.emit({ kind: 'brokers' });
    return Promise.resolve();
  }

  onChange(listener: MetadataListener): void {
    this.listeners.push(listener);
  }

  private emit(change: Parameters<MetadataListener>[0]): void {
    for (const l of this.listeners) l(change);
  }

  /** Indexes the topic at once (before the first await: one node has no other writer to race), then waits for the disk. */
  async createTopic(t: NewTopic): Promise<TopicRecord> {
    if (this.byName.has(t.name)) throw new MetadataWriteError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${t.name}' already exists.`);
    // one node places every partition here: an assignment has nothing to add
    const rec: TopicRecord = {
      name: t.name,
      topicId: t.topicId ?? newTopicId(),
      partitions: t.partitions,
      replicationFactor: t.replicationFactor,
      configs: t.configs,
      internal: t.internal,
    };
    this.index(rec);
    this.markDirty();
    this.emit({ kind: 'topic', topic: rec.name, change: 'created' });
    await this.persisted();
    return rec;
  }

  async deleteTopic(name: string): Promise<TopicRecord | undefined> {
    const t = this.byName.get(name);
    if (t === undefined) return undefined;
    this.byName.delete(name);
    this.byId.delete(t.topicId);
    this.markDirty();
    this.emit({ kind: 'topic', topic: name, change: 'deleted' });
    await this.persisted();
    return t;
  }

  async setPartitionCount(name: string, partitions: number): Promise<void> {
    const t = this.byName.get(name);
    if (t === undefined) throw new Error(`no topic ${name}`);
    t.partitions = partitions;
    this.markDirty();
    this.emit({ kind: 'topic', topic: name, change: 'partitions' });
    await this.persisted();
  }

  async setConfigs(name: string, configs: Record<string, string>): Promise<void> {
    const t = this.byName.get(name);
    if (t === undefined) throw new Error(`no topic ${name}`);
    t.configs = configs;
    this.markDirty();
    this.emit({ kind: 'topic', topic: name, change: 'configs' });
    await this.persisted();
  }

  private markDirty(): void {
    if (this.dirty) return;
    this.dirty = true;
    // a failed write (a full disk) does not stop later ones: persisted() tries again
    this.writing = this.writing.catch(noop).then(async () => {
      this.dirty = false;
      const state: StoredState = { version: 1, clusterId: this.clusterId, nodeId: this.nodeId, topics: this.topics() };
      const brokerConfigs = this.dynamic.toFile();
      if (brokerConfigs !== undefined) state.brokerConfigs = brokerConfigs;
      const groupConfigs = this.groupDynamic.toFile();
      if (groupConfigs !== undefined) state.groupConfigs = groupConfigs;
      const scramCredentials = this.scram.toFile();
      if (scramCredentials !== undefined) state.scramCredentials = scramCredentials;
      const clientQuotas = this.quotas.toFile();
      if (clientQuotas !== undefined) state.clientQuotas = clientQuotas;
      if (this.aclList.length > 0) state.acls = [...this.aclList];
      try {
        await writeFileAtomic(this.dir, FILE, JSON.stringify(state, null, 1));
        this.writeFailed = false;
      } catch (err) {
        this.writeFailed = true;
        throw err;
      }
    });
  }

  brokerConfigs(resource: string): Record<string, string> {
    return this.dynamic.get(resource);
  }

  setBrokerConfigs(resource: string, configs: Record<string, string>): Promise<void> {
    return this.changed(this.dynamic.edit([[resource, configs]]));
  }

  groupConfigs(groupId: string): Record<string, string> {
    return this.groupDynamic.get(groupId);
  }

  setGroupConfigs(groupId: string, configs: Record<string, string>): Promise<void> {
    return this.changed(this.groupDynamic.edit([[groupId, configs]]));
  }

  scramCredentials(): ScramCredentials {
    return this.scram.all();
  }

  setScramCredentials(users: ScramCredentials): Promise<void> {
    return this.changed(this.scram.edit(users));
  }

  clientQuotas(): ClientQuotas {
    return this.quotas.all();
  }

  setClientQuotas(entities: ClientQuotas): Promise<void> {
    return this.changed(this.quotas.edit(entities));
  }

  acls(): readonly AclBinding[] {
    return this.aclList;
  }

  alterAcls(add: readonly AclBinding[], remove: readonly AclBinding[]): Promise<void> {
    this.aclList = aclRecords.altered(this.aclList, add, remove);
    return this.changed([aclRecords.change()]);
  }

  /** After a change in memory: queues the write, tells the listeners, and resolves once it is on disk. */
  private async changed(changes: readonly MetadataChange[]): Promise<void> {
    this.markDirty();
    for (const c of changes) this.emit(c);
    await this.persisted();
  }

  /** Resolves once every mutation made so far is on disk (writing again when the last write failed). */
  persisted(): Promise<void> {
    if (this.writeFailed && !this.dirty) this.markDirty();
    return this.writing;
  }

  close(): Promise<void> {
    return this.persisted();
  }
}
