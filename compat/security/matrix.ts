/**
 * The compat matrix's security section: every client column (kafkajs, librdkafka through
 * @confluentinc/kafka-javascript, kcat, kafka-python) × every kind of listener (SSL, SSL with a client
 * certificate, SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER, SASL_SSL with
 * PLAIN). Each cell produces records on its own topic, then reads them back in a consumer group (so
 * the group join, sync and fetch all go over that listener). One in-process gregor serves every
 * listener (dev certificates from test/helpers/tls.ts, users from test/helpers/sasl.ts); a cell a
 * client cannot do says why.
 */
import { join } from 'node:path';
import type { KafkaConfig, SASLOptions } from 'kafkajs';
import { Kafka, logLevel } from 'kafkajs';
import { PYTHON } from '../../test/helpers/kafka-python.js';
import { runKcat } from '../../test/helpers/kcat.js';
import { runProcess } from '../../test/helpers/process.js';
import { kafkajsRoundTrip, rdkafkaRoundTrip } from '../../test/helpers/roundtrip.js';
import { addScramUser, PLAIN_USERS, saslConfig } from '../../test/helpers/sasl.js';
import {
  devCerts,
  kafkajsSsl,
  kcatProps,
  type LoggedBroker,
  pemSslConfig,
  rdkafkaSsl,
  removeCerts,
  startLoggedBroker,
  type DevCertFiles,
} from '../../test/helpers/tls.js';
import { ROOT } from '../lib/paths.js';
import { rawCreateTopic } from '../lib/raw.js';
import type { CellResult } from '../lib/types.js';

const SCRAM_USER = 'carol';
const SCRAM_PASSWORD = 'carol-secret';
const OAUTH_PRINCIPAL = 'dave';
const RECORDS = 5;

/** One row: a broker listener and how a client authenticates on it. */
export interface SecurityListener {
  id: string;
  title: string;
  /** the broker listener's name */
  listener: 'SSL' | 'MTLS' | 'SASL_PLAINTEXT' | 'SASL_SSL';
  tls: boolean;
  clientCert: boolean;
  mechanism?: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512' | 'OAUTHBEARER';
}

export const SECURITY_LISTENERS: SecurityListener[] = [
  { id: 'ssl', title: 'SSL', listener: 'SSL', tls: true, clientCert: false },
  { id: 'ssl-client-cert', title: 'SSL + client certificate (ssl.client.auth=required)', listener: 'MTLS', tls: true, clientCert: true },
  { id: 'sasl-plain', title: 'SASL_PLAINTEXT PLAIN', listener: 'SASL_PLAINTEXT', tls: false, clientCert: false, mechanism: 'PLAIN' },
  {
    id: 'sasl-scram-256',
    title: 'SASL_PLAINTEXT SCRAM-SHA-256',
    listener: 'SASL_PLAINTEXT',
    tls: false,
    clientCert: false,
    mechanism: 'SCRAM-SHA-256',
  },
  {
    id: 'sasl-scram-512',
    title: 'SASL_PLAINTEXT SCRAM-SHA-512',
    listener: 'SASL_PLAINTEXT',
    tls: false,
    clientCert: false,
    mechanism: 'SCRAM-SHA-512',
  },
  { id: 'sasl-ssl', title: 'SASL_SSL PLAIN', listener: 'SASL_SSL', tls: true, clientCert: false, mechanism: 'PLAIN' },
  {
    id: 'oauthbearer',
    title: 'SASL_PLAINTEXT OAUTHBEARER (unsecured JWT)',
    listener: 'SASL_PLAINTEXT',
    tls: false,
    clientCert: false,
    mechanism: 'OAUTHBEARER',
  },
];

export const SECURITY_CLIENTS = ['kafkajs', 'librdkafka', 'kcat', 'kafka-python'] as const;
export type SecurityClient = (typeof SECURITY_CLIENTS)[number];

/** The broker of the section and what clients need to reach it. */
export interface SecurityBroker {
  broker: LoggedBroker;
  certs: DevCertFiles;
  address(l: SecurityListener): string;
  stop(): Promise<void>;
}

export async function startSecurityBroker(): Promise<SecurityBroker> {
  const certs = devCerts(['app']);
  const sasl = ['SASL_PLAINTEXT', 'SASL_SSL'];
  try {
    const broker = await startLoggedBroker(['PLAINTEXT', 'SSL', 'MTLS', ...sasl], {
      ...pemSslConfig(certs),
      ...saslConfig(sasl, ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER']),
      'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL',
      'listener.name.mtls.ssl.client.auth': 'required',
      'num.partitions': 1,
    });
    await addScramUser(broker.address('PLAINTEXT'), SCRAM_USER, SCRAM_PASSWORD, ['SCRAM-SHA-256', 'SCRAM-SHA-512']);
    return {
      broker,
      certs,
      address: (l) => broker.address(l.listener),
      async stop() {
        await broker.stop();
        removeCerts(certs);
      },
    };
  } catch (e) {
    removeCerts(certs);
    throw e;
  }
}

/** Kafka's development token: an unsecured JWT (alg none, no signature). */
export function unsecuredJwt(principal: string, lifeSeconds = 600): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return `${part({ alg: 'none' })}.${part({ sub: principal, iat: now, exp: now + lifeSeconds, scope: 'kafka' })}.`;
}

