/**
 * AlterConfigs (key 33) v0–2: replaces a topic's whole set of overrides with the given one (keys not
 * named go back to their defaults); on BROKER resources, the whole set of dynamic broker configs.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { AlterConfigsRequest, AlterConfigsResponse } from '../../protocol/generated/alter-configs.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { alterConfigResources, ResourceError } from './config-resources.js';
import { AclOperation, configResourceError } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const alterConfigsHandler = defineHandler<AlterConfigsRequest, AlterConfigsResponse>({
  apiKey: ApiKey.AlterConfigs,
  minVersion: 0,
  maxVersion: 2,
  async handle(req, ctx) {
    // Replace semantics: the request's set becomes the topic's whole set of overrides.
    const responses = await alterConfigResources(
      ctx.services,
      req.resources,
      req.validateOnly,
      (r) => {
        const configs: Record<string, string | null> = {};
        for (const c of r.configs) {
          if (Object.hasOwn(configs, c.name)) throw new ResourceError(ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys');
          configs[c.name] = c.value;
        }
        return configs;
      },
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
