/**
 * DescribeUserScramCredentials (key 50) v0: the mechanisms and iteration counts of users' SCRAM
 * credentials (never salts or keys), from the metadata store. No users named: every user that has one.
 * A user named twice: DUPLICATE_RESOURCE; a user without credentials: RESOURCE_NOT_FOUND (Kafka's messages).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  DescribeUserScramCredentialsRequest,
  DescribeUserScramCredentialsResponse,
  DescribeUserScramCredentialsResponseDescribeUserScramCredentialsResult as Result,
} from '../../protocol/generated/describe-user-scram-credentials.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { SCRAM_MECHANISMS, isScramMechanism } from '../security/sasl/scram.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const describeUserScramCredentialsHandler = defineHandler<DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse>(
  {
    apiKey: ApiKey.DescribeUserScramCredentials,
    minVersion: 0,
    maxVersion: 0,
    handle(req, ctx) {
      if (!clusterAllowed(ctx, AclOperation.DESCRIBE)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
      const all = ctx.services.metadata.scramCredentials();
      const names = req.users === null || req.users.length === 0 ? [...all.keys()].sort() : req.users.map((u) => u.name);
      const counts = new Map<string, number>();
      for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
      const results: Result[] = [];
      for (const [user, count] of counts) {
        if (count > 1) {
          results.push({
            user,
            errorCode: ErrorCode.DUPLICATE_RESOURCE,
            errorMessage: `Cannot describe SCRAM credentials for the same user twice in a single request: ${user}`,
            credentialInfos: [],
          });
          continue;
        }
        const creds = Object.entries(all.get(user) ?? {}).filter(([m]) => isScramMechanism(m));
        if (creds.length === 0) {
          results.push({
            user,
            errorCode: ErrorCode.RESOURCE_NOT_FOUND,
            errorMessage: `Attempt to describe a user credential that does not exist: ${user}`,
            credentialInfos: [],
          });
          continue;
        }
        results.push({
          user,
          errorCode: ErrorCode.NONE,
          errorMessage: null,
          credentialInfos: creds.map(([m, c]) => ({
            mechanism: isScramMechanism(m) ? SCRAM_MECHANISMS[m].type : 0,
            iterations: c.iterations,
          })),
        });
      }
      return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, results };
    },
    errorResponse(_req, errorCode) {
      return { throttleTimeMs: 0, errorCode, errorMessage: null, results: [] };
    },
  },
);
