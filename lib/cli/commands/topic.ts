/** topic create | list | describe | delete | alter-config | add-partitions */
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { createPartitions, createTopics, deleteTopics } from '../../client/admin.js';
import { alterConfigs, ConfigOp, describeConfigs, ResourceType, type ConfigChange, type ConfigEntry } from '../../client/configs.js';
import { ClientError } from '../../client/errors.js';
import { formatTopicId, type TopicInfo } from '../../client/metadata.js';
import { listOffsets, OffsetTime } from '../../client/offsets.js';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { heading, idList, renderPairs, renderTable } from '../output.js';
import { parseKeyValue } from '../parse.js';
import { byName, emit, itemError, jsonClientError, jsonKafkaError, reportFailures, statusCell } from './common.js';

type Flags = Record<string, unknown>;

function replicationOf(t: TopicInfo): number {
  return t.partitions[0]?.replicas.length ?? 0;
}

export async function topicCreate(ctx: Context, names: string[], f: Flags): Promise<number> {
  const configs = Object.fromEntries(((f['config'] as string[] | undefined) ?? []).map((kv) => parseKeyValue(kv, '--config key=value')));
  const client = ctx.client();
  const results = await createTopics(
    client,
    names.map((name) => ({
      name,
      partitions: (f['partitions'] as number | undefined) ?? -1,
      replicationFactor: (f['replicationFactor'] as number | undefined) ?? -1,
      configs,
    })),
    { validateOnly: f['dryRun'] === true, timeoutMs: client.options.requestTimeoutMs },
  );
  const tolerated = (code: number) => code === 0 || (code === ErrorCode.TOPIC_ALREADY_EXISTS && f['ifNotExists'] === true);
  const created = results.filter((r) => r.errorCode === 0).map((r) => r.name);
  if (created.length > 0 && f['dryRun'] !== true) await client.waitForLeaders(created, Date.now() + client.options.requestTimeoutMs);
  const failures = results
    .filter((r) => !tolerated(r.errorCode))
    .map((r) => itemError('CreateTopics', r.broker, `topic '${r.name}'`, r.errorCode, r.errorMessage));
  emit(
    ctx,
    results.map((r) => ({
      topic: r.name,
      topicId: r.errorCode === 0 && !/^0+$/.test(r.topicId) ? formatTopicId(r.topicId) : null,
      partitions: r.errorCode === 0 ? r.partitions : null,
      replicationFactor: r.errorCode === 0 ? r.replicationFactor : null,
      validateOnly: f['dryRun'] === true,
      error: r.errorCode === 0 ? null : jsonKafkaError(r.errorCode, r.errorMessage),
    })),
    () =>
      renderTable(
        ['TOPIC', 'PARTITIONS', 'REPLICAS', 'STATUS'],
        results.map((r) => [
          r.name,
          r.errorCode === 0 ? r.partitions : null,
          r.errorCode === 0 ? r.replicationFactor : null,
          r.errorCode === ErrorCode.TOPIC_ALREADY_EXISTS && f['ifNotExists'] === true
            ? 'EXISTS'
            : r.errorCode === 0 && f['dryRun'] === true
              ? 'OK (dry run)'
              : statusCell(r.errorCode),
        ]),
      ),
  );
  return reportFailures(failures);
}

export async function topicList(ctx: Context, f: Flags): Promise<number> {
  const md = await ctx.client().metadata(null);
  const topics = md.topics.filter((t) => t.errorCode === 0 && (f['internal'] === true || !t.isInternal)).sort(byName((t) => t.name));
  emit(
    ctx,
    topics.map((t) => ({
      name: t.name,
      topicId: formatTopicId(t.topicId),
      internal: t.isInternal,
      partitions: t.partitions.length,
      replicationFactor: replicationOf(t),
    })),
    () =>
      renderTable(
        ['NAME', 'PARTITIONS', 'REPLICAS'],
        topics.map((t) => [t.name + (t.isInternal ? ' (internal)' : ''), t.partitions.length, replicationOf(t)]),
      ),
  );
  return 0;
}

interface DescribedTopic {
  topic: TopicInfo;
  offsets: Map<number, { logStartOffset: bigint; highWatermark: bigint }>;
  configs: ConfigEntry[] | null;
}

