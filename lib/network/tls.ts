/**
 * TLS settings of an SSL listener, from Kafka's ssl.* keys (each overridable per listener with
 * `listener.name.<lowercase name>.ssl.*`): key store PEM (file with key + chain, or inline
 * ssl.keystore.key / ssl.keystore.certificate.chain) or PKCS12 (Node's pfx), trust store PEM or
 * PKCS12 (its certificates read with openssl), ssl.client.auth, ssl.enabled.protocols and
 * ssl.protocol (-> minVersion/maxVersion), ssl.cipher.suites (-> Node's ciphers and ciphersuites).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import type { BrokerConfig, ConfigValue } from '../config.js';
import { ConfigError } from '../config/error.js';
import { TLS_VERSIONS } from '../config/ssl-keys.js';
import { parseMappingRules, type PrincipalRule } from './tls-principal.js';

export type ClientAuth = 'none' | 'requested' | 'required';

export interface TlsListenerSettings {
  secureContext: tls.SecureContext;
  clientAuth: ClientAuth;
  principalRules: PrincipalRule[];
  /** the TLS versions accepted, for the start-up log */
  minVersion: tls.SecureVersion;
  maxVersion: tls.SecureVersion;
}

/** PEM blocks re-wrapped (inline values may come on one line, the base64 split by spaces). */
export function normalizePem(text: string): string {
  const blocks = [...text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g)];
  return blocks
    .map((b) => {
      const body = (b[2] ?? '').replace(/\s+/g, '');
      const lines = body.match(/.{1,64}/g) ?? [];
      return `-----BEGIN ${b[1] ?? ''}-----\n${lines.join('\n')}\n-----END ${b[1] ?? ''}-----\n`;
    })
    .join('');
}

function pemBlocks(pem: string, kind: 'key' | 'cert'): string {
  return normalizePem(pem)
    .split(/(?=-----BEGIN )/)
    .filter((b) => (kind === 'cert' ? b.startsWith('-----BEGIN CERTIFICATE-----') : / PRIVATE KEY-----/.test(b.split('\n')[0] ?? '')))
    .join('');
}

function readFile(key: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new ConfigError(`${key}=${path}: ${(e as Error).message}`);
  }
}

