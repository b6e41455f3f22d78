/**
 * AlterUserScramCredentials (key 51) v0: upserts and deletes SCRAM credentials, as Kafka's controller
 * does: one result per user; a user altered twice in one request gets DUPLICATE_RESOURCE; an empty name
 * or iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL; mechanism 0 UNSUPPORTED_SASL_MECHANISM;
 * deleting what does not exist RESOURCE_NOT_FOUND. The client sends the salted password; the store keeps
 * the salt, iterations, StoredKey and ServerKey derived from it (never the salted password itself).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  AlterUserScramCredentialsRequest,
  AlterUserScramCredentialsResponse,
  AlterUserScramCredentialsResponseAlterUserScramCredentialsResult as Result,
} from '../../protocol/generated/alter-user-scram-credentials.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { StoredScramCredential } from '../metadata/store.js';
import { credentialFromSalted, SCRAM_MAX_ITERATIONS, SCRAM_MIN_ITERATIONS, scramMechanismByType } from '../security/sasl/scram.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

type Failure = { code: number; message: string };

function nameAndMechanism(name: string, mechanism: number): Failure | null {
  if (name === '') return { code: ErrorCode.UNACCEPTABLE_CREDENTIAL, message: 'Username must not be empty' };
  if (scramMechanismByType(mechanism) === undefined)
    return { code: ErrorCode.UNSUPPORTED_SASL_MECHANISM, message: 'Unknown SCRAM mechanism' };
  return null;
}

export const alterUserScramCredentialsHandler = defineHandler<AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse>({
  apiKey: ApiKey.AlterUserScramCredentials,
  minVersion: 0,
  maxVersion: 0,
  async handle(req, ctx) {
    if (!clusterAllowed(ctx, AclOperation.ALTER)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    const store = ctx.services.metadata;
    const current = store.scramCredentials();
    const errors = new Map<string, Failure>();
    const changes = new Map<string, { mechanism: string; credential: StoredScramCredential | null }>();
    const duplicate: Failure = {
      code: ErrorCode.DUPLICATE_RESOURCE,
      message: 'A user credential cannot be altered twice in the same request',
    };
    // a user already refused, or already changed by this request (then refused as a duplicate): skip
    const taken = (name: string): boolean => {
      if (errors.has(name)) return true;
      if (!changes.delete(name)) return false;
      errors.set(name, duplicate);
      return true;
    };
    for (const d of req.deletions) {
      if (taken(d.name)) continue;
      const mech = scramMechanismByType(d.mechanism);
      const bad =
        nameAndMechanism(d.name, d.mechanism) ??
        (mech !== undefined && current.get(d.name)?.[mech] === undefined
          ? { code: ErrorCode.RESOURCE_NOT_FOUND, message: 'Attempt to delete a user credential that does not exist' }
          : null);
      if (bad !== null) errors.set(d.name, bad);
      else if (mech !== undefined) changes.set(d.name, { mechanism: mech, credential: null });
    }
    for (const u of req.upsertions) {
      if (taken(u.name)) continue;
      const mech = scramMechanismByType(u.mechanism);
      const bad =
        nameAndMechanism(u.name, u.mechanism) ??
        (u.iterations < SCRAM_MIN_ITERATIONS
          ? { code: ErrorCode.UNACCEPTABLE_CREDENTIAL, message: 'Too few iterations' }
          : u.iterations > SCRAM_MAX_ITERATIONS
            ? { code: ErrorCode.UNACCEPTABLE_CREDENTIAL, message: 'Too many iterations' }
            : null);
      if (bad !== null) errors.set(u.name, bad);
      else if (mech !== undefined)
        changes.set(u.name, { mechanism: mech, credential: credentialFromSalted(mech, u.saltedPassword, u.salt, u.iterations) });
    }
    const results: Result[] = [];
    if (changes.size > 0) {
      const next = new Map<string, Record<string, StoredScramCredential>>();
      for (const [user, c] of changes) {
        const creds = Object.fromEntries(Object.entries(current.get(user) ?? {}).filter(([m]) => m !== c.mechanism));
        if (c.credential !== null) creds[c.mechanism] = c.credential;
        next.set(user, creds);
      }
      await store.setScramCredentials(next);
      for (const user of changes.keys()) results.push({ user, errorCode: ErrorCode.NONE, errorMessage: null });
      ctx.logger.info({ users: [...changes.keys()] }, 'SCRAM credentials altered');
    }
    for (const [user, e] of errors) results.push({ user, errorCode: e.code, errorMessage: e.message });
    return { throttleTimeMs: 0, results };
  },
  errorResponse(req, errorCode) {
    const users = new Set([...req.deletions.map((d) => d.name), ...req.upsertions.map((u) => u.name)]);
    return { throttleTimeMs: 0, results: [...users].map((user) => ({ user, errorCode, errorMessage: null })) };
  },
});
