/** DescribeConfigs (key 32) v0–4: TOPIC, BROKER and GROUP resources, synonyms (v1+), types and docs (v3+). */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  DescribeConfigsRequest,
  DescribeConfigsResponse,
  DescribeConfigsResponseDescribeConfigsResourceResult,
  DescribeConfigsResponseDescribeConfigsResult,
} from '../../protocol/generated/describe-configs.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import {
  AUTHORIZATION_FAILED,
  brokerConfigEntries,
  checkBrokerResource,
  configDocumentation,
  type ConfigEntry,
  ConfigResourceType,
  ConfigSource,
  defaultBrokerConfigEntries,
  resourceFailure,
  topicConfigEntries,
  topicResource,
  unsupportedResource,
} from './config-resources.js';
import { checkGroupResource, groupConfigEntries } from '../group/group-configs.js';
import { AclOperation, configResourceError } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

function toResult(
  e: ConfigEntry,
  version: number,
  includeSynonyms: boolean,
  includeDocumentation: boolean,
  topic: boolean,
): DescribeConfigsResponseDescribeConfigsResourceResult {
  const out: DescribeConfigsResponseDescribeConfigsResourceResult = {
    name: e.name,
    value: e.value,
    readOnly: e.readOnly,
    isSensitive: e.isSensitive,
  };
  if (version === 0) {
    out.isDefault = e.source === ConfigSource.DEFAULT_CONFIG;
  } else {
    out.configSource = e.source;
    out.synonyms = includeSynonyms ? e.synonyms.map((s) => ({ name: s.name, value: s.value, source: s.source })) : [];
  }
  if (version >= 3) {
    out.configType = e.configType;
    out.documentation = includeDocumentation ? configDocumentation(e.name, topic) : null;
  }
  return out;
}

export const describeConfigsHandler = defineHandler<DescribeConfigsRequest, DescribeConfigsResponse>({
  apiKey: ApiKey.DescribeConfigs,
  minVersion: 0,
  maxVersion: 4,
  handle(req, ctx) {
    const s = ctx.services;
    const v = ctx.apiVersion;
    const includeSynonyms = v >= 1 && req.includeSynonyms === true;
    const includeDocumentation = v >= 3 && req.includeDocumentation === true;
    const results = req.resources.map((r): DescribeConfigsResponseDescribeConfigsResult => {
      const base = { resourceType: r.resourceType, resourceName: r.resourceName };
      const denied = configResourceError(ctx, AclOperation.DESCRIBE_CONFIGS, r.resourceType, r.resourceName);
      if (denied !== ErrorCode.NONE) return { errorCode: denied, errorMessage: AUTHORIZATION_FAILED, ...base, configs: [] };
      try {
        let entries: ConfigEntry[];
        if (r.resourceType === ConfigResourceType.TOPIC) {
          entries = topicConfigEntries(s.config, topicResource(s, r.resourceName), r.configurationKeys);
        } else if (r.resourceType === ConfigResourceType.BROKER) {
          // The cluster-wide default resource ('') holds only the dynamic defaults.
          entries =
            checkBrokerResource(s, r.resourceName) === 'default'
              ? defaultBrokerConfigEntries(s.config, r.configurationKeys)
              : brokerConfigEntries(s.config, r.configurationKeys);
        } else if (r.resourceType === ConfigResourceType.GROUP) {
          checkGroupResource(r.resourceName);
          entries = groupConfigEntries(s.config, s.metadata.groupConfigs(r.resourceName), r.configurationKeys);
        } else {
          throw unsupportedResource(r.resourceType);
        }
        return {
          errorCode: ErrorCode.NONE,
          errorMessage: null,
          ...base,
          configs: entries.map((e) => toResult(e, v, includeSynonyms, includeDocumentation, r.resourceType === ConfigResourceType.TOPIC)),
        };
      } catch (e) {
        return { ...resourceFailure(e), ...base, configs: [] };
      }
    });
    return { throttleTimeMs: 0, results };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      results: req.resources.map((r) => ({
        errorCode,
        errorMessage: null,
        resourceType: r.resourceType,
        resourceName: r.resourceName,
        configs: [],
      })),
    };
  },
});
