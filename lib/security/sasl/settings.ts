/**
 * A SASL listener's settings from Kafka's keys: `sasl.enabled.mechanisms` (also per listener),
 * `listener.name.<listener>.<mechanism>.sasl.jaas.config` or a static JAAS file (PLAIN's users;
 * OAUTHBEARER's unsecured validator options), `connections.max.reauth.ms` (broker-wide, per listener, per listener and
 * mechanism), `sasl.server.max.receive.size`, `connection.failed.authentication.delay.ms`. Refused at
 * start (ConfigError naming the key): mechanisms gregor does not have (GSSAPI), PLAIN without users.
 */
import type { BrokerConfig } from '../../config.js';
import { ConfigError } from '../../config/error.js';
import { type JaasEntry, LOGIN_MODULES, parseJaasConfig, plainUsers } from './jaas.js';
import { JAAS_FILE_PROPERTY, readJaasFile, SERVER_CONTEXT, serverSection } from './jaas-file.js';
import { unsecuredValidatorOptions, type UnsecuredValidatorOptions } from './oauthbearer.js';

export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const;

export interface SaslListenerSettings {
  listener: string;
  /** enabled mechanisms, as configured (the SaslHandshake response lists them) */
  mechanisms: string[];
  plainUsers: ReadonlyMap<string, string>;
  oauth: UnsecuredValidatorOptions;
  /** connections.max.reauth.ms by mechanism (0: sessions do not expire) */
  reauthMs: ReadonlyMap<string, number>;
  /** sasl.server.max.receive.size: the largest frame before authentication completes */
  maxReceiveSize: number;
  /** connection.failed.authentication.delay.ms: how long a failed authentication's answer waits */
  failedAuthDelayMs: number;
}

/** A listener-prefixed value Kafka-only keys keep as text (dynamic per broker over static), or undefined. */
function prefixedRaw(config: BrokerConfig, key: string): string | undefined {
  return config.dynamicBroker.get(key) ?? config.inapplicable.get(key);
}

/** The login module class a mechanism's JAAS entry names. */
function loginModuleOf(mechanism: string): string {
  if (mechanism === 'PLAIN') return LOGIN_MODULES.PLAIN;
  return mechanism === 'OAUTHBEARER' ? LOGIN_MODULES.OAUTHBEARER : LOGIN_MODULES.SCRAM;
}

function longOrZero(v: unknown): number {
  const n = typeof v === 'bigint' ? Number(v) : Number(v ?? 0);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

export function listenerSaslSettings(config: BrokerConfig, listenerName: string): SaslListenerSettings {
  const l = listenerName.toLowerCase();
  const enabledRaw = config.listenerValue(listenerName, 'sasl.enabled.mechanisms');
  const mechanisms = (Array.isArray(enabledRaw) ? enabledRaw : []).map((m) => m.trim()).filter((m) => m !== '');
  const where = `listener ${listenerName}`;
  if (mechanisms.length === 0)
    throw new ConfigError(`${where}: sasl.enabled.mechanisms is empty; enable one of ${SASL_MECHANISMS.join(', ')}`);
  for (const m of mechanisms) {
    if (!(SASL_MECHANISMS as readonly string[]).includes(m))
      throw new ConfigError(
        `${where}: SASL mechanism ${m} is not supported by gregor (${SASL_MECHANISMS.join(', ')} are); set sasl.enabled.mechanisms or listener.name.${l}.sasl.enabled.mechanisms`,
      );
  }
  // as Kafka: the listener- and mechanism-prefixed key, else the static JAAS file's server section
  const section = config.jaasFile === undefined ? undefined : serverSection(readJaasFile(config.jaasFile), listenerName);
  const jaas = new Map<string, JaasEntry>();
  for (const m of mechanisms) {
    const key = `listener.name.${l}.${m.toLowerCase()}.sasl.jaas.config`;
    const raw = prefixedRaw(config, key);
    const entry =
      raw !== undefined && raw.trim() !== '' ? parseJaasConfig(raw, key) : section?.find((e) => e.loginModule === loginModuleOf(m));
    if (entry !== undefined) jaas.set(m, entry);
  }
  const users = plainUsers(jaas.get('PLAIN'));
  if (mechanisms.includes('PLAIN') && users.size === 0)
    throw new ConfigError(
      `${where}: PLAIN needs its users in listener.name.${l}.plain.sasl.jaas.config, e.g. ${LOGIN_MODULES.PLAIN} required user_alice="alice-secret";` +
        ` or in the ${l}.${SERVER_CONTEXT} or ${SERVER_CONTEXT} section of a JAAS file (KAFKA_OPTS=-D${JAAS_FILE_PROPERTY}=<file>` +
        (config.jaasFile === undefined ? ', not set)' : `: ${config.jaasFile})`),
    );
  const reauthMs = new Map<string, number>();
  const listenerReauth = longOrZero(config.listenerValue(listenerName, 'connections.max.reauth.ms'));
  for (const m of mechanisms) {
    const raw = prefixedRaw(config, `listener.name.${l}.${m.toLowerCase()}.connections.max.reauth.ms`);
    reauthMs.set(m, raw === undefined ? listenerReauth : longOrZero(raw));
  }
  return {
    listener: listenerName,
    mechanisms,
    plainUsers: users,
    oauth: unsecuredValidatorOptions(jaas.get('OAUTHBEARER')?.options ?? new Map()),
    reauthMs,
    maxReceiveSize: config.int('sasl.server.max.receive.size'),
    failedAuthDelayMs: config.int('connection.failed.authentication.delay.ms'),
  };
}