const user = (l: SecurityListener) =>
  l.mechanism === 'PLAIN' ? { name: 'alice', password: PLAIN_USERS.alice } : { name: SCRAM_USER, password: SCRAM_PASSWORD };

function kafkajsConfig(b: SecurityBroker, l: SecurityListener): Omit<KafkaConfig, 'brokers'> {
  const config: Omit<KafkaConfig, 'brokers'> = { clientId: `sec-${l.id}`, logLevel: logLevel.NOTHING };
  if (l.tls) config.ssl = kafkajsSsl(b.certs, l.clientCert ? 'app' : undefined);
  const u = user(l);
  let sasl: SASLOptions | undefined;
  if (l.mechanism === 'PLAIN') sasl = { mechanism: 'plain', username: u.name, password: u.password };
  else if (l.mechanism === 'SCRAM-SHA-256') sasl = { mechanism: 'scram-sha-256', username: u.name, password: u.password };
  else if (l.mechanism === 'SCRAM-SHA-512') sasl = { mechanism: 'scram-sha-512', username: u.name, password: u.password };
  else if (l.mechanism === 'OAUTHBEARER')
    sasl = { mechanism: 'oauthbearer', oauthBearerProvider: () => Promise.resolve({ value: unsecuredJwt(OAUTH_PRINCIPAL) }) };
  if (sasl !== undefined) config.sasl = sasl;
  return config;
}

/** librdkafka properties (also kcat's -X) of a listener. */
function rdkafkaProps(b: SecurityBroker, l: SecurityListener): Record<string, string> {
  const props: Record<string, string> = l.tls ? rdkafkaSsl(b.certs, l.clientCert ? 'app' : undefined) : {};
  if (l.mechanism === undefined) return props;
  props['security.protocol'] = l.tls ? 'sasl_ssl' : 'sasl_plaintext';
  props['sasl.mechanisms'] = l.mechanism;
  if (l.mechanism === 'OAUTHBEARER') {
    props['enable.sasl.oauthbearer.unsecure.jwt'] = 'true';
    props['sasl.oauthbearer.config'] = `principal=${OAUTH_PRINCIPAL} scope=kafka lifeSeconds=600`;
  } else {
    props['sasl.username'] = user(l).name;
    props['sasl.password'] = user(l).password;
  }
  return props;
}

/** kafka-python's KafkaProducer/KafkaConsumer arguments of a listener. */
function kafkaPythonArgs(b: SecurityBroker, l: SecurityListener): Record<string, string> {
  const protocol = l.mechanism === undefined ? 'SSL' : l.tls ? 'SASL_SSL' : 'SASL_PLAINTEXT';
  const args: Record<string, string> = { security_protocol: protocol };
  if (l.tls) args['ssl_cafile'] = b.certs.caCert;
  const cert = l.clientCert ? b.certs.clients['app'] : undefined;
  if (cert !== undefined) Object.assign(args, { ssl_certfile: cert.cert, ssl_keyfile: cert.key });
  if (l.mechanism !== undefined) args['sasl_mechanism'] = l.mechanism;
  if (l.mechanism !== undefined && l.mechanism !== 'OAUTHBEARER')
    Object.assign(args, { sasl_plain_username: user(l).name, sasl_plain_password: user(l).password });
  return args;
}

const expected = (prefix: string) => Array.from({ length: RECORDS }, (_, i) => `${prefix}${i}`);

async function kcatCell(b: SecurityBroker, l: SecurityListener, topic: string): Promise<string[]> {
  const x = kcatProps(rdkafkaProps(b, l));
  const addr = b.address(l);
  const p = await runKcat(['-b', addr, ...x, '-P', '-t', topic, '-p', '0'], expected('k').join('\n') + '\n');
  if (p.code !== 0) throw new Error(`kcat -P exited with ${p.code}: ${p.stderr.trim().slice(-300)}`);
  // -G: a balanced consumer group (JoinGroup/SyncGroup), -c: exit after the records
  const c = await runKcat(
    ['-b', addr, ...x, '-X', 'auto.offset.reset=earliest', '-G', `g-${topic}`, '-c', String(RECORDS), '-f', '%s\\n', topic],
    '',
    60_000,
  );
  if (c.code !== 0) throw new Error(`kcat -G exited with ${c.code}: ${c.stderr.trim().slice(-300)}`);
  return c.stdout
    .toString()
    .split('\n')
    .filter((s) => s !== '');
}

