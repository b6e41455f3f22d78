/** SSL listener test helpers: dev certificates (gregor dev certs' code) and a broker with PLAINTEXT and SSL listeners. */
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { type Broker, startBroker } from '../../lib/broker.js';
import { makeDevCerts, type DevCertFiles } from '../../lib/cli/commands/dev-certs.js';
import type { ConfigValue } from '../../lib/config.js';
import { createLogger } from '../../lib/observability/logger.js';
import { tempDir } from './broker.js';

export type { DevCertFiles };

/** A CA, the broker's certificate and client certificates (CN=<name>) in a fresh temp dir. */
export function devCerts(clients: string[] = ['app']): DevCertFiles {
  return makeDevCerts(join(tempDir('gregor-certs-'), 'certs'), { host: 'localhost', clients, password: 'test-pass', days: 2 });
}

/** Removes the temp dir of devCerts(). */
export function removeCerts(certs: DevCertFiles): void {
  rmSync(dirname(certs.dir), { recursive: true, force: true });
}

/** The broker config of an SSL listener with the PEM key store and trust store of `certs`. */
export function pemSslConfig(certs: DevCertFiles): Record<string, string> {
  return {
    'ssl.keystore.type': 'PEM',
    'ssl.keystore.location': certs.brokerKeystorePem,
    'ssl.truststore.type': 'PEM',
    'ssl.truststore.location': certs.caCert,
  };
}

export interface LogLine {
  level: string;
  msg: string;
  listener?: string;
  [k: string]: unknown;
}

/** A broker on several listeners whose log lines are kept (for tests of refusals and their one line). */
export interface LoggedBroker {
  broker: Broker;
  dataDir: string;
  /** host:port of the listener `name` */
  address(name: string): string;
  /** the broker's log lines so far (info and above) */
  lines(): LogLine[];
  /** the broker's log lines so far (warn and above) */
  warnings(): LogLine[];
  stop(): Promise<void>;
}

/** A broker with `listeners` (NAME://127.0.0.1:0 each) on free ports and `config` (and KAFKA_* `env`), keeping its log lines. */
export async function startLoggedBroker(
  listeners: readonly string[],
  config: Record<string, string | ConfigValue>,
  env?: NodeJS.ProcessEnv,
): Promise<LoggedBroker> {
  const dataDir = tempDir();
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as LogLine);
      cb();
    },
  });
  const broker = await startBroker({
    dataDir,
    logger: createLogger({ level: 'info', destination }),
    ...(env === undefined ? {} : { env }),
    config: { listeners: listeners.map((l) => `${l}://127.0.0.1:0`).join(','), 'group.initial.rebalance.delay.ms': 0, ...config },
  }).catch((e: unknown) => {
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  });
  return {
    broker,
    dataDir,
    address: (name) => broker.listenerAddress(name),
    lines: () => [...lines],
    warnings: () => lines.filter((l) => l.level === 'warn' || l.level === 'error'),
    async stop() {
      await broker.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface TlsBroker {
  broker: Broker;
  /** host:port of the PLAINTEXT listener */
  plain: string;
  /** host:port of the SSL listener */
  ssl: string;
  dataDir: string;
  /** the broker's log lines so far (warn and above) */
  warnings(): LogLine[];
  stop(): Promise<void>;
}

/** A broker with PLAINTEXT and SSL listeners on free ports (the SSL one configured by `config`). */
export async function startTlsBroker(config: Record<string, string | ConfigValue>): Promise<TlsBroker> {
  const b = await startLoggedBroker(['PLAINTEXT', 'SSL'], config);
  return {
    broker: b.broker,
    plain: b.address('PLAINTEXT'),
    ssl: b.address('SSL'),
    dataDir: b.dataDir,
    warnings: () => b.warnings(),
    stop: () => b.stop(),
  };
}

/** kafkajs's ssl option for the CA of `certs`, with the client certificate `client` when given. */
export function kafkajsSsl(certs: DevCertFiles, client?: string): { ca: string; cert?: string; key?: string; servername: string } {
  const c = client === undefined ? undefined : certs.clients[client];
  return {
    ca: readFileSync(certs.caCert, 'utf8'),
    servername: 'localhost',
    ...(c === undefined ? {} : { cert: readFileSync(c.cert, 'utf8'), key: readFileSync(c.key, 'utf8') }),
  };
}

/** librdkafka / kcat properties of an SSL client (with the client certificate `client` when given). */
export function rdkafkaSsl(certs: DevCertFiles, client?: string): Record<string, string> {
  const c = client === undefined ? undefined : certs.clients[client];
  return {
    'security.protocol': 'ssl',
    'ssl.ca.location': certs.caCert,
    ...(c === undefined ? {} : { 'ssl.certificate.location': c.cert, 'ssl.key.location': c.key }),
  };
}

/** kcat -X arguments for `props`. */
export function kcatProps(props: Record<string, string>): string[] {
  return Object.entries(props).flatMap(([k, v]) => ['-X', `${k}=${v}`]);
}
