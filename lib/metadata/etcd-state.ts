/**
 * The etcd store's key layout under `/gregor/<clusterId>/` and its in-memory copy of those keys:
 *   brokers/<nodeId>           BrokerRegistration (under the broker's lease; brokerEpoch = create revision)
 *   topics/<name>              StoredTopic (the record and every partition's replicas)
 *   partitions/<name>/<p>      PartitionState, once the controller changed it (until then it is implied
 *                              by the topic: leader = first replica, isr = replicas, epochs 0)
 *   controller                 the active controller's node id (under its lease)
 *   controller-epoch           bumped by each controller in the transaction that elects it
 *   scram/<user>               a user's SCRAM credentials by mechanism (the user name URI-encoded)
 *   group-configs/<group>      a group's dynamic configs (the group id URI-encoded)
 *   client-quotas/<entity>     a client quota entity's quotas (its entity key, lib/quota/entity.ts, URI-encoded)
 *   acls/<binding>             one ACL (the key: its canonical text, URI-encoded; the value: the binding)
 * The copy applies key-value events (the initial range read, then the watch) and reports what changed.
 */
import type { AclBinding } from '../security/acl/types.js';
import { aclRecords } from './records/acls.js';
import { brokerConfigRecords } from './records/broker-configs.js';
import { clientQuotaRecords } from './records/client-quotas.js';
import { groupConfigRecords } from './records/group-configs.js';
import { RecordMap, type RecordKind } from './records/record-map.js';
import { scramRecords } from './records/scram-credentials.js';
import type { BrokerEndpoint, BrokerInfo, MetadataChange, PartitionState, StoredScramCredential, TopicRecord } from './store.js';

export class EtcdKeys {
  readonly prefix: string;
  readonly brokers: string;
  readonly topics: string;
  readonly partitions: string;
  readonly controller: string;
  readonly controllerEpoch: string;
  readonly acls: string;
  constructor(clusterId: string) {
    this.prefix = `/gregor/${clusterId}/`;
    this.brokers = `${this.prefix}brokers/`;
    this.topics = `${this.prefix}topics/`;
    this.partitions = `${this.prefix}partitions/`;
    this.controller = `${this.prefix}controller`;
    this.controllerEpoch = `${this.prefix}controller-epoch`;
    this.acls = `${this.prefix}${aclRecords.dir}`;
  }
  /** A keyed record's key (lib/metadata/records): broker-configs/<node id> (default for the cluster-wide ones), … */
  record(kind: RecordKind<unknown>, key: string): string {
    return `${this.prefix}${kind.dir}${kind.toName(key)}`;
  }
  acl(b: AclBinding): string {
    return `${this.acls}${aclRecords.name(b)}`;
  }
  broker(nodeId: number): string {
    return `${this.brokers}${nodeId}`;
  }
  topic(name: string): string {
    return `${this.topics}${name}`;
  }
  partitionPrefix(topic: string): string {
    return `${this.partitions}${topic}/`;
  }
  partition(topic: string, partition: number): string {
    return `${this.partitions}${topic}/${partition}`;
  }
}

/** The value of topics/<name>. */
export interface StoredTopic extends TopicRecord {
  /** replicas[p]: partition p's replicas, preferred leader first. */
  replicas: number[][];
}

/** The value of brokers/<nodeId>. */
export interface BrokerRegistration {
  nodeId: number;
  rack: string | null;
  endpoints: BrokerEndpoint[];
}

export interface TopicEntry {
  record: TopicRecord;
  replicas: number[][];
  createRevision: number;
  modRevision: number;
}

export interface PartitionEntry {
  state: PartitionState;
  /** 0 when no key exists yet (the state is implied by the topic). */
  modRevision: number;
}

export interface KeyValue {
  key: string;
  value: Buffer;
  createRevision: number;
  modRevision: number;
  lease: string;
}

/** A stored value that does not parse: the copy skips it (and the store logs it). */
export class BadValueError extends Error {}

