/**
 * dev certs: a development CA, a broker certificate and client certificates made with openssl
 * (Debian package openssl), as PEM files and PKCS12 key stores, and the config lines that use them.
 * Not for production: the keys are unencrypted PEM and the PKCS12 password is given on the command line.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';

type Flags = Record<string, unknown>;

export interface DevCertFiles {
  dir: string;
  caCert: string;
  caKey: string;
  /** the broker's PEM key store: private key and certificate chain in one file (ssl.keystore.type=PEM) */
  brokerKeystorePem: string;
  brokerKeystoreP12: string;
  truststoreP12: string;
  password: string;
  clients: Record<string, { cert: string; key: string; p12: string; principal: string }>;
}

function openssl(args: string[], env: Record<string, string> = {}): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  } catch (e) {
    const err = e as { code?: string; stderr?: Buffer };
    if (err.code === 'ENOENT') throw new UsageError('openssl is not installed (Debian: apt-get install openssl)');
    throw new Error(`openssl ${args[0] ?? ''} failed: ${err.stderr?.toString().trim() ?? String(e)}`, { cause: e });
  }
}

/** A key and a certificate signed by the CA, with the given subject and extensions. */
function issue(dir: string, name: string, subject: string, ext: string, days: number): { cert: string; key: string } {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.pem`);
  const csr = join(dir, `${name}.csr`);
  const extFile = join(dir, `${name}.ext`);
  writeFileSync(extFile, `${ext}\n`);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', subject]);
  openssl([
    'x509', '-req', '-in', csr, '-CA', join(dir, 'ca.pem'), '-CAkey', join(dir, 'ca.key'),
    '-set_serial', `0x${randomBytes(8).toString('hex')}`, '-days', String(days), '-sha256', '-extfile', extFile, '-out', cert,
  ]); // prettier-ignore
  rmSync(csr);
  rmSync(extFile);
  return { cert, key };
}

function p12(out: string, password: string, cert: string, key: string | null, ca: string, name: string): void {
  const args = ['pkcs12', '-export', '-in', cert, '-name', name, '-out', out, '-passout', 'env:GREGOR_P12_PASS'];
  if (key === null) args.push('-nokeys');
  else args.push('-inkey', key, '-certfile', ca);
  openssl(args, { GREGOR_P12_PASS: password });
}

/** Makes the files under `out` (created if missing). */
export function makeDevCerts(out: string, opts: { host: string; clients: string[]; password: string; days: number }): DevCertFiles {
  const dir = resolve(out);
  mkdirSync(dir, { recursive: true });
  const caKey = join(dir, 'ca.key');
  const caCert = join(dir, 'ca.pem');
  openssl([
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', caKey, '-out', caCert, '-days', String(opts.days), '-sha256',
    '-subj', '/O=gregor/OU=gregor-dev/CN=gregor dev CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]); // prettier-ignore
  const sans = [...new Set([opts.host, 'localhost'])].map((h) => (/^[\d.]+$|:/.test(h) ? `IP:${h}` : `DNS:${h}`));
  const broker = issue(
    dir,
    'broker',
    `/O=gregor/OU=gregor-dev/CN=${opts.host}`,
    `basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=${[...sans, 'IP:127.0.0.1'].join(',')}`,
    opts.days,
  );
  const brokerKeystorePem = join(dir, 'broker-keystore.pem');
  writeFileSync(brokerKeystorePem, [broker.key, broker.cert, caCert].map((f) => readFileSync(f, 'utf8')).join(''));
  const brokerKeystoreP12 = join(dir, 'broker.p12');
  p12(brokerKeystoreP12, opts.password, broker.cert, broker.key, caCert, 'broker');
  const truststoreP12 = join(dir, 'truststore.p12');
  p12(truststoreP12, opts.password, caCert, null, caCert, 'ca');
  const clients: DevCertFiles['clients'] = {};
  for (const name of opts.clients) {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new UsageError(`--client ${name}: letters, digits, '.', '_' and '-' only`);
    const c = issue(dir, name, `/O=gregor/OU=gregor-dev/CN=${name}`, 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth', opts.days);
    const cp12 = join(dir, `${name}.p12`);
    p12(cp12, opts.password, c.cert, c.key, caCert, name);
    clients[name] = { ...c, p12: cp12, principal: `User:CN=${name},OU=gregor-dev,O=gregor` };
  }
  return { dir, caCert, caKey, brokerKeystorePem, brokerKeystoreP12, truststoreP12, password: opts.password, clients };
}

/** The broker's config lines for an SSL listener beside PLAINTEXT, with the PEM key store. */
export function brokerConfigLines(f: DevCertFiles, host: string): string[] {
  return [
    `listeners=PLAINTEXT://${host}:9092,SSL://${host}:9093`,
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${f.brokerKeystorePem}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${f.caCert}`,
    '# client certificates: ssl.client.auth=required (or requested)',
    `# PKCS12 instead: ssl.keystore.type=PKCS12, ssl.keystore.location=${f.brokerKeystoreP12}, ssl.keystore.password=${f.password}`,
  ];
}

export function devCerts(ctx: Context, f: Flags): Promise<number> {
  const host = String(f['host']);
  const files = makeDevCerts(String(f['out']), {
    host,
    clients: (f['client'] as string[] | undefined) ?? [],
    password: String(f['password']),
    days: Number(f['days']),
  });
  if (ctx.format === 'json') {
    process.stdout.write(
      `${JSON.stringify({ ...files, brokerConfig: brokerConfigLines(files, host).filter((l) => !l.startsWith('#')) })}\n`,
    );
    return Promise.resolve(0);
  }
  const out = [
    `# files in ${files.dir} (a development CA: not for production)`,
    '# broker (server.properties)',
    ...brokerConfigLines(files, host),
  ];
  for (const [name, c] of Object.entries(files.clients)) {
    out.push(
      `# client ${name} (principal ${c.principal}): librdkafka / kcat`,
      'security.protocol=ssl',
      `ssl.ca.location=${files.caCert}`,
      `ssl.certificate.location=${c.cert}`,
      `ssl.key.location=${c.key}`,
    );
  }
  if (Object.keys(files.clients).length === 0)
    out.push('# clients (librdkafka / kcat)', 'security.protocol=ssl', `ssl.ca.location=${files.caCert}`);
  process.stdout.write(`${out.join('\n')}\n`);
  return Promise.resolve(0);
}
