/**
 * The etcd store's topic writes: each one transaction on topics/<name> guarded by the revision the copy
 * holds (compare-and-swap), retried after catching up with a write that won the race.
 */
import type { ITxnRequest, ITxnResponse } from 'etcd3';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { checkReplicationFactor, placeReplicas, validateAssignments } from '../cluster/placement.js';
import { createdAt, del, delPrefix, get, modifiedAt, put, revisionOf } from './etcd-ops.js';
import type { EtcdKeys, EtcdState, StoredTopic, TopicEntry } from './etcd-state.js';
import { newTopicId } from './names.js';
import { type BrokerInfo, MetadataWriteError, type NewTopic, type TopicRecord } from './store.js';

/** Compare-and-swap rewrites of a topic key retry this many times on a conflict. */
const CAS_ATTEMPTS = 5;

export interface EtcdTopicHost {
  readonly keys: EtcdKeys;
  readonly state: EtcdState;
  brokers(): readonly BrokerInfo[];
  txn(req: ITxnRequest): Promise<ITxnResponse>;
  caughtUp(revision: number): Promise<void>;
  caughtUpWith(res: ITxnResponse): Promise<boolean>;
}

/** Places the replicas (or takes the request's assignment) and creates topics/<name> unless it exists. */
export async function createTopic(store: EtcdTopicHost, t: NewTopic): Promise<TopicRecord> {
  if (store.state.topics.has(t.name)) throw alreadyExists(t.name);
  const live = store.brokers();
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
  const key = store.keys.topic(t.name);
  const stored: StoredTopic = { ...record, replicas };
  const res = await store.txn({ compare: [createdAt(key, 0)], success: [put(key, JSON.stringify(stored))], failure: [get(key)] });
  if (!res.succeeded) {
    await store.caughtUpWith(res);
    throw alreadyExists(t.name);
  }
  await store.caughtUp(revisionOf(res));
  return store.state.topics.get(t.name)?.record ?? record;
}

/** Deletes topics/<name> and its partition keys; undefined when there is no such topic. */
export async function deleteTopic(store: EtcdTopicHost, name: string): Promise<TopicRecord | undefined> {
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    const t = store.state.topics.get(name);
    if (t === undefined) return undefined;
    const key = store.keys.topic(name);
    const res = await store.txn({
      compare: [createdAt(key, t.createRevision)],
      success: [del(key), delPrefix(store.keys.partitionPrefix(name))],
      failure: [get(key)],
    });
    if (res.succeeded) {
      await store.caughtUp(revisionOf(res));
      return t.record;
    }
    if (!(await store.caughtUpWith(res))) return undefined; // gone already
  }
  throw conflict(name);
}

/** The topic grown to `partitions` (the new ones placed), undefined when it has that many already. */
export function withPartitions(store: EtcdTopicHost, t: TopicEntry, partitions: number): StoredTopic | undefined {
  const have = t.record.partitions;
  if (partitions === have) return undefined;
  if (!Number.isInteger(partitions) || partitions < have) {
    throw new MetadataWriteError(
      ErrorCode.INVALID_PARTITIONS,
      `Topic currently has ${have} partitions, which is higher than the requested ${partitions}.`,
    );
  }
  const rf = t.replicas[0]?.length ?? t.record.replicationFactor;
  const live = store.brokers();
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
}

/** Rewrites topics/<name> with what `change` makes of it (nothing when it returns undefined). */
export async function rewriteTopic(store: EtcdTopicHost, name: string, change: (t: TopicEntry) => StoredTopic | undefined): Promise<void> {
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    const t = store.state.topics.get(name);
    if (t === undefined) throw new MetadataWriteError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${name}' does not exist.`);
    const next = change(t);
    if (next === undefined) return;
    const key = store.keys.topic(name);
    const res = await store.txn({
      compare: [modifiedAt(key, t.modRevision)],
      success: [put(key, JSON.stringify(next))],
      failure: [get(key)],
    });
    if (res.succeeded) return store.caughtUp(revisionOf(res));
    await store.caughtUpWith(res);
  }
  throw conflict(name);
}

function alreadyExists(name: string): MetadataWriteError {
  return new MetadataWriteError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${name}' already exists.`);
}

function conflict(name: string): MetadataWriteError {
  return new MetadataWriteError(ErrorCode.REQUEST_TIMED_OUT, `Topic '${name}' kept changing under the update; try again.`);
}
