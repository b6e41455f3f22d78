/**
 * The ssl.* broker keys gregor honours on SSL listeners (Kafka's names; each may also be given per
 * listener as `listener.name.<lowercase listener>.ssl.*`). Defaults are Kafka's on a current Java
 * runtime (TLSv1.2 and TLSv1.3 enabled, ssl.protocol TLSv1.3). Passwords and inline PEM are strings.
 */
import type { ConfigDef, ConfigValue } from '../config.js';

const oneOfAnyCase =
  (...xs: string[]) =>
  (v: ConfigValue): string | undefined =>
    typeof v === 'string' && !xs.includes(v.toUpperCase()) ? `must be one of ${xs.join(', ')}` : undefined;

/** The TLS versions Node can speak, by Kafka's protocol names. */
export const TLS_VERSIONS = ['TLSv1.2', 'TLSv1.3'] as const;

const protocolsError = (v: ConfigValue): string | undefined => {
  if (!Array.isArray(v)) return undefined;
  const bad = v.find((p) => !(TLS_VERSIONS as readonly string[]).includes(p));
  return bad === undefined ? undefined : `unsupported TLS protocol ${bad}: gregor speaks ${TLS_VERSIONS.join(', ')}`;
};

export const SSL_BROKER_CONFIG: Record<string, ConfigDef> = {
  'ssl.keystore.type': { type: 'string', default: 'JKS', validate: oneOfAnyCase('JKS', 'PKCS12', 'PEM') },
  'ssl.keystore.location': { type: 'string', default: null },
  'ssl.keystore.password': { type: 'string', default: null },
  'ssl.keystore.key': { type: 'string', default: null },
  'ssl.keystore.certificate.chain': { type: 'string', default: null },
  'ssl.key.password': { type: 'string', default: null },
  'ssl.truststore.type': { type: 'string', default: 'JKS', validate: oneOfAnyCase('JKS', 'PKCS12', 'PEM') },
  'ssl.truststore.location': { type: 'string', default: null },
  'ssl.truststore.password': { type: 'string', default: null },
  'ssl.truststore.certificates': { type: 'string', default: null },
  'ssl.client.auth': { type: 'string', default: 'none', validate: (v) => oneOfAnyCase('NONE', 'REQUESTED', 'REQUIRED')(v) },
  'ssl.enabled.protocols': { type: 'list', default: ['TLSv1.2', 'TLSv1.3'], validate: protocolsError },
  'ssl.protocol': { type: 'string', default: 'TLSv1.3', validate: oneOfAnyCase('TLS', 'TLSV1.2', 'TLSV1.3') },
  'ssl.cipher.suites': { type: 'list', default: [] },
  'ssl.principal.mapping.rules': { type: 'string', default: 'DEFAULT' },
};

/** One-line docs of the keys above (DescribeConfigs includeDocumentation). */
export const SSL_DOCS: Record<string, string> = {
  'ssl.keystore.type': 'Format of the listener key store: PEM or PKCS12 (JKS is refused).',
  'ssl.keystore.location': 'Key store file: PEM with key and certificate chain, or PKCS12.',
  'ssl.keystore.password': 'Password of a PKCS12 key store.',
  'ssl.keystore.key': 'PEM private key given inline (ssl.keystore.type=PEM).',
  'ssl.keystore.certificate.chain': 'PEM certificate chain given inline (ssl.keystore.type=PEM).',
  'ssl.key.password': 'Password of an encrypted private key.',
  'ssl.truststore.type': 'Format of the trust store: PEM or PKCS12 (JKS is refused).',
  'ssl.truststore.location': 'CA certificates client certificates are checked against.',
  'ssl.truststore.password': 'Password of a PKCS12 trust store.',
  'ssl.truststore.certificates': 'Trusted PEM CA certificates given inline.',
  'ssl.client.auth': 'Client certificates: none, requested (checked if sent) or required.',
  'ssl.enabled.protocols': 'TLS versions an SSL listener accepts (TLSv1.2, TLSv1.3).',
  'ssl.protocol': 'Checked (TLS, TLSv1.2, TLSv1.3); ssl.enabled.protocols decides, as on Java 11+.',
  'ssl.cipher.suites': 'Cipher suites allowed (IANA or OpenSSL names); empty: the defaults.',
  'ssl.principal.mapping.rules': 'How a client certificate name becomes a principal (DEFAULT, RULE:).',
};
