/**
 * Single-node metadata: the cluster id and the topics (id, partition count, per-topic configs), kept in
 * memory and persisted atomically (tmp → fsync → rename → fsync dir) in the data dir. Mutations are
 * synchronous; persistence is queued and coalesced, and `persisted()` waits for it.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic as writeFileAtomicAt } from '../log/checkpoint.js';
import { isNoSpace } from '../log/errors.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { alteredAcls, isAclBinding } from '../security/acl/store-values.js';
import type { AclBinding } from '../security/acl/types.js';
import { cancelReassignment, preferredElection, targetError, uncleanElection } from '../cluster/partition-changes.js';
import {
  type BrokerInfo,
  ElectionType,
  GregorMetadataErrorCode,
  MetadataError,
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

interface StoredState {
  version: 1;
  clusterId: string;
  nodeId: number;
  topics: TopicRecord[];
  /** Dynamic broker configs by resource ('' the cluster-wide default); absent in files written before them. */
  brokerConfigs?: Record<string, Record<string, string>>;
  /** Dynamic group configs by group id; absent when there are none. */
  groupConfigs?: Record<string, Record<string, string>>;
  /** SCRAM credentials by user then mechanism (salted, never a password); absent when there are none. */
  scramCredentials?: Record<string, Record<string, StoredScramCredential>>;
  /** Client quotas by entity key (lib/quota/entity.ts); absent when there are none. */
  clientQuotas?: Record<string, Record<string, number>>;
  /** ACLs (lib/security/acl); absent when there are none. */
  acls?: AclBinding[];
}

const FILE = 'gregor-metadata.json';
/** A partition directory (`<topic>-<partition>`), as the log manager names them; `….<hex>-delete` ones are not. */
const PARTITION_DIR = /^(.+)-(\d+)$/;
/** Orphan partition directories named in a GREGOR_ERR_METADATA_MISSING message; the rest are counted. */
const ORPHANS_SHOWN = 5;

const LEGAL_TOPIC = /^[a-zA-Z0-9._-]+$/;
export const MAX_TOPIC_NAME_LENGTH = 249;

export function newTopicId(): string {
  let id: string;
  do id = randomBytes(16).toString('hex');
  while (/^0+$/.test(id));
  return id;
}

/** Kafka's cluster ids: 16 random bytes, URL-safe base64 without padding (22 chars). */
export function newClusterId(): string {
  return randomBytes(16).toString('base64url');
}

/** Returns why a topic name is invalid, or undefined when it is valid (Kafka's Topic.validate). */
export function invalidTopicName(name: string): string | undefined {
  if (name.length === 0) return 'Topic name is empty';
  if (name === '.' || name === '..') return `Topic name cannot be "${name}"`;
  if (name.length > MAX_TOPIC_NAME_LENGTH) return `Topic name is longer than ${MAX_TOPIC_NAME_LENGTH} characters`;
  if (!LEGAL_TOPIC.test(name)) return `Topic name "${name}" contains characters other than ASCII alphanumerics, '.', '_' and '-'`;
  return undefined;
}