export class EtcdState {
  readonly topics = new Map<string, TopicEntry>();
  readonly topicsById = new Map<string, TopicEntry>();
  /** Partition keys that exist, by topic then partition. */
  readonly partitions = new Map<string, Map<number, PartitionEntry>>();
  readonly brokers = new Map<number, { info: BrokerInfo; lease: string; modRevision: number }>();
  controller: { nodeId: number; createRevision: number; modRevision: number; lease: string } | undefined;
  controllerEpoch: { value: number; modRevision: number } | undefined;
  readonly brokerConfigs = new RecordMap(brokerConfigRecords);
  readonly groupConfigs = new RecordMap(groupConfigRecords);
  readonly scram = new RecordMap<StoredScramCredential>(scramRecords);
  readonly clientQuotas = new RecordMap(clientQuotaRecords);
  /** The keyed records, in the order a reload reports their changes. */
  private readonly records: readonly RecordMap<unknown>[] = [this.brokerConfigs, this.groupConfigs, this.scram, this.clientQuotas];
  /** ACLs by key (acls/<…>). */
  readonly acls = new Map<string, AclBinding>();
  /** Every change up to this revision is applied. */
  revision = 0;

  constructor(readonly keys: EtcdKeys) {}

  /** The partition's state: its key's, or the one the topic implies; undefined when it does not exist. */
  partition(topic: string, partition: number): PartitionEntry | undefined {
    const t = this.topics.get(topic);
    if (t === undefined || !Number.isInteger(partition) || partition < 0 || partition >= t.record.partitions) return undefined;
    const explicit = this.partitions.get(topic)?.get(partition);
    if (explicit !== undefined) return explicit;
    const replicas = t.replicas[partition] ?? [];
    return { state: { leader: replicas[0] ?? -1, leaderEpoch: 0, replicas, isr: replicas, partitionEpoch: 0 }, modRevision: 0 };
  }

  /** Applies one put (value) or delete (no value); returns what a listener should hear, if anything. */
  apply(kv: KeyValue, deleted: boolean): MetadataChange | undefined {
    const { keys } = this;
    if (kv.key === keys.controller) {
      this.controller = deleted
        ? undefined
        : { nodeId: Number(kv.value.toString('utf8')), createRevision: kv.createRevision, modRevision: kv.modRevision, lease: kv.lease };
      return { kind: 'controller', controllerId: this.controller?.nodeId ?? -1 };
    }
    if (kv.key === keys.controllerEpoch) {
      this.controllerEpoch = deleted ? undefined : { value: Number(kv.value.toString('utf8')), modRevision: kv.modRevision };
      return undefined;
    }
    if (kv.key.startsWith(keys.brokers)) {
      const nodeId = Number(kv.key.slice(keys.brokers.length));
      if (deleted) {
        if (!this.brokers.delete(nodeId)) return undefined;
      } else {
        const reg = decodeBroker(kv);
        this.brokers.set(nodeId, {
          info: { nodeId, rack: reg.rack, endpoints: reg.endpoints, brokerEpoch: kv.createRevision },
          lease: kv.lease,
          modRevision: kv.modRevision,
        });
      }
      return { kind: 'brokers' };
    }
    if (kv.key.startsWith(keys.topics)) return this.applyTopic(kv.key.slice(keys.topics.length), kv, deleted);
    for (const r of this.records) {
      const dir = `${keys.prefix}${r.kind.dir}`;
      if (!kv.key.startsWith(dir)) continue;
      const key = r.kind.fromName(kv.key.slice(dir.length));
      if (deleted) return r.apply(key, undefined);
      const o = parseJson(kv);
      if (!Object.values(o).every((v) => r.kind.isEtcdLeaf(v))) throw new BadValueError(`${kv.key}: ${r.kind.etcdWhat}`);
      return r.apply(key, o);
    }
    if (kv.key.startsWith(keys.acls)) {
      if (deleted) this.acls.delete(kv.key);
      else {
        const b = parseJson(kv);
        if (!aclRecords.isBinding(b)) throw new BadValueError(`${kv.key}: not an ACL binding`);
        this.acls.set(kv.key, b);
      }
      return aclRecords.change();
    }
    if (kv.key.startsWith(keys.partitions)) {
      const rest = kv.key.slice(keys.partitions.length);
      const slash = rest.lastIndexOf('/');
      const topic = rest.slice(0, slash);
      const partition = Number(rest.slice(slash + 1));
      if (slash <= 0 || !Number.isInteger(partition)) return undefined;
      if (deleted) {
        const m = this.partitions.get(topic);
        m?.delete(partition);
        if (m?.size === 0) this.partitions.delete(topic);
        return undefined; // the topic's deletion (same transaction) is what listeners hear
      }
      const state = decodePartition(kv);
      let m = this.partitions.get(topic);
      if (m === undefined) this.partitions.set(topic, (m = new Map<number, PartitionEntry>()));
      m.set(partition, { state, modRevision: kv.modRevision });
      return { kind: 'partition', topic, partition, state };
    }
    return undefined;
  }

