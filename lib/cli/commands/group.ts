/** group list | describe | delete (seek: group-seek.ts) */
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { KafkaClient } from '../../client/client.js';
import { deleteGroups, describeGroup, fetchOffsets, listGroups, type GroupDescription } from '../../client/groups.js';
import { listOffsets, OffsetTime, tpKey, type TopicPartition } from '../../client/offsets.js';
import type { Context } from '../context.js';
import { renderPairs, renderTable } from '../output.js';
import { emit, itemError, jsonKafkaError, reportFailures, statusCell } from './common.js';

type Flags = Record<string, unknown>;

export async function groupList(ctx: Context, f: Flags): Promise<number> {
  const opts: { states?: string[]; types?: string[] } = {};
  if (f['state'] !== undefined) opts.states = f['state'] as string[];
  if (f['type'] !== undefined) opts.types = f['type'] as string[];
  const groups = await listGroups(ctx.client(), opts);
  emit(
    ctx,
    groups.map((g) => ({
      group: g.groupId,
      type: g.type === '' ? null : g.type,
      state: g.state === '' ? null : g.state,
      protocolType: g.protocolType,
      coordinator: g.coordinator,
    })),
    () =>
      renderTable(
        ['GROUP', 'TYPE', 'STATE', 'PROTOCOL-TYPE'],
        groups.map((g) => [
          g.groupId,
          g.type === '' ? null : g.type,
          g.state === '' ? null : g.state,
          g.protocolType === '' ? null : g.protocolType,
        ]),
      ),
  );
  return 0;
}

export interface LagRow extends TopicPartition {
  committedOffset: bigint | null;
  logEndOffset: bigint | null;
  lag: bigint | null;
  memberId: string | null;
  clientId: string | null;
  clientHost: string | null;
}

/** Per-partition committed offset, log end and lag of a group, with the member that owns each partition. */
export async function groupLag(client: KafkaClient, desc: GroupDescription): Promise<LagRow[]> {
  const committed = await fetchOffsets(client, desc.groupId, null);
  const owner = new Map<string, GroupDescription['members'][number]>();
  for (const m of desc.members) for (const tp of m.assignment) owner.set(tpKey(tp.topic, tp.partition), m);
  const all = new Map<string, TopicPartition>();
  for (const c of committed) all.set(tpKey(c.topic, c.partition), { topic: c.topic, partition: c.partition });
  for (const m of desc.members) for (const tp of m.assignment) all.set(tpKey(tp.topic, tp.partition), tp);
  const parts = [...all.values()].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  const topics = [...new Set(parts.map((p) => p.topic))];
  const md = topics.length === 0 ? null : await client.metadata(topics);
  const existing = parts.filter(
    (p) =>
      md?.topics.some((t) => t.name === p.topic && t.errorCode === 0 && t.partitions.some((x) => x.partition === p.partition)) === true,
  );
  const ends = await listOffsets(
    client,
    existing.map((p) => ({ ...p, timestamp: OffsetTime.LATEST })),
  );
  const endOf = new Map(ends.map((e) => [tpKey(e.topic, e.partition), e.offset]));
  return parts.map((p) => {
    const k = tpKey(p.topic, p.partition);
    const c = committed.find((x) => x.topic === p.topic && x.partition === p.partition);
    const committedOffset = c !== undefined && c.offset >= 0n ? c.offset : null;
    const logEndOffset = endOf.get(k) ?? null;
    const m = owner.get(k);
    return {
      ...p,
      committedOffset,
      logEndOffset,
      lag:
        committedOffset !== null && logEndOffset !== null ? (logEndOffset > committedOffset ? logEndOffset - committedOffset : 0n) : null,
      memberId: m?.memberId ?? null,
      clientId: m?.clientId ?? null,
      clientHost: m?.clientHost ?? null,
    };
  });
}

export async function groupDescribe(ctx: Context, groups: string[], _f: Flags): Promise<number> {
  const client = ctx.client();
  const failures: unknown[] = [];
  const described: { desc: GroupDescription; rows: LagRow[] }[] = [];
  for (const g of groups) {
    const desc = await describeGroup(client, g);
    const rows = await groupLag(client, desc);
    if (desc.state === 'Dead' && rows.length === 0) {
      failures.push(
        itemError('DescribeGroups', desc.coordinator, `group '${g}'`, ErrorCode.GROUP_ID_NOT_FOUND, 'the group does not exist'),
      );
      continue;
    }
    described.push({ desc, rows });
  }
  const totalLag = (rows: LagRow[]) => rows.reduce((n, r) => n + (r.lag ?? 0n), 0n);
  emit(
    ctx,
    described.map(({ desc: d, rows }) => ({
      group: d.groupId,
      coordinator: d.coordinator,
      state: d.state,
      type: d.type,
      protocolType: d.protocolType,
      assignor: d.assignor === '' ? null : d.assignor,
      members: d.members.map((m) => ({
        memberId: m.memberId,
        instanceId: m.instanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        assignment: m.assignment,
      })),
      totalLag: totalLag(rows),
      partitions: rows,
    })),
    () =>
      described
        .map(({ desc: d, rows }) =>
          [
            renderPairs([
              ['GROUP', d.groupId],
              ['COORDINATOR', d.coordinator],
              ['STATE', d.state],
              ['TYPE', d.type],
              ['ASSIGNOR', d.assignor === '' ? null : d.assignor],
              ['MEMBERS', d.members.length],
              ['TOTAL-LAG', totalLag(rows)],
            ]),
            '',
            renderTable(
              ['TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'LOG-END-OFFSET', 'LAG', 'MEMBER-ID', 'CLIENT-ID', 'HOST'],
              rows.map((r) => [r.topic, r.partition, r.committedOffset, r.logEndOffset, r.lag, r.memberId, r.clientId, r.clientHost]),
            ),
          ].join('\n'),
        )
        .join('\n\n'),
  );
  return reportFailures(failures);
}

export async function groupDelete(ctx: Context, groups: string[], _f: Flags): Promise<number> {
  const results = await deleteGroups(ctx.client(), groups);
  const failures = results
    .filter((r) => r.errorCode !== 0)
    .map((r) =>
      itemError(
        'DeleteGroups',
        r.broker,
        `group '${r.name}'`,
        r.errorCode,
        r.errorCode === ErrorCode.NON_EMPTY_GROUP ? 'the group has members: stop its consumers first' : null,
      ),
    );
  emit(
    ctx,
    results.map((r) => ({ group: r.name, error: r.errorCode === 0 ? null : jsonKafkaError(r.errorCode, null) })),
    () =>
      renderTable(
        ['GROUP', 'STATUS'],
        results.map((r) => [r.name, statusCell(r.errorCode)]),
      ),
  );
  return reportFailures(failures);
}
