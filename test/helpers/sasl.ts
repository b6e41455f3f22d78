/** SASL listener test helpers: broker configs (JAAS users), SCRAM users, client settings. */
import { KafkaClient } from '../../lib/client/client.js';
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
