/**
 * The authorization checks handlers make, one small helper per shape (Kafka's KafkaApis.authorize and
 * filterByAuthorized): the connection's principal and host against the broker's authorizer. With no
 * authorizer configured every check passes, as before authorization existed.
 */
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { RequestContext } from '../../handlers/types.js';
import { aclHost } from './authorizer.js';
import { AclOperation, CLUSTER_NAME, ResourceType, SUPPORTED_OPERATIONS } from './types.js';

export { AclOperation, ResourceType } from './types.js';

const ANONYMOUS = 'User:ANONYMOUS';

/** Whether the request's principal may do `op` on the resource (logs a denial unless `logIfDenied` is false). */
export function allowed(ctx: RequestContext, op: number, resourceType: number, name: string, logIfDenied = true): boolean {
  const a = ctx.services.authorizer;
  if (a === undefined) return true;
  return a.authorize(ctx.conn.principal ?? ANONYMOUS, aclHost(ctx.conn.remoteAddress), op, resourceType, name, logIfDenied);
}

export function clusterAllowed(ctx: RequestContext, op: number, logIfDenied = true): boolean {
  return allowed(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME, logIfDenied);
}

export function topicAllowed(ctx: RequestContext, op: number, topic: string, logIfDenied = true): boolean {
  return allowed(ctx, op, ResourceType.TOPIC, topic, logIfDenied);
}

export function groupAllowed(ctx: RequestContext, op: number, group: string): boolean {
  return allowed(ctx, op, ResourceType.GROUP, group);
}

export function transactionalIdAllowed(ctx: RequestContext, op: number, transactionalId: string): boolean {
  return allowed(ctx, op, ResourceType.TRANSACTIONAL_ID, transactionalId);
}

/** Whether the principal may do `op` on some resource of the type (Kafka's authorizeByResourceType). */
export function anyAllowed(ctx: RequestContext, op: number, resourceType: number): boolean {
  const a = ctx.services.authorizer;
  if (a === undefined) return true;
  return a.authorizeByResourceType(ctx.conn.principal ?? ANONYMOUS, aclHost(ctx.conn.remoteAddress), op, resourceType);
}

/** CLUSTER_AUTHORIZATION_FAILED unless `op` on the cluster is allowed (NONE then). */
export function clusterError(ctx: RequestContext, op: number): number {
  return clusterAllowed(ctx, op) ? ErrorCode.NONE : ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
}

/** GROUP_AUTHORIZATION_FAILED unless `op` on the group is allowed (NONE then). */
export function groupError(ctx: RequestContext, op: number, group: string): number {
  return groupAllowed(ctx, op, group) ? ErrorCode.NONE : ErrorCode.GROUP_AUTHORIZATION_FAILED;
}

/** TRANSACTIONAL_ID_AUTHORIZATION_FAILED unless `op` on the transactional id is allowed (NONE then). */
export function transactionalIdError(ctx: RequestContext, op: number, transactionalId: string): number {
  return transactionalIdAllowed(ctx, op, transactionalId) ? ErrorCode.NONE : ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
}

/** TOPIC_AUTHORIZATION_FAILED unless `op` on the topic is allowed (NONE then). */
export function topicError(ctx: RequestContext, op: number, topic: string): number {
  return topicAllowed(ctx, op, topic) ? ErrorCode.NONE : ErrorCode.TOPIC_AUTHORIZATION_FAILED;
}

/**
 * Splits the items of a request by whether `op` on their topic is allowed (each topic checked once).
 * With no authorizer: everything is allowed and nothing is copied.
 */
export function byTopicAllowed<T>(
  ctx: RequestContext,
  op: number,
  items: readonly T[],
  topicOf: (t: T) => string,
  logIfDenied = true,
): { allowed: T[]; denied: T[] } {
  if (ctx.services.authorizer === undefined) return { allowed: items as T[], denied: [] };
  const seen = new Map<string, boolean>();
  const out = { allowed: [] as T[], denied: [] as T[] };
  for (const item of items) {
    const topic = topicOf(item);
    let ok = seen.get(topic);
    if (ok === undefined) seen.set(topic, (ok = topicAllowed(ctx, op, topic, logIfDenied)));
    (ok ? out.allowed : out.denied).push(item);
  }
  return out;
}

