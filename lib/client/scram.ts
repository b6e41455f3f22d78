/**
 * SCRAM credential administration (KIP-554): AlterUserScramCredentials and
 * DescribeUserScramCredentials, sent to the controller as Kafka's admin client does. The password
 * never leaves this process: the request carries a random salt and the salted password (PBKDF2).
 */
import { randomBytes } from 'node:crypto';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  AlterUserScramCredentialsRequest,
  AlterUserScramCredentialsResponse,
} from '../../protocol/generated/alter-user-scram-credentials.js';
import type { DescribeUserScramCredentialsResponse } from '../../protocol/generated/describe-user-scram-credentials.js';
import { SCRAM_MECHANISMS, saltedPassword, scramMechanismByType, type ScramMechanismName } from '../security/sasl/scram.js';
import { onController, type AdminResult } from './admin.js';
import type { KafkaClient } from './client.js';

export interface ScramUpsertion {
  user: string;
  mechanism: ScramMechanismName;
  password: string;
  iterations: number;
}

export interface ScramDeletion {
  user: string;
  mechanism: ScramMechanismName;
}

/** One result per user named (Kafka answers per user, not per change). */
export async function alterScramCredentials(
  client: KafkaClient,
  upsertions: readonly ScramUpsertion[],
  deletions: readonly ScramDeletion[],
): Promise<AdminResult[]> {
  const body: AlterUserScramCredentialsRequest = {
    deletions: deletions.map((d) => ({ name: d.user, mechanism: SCRAM_MECHANISMS[d.mechanism].type })),
    upsertions: upsertions.map((u) => {
      const salt = randomBytes(SCRAM_MECHANISMS[u.mechanism].keyLength);
      return {
        name: u.user,
        mechanism: SCRAM_MECHANISMS[u.mechanism].type,
        iterations: u.iterations,
        salt,
        saltedPassword: saltedPassword(u.mechanism, u.password, salt, u.iterations),
      };
    }),
  };
  return onController(client, async (c) => {
    const res = await c.request<AlterUserScramCredentialsResponse>(ApiKey.AlterUserScramCredentials, () => body);
    const result = res.body.results.map((r) => ({ name: r.user, errorCode: r.errorCode, errorMessage: r.errorMessage, broker: c.label }));
    return { result, notController: result.some((r) => r.errorCode === 41) };
  });
}

export interface ScramDescription extends AdminResult {
  credentials: { mechanism: string; iterations: number }[];
}

/** The users' credentials (mechanism and iterations only); no users: every user that has one. */
export async function describeScramCredentials(client: KafkaClient, users: readonly string[] | null): Promise<ScramDescription[]> {
  const c = await client.any();
  const res = await c.request<DescribeUserScramCredentialsResponse>(ApiKey.DescribeUserScramCredentials, () => ({
    users: users === null ? null : users.map((name) => ({ name })),
  }));
  c.check(res.body.errorCode, ApiKey.DescribeUserScramCredentials, undefined, res.body.errorMessage);
  return res.body.results.map((r) => ({
    name: r.user,
    errorCode: r.errorCode,
    errorMessage: r.errorMessage,
    broker: c.label,
    credentials: r.credentialInfos.map((i) => ({
      mechanism: scramMechanismByType(i.mechanism) ?? `UNKNOWN(${i.mechanism})`,
      iterations: i.iterations,
    })),
  }));
}