export async function topicDescribe(ctx: Context, names: string[], f: Flags): Promise<number> {
  const client = ctx.client();
  const md = await client.metadata(names);
  const failures: ClientError[] = [];
  const described: DescribedTopic[] = [];
  const conn = await client.any();
  const canConfigs = conn.supports(ApiKey.DescribeConfigs);
  if (!canConfigs) ctx.notice(`configs skipped: ${conn.label} does not support DescribeConfigs`);
  for (const name of names) {
    const t = md.topics.find((x) => x.name === name);
    if (t === undefined || t.errorCode !== 0) {
      failures.push(itemError('Metadata', conn.label, `topic '${name}'`, t?.errorCode ?? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, null));
      continue;
    }
    const withLeader = t.partitions.filter((p) => p.leader >= 0);
    const earliest = await listOffsets(
      client,
      withLeader.map((p) => ({ topic: name, partition: p.partition, timestamp: OffsetTime.EARLIEST })),
    );
    const latest = await listOffsets(
      client,
      withLeader.map((p) => ({ topic: name, partition: p.partition, timestamp: OffsetTime.LATEST })),
    );
    const offsets = new Map(
      withLeader.map((p, i) => [p.partition, { logStartOffset: earliest[i]?.offset ?? -1n, highWatermark: latest[i]?.offset ?? -1n }]),
    );
    let configs: ConfigEntry[] | null = null;
    if (canConfigs) {
      const all = (await describeConfigs(client, ResourceType.TOPIC, name)).configs;
      configs = f['allConfigs'] === true ? all : all.filter((c) => c.source !== 'DEFAULT_CONFIG');
    }
    described.push({ topic: t, offsets, configs });
  }
  emit(
    ctx,
    described.map(({ topic: t, offsets, configs }) => ({
      name: t.name,
      topicId: formatTopicId(t.topicId),
      internal: t.isInternal,
      replicationFactor: replicationOf(t),
      partitions: t.partitions.map((p) => ({
        partition: p.partition,
        leader: p.leader,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicas,
        isr: p.isr,
        offlineReplicas: p.offline,
        logStartOffset: offsets.get(p.partition)?.logStartOffset ?? null,
        highWatermark: offsets.get(p.partition)?.highWatermark ?? null,
        error: p.errorCode === 0 ? null : jsonKafkaError(p.errorCode, null),
      })),
      configs,
    })),
    () =>
      described
        .map(({ topic: t, offsets, configs }) => {
          const parts = [
            heading('SUMMARY'),
            renderPairs([
              ['NAME', t.name],
              ['ID', formatTopicId(t.topicId)],
              ['PARTITIONS', t.partitions.length],
              ['REPLICAS', replicationOf(t)],
              ['INTERNAL', t.isInternal],
            ]),
          ];
          if (configs !== null)
            parts.push(
              '',
              heading('CONFIGS'),
              renderTable(
                ['KEY', 'VALUE', 'SOURCE'],
                configs.map((c) => [c.name, c.sensitive ? '(sensitive)' : c.value, c.source]),
              ),
            );
          parts.push(
            '',
            heading('PARTITIONS'),
            renderTable(
              ['PARTITION', 'LEADER', 'EPOCH', 'REPLICAS', 'ISR', 'LOG-START-OFFSET', 'HIGH-WATERMARK'],
              t.partitions.map((p) => [
                p.partition,
                p.leader,
                p.leaderEpoch,
                idList(p.replicas),
                idList(p.isr),
                offsets.get(p.partition)?.logStartOffset,
                offsets.get(p.partition)?.highWatermark,
              ]),
            ),
          );
          return parts.join('\n');
        })
        .join('\n\n'),
  );
  return reportFailures(failures);
}

export async function topicDelete(ctx: Context, names: string[], f: Flags): Promise<number> {
  const client = ctx.client();
  const results = await deleteTopics(client, names, { timeoutMs: client.options.requestTimeoutMs });
  const skipped = (code: number) => code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION && f['ifExists'] === true;
  const failures = results
    .filter((r) => r.errorCode !== 0 && !skipped(r.errorCode))
    .map((r) => itemError('DeleteTopics', r.broker, `topic '${r.name}'`, r.errorCode, r.errorMessage));
  emit(
    ctx,
    results.map((r) => ({ topic: r.name, error: r.errorCode === 0 ? null : jsonKafkaError(r.errorCode, r.errorMessage) })),
    () =>
      renderTable(
        ['TOPIC', 'STATUS'],
        results.map((r) => [r.name, skipped(r.errorCode) ? 'NOT FOUND (skipped)' : statusCell(r.errorCode)]),
      ),
  );
  return reportFailures(failures);
}

const OP_NAMES = ['SET', 'DELETE', 'APPEND', 'SUBTRACT'] as const;

