/**
 * The SASL broker keys gregor honours on SASL_PLAINTEXT / SASL_SSL listeners (Kafka's names and
 * defaults). `sasl.enabled.mechanisms` and `connections.max.reauth.ms` may also be given per listener
 * (`listener.name.<lowercase listener>.<key>`); the JAAS config only per listener and mechanism
 * (`listener.name.<listener>.<mechanism>.sasl.jaas.config`), as on a Kafka broker.
 */
import type { ConfigDef } from '../config.js';

export const SASL_BROKER_CONFIG: Record<string, ConfigDef> = {
  'sasl.enabled.mechanisms': { type: 'list', default: ['GSSAPI'] },
  'sasl.server.max.receive.size': { type: 'int', default: 524288 },
  'connections.max.reauth.ms': { type: 'long', default: 0 },
  'connection.failed.authentication.delay.ms': { type: 'int', default: 100 },
};

/** Keys honoured only with a listener (and mechanism) prefix. */
export const SASL_PREFIXED_ONLY = new Set(['sasl.jaas.config']);

/** One-line docs of the keys above (DescribeConfigs includeDocumentation). */
export const SASL_DOCS: Record<string, string> = {
  'sasl.enabled.mechanisms': 'SASL mechanisms a SASL listener offers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER.',
  'sasl.server.max.receive.size': 'Largest request accepted before SASL authentication completes.',
  'connections.max.reauth.ms': 'SASL session lifetime; past it a client must re-authenticate (0: never).',
  'connection.failed.authentication.delay.ms': 'Delay before a failed SASL authentication is answered and closed.',
};
