/**
 * controller_mutation_rate (KIP-599) on CreateTopics, CreatePartitions and DeleteTopics: the
 * partitions created or deleted count as mutations. Versions that know THROTTLING_QUOTA_EXCEEDED
 * (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) are strict: while the client's rate is
 * over its quota, each topic of the request is refused with it (the handler does not see them) and
 * the response carries the throttle time. Older versions are permissive: the mutations go through,
 * are recorded, and the client is throttled afterwards. validate_only requests count nothing.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { CreatePartitionsRequest, CreatePartitionsResponse } from '../../protocol/generated/create-partitions.js';
import type { CreateTopicsRequest, CreateTopicsResponse } from '../../protocol/generated/create-topics.js';
import type { DeleteTopicsRequest, DeleteTopicsResponse } from '../../protocol/generated/delete-topics.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { RequestContext } from '../handlers/types.js';
import { QuotaKey } from './entity.js';
import { quotaUser } from './manager.js';

const STRICT_FROM: ReadonlyMap<number, number> = new Map([
  [ApiKey.CreateTopics, 6],
  [ApiKey.CreatePartitions, 3],
  [ApiKey.DeleteTopics, 5],
]);

/** What was known before the handler ran: the request it got, the topics refused, partition counts. */
export interface MutationPlan {
  request: unknown;
  refused: string[];
  throttleMs: number;
  /** partitions of each named topic before the request (DeleteTopics, CreatePartitions) */
  partitionsBefore: Map<string, number>;
}

const QUOTA_MESSAGE = 'The throttling quota has been exceeded.';

function names(apiKey: number, req: unknown): string[] {
  if (apiKey === ApiKey.CreateTopics) return (req as CreateTopicsRequest).topics.map((t) => t.name);
  if (apiKey === ApiKey.CreatePartitions) return (req as CreatePartitionsRequest).topics.map((t) => t.name);
  const d = req as DeleteTopicsRequest;
  return d.topicNames ?? (d.topics ?? []).map((t) => t.name ?? '');
}

function validateOnly(apiKey: number, req: unknown): boolean {
  return apiKey !== ApiKey.DeleteTopics && (req as { validateOnly?: boolean }).validateOnly === true;
}

/** Before the handler of a mutation API: refuses every topic while a strict version's client is over its quota. */
export function planMutations(req: unknown, ctx: RequestContext): MutationPlan | null {
  const strictFrom = STRICT_FROM.get(ctx.apiKey);
  if (strictFrom === undefined || validateOnly(ctx.apiKey, req)) return null;
  const quotas = ctx.services.quotas;
  const user = quotaUser(ctx.conn.principal);
  const clientId = ctx.clientId ?? '';
  if (quotas.quotaFor(QuotaKey.CONTROLLER_MUTATION_RATE, user, clientId) === undefined) return null;
  const partitionsBefore = new Map<string, number>();
  for (const n of names(ctx.apiKey, req)) {
    const t = ctx.services.metadata.topic(n);
    if (t !== undefined) partitionsBefore.set(n, t.partitions);
  }
  const throttleMs = ctx.apiVersion >= strictFrom ? quotas.throttleNow(QuotaKey.CONTROLLER_MUTATION_RATE, user, clientId) : 0;
  if (throttleMs <= 0) return { request: req, refused: [], throttleMs: 0, partitionsBefore };
  const refused = names(ctx.apiKey, req);
  const r = req as Record<string, unknown>;
  const request = ctx.apiKey === ApiKey.DeleteTopics && r['topicNames'] !== undefined ? { ...r, topicNames: [] } : { ...r, topics: [] };
  return { request, refused, throttleMs, partitionsBefore };
}

/** After the handler: records the mutations done, adds the refused topics to the response; the throttle time. */
export function recordMutations(plan: MutationPlan, body: unknown, ctx: RequestContext): number {
  if (plan.refused.length > 0) {
    addRefused(ctx.apiKey, body, plan.refused);
    return plan.throttleMs;
  }
  let mutations = 0;
  if (ctx.apiKey === ApiKey.CreateTopics) {
    const req = plan.request as CreateTopicsRequest;
    for (const t of (body as CreateTopicsResponse).topics) {
      if (t.errorCode !== ErrorCode.NONE) continue;
      const asked = req.topics.find((x) => x.name === t.name);
      mutations +=
        t.numPartitions ?? (asked !== undefined && asked.numPartitions > 0 ? asked.numPartitions : asked?.assignments.length) ?? 1;
    }
  } else if (ctx.apiKey === ApiKey.CreatePartitions) {
    const req = plan.request as CreatePartitionsRequest;
    for (const t of (body as CreatePartitionsResponse).results) {
      const asked = req.topics.find((x) => x.name === t.name);
      if (t.errorCode === ErrorCode.NONE && asked !== undefined)
        mutations += Math.max(0, asked.count - (plan.partitionsBefore.get(t.name) ?? 0));
    }
  } else {
    for (const t of (body as DeleteTopicsResponse).responses)
      if (t.errorCode === ErrorCode.NONE && t.name !== null) mutations += plan.partitionsBefore.get(t.name) ?? 0;
  }
  if (mutations === 0) return 0;
  return ctx.services.quotas.record(QuotaKey.CONTROLLER_MUTATION_RATE, quotaUser(ctx.conn.principal), ctx.clientId ?? '', mutations);
}

function addRefused(apiKey: number, body: unknown, refused: string[]): void {
  const err = { errorCode: ErrorCode.THROTTLING_QUOTA_EXCEEDED, errorMessage: QUOTA_MESSAGE };
  if (apiKey === ApiKey.CreateTopics) {
    const res = body as CreateTopicsResponse;
    for (const name of refused)
      res.topics.push({ name, ...err, topicConfigErrorCode: 0, numPartitions: -1, replicationFactor: -1, configs: null });
  } else if (apiKey === ApiKey.CreatePartitions) {
    const res = body as CreatePartitionsResponse;
    for (const name of refused) res.results.push({ name, ...err });
  } else {
    const res = body as DeleteTopicsResponse;
    for (const name of refused) res.responses.push({ name, ...err });
  }
}
