/**
 * group seek <group> --to start|end|<offset>|@<time> [--topic t[:partitions]]... [--execute]:
 * Kafka's `kafka-consumer-groups --reset-offsets`: the plan is printed, and committed only with
 * --execute; a group with members is refused (they would overwrite the offsets).
 */
import { commitOffsets, describeGroup, fetchOffsets } from '../../client/groups.js';
import { listOffsets, OffsetTime, tpKey, type TopicPartition } from '../../client/offsets.js';
import type { Context } from '../context.js';
import { CliError, CliErrorCode, UsageError } from '../errors.js';
import { renderTable } from '../output.js';
import { parseOffsetSpec, parseTopicPartitions } from '../parse.js';
import { emit } from './common.js';

type Flags = Record<string, unknown>;

export async function groupSeek(ctx: Context, group: string, f: Flags): Promise<number> {
  const spec = parseOffsetSpec(String(f['to']));
  if (spec.kind === 'relative') throw new UsageError(`--to '${String(f['to'])}': use start, end, <offset> or @<timestamp>`);
  const execute = f['execute'] === true;
  const client = ctx.client();
  const desc = await describeGroup(client, group);
  if (desc.members.length > 0 || (desc.state !== 'Empty' && desc.state !== 'Dead')) {
    throw new CliError(
      CliErrorCode.GROUP_NOT_EMPTY,
      `group '${group}' is ${desc.state} with ${desc.members.length} member(s) (coordinator ${desc.coordinator}): offsets can only be moved while the group is inactive; stop its consumers first`,
    );
  }
  const committed = await fetchOffsets(client, group, null);
  let parts: TopicPartition[] = [];
  const topicArgs = (f['topic'] as string[] | undefined) ?? [];
  if (topicArgs.length > 0) {
    for (const a of topicArgs) {
      const { topic, partitions } = parseTopicPartitions(a);
      const t = await client.topic(topic);
      for (const p of partitions ?? t.partitions.map((x) => x.partition))
        parts.push({ topic, partition: client.partition(t, p).partition });
    }
  } else {
    parts = committed.filter((c) => c.offset >= 0n).map((c) => ({ topic: c.topic, partition: c.partition }));
    if (parts.length === 0) throw new UsageError(`group '${group}' has no committed offsets: name the topics to move with --topic`);
  }
  const earliest = await listOffsets(
    client,
    parts.map((p) => ({ ...p, timestamp: OffsetTime.EARLIEST })),
  );
  const latest = await listOffsets(
    client,
    parts.map((p) => ({ ...p, timestamp: OffsetTime.LATEST })),
  );
  const byTime =
    spec.kind === 'timestamp'
      ? await listOffsets(
          client,
          parts.map((p) => ({ ...p, timestamp: spec.timestamp })),
        )
      : null;
  const current = new Map(committed.map((c) => [tpKey(c.topic, c.partition), c.offset]));
  const plan = parts.map((p, i) => {
    const lo = earliest[i]?.offset ?? 0n;
    const hi = latest[i]?.offset ?? 0n;
    let target: bigint;
    if (spec.kind === 'start') target = lo;
    else if (spec.kind === 'end') target = hi;
    else if (spec.kind === 'offset') target = spec.offset < lo ? lo : spec.offset > hi ? hi : spec.offset;
    else {
      const t = byTime?.[i]?.offset ?? -1n;
      target = t < 0n ? hi : t;
    }
    const cur = current.get(tpKey(p.topic, p.partition));
    return { ...p, currentOffset: cur !== undefined && cur >= 0n ? cur : null, newOffset: target };
  });
  if (execute)
    await commitOffsets(
      client,
      group,
      plan.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.newOffset })),
    );
  emit(ctx, { group, executed: execute, partitions: plan }, () =>
    [
      renderTable(
        ['TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'NEW-OFFSET'],
        plan.map((p) => [p.topic, p.partition, p.currentOffset, p.newOffset]),
      ),
      '',
      execute ? `committed the new offsets of group '${group}'` : 'dry run: nothing committed (add --execute to commit these offsets)',
    ].join('\n'),
  );
  return 0;
}