/** Writes `dir/name` atomically (tmp → fsync → rename → fsync dir; the tmp file goes when a step fails). */
export function writeFileAtomic(dir: string, name: string, data: string | Buffer): Promise<void> {
  return writeFileAtomicAt(join(dir, name), data);
}

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
  private dynamic: Record<string, Record<string, string>>;
  private groupDynamic: Record<string, Record<string, string>>;
  private scram: Map<string, Record<string, StoredScramCredential>>;
  private quotas: Map<string, Record<string, number>>;
  private aclList: readonly AclBinding[];

  private constructor(dir: string, state: StoredState) {
    this.dir = dir;
    this.clusterId = state.clusterId;
    this.nodeId = state.nodeId;
    this.dynamic = state.brokerConfigs ?? {};
    this.groupDynamic = state.groupConfigs ?? {};
    this.scram = new Map(Object.entries(state.scramCredentials ?? {}));
    this.quotas = new Map(Object.entries(state.clientQuotas ?? {}));
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
      if (Object.keys(this.dynamic).length > 0) state.brokerConfigs = this.dynamic;
      if (Object.keys(this.groupDynamic).length > 0) state.groupConfigs = this.groupDynamic;
      if (this.scram.size > 0) state.scramCredentials = Object.fromEntries(this.scram);
      if (this.quotas.size > 0) state.clientQuotas = Object.fromEntries(this.quotas);
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
    return { ...(this.dynamic[resource] ?? {}) };
  }

  async setBrokerConfigs(resource: string, configs: Record<string, string>): Promise<void> {
    const next = Object.fromEntries(Object.entries(this.dynamic).filter(([r]) => r !== resource));
    if (Object.keys(configs).length > 0) next[resource] = { ...configs };
    this.dynamic = next;
    this.markDirty();
    this.emit({ kind: 'brokerConfigs' });
    await this.persisted();
  }

  groupConfigs(groupId: string): Record<string, string> {
    return { ...(this.groupDynamic[groupId] ?? {}) };
  }

  async setGroupConfigs(groupId: string, configs: Record<string, string>): Promise<void> {
    const next = Object.fromEntries(Object.entries(this.groupDynamic).filter(([g]) => g !== groupId));
    if (Object.keys(configs).length > 0) next[groupId] = { ...configs };
    this.groupDynamic = next;
    this.markDirty();
    this.emit({ kind: 'groupConfigs', group: groupId });
    await this.persisted();
  }

  scramCredentials(): ScramCredentials {
    return this.scram;
  }

  async setScramCredentials(users: ScramCredentials): Promise<void> {
    const next = new Map(this.scram);
    for (const [user, creds] of users) {
      if (Object.keys(creds).length === 0) next.delete(user);
      else next.set(user, { ...creds });
    }
    this.scram = next;
    this.markDirty();
    this.emit({ kind: 'scramCredentials' });
    await this.persisted();
  }

  clientQuotas(): ClientQuotas {
    return this.quotas;
  }

  async setClientQuotas(entities: ClientQuotas): Promise<void> {
    const next = new Map(this.quotas);
    for (const [entity, values] of entities) {
      if (Object.keys(values).length === 0) next.delete(entity);
      else next.set(entity, { ...values });
    }
    this.quotas = next;
    this.markDirty();
    this.emit({ kind: 'clientQuotas' });
    await this.persisted();
  }

  acls(): readonly AclBinding[] {
    return this.aclList;
  }

  async alterAcls(add: readonly AclBinding[], remove: readonly AclBinding[]): Promise<void> {
    this.aclList = alteredAcls(this.aclList, add, remove);
    this.markDirty();
    this.emit({ kind: 'acls' });
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

/** The store's state from the file's text, or GREGOR_ERR_METADATA_CORRUPT saying what is wrong with it. */
function parseState(file: string, text: string): StoredState {
  const corrupt = (what: string, cause?: unknown) =>
    new MetadataError(
      GregorMetadataErrorCode.CORRUPT,
      file,
      `metadata file ${file} is unreadable: ${what}. The broker will not start on it; restore the file from a backup (the partition directories beside it are untouched)`,
      cause === undefined ? undefined : { cause },
    );
  if (text.length === 0) throw corrupt('it is empty (0 bytes)');
  if (/^\0+$/.test(text)) throw corrupt(`it holds only zero bytes (${Buffer.byteLength(text)} bytes)`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw corrupt(`not valid JSON, torn or garbled (${Buffer.byteLength(text)} bytes: ${e instanceof Error ? e.message : String(e)})`, e);
  }
  const problem = stateProblem(raw);
  if (problem !== undefined) throw corrupt(problem);
  return raw as StoredState;
}

/** What makes `raw` not a version-1 StoredState, or undefined when it is one. */
function stateProblem(raw: unknown): string | undefined {
  if (!isObject(raw)) return `expected a JSON object, got ${jsonType(raw)}`;
  if (raw['version'] !== 1) return `unsupported version ${JSON.stringify(raw['version'])} (expected 1)`;
  if (typeof raw['clusterId'] !== 'string' || raw['clusterId'] === '') return 'no clusterId';
  if (raw['nodeId'] !== undefined && !Number.isInteger(raw['nodeId'])) return `nodeId is ${JSON.stringify(raw['nodeId'])}, not an integer`;
  const dyn = raw['brokerConfigs'];
  if (
    dyn !== undefined &&
    (!isObject(dyn) || Object.values(dyn).some((c) => !isObject(c) || Object.values(c).some((v) => typeof v !== 'string')))
  )
    return 'invalid brokerConfigs';
  const groups = raw['groupConfigs'];
  if (
    groups !== undefined &&
    (!isObject(groups) || Object.values(groups).some((c) => !isObject(c) || Object.values(c).some((v) => typeof v !== 'string')))
  )
    return 'invalid groupConfigs';
  const scram = raw['scramCredentials'];
  if (
    scram !== undefined &&
    (!isObject(scram) || Object.values(scram).some((c) => !isObject(c) || Object.values(c).some((v) => !isObject(v))))
  )
    return 'invalid scramCredentials';
  const quotas = raw['clientQuotas'];
  if (
    quotas !== undefined &&
    (!isObject(quotas) || Object.values(quotas).some((c) => !isObject(c) || Object.values(c).some((v) => typeof v !== 'number')))
  )
    return 'invalid clientQuotas';
  if (raw['acls'] !== undefined && (!Array.isArray(raw['acls']) || !raw['acls'].every(isAclBinding))) return 'invalid acls';
  const topics = raw['topics'];
  if (!Array.isArray(topics)) return `no topic list (topics is ${jsonType(topics)})`;
  const names = new Set<string>();
  const ids = new Set<string>();
  for (const [i, t] of topics.entries()) {
    const at = `topics[${i}]`;
    if (!isObject(t)) return `${at} is ${jsonType(t)}, not an object`;
    const name = t['name'];
    if (typeof name !== 'string' || invalidTopicName(name) !== undefined) return `${at} has an invalid name ${JSON.stringify(name)}`;
    const id = t['topicId'];
    if (typeof id !== 'string' || !/^[0-9a-f]{32}$/.test(id) || /^0+$/.test(id))
      return `topic ${name} has an invalid topicId ${JSON.stringify(id)}`;
    if (!Number.isInteger(t['partitions']) || (t['partitions'] as number) < 1)
      return `topic ${name} has an invalid partition count ${JSON.stringify(t['partitions'])}`;
    if (!Number.isInteger(t['replicationFactor']))
      return `topic ${name} has an invalid replicationFactor ${JSON.stringify(t['replicationFactor'])}`;
    const configs = t['configs'];
    if (!isObject(configs) || Object.values(configs).some((v) => typeof v !== 'string')) return `topic ${name} has invalid configs`;
    if (typeof t['internal'] !== 'boolean') return `topic ${name} has no internal flag`;
    if (names.has(name)) return `topic ${name} is listed twice`;
    if (ids.has(id)) return `topicId ${id} is listed twice`;
    names.add(name);
    ids.add(id);
  }
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function jsonType(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  return Array.isArray(v) ? 'an array' : `a ${typeof v}`;
}

/** Partition directories (`<topic>-<partition>`) in the data dir, sorted. */
async function partitionDirs(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const ent of await readdir(dir, { withFileTypes: true })) {
    if (!ent.isDirectory()) continue;
    const m = PARTITION_DIR.exec(ent.name);
    if (m !== null && invalidTopicName(m[1] ?? '') === undefined) out.push(ent.name);
  }
  return out.sort();
}

function missingError(dir: string, file: string, orphans: readonly string[]): MetadataError {
  const shown = orphans.slice(0, ORPHANS_SHOWN).join(', ');
  const more = orphans.length > ORPHANS_SHOWN ? ` and ${orphans.length - ORPHANS_SHOWN} more` : '';
  return new MetadataError(
    GregorMetadataErrorCode.MISSING,
    file,
    `data dir ${dir} has ${orphans.length} partition director${orphans.length === 1 ? 'y' : 'ies'} (${shown}${more}) but no ${FILE}: ` +
      'without it the topics, their ids and configs are unknown, so the broker will not start and serve the data dir as empty. ' +
      `Restore ${file} from a backup, or, to start a new cluster here, move the partition directories out of ${dir}`,
  );
}