/** Whether any authorizer is on (handlers skip work that only matters then). */
export function authorizing(ctx: RequestContext): boolean {
  return ctx.services.authorizer !== undefined;
}

/** Each partition of `topics` answered with `errorCode` (TOPIC_AUTHORIZATION_FAILED by default): the shape of offset APIs' denials. */
export function deniedTopics(
  topics: readonly { name: string; partitions: readonly { partitionIndex: number }[] }[],
  errorCode: number = ErrorCode.TOPIC_AUTHORIZATION_FAILED,
): { name: string; partitions: { partitionIndex: number; errorCode: number }[] }[] {
  return topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) }));
}

/**
 * DescribeConfigs / AlterConfigs on a config resource (ConfigResource types: TOPIC 2, BROKER 4,
 * BROKER_LOGGER 8, CLIENT_METRICS 16, GROUP 32): `op` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic,
 * the group, or on the cluster for the others. NONE, or TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED.
 */
export function configResourceError(ctx: RequestContext, op: number, resourceType: number, resourceName: string): number {
  if (resourceType === ResourceType.TOPIC) return topicError(ctx, op, resourceName);
  if (resourceType === 4 || resourceType === 8 || resourceType === 16) return clusterError(ctx, op);
  if (resourceType === 32) return groupError(ctx, op, resourceName);
  return ErrorCode.NONE;
}

/** Kafka's AuthorizedOperations when they were not asked for (the schema default, INT32_MIN). */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

/**
 * The authorized-operations bitfield of a resource (bit n: operation code n allowed; Kafka's
 * KafkaApis.authorizedOperations + Utils.to32BitField), as Metadata, DescribeCluster and the group
 * describes give it: each operation the resource type supports, checked without logging denials; with
 * no authorizer, all of them.
 */
export function authorizedOperations(ctx: RequestContext, resourceType: number, name: string): number {
  let bits = 0;
  for (const op of SUPPORTED_OPERATIONS.get(resourceType) ?? []) if (allowed(ctx, op, resourceType, name, false)) bits |= 1 << op;
  return bits;
}

/** A group's authorized operations for a describe answer: the bitfield when asked for, else INT32_MIN. */
export function groupAuthorizedOperations(ctx: RequestContext, groupId: string, include: boolean): number {
  return include ? authorizedOperations(ctx, ResourceType.GROUP, groupId) : AUTHORIZED_OPERATIONS_OMITTED;
}

/** Kafka's heartbeat message naming the subscribed topics the principal may not describe (null: none). */
export function undescribedTopicsMessage(ctx: RequestContext, topics: readonly string[] | null | undefined): string | null {
  const hidden = byTopicAllowed(ctx, AclOperation.DESCRIBE, topics ?? [], (t) => t).denied;
  return hidden.length === 0 ? null : `The following topics are not authorized: ${hidden.join(', ')}`;
}

/** Kafka's message for a described group whose assignments name a topic the principal may not describe. */
export const GROUP_TOPICS_NOT_AUTHORIZED = 'The group has described topic(s) that the client is not authorized to describe.';

interface DescribedAssignment {
  topicPartitions: readonly { topicName: string }[];
}

/**
 * Whether a described group's members' assignments (current, and target where the API has one) name a
 * topic the principal may not DESCRIBE: Kafka then answers ConsumerGroupDescribe and ShareGroupDescribe
 * for that group TOPIC_AUTHORIZATION_FAILED with GROUP_TOPICS_NOT_AUTHORIZED and no members. Never with
 * no authorizer.
 */
export function groupTopicsHidden(
  ctx: RequestContext,
  members: readonly { assignment: DescribedAssignment; targetAssignment?: DescribedAssignment }[],
): boolean {
  if (!authorizing(ctx)) return false;
  const topics = new Set<string>();
  for (const m of members)
    for (const a of [m.assignment, m.targetAssignment])
      for (const tp of a?.topicPartitions ?? []) if (tp.topicName !== '') topics.add(tp.topicName);
  return byTopicAllowed(ctx, AclOperation.DESCRIBE, [...topics], (t) => t).denied.length > 0;
}
