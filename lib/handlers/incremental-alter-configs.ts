/**
 * IncrementalAlterConfigs (key 44) v0–1: per-key SET / DELETE / APPEND / SUBTRACT on a topic's overrides.
 * APPEND and SUBTRACT work on list keys, starting from the effective value (override or default).
 * On BROKER resources (an id, or '' for the cluster-wide default) the same operations change dynamic broker configs;
 * on GROUP resources, the group's configs (share.*, consumer.*).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type {
  IncrementalAlterConfigsRequest,
  IncrementalAlterConfigsRequestAlterableConfig,
  IncrementalAlterConfigsResponse,
} from '../../protocol/generated/incremental-alter-configs.js';
import { BROKER_CONFIG, TOPIC_CONFIG } from '../config.js';
import { kafkaBrokerKey } from '../config/kafka-keys.js';
import { GROUP_CONFIG } from '../group/group-configs.js';
import type { BrokerServices } from '../services.js';
import { alterConfigResources, brokerConfigEntry, type ConfigTarget, ResourceError, topicConfigEntry } from './config-resources.js';
import { AclOperation, configResourceError } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const AlterConfigOp = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;
const OP_NAMES = ['SET', 'DELETE', 'APPEND', 'SUBTRACT'];

/** A resource's configs (topic overrides, or dynamic broker configs) after applying `ops` in order; throws ResourceError on a bad operation. */
export function applyOps(
  s: BrokerServices,
  current: Record<string, string>,
  ops: readonly IncrementalAlterConfigsRequestAlterableConfig[],
  target: ConfigTarget = 'topic',
): Record<string, string | null> {
  const next = new Map<string, string | null>(Object.entries(current));
  const seen = new Set<string>();
  for (const op of ops) {
    if (seen.has(op.name)) throw new ResourceError(ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys');
    seen.add(op.name);
  }
  for (const op of ops) {
    const type =
      target === 'topic'
        ? TOPIC_CONFIG[op.name]?.def.type
        : target === 'group'
          ? GROUP_CONFIG[op.name]?.type
          : (kafkaBrokerKey(op.name)?.type ?? BROKER_CONFIG[op.name]?.type);
    if (type === undefined) throw new ResourceError(ErrorCode.INVALID_CONFIG, `Unknown ${target} config name: ${op.name}`);
    switch (op.configOperation) {
      case AlterConfigOp.SET:
        next.set(op.name, op.value);
        break;
      case AlterConfigOp.DELETE:
        next.delete(op.name);
        break;
      case AlterConfigOp.APPEND:
      case AlterConfigOp.SUBTRACT: {
        if (type !== 'list') {
          throw new ResourceError(
            ErrorCode.INVALID_CONFIG,
            `Can't ${OP_NAMES[op.configOperation]} to key ${op.name} because its type is not LIST.`,
          );
        }
        const effective = target === 'topic' ? topicConfigEntry(s.config, {}, op.name) : brokerConfigEntry(s.config, op.name);
        const now = next.get(op.name) ?? effective.value ?? '';
        const parts = now === '' ? [] : now.split(',').map((x) => x.trim());
        const values = (op.value ?? '')
          .split(',')
          .map((x) => x.trim())
          .filter((x) => x !== '');
        if (op.configOperation === AlterConfigOp.APPEND) {
          for (const x of values) if (!parts.includes(x)) parts.push(x);
        } else {
          for (const x of values) {
            const i = parts.indexOf(x);
            if (i >= 0) parts.splice(i, 1);
          }
        }
        next.set(op.name, parts.join(','));
        break;
      }
      default:
        throw new ResourceError(ErrorCode.INVALID_REQUEST, `Unknown alter config operation ${op.configOperation} for key ${op.name}`);
    }
  }
  return Object.fromEntries(next);
}

export const incrementalAlterConfigsHandler = defineHandler<IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse>({
  apiKey: ApiKey.IncrementalAlterConfigs,
  minVersion: 0,
  maxVersion: 1,
  async handle(req, ctx) {
    const s = ctx.services;
    const responses = await alterConfigResources(
      s,
      req.resources,
      req.validateOnly,
      (r, current, target) => applyOps(s, current, r.configs, target),
      (r) => configResourceError(ctx, AclOperation.ALTER_CONFIGS, r.resourceType, r.resourceName),
    );
    return { throttleTimeMs: 0, responses };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      responses: req.resources.map((r) => ({ errorCode, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName })),
    };
  },
});