  /** Takes the content of `fresh` (a full reload) and returns the changes from what this copy held. */
  replaceWith(fresh: EtcdState): MetadataChange[] {
    const changes: MetadataChange[] = [];
    for (const name of this.topics.keys()) if (!fresh.topics.has(name)) changes.push({ kind: 'topic', topic: name, change: 'deleted' });
    for (const [name, t] of fresh.topics) {
      const before = this.topics.get(name);
      if (before === undefined || before.createRevision !== t.createRevision)
        changes.push({ kind: 'topic', topic: name, change: 'created' });
      else if (before.record.partitions !== t.record.partitions) changes.push({ kind: 'topic', topic: name, change: 'partitions' });
      else if (before.modRevision !== t.modRevision) changes.push({ kind: 'topic', topic: name, change: 'configs' });
    }
    for (const [topic, parts] of fresh.partitions) {
      for (const [partition, p] of parts) {
        if (this.partitions.get(topic)?.get(partition)?.modRevision !== p.modRevision)
          changes.push({ kind: 'partition', topic, partition, state: p.state });
      }
    }
    const brokersKey = (s: EtcdState): string =>
      [...s.brokers.values()]
        .map((b) => `${b.info.nodeId}@${b.info.brokerEpoch}`)
        .sort()
        .join();
    if (brokersKey(this) !== brokersKey(fresh)) changes.push({ kind: 'brokers' });
    this.records.forEach((r, i) => changes.push(...r.changesTo(fresh.records[i] as RecordMap<unknown>)));
    if (aclRecords.keysText(this.acls.keys()) !== aclRecords.keysText(fresh.acls.keys())) changes.push(aclRecords.change());
    if (this.controller?.createRevision !== fresh.controller?.createRevision)
      changes.push({ kind: 'controller', controllerId: fresh.controller?.nodeId ?? -1 });
    for (const m of [this.topics, this.topicsById, this.partitions, this.brokers, this.acls] as Map<unknown, unknown>[]) m.clear();
    this.records.forEach((r, i) => r.replaceWith(fresh.records[i] as RecordMap<unknown>));
    for (const [k, v] of fresh.acls) this.acls.set(k, v);
    for (const [k, v] of fresh.topics) this.topics.set(k, v);
    for (const [k, v] of fresh.topicsById) this.topicsById.set(k, v);
    for (const [k, v] of fresh.partitions) this.partitions.set(k, v);
    for (const [k, v] of fresh.brokers) this.brokers.set(k, v);
    this.controller = fresh.controller;
    this.controllerEpoch = fresh.controllerEpoch;
    this.revision = fresh.revision;
    return changes;
  }

