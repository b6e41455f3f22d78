/** Consumer-group administration: ListGroups, DescribeGroups / ConsumerGroupDescribe, OffsetFetch, OffsetCommit, DeleteGroups. */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ConsumerGroupDescribeResponse } from '../../protocol/generated/consumer-group-describe.js';
import type { DeleteGroupsResponse } from '../../protocol/generated/delete-groups.js';
import type { DescribeGroupsResponse } from '../../protocol/generated/describe-groups.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { ListGroupsRequest, ListGroupsResponse } from '../../protocol/generated/list-groups.js';
import type { OffsetCommitRequest, OffsetCommitResponse } from '../../protocol/generated/offset-commit.js';
import type { OffsetFetchRequest, OffsetFetchResponse } from '../../protocol/generated/offset-fetch.js';
import type { AdminResult } from './admin.js';
import type { KafkaClient } from './client.js';
import type { BrokerConnection } from './connection.js';
import { decodeAssignment } from './consumer-protocol.js';
import { ClientError, ClientErrorCode } from './errors.js';
import type { TopicPartition } from './offsets.js';

const COORDINATOR_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.NOT_COORDINATOR,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
]);

/** Runs `fn` on the group's coordinator; a moved or loading coordinator is looked up again. */
export async function onCoordinator<T>(client: KafkaClient, groupId: string, fn: (c: BrokerConnection) => Promise<T>): Promise<T> {
  const deadline = Date.now() + client.options.requestTimeoutMs;
  for (let attempt = 0; ; attempt++) {
    const c = await client.coordinator(groupId, attempt > 0);
    try {
      return await fn(c);
    } catch (e) {
      const moved = e instanceof ClientError && e.kafkaCode !== undefined && COORDINATOR_ERRORS.has(e.kafkaCode);
      if (!moved || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, Math.min(100 * (attempt + 1), 1000)));
    }
  }
}

export interface ListedGroup {
  groupId: string;
  protocolType: string;
  /** '' when the broker is older than ListGroups v4 */
  state: string;
  /** classic / consumer / share; '' before ListGroups v5 */
  type: string;
  coordinator: number;
}

/** Groups of every broker (each lists the groups it coordinates), sorted by id. */
export async function listGroups(client: KafkaClient, opts: { states?: string[]; types?: string[] } = {}): Promise<ListedGroup[]> {
  const conns = await client.allBrokers();
  const out: ListedGroup[] = [];
  await Promise.all(
    conns.map(async (c) => {
      const res = await c.request<ListGroupsResponse>(ApiKey.ListGroups, (v) => {
        const body: ListGroupsRequest = {};
        if (v >= 4) body.statesFilter = opts.states ?? [];
        if (v >= 5) body.typesFilter = opts.types ?? [];
        return body;
      });
      c.check(res.body.errorCode, ApiKey.ListGroups);
      const node = [...client.brokers.values()].find((b) => `${b.host}:${b.port}` === c.endpoint)?.nodeId ?? -1;
      for (const g of res.body.groups) {
        const item = {
          groupId: g.groupId,
          protocolType: g.protocolType,
          state: g.groupState ?? '',
          type: g.groupType ?? '',
          coordinator: node,
        };
        // filters the broker could not apply (older versions) are applied here
        if (res.version < 4 && opts.states !== undefined && opts.states.length > 0) continue;
        // before v5 every group is classic
        if (res.version < 5 && opts.types !== undefined && opts.types.length > 0 && !opts.types.some((t) => t.toLowerCase() === 'classic'))
          continue;
        out.push(item);
      }
    }),
  );
  const seen = new Set<string>();
  return out
    .filter((g) => !seen.has(g.groupId) && seen.add(g.groupId))
    .sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0));
}

export interface GroupMember {
  memberId: string;
  instanceId: string | null;
  clientId: string;
  clientHost: string;
  assignment: TopicPartition[];
}

export interface GroupDescription {
  groupId: string;
  /** Kafka's state names: Empty, Stable, PreparingRebalance, ... ; Dead for a group that does not exist */
  state: string;
  /** classic (JoinGroup/SyncGroup) or consumer (KIP-848) */
  type: 'classic' | 'consumer';
  protocolType: string;
  /** the assignor (classic: the protocol name) */
  assignor: string;
  coordinator: string;
  members: GroupMember[];
}

/** Describes a group: DescribeGroups, and ConsumerGroupDescribe for a KIP-848 group. */
export async function describeGroup(client: KafkaClient, groupId: string): Promise<GroupDescription> {
  return onCoordinator(client, groupId, async (c) => {
    const res = await c.request<DescribeGroupsResponse>(ApiKey.DescribeGroups, () => ({ groups: [groupId] }));
    const g = res.body.groups[0];
    if (g === undefined)
      throw new ClientError(ClientErrorCode.PROTOCOL, `DescribeGroups on ${c.label} answered no group`, {
        broker: c.label,
        api: 'DescribeGroups',
      });
    const notClassic =
      g.errorCode === ErrorCode.GROUP_ID_NOT_FOUND || (g.errorCode === 0 && g.groupState === 'Dead' && g.members.length === 0);
    if (notClassic && c.supports(ApiKey.ConsumerGroupDescribe)) {
      const cres = await c.request<ConsumerGroupDescribeResponse>(ApiKey.ConsumerGroupDescribe, () => ({
        groupIds: [groupId],
        includeAuthorizedOperations: false,
      }));
      const cg = cres.body.groups[0];
      if (cg !== undefined && cg.errorCode === 0) {
        return {
          groupId,
          state: cg.groupState,
          type: 'consumer',
          protocolType: 'consumer',
          assignor: cg.assignorName,
          coordinator: c.label,
          members: cg.members.map((m) => ({
            memberId: m.memberId,
            instanceId: m.instanceId,
            clientId: m.clientId,
            clientHost: m.clientHost,
            assignment: m.assignment.topicPartitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topicName, partition }))),
          })),
        };
      }
      if (cg !== undefined && cg.errorCode !== ErrorCode.GROUP_ID_NOT_FOUND)
        c.check(cg.errorCode, ApiKey.ConsumerGroupDescribe, `group '${groupId}'`, cg.errorMessage);
    }
    if (g.errorCode === ErrorCode.GROUP_ID_NOT_FOUND)
      return { groupId, state: 'Dead', type: 'classic', protocolType: '', assignor: '', coordinator: c.label, members: [] };
    c.check(g.errorCode, ApiKey.DescribeGroups, `group '${groupId}'`);
    return {
      groupId,
      state: g.groupState,
      type: 'classic',
      protocolType: g.protocolType,
      assignor: g.protocolData,
      coordinator: c.label,
      members: g.members.map((m) => ({
        memberId: m.memberId,
        instanceId: m.groupInstanceId ?? null,
        clientId: m.clientId,
        clientHost: m.clientHost,
        assignment: g.protocolType === 'consumer' ? decodeAssignment(m.memberAssignment) : [],
      })),
    };
  });
}

