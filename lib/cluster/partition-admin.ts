/**
 * Partition state changes a broker makes on request: ElectLeaders, AlterPartitionReassignments and the
 * controlled shutdown's hand-over of leadership. In Kafka these requests go to the controller; here any
 * broker may take them and write the change itself through Controller.writePartitions. That is safe
 * because each change is decided from the partition's state at one etcd revision and written only if
 * the partition key is still at that revision (and the topic at its creation): the controller's own
 * writes and these serialize on the key, and a write that lost the race is decided again on the new
 * state. When this broker is the controller its fence guards the write as well. No forwarding path to
 * the controller is needed, and a request answered NONE is committed in etcd. The controller then
 * carries a reassignment on (completing it once the new replicas are in the ISR: see reconcile).
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { EtcdState } from '../metadata/etcd-state.js';
import {
  ElectionType,
  type PartitionResult,
  type PartitionState,
  type ReassignmentRequest,
  type TopicPartitionRef,
} from '../metadata/store.js';
import type { Controller, PartitionChange } from './controller.js';
import {
  cancelReassignment,
  preferredElection,
  startReassignment,
  targetError,
  uncleanElection,
  type Decision,
} from './partition-changes.js';

export interface PartitionAdminHost {
  readonly nodeId: number;
  readonly state: EtcdState;
  readonly logger: Logger;
}

/** How many times one partition's change is decided again after losing a race to another write. */
const ATTEMPTS = 5;

const result = (ref: TopicPartitionRef, errorCode: number, errorMessage: string | null): PartitionResult => ({
  topic: ref.topic,
  partition: ref.partition,
  errorCode,
  errorMessage,
});

/** Decides and writes one partition's change; decides again on the new state when the write lost a race. */
async function changePartition(
  host: PartitionAdminHost,
  controller: Controller,
  ref: TopicPartitionRef,
  decide: (cur: PartitionState) => Decision,
): Promise<PartitionResult> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const entry = host.state.partition(ref.topic, ref.partition);
    const t = host.state.topics.get(ref.topic);
    if (entry === undefined || t === undefined)
      return result(ref, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.');
    const d = decide(entry.state);
    if (d.state === undefined) return result(ref, d.errorCode, d.errorMessage);
    const change: PartitionChange = { ...ref, modRevision: entry.modRevision, topicCreateRevision: t.createRevision, state: d.state };
    try {
      if (await controller.writePartitions([change], controller.currentFence())) return result(ref, ErrorCode.NONE, null);
    } catch (e) {
      return result(ref, ErrorCode.REQUEST_TIMED_OUT, `etcd did not commit the change: ${(e as Error).message}`);
    }
  }
  return result(ref, ErrorCode.REQUEST_TIMED_OUT, 'The partition kept changing under the request; try again.');
}

/** Every partition of every topic. */
function allPartitions(state: EtcdState): TopicPartitionRef[] {
  const out: TopicPartitionRef[] = [];
  for (const [topic, t] of state.topics)
    for (let partition = 0; partition < t.record.partitions; partition++) out.push({ topic, partition });
  return out;
}

function distinct<T extends TopicPartitionRef>(refs: readonly T[]): T[] {
  const seen = new Set<string>();
  return refs.filter((r) => {
    const k = `${r.topic}\u0000${r.partition}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

export async function electLeaders(
  host: PartitionAdminHost,
  controller: Controller,
  type: ElectionType,
  partitions: readonly TopicPartitionRef[] | null,
): Promise<PartitionResult[]> {
  const live = new Set(host.state.brokers.keys());
  const elect = type === ElectionType.UNCLEAN ? uncleanElection : preferredElection;
  const refs = partitions === null ? allPartitions(host.state) : distinct(partitions);
  const results = await Promise.all(refs.map((ref) => changePartition(host, controller, ref, (cur) => elect(cur, live))));
  const elected = results.filter((r) => r.errorCode === ErrorCode.NONE);
  if (elected.length > 0) host.logger.info({ type, partitions: elected.length }, 'leaders elected on request');
  // asked for every partition: those already led as asked are left out, as Kafka does
  return partitions === null ? results.filter((r) => r.errorCode !== ErrorCode.ELECTION_NOT_NEEDED) : results;
}

export async function alterPartitionReassignments(
  host: PartitionAdminHost,
  controller: Controller,
  reqs: readonly ReassignmentRequest[],
): Promise<PartitionResult[]> {
  const live = new Set(host.state.brokers.keys());
  return Promise.all(
    distinct(reqs).map(async (req) => {
      const target = req.replicas;
      if (target === null) return changePartition(host, controller, req, (cur) => cancelReassignment(cur, live));
      const bad = targetError(target, live);
      if (bad !== undefined && host.state.partition(req.topic, req.partition) !== undefined)
        return result(req, ErrorCode.INVALID_REPLICA_ASSIGNMENT, bad);
      const res = await changePartition(host, controller, req, (cur) => ({
        state: startReassignment(cur, target, live),
        errorCode: ErrorCode.NONE,
        errorMessage: null,
      }));
      if (res.errorCode === ErrorCode.NONE)
        host.logger.info({ topic: req.topic, partition: req.partition, target }, 'reassignment started');
      return res;
    }),
  );
}

/**
 * Controlled shutdown (SIGTERM): the leadership of every partition this broker leads goes to another
 * live member of its ISR, and this broker leaves the ISR. Fenced as the controller's own writes when
 * this broker is the controller; else each change is guarded by its partition's revision (a change
 * made meanwhile wins, and that partition stays).
 */
export async function resignLeadership(host: PartitionAdminHost, controller: Controller): Promise<number> {
  const { state, nodeId } = host;
  const changes: PartitionChange[] = [];
  for (const [name, t] of state.topics) {
    for (let p = 0; p < t.record.partitions; p++) {
      const entry = state.partition(name, p);
      if (entry === undefined || entry.state.leader !== nodeId) continue;
      const cur = entry.state;
      const next = cur.replicas.find((r) => r !== nodeId && cur.isr.includes(r) && state.brokers.has(r));
      if (next === undefined) continue; // no other in-sync replica: it stays until the session ends
      const moved: PartitionState = {
        ...cur,
        leader: next,
        leaderEpoch: cur.leaderEpoch + 1,
        isr: cur.isr.filter((r) => r !== nodeId),
        partitionEpoch: cur.partitionEpoch + 1,
      };
      changes.push({ topic: name, partition: p, modRevision: entry.modRevision, topicCreateRevision: t.createRevision, state: moved });
    }
  }
  if (changes.length === 0) return 0;
  const ok = await controller.writePartitions(changes, controller.currentFence());
  host.logger.info({ partitions: changes.length, complete: ok }, 'controlled shutdown: leadership moved to other in-sync replicas');
  return changes.length;
}
