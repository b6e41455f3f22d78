/**
 * SASL listeners (issue 18): one broker with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL listeners offering
 * PLAIN (users from listener.name.<l>.plain.sasl.jaas.config), SCRAM-SHA-256/512 (credentials added
 * with AlterUserScramCredentials over the PLAINTEXT listener) and OAUTHBEARER (Kafka's unsecured JWT
 * validator). kafkajs (SaslHandshake v1 + SaslAuthenticate), librdkafka (@confluentinc/kafka-javascript)
 * and kcat, and kafka-python (SaslHandshake v0, then raw tokens) produce and consume; the request log
 * shows each request under the SASL principal.
 */
import { expect } from 'chai';
import { Kafka, logLevel, type SASLOptions } from 'kafkajs';
import { Cleanup } from '../helpers/cleanup.js';
import { hex, runKafkaPython } from '../helpers/kafka-python.js';
import { runKcat } from '../helpers/kcat.js';
import { kafkajsRoundTrip, rdkafkaRoundTrip } from '../helpers/roundtrip.js';
import { addScramUser, PLAIN_USERS, saslConfig } from '../helpers/sasl.js';
import {
  devCerts,
  kafkajsSsl,
  kcatProps,
  pemSslConfig,
  removeCerts,
  startLoggedBroker,
  type DevCertFiles,
  type LoggedBroker,
} from '../helpers/tls.js';

const SASL_LISTENERS = ['SASL_PLAINTEXT', 'SASL_SSL'] as const;
const CAROL = 'carol-secret';

