/**
 * PLAIN users from a static JAAS file, as a Kafka broker started with
 * KAFKA_OPTS=-Djava.security.auth.login.config=<file> reads them: a listener without
 * listener.name.<l>.plain.sasl.jaas.config takes the `<listener>.KafkaServer` section, else `KafkaServer`.
 * Two SASL_PLAINTEXT listeners (SASL_PLAINTEXT and INTERNAL) with different users; kafkajs, librdkafka and
 * kafka-python log in with the file's users, and a user of the other listener's section is refused.
 */
import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { Cleanup } from '../helpers/cleanup.js';
import { hex, runKafkaPython } from '../helpers/kafka-python.js';
import { kafkajsListTopics, kafkajsRoundTrip, rdkafkaRoundTrip, refused } from '../helpers/roundtrip.js';
import { makeTempDir } from '../helpers/temp-dirs.js';
import { startLoggedBroker, type LoggedBroker } from '../helpers/tls.js';

const PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule';
const JAAS = `
/* users of every SASL listener without a section of its own */
KafkaServer {
  ${PLAIN} required
    username="admin" password="admin-secret"
    user_admin="admin-secret"
    user_erin="erin-secret";
  org.apache.kafka.common.security.scram.ScramLoginModule required;
};
// the INTERNAL listener's users
internal.KafkaServer {
  ${PLAIN} required user_frank="frank-secret";
};
`;

describe('SASL PLAIN users from a JAAS file (KAFKA_OPTS=-Djava.security.auth.login.config)', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let b: LoggedBroker;

  before(async () => {
    const dir = cleanup.add(makeTempDir('gregor-jaas-'), (d) => rmSync(d, { recursive: true, force: true }));
    const file = join(dir, 'kafka_server_jaas.conf');
    writeFileSync(file, JAAS);
    b = cleanup.add(
      await startLoggedBroker(
        ['PLAINTEXT', 'SASL_PLAINTEXT', 'INTERNAL'],
        {
          'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT',
          'sasl.enabled.mechanisms': 'PLAIN',
          'num.partitions': 1,
        },
        { KAFKA_OPTS: `-Xmx1g -Djava.security.auth.login.config=${file}` },
      ),
      (x) => x.stop(),
    );
  });
  after(() => cleanup.run());

  const plain = (username: string, password: string) => ({ sasl: { mechanism: 'plain' as const, username, password } });

  it('kafkajs: the KafkaServer section’s users on SASL_PLAINTEXT, internal.KafkaServer’s on INTERNAL; each refused on the other', async () => {
    const values = ['a', 'b', 'c'];
    const erin = new Kafka({
      brokers: [b.address('SASL_PLAINTEXT')],
      clientId: 'jaas-erin',
      logLevel: logLevel.NOTHING,
      ...plain('erin', 'erin-secret'),
    });
    expect(await kafkajsRoundTrip(erin, 'jaas-erin', values)).to.deep.equal(values);
    const frank = new Kafka({
      brokers: [b.address('INTERNAL')],
      clientId: 'jaas-frank',
      logLevel: logLevel.NOTHING,
      ...plain('frank', 'frank-secret'),
    });
    expect(await kafkajsRoundTrip(frank, 'jaas-frank', values)).to.deep.equal(values);

    for (const [listener, user, password] of [
      ['SASL_PLAINTEXT', 'frank', 'frank-secret'],
      ['INTERNAL', 'erin', 'erin-secret'],
      ['SASL_PLAINTEXT', 'erin', 'wrong'],
    ] as const) {
      const e = await refused(kafkajsListTopics(b.address(listener), { clientId: `jaas-bad-${user}`, ...plain(user, password) }));
      expect(e.message, `${user} on ${listener}`).to.match(/Invalid username or password/);
    }
    const refusals = b.warnings().filter((l) => /SASL authentication failed/.test(l.msg));
    expect(refusals.map((l) => l.msg)).to.include.members([
      'closing connection: SASL authentication failed: unknown user frank',
      'closing connection: SASL authentication failed: unknown user erin',
      'closing connection: SASL authentication failed: wrong password for erin',
    ]);
  });

  it('librdkafka and kafka-python log in with the file’s users', async () => {
    const rd = await rdkafkaRoundTrip(
      {
        'bootstrap.servers': b.address('INTERNAL'),
        'security.protocol': 'sasl_plaintext',
        'sasl.mechanisms': 'PLAIN',
        'sasl.username': 'frank',
        'sasl.password': 'frank-secret',
        log_level: 0,
      },
      'jaas-rd',
      10,
    );
    expect(rd).to.deep.equal(Array.from({ length: 10 }, (_, i) => `r${i}`));

    const records = Array.from({ length: 10 }, (_, i) => ({ p: 0, k: hex(`k${i}`), v: hex(`v${i}`), ts: 1_700_000_000_000 + i }));
    const res = await runKafkaPython({
      bootstrap: b.address('SASL_PLAINTEXT'),
      api_version: null,
      acks: 1,
      client: {
        security_protocol: 'SASL_PLAINTEXT',
        sasl_mechanism: 'PLAIN',
        sasl_plain_username: 'admin',
        sasl_plain_password: 'admin-secret',
      },
      runs: [{ topic: 'jaas-py', codec: 'none', records }],
    });
    expect(res.get('jaas-py')?.read.map((m) => m[5])).to.deep.equal(records.map((x) => x.v));
    const principals = new Set(b.broker.metrics.requestLog.query({}).map((e) => `${e.listener} ${e.principal}`));
    expect([...principals]).to.include.members(['INTERNAL User:frank', 'SASL_PLAINTEXT User:admin', 'SASL_PLAINTEXT User:erin']);
  });
});
