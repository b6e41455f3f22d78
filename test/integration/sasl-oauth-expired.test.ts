/**
 * Issue 18: an expired OAUTHBEARER token fails with the error the client expects, the broker logs one
 * line, and no request is served, with real clients (sasl-auth.test.ts checks the wire exchange):
 * kafkajs (oauthBearerProvider) and librdkafka through @confluentinc/kafka-javascript (its
 * oauthBearerProvider feeds librdkafka's token refresh callback; the token's lifetime for the client is
 * in the future, the JWT's `exp` claim, which the broker validates, is past). A fresh token of the same
 * principal is served on the same broker. kafkajs takes the broker's RFC 7628 error challenge for success
 * and sends a request, which closes the connection (as against Kafka); librdkafka answers the challenge
 * and reports the broker's SASL_AUTHENTICATION_FAILED message in its error event.
 */
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { errorCollectingLogger, loadConfluent } from '../../compat/lib/confluent-module.js';
import { Cleanup } from '../helpers/cleanup.js';
import { startLoggedBroker, type LoggedBroker } from '../helpers/tls.js';

// the confluent package is untyped here
type Any = any;

/** An unsigned JWT (alg none) for `sub` whose `exp` is `expSeconds` from now (negative: expired). */
function jwt(sub: string, expSeconds: number): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none' })}.${part({ sub, iat: now - 120, exp: now + expSeconds })}.`;
}

describe('SASL OAUTHBEARER: an expired token with kafkajs and librdkafka', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let b: LoggedBroker;
  const address = () => b.address('SASL_PLAINTEXT');

  before(async () => {
    b = cleanup.add(
      await startLoggedBroker(['SASL_PLAINTEXT'], {
        'sasl.enabled.mechanisms': 'OAUTHBEARER',
        'listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config':
          'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;',
        'connection.failed.authentication.delay.ms': '10',
      }),
      (x) => x.stop(),
    );
  });
  after(() => cleanup.run());

  /** Requests other than ApiVersions, SaslHandshake and SaslAuthenticate served to `clientId`. */
  const served = (clientId: string) =>
    b.broker.metrics.requestLog
      .query({})
      .filter((e) => e.clientId === clientId && ![17, 18, 36].includes(e.apiKey) && e.outcome !== 'closed');
  /** The broker's warning lines that name a SASL authentication failure. */
  const authWarnings = () => b.warnings().filter((l) => /authentication/i.test(l.msg));

  const kafkajsList = async (clientId: string, token: string) => {
    const admin = new Kafka({
      brokers: [address()],
      clientId,
      sasl: { mechanism: 'oauthbearer', oauthBearerProvider: () => Promise.resolve({ value: token }) },
      retry: { retries: 0 },
      logLevel: logLevel.NOTHING,
    }).admin();
    try {
      await admin.connect();
      return await admin.listTopics();
    } finally {
      await admin.disconnect();
    }
  };

  it('kafkajs: the connection is closed mid-authentication, one broker line, nothing served; a fresh token is served', async () => {
    const before = authWarnings().length;
    const err = await kafkajsList('kjs-expired', jwt('dave', -60)).then(
      () => null,
      (e: unknown) => e as Error,
    );
    // kafkajs takes the broker's RFC 7628 challenge for success and sends Metadata, which closes the
    // connection mid-authentication (Kafka's broker does the same: IllegalSaslStateException)
    expect(err?.name).to.equal('KafkaJSConnectionClosedError');
    expect(authWarnings().length - before).to.equal(1);
    expect(served('kjs-expired')).to.deep.equal([]);
    expect(await kafkajsList('kjs-fresh', jwt('dave', 600))).to.be.an('array');
    expect(served('kjs-fresh').length).to.be.above(0);
  });

  it('librdkafka: the admin call fails, its error event names invalid_token, a broker line per attempt, nothing served; a fresh token is served', async () => {
    const ck = loadConfluent();
    // librdkafka's error events (the SASL failure among them), as the binding logs them
    const { errors, logger } = errorCollectingLogger();
    const list = async (clientId: string, token: string): Promise<string> => {
      const admin: Any = new ck.KafkaJS.Kafka({
        kafkaJS: {
          brokers: [address()],
          clientId,
          logger,
          logLevel: ck.KafkaJS.logLevel.ERROR,
          sasl: {
            mechanism: 'oauthbearer',
            oauthBearerProvider: () => Promise.resolve({ value: token, principal: 'dave', lifetime: Date.now() + 600_000 }),
          },
        },
        'security.protocol': 'sasl_plaintext',
      }).admin();
      try {
        await admin.connect();
        const topics: string[] = await admin.listTopics({ timeout: 5000 });
        return `OK ${topics.length}`;
      } catch (e) {
        return `${(e as Error).name}: ${(e as Error).message}`;
      } finally {
        await admin.disconnect();
      }
    };
    const before = authWarnings().length;
    const failed = await list('rdk-expired', jwt('dave', -60));
    // the admin call reports the transport; the error event names the broker's answer
    expect(failed).to.equal('KafkaJSConnectionError: Local: Broker transport failure');
    expect(errors.join('\n')).to.match(/SASL authentication error.*invalid_token/);
    expect(served('rdk-expired')).to.deep.equal([]);
    expect(authWarnings().length - before).to.be.at.least(1); // librdkafka retries the broker meanwhile: one line per attempt
    expect(await list('rdk-fresh', jwt('dave', 600))).to.match(/^OK /);
    expect(served('rdk-fresh').length).to.be.above(0);
  });
});