  private applyTopic(name: string, kv: KeyValue, deleted: boolean): MetadataChange | undefined {
    const before = this.topics.get(name);
    if (deleted) {
      if (before === undefined) return undefined;
      this.topics.delete(name);
      if (this.topicsById.get(before.record.topicId) === before) this.topicsById.delete(before.record.topicId);
      return { kind: 'topic', topic: name, change: 'deleted' };
    }
    const { replicas, ...fields } = decodeTopic(kv);
    const record: TopicRecord = { ...fields, name };
    const entry: TopicEntry = { record, replicas, createRevision: kv.createRevision, modRevision: kv.modRevision };
    this.topics.set(name, entry);
    if (before !== undefined && before.record.topicId !== record.topicId) this.topicsById.delete(before.record.topicId);
    this.topicsById.set(record.topicId, entry);
    if (before === undefined || before.createRevision !== kv.createRevision) return { kind: 'topic', topic: name, change: 'created' };
    if (before.record.partitions !== record.partitions) return { kind: 'topic', topic: name, change: 'partitions' };
    return { kind: 'topic', topic: name, change: 'configs' };
  }
}

function parseJson(kv: KeyValue): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(kv.value.toString('utf8'));
  } catch (e) {
    throw new BadValueError(`${kv.key}: not JSON (${(e as Error).message})`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new BadValueError(`${kv.key}: not a JSON object`);
  return v as Record<string, unknown>;
}

const isInt = (v: unknown): v is number => Number.isInteger(v);
const isIntList = (v: unknown): v is number[] => Array.isArray(v) && v.every(isInt);

function bad(kv: KeyValue, field: string): never {
  throw new BadValueError(`${kv.key}: field ${field} missing or of the wrong type`);
}

function decodeBroker(kv: KeyValue): BrokerRegistration {
  const o = parseJson(kv);
  const { nodeId, rack, endpoints } = o;
  if (!isInt(nodeId)) bad(kv, 'nodeId');
  if (rack !== null && typeof rack !== 'string') bad(kv, 'rack');
  if (!Array.isArray(endpoints)) bad(kv, 'endpoints');
  return { nodeId, rack, endpoints: endpoints as BrokerEndpoint[] };
}

function decodeTopic(kv: KeyValue): Omit<StoredTopic, 'name'> {
  const o = parseJson(kv);
  const { topicId, partitions, replicationFactor, configs, internal, replicas } = o;
  if (typeof topicId !== 'string') bad(kv, 'topicId');
  if (!isInt(partitions)) bad(kv, 'partitions');
  if (!isInt(replicationFactor)) bad(kv, 'replicationFactor');
  if (typeof configs !== 'object' || configs === null) bad(kv, 'configs');
  if (!Array.isArray(replicas) || replicas.length !== partitions || !replicas.every(isIntList)) bad(kv, 'replicas');
  return { topicId, partitions, replicationFactor, configs: configs as Record<string, string>, internal: internal === true, replicas };
}

function decodePartition(kv: KeyValue): PartitionState {
  const o = parseJson(kv);
  const { leader, leaderEpoch, replicas, isr, partitionEpoch, addingReplicas, removingReplicas } = o;
  if (!isInt(leader)) bad(kv, 'leader');
  if (!isInt(leaderEpoch)) bad(kv, 'leaderEpoch');
  if (!isIntList(replicas)) bad(kv, 'replicas');
  if (!isIntList(isr)) bad(kv, 'isr');
  if (!isInt(partitionEpoch)) bad(kv, 'partitionEpoch');
  const state: PartitionState = { leader, leaderEpoch, replicas, isr, partitionEpoch };
  // a reassignment in progress (keys written before reassignments existed have neither field)
  if (addingReplicas !== undefined || removingReplicas !== undefined) {
    if (addingReplicas !== undefined && !isIntList(addingReplicas)) bad(kv, 'addingReplicas');
    if (removingReplicas !== undefined && !isIntList(removingReplicas)) bad(kv, 'removingReplicas');
    state.addingReplicas = addingReplicas ?? [];
    state.removingReplicas = removingReplicas ?? [];
  }
  return state;
}