export async function topicAlterConfig(ctx: Context, names: string[], f: Flags): Promise<number> {
  const changes: ConfigChange[] = [];
  for (const kv of (f['set'] as string[] | undefined) ?? []) {
    const [name, value] = parseKeyValue(kv, '--set key=value');
    changes.push({ name, op: ConfigOp.SET, value });
  }
  for (const name of (f['delete'] as string[] | undefined) ?? []) changes.push({ name, op: ConfigOp.DELETE, value: null });
  for (const kv of (f['append'] as string[] | undefined) ?? []) {
    const [name, value] = parseKeyValue(kv, '--append key=value');
    changes.push({ name, op: ConfigOp.APPEND, value });
  }
  for (const kv of (f['subtract'] as string[] | undefined) ?? []) {
    const [name, value] = parseKeyValue(kv, '--subtract key=value');
    changes.push({ name, op: ConfigOp.SUBTRACT, value });
  }
  if (changes.length === 0) throw new UsageError('nothing to change: give --set, --delete, --append or --subtract');
  const client = ctx.client();
  const results: { topic: string; api: string | null; error: unknown }[] = [];
  for (const topic of names) {
    try {
      const api = await alterConfigs(client, ResourceType.TOPIC, topic, changes, { validateOnly: f['dryRun'] === true });
      results.push({ topic, api, error: null });
    } catch (e) {
      if (!(e instanceof ClientError) || e.kafkaCode === undefined) throw e;
      results.push({ topic, api: null, error: e });
    }
  }
  emit(
    ctx,
    results.map((r) => ({
      topic: r.topic,
      api: r.api,
      validateOnly: f['dryRun'] === true,
      changes: changes.map((c) => ({ name: c.name, op: OP_NAMES[c.op], value: c.value })),
      error: r.error === null ? null : jsonClientError(r.error),
    })),
    () =>
      renderTable(
        ['TOPIC', 'KEY', 'OPERATION', 'VALUE', 'STATUS'],
        results.flatMap((r) =>
          changes.map((c) => [
            r.topic,
            c.name,
            OP_NAMES[c.op],
            c.value,
            r.error instanceof ClientError ? statusCell(r.error.kafkaCode ?? -1) : f['dryRun'] === true ? 'OK (dry run)' : 'OK',
          ]),
        ),
      ),
  );
  return reportFailures(results.filter((r) => r.error !== null).map((r) => r.error));
}

export async function topicAddPartitions(ctx: Context, names: string[], f: Flags): Promise<number> {
  const num = f['num'] as number | undefined;
  const total = f['total'] as number | undefined;
  if (num === undefined && total === undefined) throw new UsageError('give --num <n> (partitions to add) or --total <n>');
  const client = ctx.client();
  const md = await client.metadata(names);
  const failures: unknown[] = [];
  const plan: { name: string; from: number; to: number }[] = [];
  for (const name of names) {
    const t = md.topics.find((x) => x.name === name);
    if (t === undefined || t.errorCode !== 0) {
      failures.push(
        itemError('Metadata', (await client.any()).label, `topic '${name}'`, t?.errorCode ?? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, null),
      );
      continue;
    }
    plan.push({ name, from: t.partitions.length, to: total ?? t.partitions.length + (num ?? 0) });
  }
  const results =
    plan.length === 0
      ? []
      : await createPartitions(
          client,
          plan.map((p) => ({ name: p.name, count: p.to })),
          { validateOnly: f['dryRun'] === true, timeoutMs: client.options.requestTimeoutMs },
        );
  for (const r of results)
    if (r.errorCode !== 0) failures.push(itemError('CreatePartitions', r.broker, `topic '${r.name}'`, r.errorCode, r.errorMessage));
  const grown = results.filter((r) => r.errorCode === 0).map((r) => r.name);
  if (grown.length > 0 && f['dryRun'] !== true) {
    await client.waitForLeaders(grown, Date.now() + client.options.requestTimeoutMs, new Map(plan.map((p) => [p.name, p.to])));
  }
  const rows = plan.map((p) => ({ ...p, r: results.find((x) => x.name === p.name) }));
  emit(
    ctx,
    rows.map(({ name, from, to, r }) => ({
      topic: name,
      partitionsBefore: from,
      partitions: to,
      validateOnly: f['dryRun'] === true,
      error: r === undefined || r.errorCode === 0 ? null : jsonKafkaError(r.errorCode, r.errorMessage),
    })),
    () =>
      renderTable(
        ['TOPIC', 'BEFORE', 'AFTER', 'STATUS'],
        rows.map(({ name, from, to, r }) => [
          name,
          from,
          to,
          r === undefined ? '-' : r.errorCode === 0 && f['dryRun'] === true ? 'OK (dry run)' : statusCell(r.errorCode),
        ]),
      ),
  );
  return reportFailures(failures);
}
