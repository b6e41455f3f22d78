import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { FindCoordinatorRequest, FindCoordinatorResponse } from '../../protocol/generated/find-coordinator.js';
import { OFFSETS_TOPIC } from '../group/records.js';
import { TRANSACTION_STATE_TOPIC } from '../txn/txn-metadata.js';
import { SHARE_STATE_TOPIC } from '../share/state-coordinator.js';
import { brokerAddress } from './cluster-view.js';
import { AclOperation, clusterError, groupError, transactionalIdError } from '../security/acl/checks.js';
import { defineHandler, type RequestContext } from './types.js';

/** Key types of FindCoordinator. */
export const CoordinatorType = { GROUP: 0, TRANSACTION: 1, SHARE: 2 } as const;

/**
 * A SHARE key names one share partition: "groupId:topicId:partition" (Kafka's SharePartitionKey, the
 * topic id in Kafka's base64 form or as hex); the key gregor hashes has the id in hex. Null when malformed.
 */
export function shareCoordinatorKey(key: string): string | null {
  const m = /^(.+):([A-Za-z0-9_-]{22}|[0-9a-fA-F]{32}):(\d+)$/.exec(key);
  if (m === null) return null;
  const id = m[2] ?? '';
  const hex = id.length === 22 ? Buffer.from(id, 'base64url').toString('hex') : id.toLowerCase();
  return `${m[1] ?? ''}:${hex}:${m[3] ?? ''}`;
}

interface Found {
  key: string;
  nodeId: number;
  host: string;
  port: number;
  errorCode: number;
  errorMessage: string | null;
}

const MESSAGES: Record<number, string> = {
  [ErrorCode.COORDINATOR_NOT_AVAILABLE]: 'The coordinator is not available.',
  [ErrorCode.INVALID_REQUEST]: 'Unknown coordinator key type.',
};

async function lookup(key: string, keyType: number, ctx: RequestContext): Promise<Found> {
  const s = ctx.services;
  const listener = s.advertisedListener(ctx.conn.listenerName);
  let errorCode: number;
  const denied =
    keyType === CoordinatorType.TRANSACTION
      ? transactionalIdError(ctx, AclOperation.DESCRIBE, key)
      : keyType === CoordinatorType.GROUP
        ? groupError(ctx, AclOperation.DESCRIBE, key)
        : keyType === CoordinatorType.SHARE
          ? clusterError(ctx, AclOperation.CLUSTER_ACTION)
          : ErrorCode.NONE;
  if (denied !== ErrorCode.NONE) return { key, nodeId: -1, host: '', port: -1, errorCode: denied, errorMessage: null };
  if (keyType === CoordinatorType.TRANSACTION) {
    // __transaction_state is created on first use, as Kafka does
    errorCode = await s.txn.ensureReady();
    if (errorCode === ErrorCode.NONE && s.txn.status(key) === ErrorCode.COORDINATOR_NOT_AVAILABLE)
      errorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE;
  } else if (keyType === CoordinatorType.SHARE) {
    // __share_group_state is created on first use too
    errorCode = shareCoordinatorKey(key) !== null ? await s.share.stateCoordinator.ensureReady() : ErrorCode.INVALID_REQUEST;
  } else if (keyType !== CoordinatorType.GROUP) errorCode = ErrorCode.INVALID_REQUEST;
  else errorCode = await s.groups.ensureFound(); // __consumer_offsets too (one node: created meanwhile)
  if (errorCode === ErrorCode.NONE && s.topics.clustered) {
    // the coordinator is the leader of the key's partition of the internal topic, wherever it is
    const [topic, p] =
      keyType === CoordinatorType.TRANSACTION
        ? [TRANSACTION_STATE_TOPIC, s.txn.partitionFor(key)]
        : keyType === CoordinatorType.SHARE
          ? [SHARE_STATE_TOPIC, s.share.stateCoordinator.partitionFor(shareCoordinatorKey(key) ?? key)]
          : [OFFSETS_TOPIC, s.groups.partitionFor(key)];
    const leader = s.metadata.partitionState(topic, p)?.leader ?? -1;
    const at = leader === s.nodeId ? undefined : brokerAddress(s, ctx.conn.listenerName, leader);
    if (at !== undefined) return { key, nodeId: at.nodeId, host: at.host, port: at.port, errorCode, errorMessage: null };
    if (leader !== s.nodeId) errorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE;
  }
  if (listener === undefined && errorCode === ErrorCode.NONE) errorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE;
  if (errorCode !== ErrorCode.NONE || listener === undefined)
    return { key, nodeId: -1, host: '', port: -1, errorCode, errorMessage: MESSAGES[errorCode] ?? null };
  return { key, nodeId: s.nodeId, host: listener.host, port: listener.port, errorCode, errorMessage: null };
}

/** One node coordinates every group and transactional id; a cluster's coordinator for a key is the leader of its partition. */
export const findCoordinatorHandler = defineHandler<FindCoordinatorRequest, FindCoordinatorResponse>({
  apiKey: ApiKey.FindCoordinator,
  minVersion: 0,
  maxVersion: 6,
  async handle(req, ctx) {
    const keyType = req.keyType ?? CoordinatorType.GROUP;
    if (ctx.apiVersion >= 4)
      return { throttleTimeMs: 0, coordinators: await Promise.all((req.coordinatorKeys ?? []).map((k) => lookup(k, keyType, ctx))) };
    const f = await lookup(req.key ?? '', keyType, ctx);
    const res: FindCoordinatorResponse = { throttleTimeMs: 0, errorCode: f.errorCode, nodeId: f.nodeId, host: f.host, port: f.port };
    if (ctx.apiVersion >= 1) res.errorMessage = f.errorMessage;
    return res;
  },
  errorResponse(req, errorCode, ctx) {
    if (ctx.apiVersion >= 4)
      return {
        throttleTimeMs: 0,
        coordinators: (req.coordinatorKeys ?? []).map((key) => ({ key, nodeId: -1, host: '', port: -1, errorCode, errorMessage: null })),
      };
    return { throttleTimeMs: 0, errorCode, nodeId: -1, host: '', port: -1 };
  },
});
