/**
 * AlterConfigs (key 33) v0–2: replaces a topic's whole set of overrides with the given one (keys not
 * named go back to their defaults). Broker resources are refused: gregor has no dynamic broker configs.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  AlterConfigsRequest,
  AlterConfigsResponse,
  AlterConfigsResponseAlterConfigsResourceResponse,
} from '../../protocol/generated/alter-configs.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import {
  BROKER_ALTER_UNSUPPORTED,
  checkBrokerResource,
  ConfigResourceType,
  duplicateResources,
  replaceTopicConfigs,
  ResourceError,
  resourceFailure,
  resourceKey,
  topicResource,
  unsupportedResource,
} from './config-resources.js';
import { defineHandler } from './types.js';

export const alterConfigsHandler = defineHandler<AlterConfigsRequest, AlterConfigsResponse>({
  apiKey: ApiKey.AlterConfigs,
  minVersion: 0,
  maxVersion: 2,
  async handle(req, ctx) {
    const s = ctx.services;
    const dups = duplicateResources(req.resources);
    const responses: AlterConfigsResponseAlterConfigsResourceResponse[] = [];
    for (const r of req.resources) {
      const base = { resourceType: r.resourceType, resourceName: r.resourceName };
      try {
        if (dups.has(resourceKey(r))) throw new ResourceError(ErrorCode.INVALID_REQUEST, 'Duplicate resource.');
        const configs: Record<string, string | null> = {};
        for (const c of r.configs) {
          if (Object.hasOwn(configs, c.name)) throw new ResourceError(ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys');
          configs[c.name] = c.value;
        }
        if (r.resourceType === ConfigResourceType.TOPIC) {
          topicResource(s, r.resourceName);
          await replaceTopicConfigs(s, r.resourceName, configs, req.validateOnly);
        } else if (r.resourceType === ConfigResourceType.BROKER) {
          checkBrokerResource(s, r.resourceName);
          throw new ResourceError(ErrorCode.INVALID_REQUEST, BROKER_ALTER_UNSUPPORTED);
        } else {
          throw unsupportedResource(r.resourceType);
        }
        responses.push({ errorCode: ErrorCode.NONE, errorMessage: null, ...base });
      } catch (e) {
        responses.push({ ...resourceFailure(e), ...base });
      }
    }
    return { throttleTimeMs: 0, responses };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      responses: req.resources.map((r) => ({ errorCode, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName })),
    };
  },
});
