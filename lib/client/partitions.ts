/** Partition administration: ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments (sent to the controller). */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { AlterPartitionReassignmentsResponse } from '../../protocol/generated/alter-partition-reassignments.js';
import type { ElectLeadersRequest, ElectLeadersResponse } from '../../protocol/generated/elect-leaders.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ListPartitionReassignmentsResponse } from '../../protocol/generated/list-partition-reassignments.js';
import { ElectionType } from '../metadata/store.js';
import { onController } from './admin.js';
import type { KafkaClient } from './client.js';
import type { BrokerConnection } from './connection.js';
import { ClientError, ClientErrorCode } from './errors.js';

export interface PartitionOutcome {
  topic: string;
  partition: number;
  errorCode: number;
  errorMessage: string | null;
  /** the broker that answered, for error messages */
  broker: string;
}

export interface OngoingReassignment {
  topic: string;
  partition: number;
  replicas: number[];
  addingReplicas: number[];
  removingReplicas: number[];
}

export { ElectionType } from '../metadata/store.js';

/** Partitions grouped by topic, as the requests carry them. */
function grouped<T extends { topic: string; partition: number }>(items: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const i of items) {
    let rows = out.get(i.topic);
    if (rows === undefined) out.set(i.topic, (rows = []));
    rows.push(i);
  }
  return out;
}

/**
 * onController, except that when the controller cannot be reached (it just died, and its election
 * outlives it for the session timeout) any broker takes the request: gregor's brokers all do, as
 * KRaft brokers do by forwarding; an older Kafka's answer NOT_CONTROLLER then says so.
 */
async function viaController<T>(
  client: KafkaClient,
  fn: (c: BrokerConnection) => Promise<{ result: T; notController: boolean }>,
): Promise<T> {
  try {
    return await onController(client, fn);
  } catch (e) {
    if (!(e instanceof ClientError) || e.code !== ClientErrorCode.CONNECT) throw e;
    return (await fn(await client.any())).result;
  }
}

function outcome(
  c: BrokerConnection,
  topic: string,
  partition: number,
  p: { errorCode: number; errorMessage: string | null },
): PartitionOutcome {
  return { topic, partition, errorCode: p.errorCode, errorMessage: p.errorMessage, broker: c.label };
}

/** The outcomes, and whether the broker asked was not the controller (onController then asks again). */
function answered(result: PartitionOutcome[]): { result: PartitionOutcome[]; notController: boolean } {
  return { result, notController: result.some((r) => r.errorCode === ErrorCode.NOT_CONTROLLER) };
}

/** `partitions` null: every partition (the answer then leaves out those already led as asked). */
export async function electLeaders(
  client: KafkaClient,
  type: number,
  partitions: readonly { topic: string; partition: number }[] | null,
  opts: { timeoutMs?: number } = {},
): Promise<PartitionOutcome[]> {
  return viaController(client, async (c) => {
    const res = await c.request<ElectLeadersResponse>(
      ApiKey.ElectLeaders,
      (v): ElectLeadersRequest => {
        const body: ElectLeadersRequest = {
          topicPartitions:
            partitions === null ? null : [...grouped(partitions)].map(([topic, ps]) => ({ topic, partitions: ps.map((p) => p.partition) })),
          timeoutMs: opts.timeoutMs ?? 30000,
        };
        if (v >= 1) body.electionType = type;
        return body;
      },
      { minVersion: type === ElectionType.PREFERRED ? 0 : 1 },
    );
    c.check(res.body.errorCode, ApiKey.ElectLeaders);
    return answered(res.body.replicaElectionResults.flatMap((t) => t.partitionResult.map((p) => outcome(c, t.topic, p.partitionId, p))));
  });
}

/** `replicas` null: cancel the partition's reassignment. */
export async function alterPartitionReassignments(
  client: KafkaClient,
  reqs: readonly { topic: string; partition: number; replicas: number[] | null }[],
  opts: { timeoutMs?: number } = {},
): Promise<PartitionOutcome[]> {
  return viaController(client, async (c) => {
    const res = await c.request<AlterPartitionReassignmentsResponse>(ApiKey.AlterPartitionReassignments, () => ({
      timeoutMs: opts.timeoutMs ?? 30000,
      topics: [...grouped(reqs)].map(([name, ps]) => ({
        name,
        partitions: ps.map((p) => ({ partitionIndex: p.partition, replicas: p.replicas })),
      })),
    }));
    c.check(res.body.errorCode, ApiKey.AlterPartitionReassignments, undefined, res.body.errorMessage);
    return answered(res.body.responses.flatMap((t) => t.partitions.map((p) => outcome(c, t.name, p.partitionIndex, p))));
  });
}

/** The reassignments in progress (of `topics`' partitions, or of every partition). */
export async function listPartitionReassignments(
  client: KafkaClient,
  topics: readonly { topic: string; partitions: number[] }[] | null,
  opts: { timeoutMs?: number } = {},
): Promise<OngoingReassignment[]> {
  return viaController(client, async (c) => {
    const res = await c.request<ListPartitionReassignmentsResponse>(ApiKey.ListPartitionReassignments, () => ({
      timeoutMs: opts.timeoutMs ?? 30000,
      topics: topics === null ? null : topics.map((t) => ({ name: t.topic, partitionIndexes: t.partitions })),
    }));
    const notController = res.body.errorCode === ErrorCode.NOT_CONTROLLER;
    if (!notController) c.check(res.body.errorCode, ApiKey.ListPartitionReassignments, undefined, res.body.errorMessage);
    const result = res.body.topics.flatMap((t) =>
      t.partitions.map((p) => ({
        topic: t.name,
        partition: p.partitionIndex,
        replicas: p.replicas,
        addingReplicas: p.addingReplicas,
        removingReplicas: p.removingReplicas,
      })),
    );
    return { result, notController };
  });
}
