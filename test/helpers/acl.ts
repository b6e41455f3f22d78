/** ACL test helpers. */
import { Kafka, logLevel } from 'kafkajs';

/** A kafkajs client of `user` over SASL PLAIN (no retries: a denial shows at once). */
export function plainKafka(bootstrap: string, user: string, password: string): Kafka {
  return new Kafka({
    brokers: [bootstrap],
    clientId: `acl-${user}`,
    sasl: { mechanism: 'plain', username: user, password },
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });
}

/** The Kafka error name a kafkajs call failed with (searching wrapped errors), or 'OK'. */
export async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (e) {
    let cur: unknown = e;
    for (let depth = 0; cur !== undefined && cur !== null && depth < 6; depth++) {
      const o = cur as {
        type?: unknown;
        errors?: unknown[];
        originalError?: unknown;
        cause?: unknown;
        partitions?: { error?: unknown }[];
        groups?: { error?: unknown }[];
      };
      if (typeof o.type === 'string' && /AUTHORIZATION_FAILED|UNKNOWN_TOPIC|SECURITY_DISABLED|INVALID/.test(o.type)) return o.type;
      cur =
        o.originalError ?? o.cause ?? o.errors?.[0] ?? [...(o.partitions ?? []), ...(o.groups ?? [])].find((p) => p.error != null)?.error;
    }
    return (e as Error).name;
  }
}
