/**
 * What the dispatcher asks of the client quotas for one request (Kafka's KafkaApis quota calls):
 * - Produce: the request's size against producer_byte_rate (the records are appended all the same);
 * - Fetch from a consumer: max_bytes cut to what one quota window allows, then the response's bytes
 *   against consumer_byte_rate; when throttled, the records are left out (and un-recorded), as Kafka
 *   answers a throttled fetch with an empty response;
 * - every request but the exempt ones: its handling time against request_percentage;
 * - CreateTopics, CreatePartitions, DeleteTopics: partitions against controller_mutation_rate.
 * The throttle time is the largest of those; it goes into the response's throttle_time_ms. KIP-219:
 * to a version whose client throttles itself the response goes at once and the connection is muted
 * for that long; to an older version the response is held back that long instead.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { recordsLength, type RecordsValue } from '../../protocol/codec/writer.js';
import type { FetchRequest, FetchResponse } from '../../protocol/generated/fetch.js';
import type { RequestContext } from '../handlers/types.js';
import { QuotaKey } from './entity.js';
import { type MutationPlan, planMutations, recordMutations } from './controller-mutations.js';
import { quotaUser } from './manager.js';

/** APIs never throttled on request_percentage (Kafka exempts these and inter-broker requests). */
const REQUEST_QUOTA_EXEMPT = new Set<number>([ApiKey.ApiVersions, ApiKey.SaslHandshake, ApiKey.SaslAuthenticate]);

/**
 * The first version of each API whose client applies throttle_time_ms itself (Kafka's
 * AbstractResponse.shouldClientThrottle, KIP-219); APIs not listed: every version.
 */
const CLIENT_THROTTLES_FROM: ReadonlyMap<number, number> = new Map([
  [ApiKey.Produce, 6],
  [ApiKey.Fetch, 8],
  [ApiKey.ListOffsets, 3],
  [ApiKey.Metadata, 6],
  [ApiKey.OffsetCommit, 4],
  [ApiKey.OffsetFetch, 4],
  [ApiKey.FindCoordinator, 2],
  [ApiKey.JoinGroup, 3],
  [ApiKey.Heartbeat, 2],
  [ApiKey.LeaveGroup, 2],
  [ApiKey.SyncGroup, 2],
  [ApiKey.DescribeGroups, 2],
  [ApiKey.ListGroups, 2],
  [ApiKey.ApiVersions, 2],
  [ApiKey.CreateTopics, 3],
  [ApiKey.DeleteTopics, 2],
  [ApiKey.DeleteRecords, 1],
  [ApiKey.InitProducerId, 1],
  [ApiKey.OffsetForLeaderEpoch, 3],
  [ApiKey.AddPartitionsToTxn, 1],
  [ApiKey.AddOffsetsToTxn, 1],
  [ApiKey.EndTxn, 1],
  [ApiKey.TxnOffsetCommit, 1],
  [ApiKey.DescribeAcls, 1],
  [ApiKey.CreateAcls, 1],
  [ApiKey.DeleteAcls, 1],
  [ApiKey.DescribeConfigs, 2],
  [ApiKey.AlterConfigs, 1],
  [ApiKey.DescribeLogDirs, 1],
  [ApiKey.CreatePartitions, 1],
  [ApiKey.DeleteGroups, 1],
]);

export function clientThrottles(apiKey: number, apiVersion: number): boolean {
  return apiVersion >= (CLIENT_THROTTLES_FROM.get(apiKey) ?? 0);
}

function isConsumerFetch(apiKey: number, req: unknown): req is FetchRequest {
  if (apiKey !== ApiKey.Fetch) return false;
  const f = req as FetchRequest;
  return (f.replicaState?.replicaId ?? -1) < 0 && (f.replicaId ?? -1) < 0;
}

/**
 * Before the handler: a consumer's fetch asks for no more than its quota window allows; a topic
 * mutation is planned against controller_mutation_rate (controller-mutations.ts). Returns the request
 * the handler is to see and the plan (null: not a mutation under a quota).
 */
export function prepareForQuotas(req: unknown, ctx: RequestContext): { request: unknown; plan: MutationPlan | null } {
  const quotas = ctx.services.quotas;
  if (isConsumerFetch(ctx.apiKey, req)) {
    const max = quotas.maxValueInWindow(QuotaKey.CONSUMER_BYTE_RATE, quotaUser(ctx.conn.principal), ctx.clientId ?? '');
    if (max !== undefined) req.maxBytes = Math.min(req.maxBytes ?? 2147483647, max);
  }
  const plan = planMutations(req, ctx);
  return { request: plan?.request ?? req, plan };
}

/**
 * After the handler: records what the request used and returns the throttle time (0: none). `body`
 * is the response (null: none, acks=0), updated in place: throttle_time_ms, a throttled fetch's records.
 */
export function applyClientQuotas(
  req: unknown,
  body: unknown,
  ctx: RequestContext,
  requestBytes: number,
  handlerMs: number,
  plan: MutationPlan | null = null,
): number {
  const quotas = ctx.services.quotas;
  if (!quotas.enabled) return 0;
  const mutation = plan !== null && body !== null ? recordMutations(plan, body, ctx) : 0;
  const user = quotaUser(ctx.conn.principal);
  const clientId = ctx.clientId ?? '';
  let bandwidth = 0;
  if (ctx.apiKey === ApiKey.Produce) bandwidth = quotas.record(QuotaKey.PRODUCER_BYTE_RATE, user, clientId, requestBytes);
  const consumer = isConsumerFetch(ctx.apiKey, req) && body !== null;
  let fetched = 0;
  if (consumer) {
    fetched = recordsBytes(body as FetchResponse<RecordsValue>);
    bandwidth = quotas.record(QuotaKey.CONSUMER_BYTE_RATE, user, clientId, fetched);
  }
  const acksZero = ctx.apiKey === ApiKey.Produce && body === null;
  const request =
    REQUEST_QUOTA_EXEMPT.has(ctx.apiKey) || acksZero || (ctx.apiKey === ApiKey.Fetch && !consumer)
      ? 0
      : quotas.record(QuotaKey.REQUEST_PERCENTAGE, user, clientId, handlerMs / 10);
  const throttle = Math.max(bandwidth, request, mutation);
  if (throttle > 0 && body !== null && typeof body === 'object') {
    if (consumer) {
      quotas.unrecord(QuotaKey.CONSUMER_BYTE_RATE, user, clientId, fetched);
      emptyRecords(body as FetchResponse<RecordsValue>);
    }
    const b = body as { throttleTimeMs?: number };
    if ('throttleTimeMs' in b) b.throttleTimeMs = Math.max(b.throttleTimeMs ?? 0, throttle);
  }
  return throttle;
}

function recordsBytes(res: FetchResponse<RecordsValue>): number {
  let n = 0;
  // a partition's records may be the stored slices (zero-copy): their bytes, not their count
  for (const t of res.responses) for (const p of t.partitions) n += p.records === null ? 0 : recordsLength(p.records);
  return n;
}

const EMPTY = Buffer.alloc(0);

function emptyRecords(res: FetchResponse<RecordsValue>): void {
  for (const t of res.responses)
    for (const p of t.partitions) {
      p.records = EMPTY;
      p.abortedTransactions = [];
    }
}
