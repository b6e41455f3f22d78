import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ApiVersionsRequest, ApiVersionsResponse } from '../../protocol/generated/api-versions.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { defineHandler } from './types.js';

/** KIP-511: client software name and version must look like this, else INVALID_REQUEST. */
const SOFTWARE_FIELD = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/;

export const apiVersionsHandler = defineHandler<ApiVersionsRequest, ApiVersionsResponse>({
  apiKey: ApiKey.ApiVersions,
  minVersion: 0,
  maxVersion: 4,
  handle(req, ctx) {
    const apiKeys = ctx.services.apiVersions.map((a) => ({ apiKey: a.apiKey, minVersion: a.minVersion, maxVersion: a.maxVersion }));
    if (ctx.apiVersion >= 3) {
      const name = req.clientSoftwareName ?? '';
      const version = req.clientSoftwareVersion ?? '';
      if (!SOFTWARE_FIELD.test(name) || !SOFTWARE_FIELD.test(version)) {
        return { errorCode: ErrorCode.INVALID_REQUEST, apiKeys, throttleTimeMs: 0 };
      }
    }
    return { errorCode: ErrorCode.NONE, apiKeys, throttleTimeMs: 0, finalizedFeaturesEpoch: -1n };
  },
  errorResponse(_req, errorCode) {
    return { errorCode, apiKeys: [], throttleTimeMs: 0 };
  },
});
