/** partitions reassign | reassignments | elect-leaders (Kafka's kafka-reassign-partitions and kafka-leader-election). */
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import {
  alterPartitionReassignments,
  electLeaders,
  ElectionType,
  listPartitionReassignments,
  type PartitionOutcome,
} from '../../client/partitions.js';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { idList, renderTable } from '../output.js';
import { emit, itemError, jsonKafkaError, reportFailures, statusCell } from './common.js';

type Flags = Record<string, unknown>;

/** How often --wait asks whether the reassignments are done. */
const WAIT_POLL_MS = 250;

function report(ctx: Context, api: string, results: readonly PartitionOutcome[], ok: (code: number) => boolean): number {
  emit(
    ctx,
    results.map((r) => ({
      topic: r.topic,
      partition: r.partition,
      error: r.errorCode === 0 ? null : jsonKafkaError(r.errorCode, r.errorMessage),
    })),
    () =>
      renderTable(
        ['TOPIC', 'PARTITION', 'STATUS'],
        results.map((r) => [r.topic, r.partition, statusCell(r.errorCode)]),
      ),
  );
  const failures = results
    .filter((r) => !ok(r.errorCode))
    .map((r) => itemError(api, r.broker, `partition ${r.topic}-${r.partition}`, r.errorCode, r.errorMessage));
  return reportFailures(failures);
}

function partitionsOf(f: Flags): { topic: string; partition: number }[] {
  const topic = f['topic'] as string | undefined;
  const partitions = (f['partition'] as number[] | undefined) ?? [];
  if (topic === undefined) throw new UsageError('give --topic');
  if (partitions.length === 0) throw new UsageError('give --partition');
  return partitions.map((partition) => ({ topic, partition }));
}

export async function partitionsReassign(ctx: Context, f: Flags): Promise<number> {
  const cancel = f['cancel'] === true;
  const replicas = (f['replicas'] as number[] | undefined) ?? null;
  if (cancel === (replicas !== null)) throw new UsageError('give either --replicas or --cancel');
  const targets = partitionsOf(f);
  const client = ctx.client();
  const timeoutMs = client.options.requestTimeoutMs;
  const results = await alterPartitionReassignments(
    client,
    targets.map((t) => ({ ...t, replicas })),
    { timeoutMs },
  );
  const code = report(ctx, 'AlterPartitionReassignments', results, (c) => c === ErrorCode.NONE);
  if (code !== 0 || f['wait'] !== true || cancel) return code;
  const deadline = Date.now() + Number(f['timeout'] ?? 60000);
  const topic = targets[0]?.topic ?? '';
  for (;;) {
    const ongoing = await listPartitionReassignments(client, [{ topic, partitions: targets.map((t) => t.partition) }], { timeoutMs });
    if (ongoing.length === 0) return 0;
    if (Date.now() >= deadline) {
      process.stderr.write(
        `gregor: reassignments still in progress after --timeout: ${ongoing.map((o) => `${o.topic}-${o.partition}`).join(', ')}\n`,
      );
      return 1;
    }
    await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
  }
}

export async function partitionsReassignments(ctx: Context, f: Flags): Promise<number> {
  const topic = f['topic'] as string | undefined;
  const client = ctx.client();
  const asked =
    topic === undefined
      ? null
      : [
          {
            topic,
            partitions:
              (f['partition'] as number[] | undefined) ??
              (await client.metadata([topic])).topics[0]?.partitions.map((p) => p.partition) ??
              [],
          },
        ];
  const ongoing = await listPartitionReassignments(client, asked, { timeoutMs: client.options.requestTimeoutMs });
  emit(ctx, ongoing, () =>
    renderTable(
      ['TOPIC', 'PARTITION', 'REPLICAS', 'ADDING', 'REMOVING'],
      ongoing.map((o) => [o.topic, o.partition, idList(o.replicas), idList(o.addingReplicas), idList(o.removingReplicas)]),
    ),
  );
  return 0;
}

export async function partitionsElectLeaders(ctx: Context, f: Flags): Promise<number> {
  const type = f['type'] === 'unclean' ? ElectionType.UNCLEAN : ElectionType.PREFERRED;
  const topic = f['topic'] as string | undefined;
  let partitions: { topic: string; partition: number }[] | null = null;
  const client = ctx.client();
  if (topic !== undefined) {
    const listed = f['partition'] as number[] | undefined;
    const all = listed ?? (await client.metadata([topic])).topics[0]?.partitions.map((p) => p.partition) ?? [];
    partitions = all.map((partition) => ({ topic, partition }));
  }
  const results = await electLeaders(client, type, partitions, { timeoutMs: client.options.requestTimeoutMs });
  // an election that is not needed is no failure (Kafka's tool says so and exits 0)
  return report(ctx, 'ElectLeaders', results, (c) => c === ErrorCode.NONE || c === ErrorCode.ELECTION_NOT_NEEDED);
}
