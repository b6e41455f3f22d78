/** SASL listener test helpers: broker configs (JAAS users), SCRAM users, client settings. */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { KafkaClient } from '../../lib/client/client.js';
import { RawClient } from './raw-client.js';
import { alterScramCredentials } from '../../lib/client/scram.js';
import type { ScramMechanismName } from '../../lib/security/sasl/scram.js';

export const PLAIN_USERS = { alice: 'alice-secret', bob: 'bob-secret' } as const;

/** The JAAS config of a PlainLoginModule with `users`. */
export function plainJaas(users: Record<string, string>): string {
  const opts = Object.entries(users).map(([u, p]) => `user_${u}="${p}"`);
  return `org.apache.kafka.common.security.plain.PlainLoginModule required ${opts.join(' ')};`;
}

/** Broker keys of SASL listeners `listeners` (lowercase names) offering `mechanisms`, PLAIN with PLAIN_USERS. */
export function saslConfig(listeners: readonly string[], mechanisms: readonly string[]): Record<string, string> {
  const out: Record<string, string> = { 'sasl.enabled.mechanisms': mechanisms.join(',') };
  for (const l of listeners) {
    if (mechanisms.includes('PLAIN')) out[`listener.name.${l.toLowerCase()}.plain.sasl.jaas.config`] = plainJaas(PLAIN_USERS);
  }
  return out;
}

/** Adds SCRAM credentials through a PLAINTEXT listener (AlterUserScramCredentials); throws on a refusal. */
export async function addScramUser(
  bootstrap: string,
  user: string,
  password: string,
  mechanisms: readonly ScramMechanismName[],
): Promise<void> {
  const client = new KafkaClient({ bootstrap, clientId: 'scram-admin' });
  try {
    // one request per mechanism: Kafka refuses a user altered twice in one request (DUPLICATE_RESOURCE)
    for (const mechanism of mechanisms) {
      const res = await alterScramCredentials(client, [{ user, mechanism, password, iterations: 4096 }], []);
      const bad = res.filter((r) => r.errorCode !== 0);
      if (bad.length > 0) throw new Error(`AlterUserScramCredentials: ${JSON.stringify(bad)}`);
    }
  } finally {
    client.close();
  }
}

/** A raw connection (test/helpers/raw-client.ts) authenticated with SASL PLAIN (SaslHandshake v1, SaslAuthenticate v2). */
export async function rawSaslPlain(bootstrap: string, user: string, password: string): Promise<RawClient> {
  const c = await RawClient.connect(bootstrap);
  const hs = await c.request<{ errorCode: number }>(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' });
  const auth = await c.request<{ errorCode: number; errorMessage: string | null }>(ApiKey.SaslAuthenticate, 2, {
    authBytes: Buffer.from(`\0${user}\0${password}`),
  });
  if (hs.errorCode !== 0 || auth.errorCode !== 0) {
    c.destroy();
    throw new Error(`SASL PLAIN as ${user}: ${hs.errorCode} / ${auth.errorCode} ${auth.errorMessage ?? ''}`);
  }
  return c;
}