async function kafkaPythonCell(b: SecurityBroker, l: SecurityListener, topic: string): Promise<string[]> {
  const input = {
    bootstrap: b.address(l),
    topic,
    group: `g-${topic}`,
    count: RECORDS,
    client: kafkaPythonArgs(b, l),
    oauth: l.mechanism === 'OAUTHBEARER' ? { principal: OAUTH_PRINCIPAL, scope: 'kafka' } : null,
  };
  const r = await runProcess(PYTHON, [join(ROOT, 'compat/security/kafka_python_cell.py')], JSON.stringify(input), 90_000);
  if (r.code !== 0) throw new Error(`kafka-python exited with ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  return (JSON.parse(r.stdout.toString()) as { read: string[] }).read;
}

/** Runs one cell: produce RECORDS records, read them back in a group; the values read. */
async function runCell(
  b: SecurityBroker,
  l: SecurityListener,
  client: SecurityClient,
  topic: string,
): Promise<{ got: string[]; want: string[] }> {
  await rawCreateTopic(b.broker.address('PLAINTEXT'), topic, 1);
  if (client === 'kafkajs') {
    const want = expected('v');
    return { got: await kafkajsRoundTrip(new Kafka({ ...kafkajsConfig(b, l), brokers: [b.address(l)] }), topic, want), want };
  }
  if (client === 'librdkafka')
    return {
      got: await rdkafkaRoundTrip({ 'bootstrap.servers': b.address(l), ...rdkafkaProps(b, l), log_level: 0 }, topic, RECORDS),
      want: expected('r'),
    };
  if (client === 'kcat') return { got: await kcatCell(b, l, topic), want: expected('k') };
  return { got: await kafkaPythonCell(b, l, topic), want: expected('p') };
}

/** Runs every cell (`concurrency` at a time); one CellResult each, scenario `security-<listener id>`. */
export async function runSecurityMatrix(
  b: SecurityBroker,
  opts: {
    clients?: readonly SecurityClient[];
    listeners?: readonly SecurityListener[];
    concurrency?: number;
    log?: (line: string) => void;
  } = {},
): Promise<CellResult[]> {
  const cells = (opts.listeners ?? SECURITY_LISTENERS).flatMap((l) => (opts.clients ?? SECURITY_CLIENTS).map((c) => ({ l, c })));
  const results: CellResult[] = new Array<CellResult>(cells.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < cells.length; i = next++) {
      const { l, c } = cells[i] as { l: SecurityListener; c: SecurityClient };
      const t0 = Date.now();
      const topic = `sec-${l.id}-${c}`;
      const base = { scenario: `security-${l.id}`, client: c };
      try {
        const { got, want } = await runCell(b, l, c, topic);
        if (got.join() !== want.join()) throw new Error(`read back [${got.join(', ')}], expected [${want.join(', ')}]`);
        results[i] = {
          ...base,
          outcome: 'pass',
          details: `${RECORDS} records produced and read back in group g-${topic}`,
          durationMs: Date.now() - t0,
        };
      } catch (e) {
        results[i] = { ...base, outcome: 'fail', reason: (e as Error).message, durationMs: Date.now() - t0 };
      }
      opts.log?.(`${results[i]?.outcome === 'pass' ? 'pass' : 'FAIL'}  security-${l.id} × ${c} (${Date.now() - t0} ms)`);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 4 }, worker));
  return results;
}

/** The section of REPORT.md: one row per listener, one column per client. */
export function securityReport(results: readonly CellResult[]): string {
  const lines = [
    '## Security: listeners × clients',
    '',
    'Each cell produces 5 records over the listener, then reads them back in a consumer group (join, sync, fetch over that listener).',
    '',
    `| listener | ${SECURITY_CLIENTS.join(' | ')} |`,
    `|---|${SECURITY_CLIENTS.map(() => '---').join('|')}|`,
  ];
  for (const l of SECURITY_LISTENERS) {
    const cells = SECURITY_CLIENTS.map((c) => {
      const r = results.find((x) => x.scenario === `security-${l.id}` && x.client === c);
      if (r === undefined) return '';
      return r.outcome === 'pass'
        ? `✅ ${(r.durationMs / 1000).toFixed(1)} s`
        : `❌ ${(r.reason ?? '').replace(/\|/g, '\\|').slice(0, 160)}`;
    });
    lines.push(`| ${l.title} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n') + '\n';
}