/** The certificates of a PKCS12 trust store, as PEM (openssl pkcs12 -nokeys). */
function pkcs12Certificates(path: string, password: string): string {
  const run = (legacy: boolean): string =>
    execFileSync('openssl', ['pkcs12', ...(legacy ? ['-legacy'] : []), '-in', path, '-nokeys', '-passin', 'env:GREGOR_P12_PASS'], {
      env: { ...process.env, GREGOR_P12_PASS: password },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  try {
    return run(false);
  } catch {
    try {
      return run(true);
    } catch (e) {
      throw new ConfigError(
        `ssl.truststore.location=${path}: cannot read the PKCS12 trust store: ${(e as Error).message.split('\n')[0] ?? ''}`,
      );
    }
  }
}

/**
 * Kafka's cipher suite names (IANA, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) to OpenSSL's: TLS 1.3
 * suites keep their IANA names (Node's ciphersuites option); TLS 1.2 ones are looked up in the names
 * Node knows (tls.getCiphers(), OpenSSL spelling); an OpenSSL name passes as it is.
 */
export function mapCipherSuites(suites: readonly string[]): { ciphers?: string; ciphersuites?: string } {
  const v13: string[] = [];
  const v12: string[] = [];
  for (const s of suites) {
    if (/^TLS_(AES|CHACHA20)_/.test(s)) v13.push(s);
    else v12.push(ianaToOpenssl(s));
  }
  return { ...(v12.length > 0 ? { ciphers: v12.join(':') } : {}), ...(v13.length > 0 ? { ciphersuites: v13.join(':') } : {}) };
}

function ianaToOpenssl(s: string): string {
  const m = /^TLS_(ECDHE|DHE)_(RSA|ECDSA)_WITH_(AES_128_GCM|AES_256_GCM|CHACHA20_POLY1305)_(SHA256|SHA384)$/.exec(s);
  if (m === null) return s; // an OpenSSL name already (or an unknown one: OpenSSL refuses it at start)
  const enc = m[3] === 'CHACHA20_POLY1305' ? 'CHACHA20-POLY1305' : `${m[3] === 'AES_128_GCM' ? 'AES128' : 'AES256'}-GCM-${m[4] ?? ''}`;
  return `${m[1] ?? ''}-${m[2] ?? ''}-${enc}`;
}

function str(v: ConfigValue): string | undefined {
  return v === null || v === '' ? undefined : String(v);
}

/** Builds the TLS settings of `listenerName` (throws ConfigError with the key at fault). */
export function listenerTlsSettings(config: BrokerConfig, listenerName: string): TlsListenerSettings {
  const get = (key: string): string | undefined => str(config.listenerValue(listenerName, key));
  const list = (key: string): string[] => {
    const v = config.listenerValue(listenerName, key);
    return Array.isArray(v) ? v : [];
  };
  const where = (key: string): string => `listener ${listenerName}: ${key}`;
  const opts: tls.SecureContextOptions = {};

  const ksType = (get('ssl.keystore.type') ?? 'JKS').toUpperCase();
  const location = get('ssl.keystore.location');
  const inlineKey = get('ssl.keystore.key');
  if (ksType === 'PEM') {
    const keyPassword = get('ssl.key.password');
    if (keyPassword !== undefined) opts.passphrase = keyPassword;
    if (inlineKey !== undefined) {
      const chain = get('ssl.keystore.certificate.chain');
      if (chain === undefined) throw new ConfigError(`${where('ssl.keystore.certificate.chain')} is needed with ssl.keystore.key`);
      opts.key = pemBlocks(inlineKey, 'key');
      opts.cert = pemBlocks(chain, 'cert');
    } else if (location !== undefined) {
      const pem = readFile('ssl.keystore.location', location).toString('utf8');
      opts.key = pemBlocks(pem, 'key');
      opts.cert = pemBlocks(pem, 'cert');
      if (opts.key === '' || opts.cert === '')
        throw new ConfigError(
          `${where('ssl.keystore.location')}=${location}: a PEM key store holds the private key and the certificate chain`,
        );
    } else throw new ConfigError(`${where('ssl.keystore.location')} (or ssl.keystore.key) is needed on an SSL listener`);
  } else if (ksType === 'PKCS12') {
    if (location === undefined) throw new ConfigError(`${where('ssl.keystore.location')} is needed on an SSL listener`);
    opts.pfx = readFile('ssl.keystore.location', location);
    const pw = get('ssl.keystore.password') ?? get('ssl.key.password');
    if (pw !== undefined) opts.passphrase = pw;
  } else {
    throw new ConfigError(
      `${where('ssl.keystore.type')}=${ksType}: JKS key stores are not supported by gregor; use PEM or PKCS12 (keytool -importkeystore -deststoretype PKCS12 converts one)`,
    );
  }

  const tsType = (get('ssl.truststore.type') ?? 'JKS').toUpperCase();
  const tsLocation = get('ssl.truststore.location');
  const tsInline = get('ssl.truststore.certificates');
  if (tsInline !== undefined) opts.ca = pemBlocks(tsInline, 'cert');
  else if (tsLocation !== undefined) {
    if (tsType === 'PEM') opts.ca = pemBlocks(readFile('ssl.truststore.location', tsLocation).toString('utf8'), 'cert');
    else if (tsType === 'PKCS12') opts.ca = pemBlocks(pkcs12Certificates(tsLocation, get('ssl.truststore.password') ?? ''), 'cert');
    else
      throw new ConfigError(`${where('ssl.truststore.type')}=${tsType}: JKS trust stores are not supported by gregor; use PEM or PKCS12`);
  }

  const enabled = list('ssl.enabled.protocols');
  const versions = TLS_VERSIONS.filter((v) => enabled.includes(v));
  if (versions.length === 0) throw new ConfigError(`${where('ssl.enabled.protocols')}: enables none of ${TLS_VERSIONS.join(', ')}`);
  const minVersion = versions[0] ?? 'TLSv1.2';
  const maxVersion = versions[versions.length - 1] ?? 'TLSv1.3';
  opts.minVersion = minVersion;
  opts.maxVersion = maxVersion;
  Object.assign(opts, mapCipherSuites(list('ssl.cipher.suites')));

  const clientAuth = (get('ssl.client.auth') ?? 'none').toLowerCase() as ClientAuth;
  if (clientAuth !== 'none' && opts.ca === undefined)
    throw new ConfigError(
      `${where('ssl.client.auth')}=${clientAuth} needs a trust store (ssl.truststore.location or ssl.truststore.certificates)`,
    );

  let secureContext: tls.SecureContext;
  try {
    secureContext = tls.createSecureContext(opts);
  } catch (e) {
    throw new ConfigError(`listener ${listenerName}: the TLS settings are refused: ${(e as Error).message}`);
  }
  return {
    secureContext,
    clientAuth,
    principalRules: parseMappingRules(get('ssl.principal.mapping.rules') ?? 'DEFAULT'),
    minVersion,
    maxVersion,
  };
}
