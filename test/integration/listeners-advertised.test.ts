/**
 * advertised.listeners per listener (issue 18): each listener's clients are told that listener's
 * advertised address, so a client that bootstraps over SSL or SASL_SSL goes on over the same kind of
 * listener. PLAINTEXT advertises an address no client can reach (plaintext.invalid:9092): a client on
 * another listener that were handed it would fail; kafkajs over SSL and SASL_SSL and librdkafka over
 * SASL_SSL produce and consume, and each sees its own listener's address in the cluster description.
 */
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { Cleanup } from '../helpers/cleanup.js';
import { freePort } from '../helpers/free-port.js';
import { RawClient } from '../helpers/raw-client.js';
import { kafkajsRoundTrip, rdkafkaRoundTrip } from '../helpers/roundtrip.js';
import { PLAIN_USERS, saslConfig } from '../helpers/sasl.js';
import {
  devCerts,
  kafkajsSsl,
  pemSslConfig,
  removeCerts,
  startLoggedBroker,
  type DevCertFiles,
  type LoggedBroker,
} from '../helpers/tls.js';

describe('advertised.listeners per listener: PLAINTEXT, SSL and SASL_SSL each advertise their own address', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let certs: DevCertFiles;
  let b: LoggedBroker;
  const port = { PLAINTEXT: 0, SSL: 0, SASL_SSL: 0 };

  before(async () => {
    certs = cleanup.add(devCerts(['app']), removeCerts);
    for (const l of ['PLAINTEXT', 'SSL', 'SASL_SSL'] as const) port[l] = await freePort();
    b = cleanup.add(
      await startLoggedBroker(['PLAINTEXT', 'SSL', 'SASL_SSL'], {
        ...pemSslConfig(certs),
        ...saslConfig(['SASL_SSL'], ['PLAIN']),
        listeners: `PLAINTEXT://127.0.0.1:${port.PLAINTEXT},SSL://127.0.0.1:${port.SSL},SASL_SSL://127.0.0.1:${port.SASL_SSL}`,
        'advertised.listeners': `PLAINTEXT://plaintext.invalid:9092,SSL://127.0.0.1:${port.SSL},SASL_SSL://127.0.0.1:${port.SASL_SSL}`,
        'num.partitions': 1,
      }),
      (x) => x.stop(),
    );
  });
  after(() => cleanup.run());

  it('Metadata over PLAINTEXT names the PLAINTEXT advertised address (the embedded API too)', async () => {
    expect(['PLAINTEXT', 'SSL', 'SASL_SSL'].map((l) => b.address(l))).to.deep.equal([
      'plaintext.invalid:9092',
      `127.0.0.1:${port.SSL}`,
      `127.0.0.1:${port.SASL_SSL}`,
    ]);
    const c = await RawClient.connect(`127.0.0.1:${port.PLAINTEXT}`);
    try {
      const md = await c.request<{ brokers: { host: string; port: number }[] }>(ApiKey.Metadata, 12, {
        topics: [],
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false,
      });
      expect(md.brokers.map((x) => `${x.host}:${x.port}`)).to.deep.equal(['plaintext.invalid:9092']);
    } finally {
      c.destroy();
    }
  });

  it('kafkajs over SSL and SASL_SSL: the cluster description names that listener, and a consumer group works through it', async () => {
    const cases = [
      ['SSL', {}],
      ['SASL_SSL', { sasl: { mechanism: 'plain' as const, username: 'alice', password: PLAIN_USERS.alice } }],
    ] as const;
    for (const [listener, extra] of cases) {
      const kafka = new Kafka({
        brokers: [`127.0.0.1:${port[listener]}`],
        clientId: `adv-${listener}`,
        ssl: kafkajsSsl(certs),
        logLevel: logLevel.NOTHING,
        ...extra,
      });
      const admin = kafka.admin();
      await admin.connect();
      const cluster = await admin.describeCluster().finally(() => admin.disconnect());
      expect(
        cluster.brokers.map((x) => `${x.host}:${x.port}`),
        listener,
      ).to.deep.equal([`127.0.0.1:${port[listener]}`]);
      const values = ['a', 'b', 'c'];
      expect(await kafkajsRoundTrip(kafka, `adv-${listener.toLowerCase()}`, values), listener).to.deep.equal(values);
    }
  });

  it('librdkafka over SASL_SSL follows the SASL_SSL advertised address', async () => {
    const got = await rdkafkaRoundTrip(
      {
        'bootstrap.servers': `127.0.0.1:${port.SASL_SSL}`,
        'security.protocol': 'sasl_ssl',
        'ssl.ca.location': certs.caCert,
        'sasl.mechanisms': 'PLAIN',
        'sasl.username': 'bob',
        'sasl.password': PLAIN_USERS.bob,
        log_level: 0,
      },
      'adv-rd',
      10,
    );
    expect(got).to.deep.equal(Array.from({ length: 10 }, (_, i) => `r${i}`));
  });
});