describe('SASL listeners: every client authenticates with PLAIN, SCRAM and OAUTHBEARER, then produces and consumes', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let certs: DevCertFiles;
  let b: LoggedBroker;

  before(async () => {
    certs = cleanup.add(devCerts(['app']), removeCerts);
    b = cleanup.add(
      await startLoggedBroker(['PLAINTEXT', ...SASL_LISTENERS], {
        ...pemSslConfig(certs),
        ...saslConfig(SASL_LISTENERS, ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER']),
        'num.partitions': 1,
      }),
      (x) => x.stop(),
    );
    await addScramUser(b.address('PLAINTEXT'), 'carol', CAROL, ['SCRAM-SHA-256', 'SCRAM-SHA-512']);
  });
  after(() => cleanup.run());

  /** Principals of the requests served on `listener`, other than the ones of the SASL exchange itself. */
  function principals(listener: string): string[] {
    const entries = b.broker.metrics.requestLog.query({}).filter((e) => e.listener === listener && ![17, 18, 36].includes(e.apiKey));
    return [...new Set(entries.map((e) => e.principal))].sort();
  }

  it('kafkajs: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 on SASL_PLAINTEXT and SASL_SSL (consumer groups join), under User:<name>', async () => {
    const mechs: [string, SASLOptions][] = [
      ['plain', { mechanism: 'plain', username: 'alice', password: PLAIN_USERS.alice }],
      ['s256', { mechanism: 'scram-sha-256', username: 'carol', password: CAROL }],
      ['s512', { mechanism: 'scram-sha-512', username: 'carol', password: CAROL }],
    ];
    const values = Array.from({ length: 50 }, (_, i) => `v${i}`);
    const runs = SASL_LISTENERS.flatMap((listener) =>
      mechs.map(async ([name, sasl]) => {
        const kafka = new Kafka({
          brokers: [b.address(listener)],
          clientId: `kafkajs-${name}`,
          sasl,
          ...(listener === 'SASL_SSL' ? { ssl: kafkajsSsl(certs) } : {}),
          logLevel: logLevel.NOTHING,
        });
        return kafkajsRoundTrip(kafka, `kafkajs-${listener}-${name}`.toLowerCase(), values);
      }),
    );
    for (const got of await Promise.all(runs)) expect(got).to.deep.equal(values);
    for (const l of SASL_LISTENERS) expect(principals(l)).to.deep.equal(['User:alice', 'User:carol']);
  });

  it('librdkafka: PLAIN over SASL_SSL, SCRAM-SHA-512 and OAUTHBEARER (unsecured JWT, sasl.oauthbearer.config) over SASL_PLAINTEXT', async () => {
    const ssl = { 'security.protocol': 'sasl_ssl', 'ssl.ca.location': certs.caCert };
    const runs: [string, Record<string, unknown>][] = [
      [
        'rd-plain',
        {
          'bootstrap.servers': b.address('SASL_SSL'),
          ...ssl,
          'sasl.mechanisms': 'PLAIN',
          'sasl.username': 'bob',
          'sasl.password': PLAIN_USERS.bob,
        },
      ],
      [
        'rd-scram',
        {
          'bootstrap.servers': b.address('SASL_PLAINTEXT'),
          'security.protocol': 'sasl_plaintext',
          'sasl.mechanisms': 'SCRAM-SHA-512',
          'sasl.username': 'carol',
          'sasl.password': CAROL,
        },
      ],
      [
        'rd-oauth',
        {
          'bootstrap.servers': b.address('SASL_PLAINTEXT'),
          'security.protocol': 'sasl_plaintext',
          'sasl.mechanisms': 'OAUTHBEARER',
          'enable.sasl.oauthbearer.unsecure.jwt': true,
          'sasl.oauthbearer.config': 'principal=dave scope=kafka lifeSeconds=600',
        },
      ],
    ];
    for (const [topic, props] of runs) {
      const got = await rdkafkaRoundTrip({ ...props, log_level: 0 }, topic, 30);
      expect(got, topic).to.deep.equal(Array.from({ length: 30 }, (_, i) => `r${i}`));
    }
    expect(principals('SASL_SSL')).to.include('User:bob');
    expect(principals('SASL_PLAINTEXT')).to.include.members(['User:carol', 'User:dave']);
  });

  it('kcat: PLAIN over SASL_SSL and SCRAM-SHA-256 over SASL_PLAINTEXT (-X), produce then consume', async () => {
    const cases: [string, string, Record<string, string>][] = [
      [
        'kcat-plain',
        b.address('SASL_SSL'),
        {
          'security.protocol': 'sasl_ssl',
          'ssl.ca.location': certs.caCert,
          'sasl.mechanisms': 'PLAIN',
          'sasl.username': 'alice',
          'sasl.password': PLAIN_USERS.alice,
        },
      ],
      [
        'kcat-scram',
        b.address('SASL_PLAINTEXT'),
        { 'security.protocol': 'sasl_plaintext', 'sasl.mechanisms': 'SCRAM-SHA-256', 'sasl.username': 'carol', 'sasl.password': CAROL },
      ],
    ];
    for (const [topic, addr, props] of cases) {
      const x = kcatProps(props);
      const p = await runKcat(['-b', addr, ...x, '-P', '-t', topic], 'a\nb\nc\n');
      expect(p.code, p.stderr).to.equal(0);
      const c = await runKcat(['-b', addr, ...x, '-C', '-t', topic, '-o', 'beginning', '-e', '-f', '%s\\n']);
      expect(c.code, c.stderr).to.equal(0);
      expect(c.stdout.toString()).to.equal('a\nb\nc\n');
    }
  });

  it('kafka-python (SaslHandshake v0, raw tokens): PLAIN over SASL_PLAINTEXT and SCRAM-SHA-512 over SASL_SSL', async () => {
    const records = Array.from({ length: 40 }, (_, i) => ({ p: 0, k: hex(`k${i}`), v: hex(`v${i}`), ts: 1_700_000_000_000 + i }));
    const cases: [string, string, Record<string, string>][] = [
      [
        'py-plain',
        b.address('SASL_PLAINTEXT'),
        { security_protocol: 'SASL_PLAINTEXT', sasl_mechanism: 'PLAIN', sasl_plain_username: 'bob', sasl_plain_password: PLAIN_USERS.bob },
      ],
      [
        'py-scram',
        b.address('SASL_SSL'),
        {
          security_protocol: 'SASL_SSL',
          ssl_cafile: certs.caCert,
          sasl_mechanism: 'SCRAM-SHA-512',
          sasl_plain_username: 'carol',
          sasl_plain_password: CAROL,
        },
      ],
    ];
    for (const [topic, bootstrap, client] of cases) {
      const res = await runKafkaPython({ bootstrap, api_version: null, acks: 1, client, runs: [{ topic, codec: 'none', records }] });
      const r = res.get(topic);
      expect(
        r?.sent.map((m) => m[1]),
        topic,
      ).to.deep.equal(records.map((_, i) => i));
      expect(
        r?.read.map((m) => m[5]),
        topic,
      ).to.deep.equal(records.map((x) => x.v));
    }
    expect(principals('SASL_PLAINTEXT')).to.include('User:bob');
  });
});