export interface CommittedOffset extends TopicPartition {
  /** -1 when nothing is committed */
  offset: bigint;
  metadata: string | null;
}

/** Committed offsets of a group: of `partitions`, or of every partition it committed (null). */
export async function fetchOffsets(
  client: KafkaClient,
  groupId: string,
  partitions: readonly TopicPartition[] | null,
): Promise<CommittedOffset[]> {
  const topics = partitions === null ? null : [...groupBy(partitions)].map(([name, ps]) => ({ name, partitionIndexes: ps }));
  return onCoordinator(client, groupId, async (c) => {
    const res = await c.request<OffsetFetchResponse>(
      ApiKey.OffsetFetch,
      (v): OffsetFetchRequest => (v >= 8 ? { groups: [{ groupId, topics }] } : { groupId, topics }),
      { minVersion: topics === null ? 2 : 1 },
    );
    const subject = `group '${groupId}'`;
    let ts: {
      name?: string;
      partitions?: { partitionIndex?: number; committedOffset?: bigint; metadata?: string | null; errorCode?: number }[];
    }[];
    if (res.version >= 8) {
      const g = res.body.groups?.[0];
      c.check(g?.errorCode, ApiKey.OffsetFetch, subject);
      ts = g?.topics ?? [];
    } else {
      c.check(res.body.errorCode, ApiKey.OffsetFetch, subject);
      ts = res.body.topics ?? [];
    }
    const out: CommittedOffset[] = [];
    for (const t of ts) {
      for (const p of t.partitions ?? []) {
        c.check(p.errorCode, ApiKey.OffsetFetch, `${subject} ${t.name}-${p.partitionIndex}`);
        out.push({ topic: t.name ?? '', partition: p.partitionIndex ?? 0, offset: p.committedOffset ?? -1n, metadata: p.metadata ?? null });
      }
    }
    return out.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  });
}

function groupBy(parts: readonly TopicPartition[]): Map<string, number[]> {
  const m = new Map<string, number[]>();
  for (const p of parts) m.set(p.topic, [...(m.get(p.topic) ?? []), p.partition]);
  return m;
}

export interface CommitOptions {
  /** -1 for a commit from outside the group (admin, group seek) */
  generationId?: number;
  memberId?: string;
}

/** Commits offsets; a partition's error is thrown (naming the coordinator and the Kafka code). */
export async function commitOffsets(
  client: KafkaClient,
  groupId: string,
  offsets: readonly (TopicPartition & { offset: bigint })[],
  opts: CommitOptions = {},
): Promise<void> {
  if (offsets.length === 0) return;
  const byTopic = new Map<string, { partition: number; offset: bigint }[]>();
  for (const o of offsets) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), o]);
  await onCoordinator(client, groupId, async (c) => {
    const res = await c.request<OffsetCommitResponse>(ApiKey.OffsetCommit, (v) => {
      const body: OffsetCommitRequest = {
        groupId,
        topics: [...byTopic].map(([name, ps]) => ({
          name,
          partitions: ps.map((p) => ({ partitionIndex: p.partition, committedOffset: p.offset, committedMetadata: '' })),
        })),
      };
      if (v >= 1) {
        body.generationIdOrMemberEpoch = opts.generationId ?? -1;
        body.memberId = opts.memberId ?? '';
      }
      return body;
    });
    for (const t of res.body.topics)
      for (const p of t.partitions) c.check(p.errorCode, ApiKey.OffsetCommit, `group '${groupId}' ${t.name}-${p.partitionIndex}`);
  });
}

/** Deletes groups (each on its coordinator); per-group results, errors not thrown. */
export async function deleteGroups(client: KafkaClient, groupIds: readonly string[]): Promise<AdminResult[]> {
  const out: AdminResult[] = [];
  for (const groupId of groupIds) {
    const r = await onCoordinator(client, groupId, async (c) => {
      const res = await c.request<DeleteGroupsResponse>(ApiKey.DeleteGroups, () => ({ groupsNames: [groupId] }));
      const g = res.body.results[0];
      const code = g?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR;
      if (COORDINATOR_ERRORS.has(code)) c.check(code, ApiKey.DeleteGroups, `group '${groupId}'`); // retried by onCoordinator
      return { name: groupId, errorCode: code, errorMessage: null, broker: c.label };
    });
    out.push(r);
  }
  return out;
}
