/**
 * Refusals as kafka-python and librdkafka (kcat) see them (issue 18; kafkajs's are in sasl-auth and
 * tls-auth): a wrong PLAIN password, an unknown SCRAM user, a wrong SCRAM password and a client
 * certificate from another CA each fail with the error the client raises for it, the broker logs one
 * line per refusal and serves no request; the right credentials are then served.
 */
import { expect } from 'chai';
import { Cleanup } from '../helpers/cleanup.js';
import { PYTHON } from '../helpers/kafka-python.js';
import { runKcat } from '../helpers/kcat.js';
import { runProcess } from '../helpers/process.js';
import { addScramUser, PLAIN_USERS, saslConfig } from '../helpers/sasl.js';
import {
  devCerts,
  kcatProps,
  pemSslConfig,
  rdkafkaSsl,
  removeCerts,
  startLoggedBroker,
  type DevCertFiles,
  type LoggedBroker,
} from '../helpers/tls.js';

/** kafka-python: connects an admin client with `props`, lists topics; prints OK or the error's class and text. */
const PY = `
import json, logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
from kafka import KafkaAdminClient
props = json.loads(sys.argv[1])
try:
    a = KafkaAdminClient(bootstrap_servers=sys.argv[2], request_timeout_ms=8000, api_version_auto_timeout_ms=8000, **props)
    a.list_topics()
    print('OK')
    a.close()
except Exception as e:
    print('ERR %s %s' % (type(e).__name__, e))
`;

describe('refusals seen by kafka-python and kcat: wrong passwords, unknown users, another CA', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let certs: DevCertFiles;
  let other: DevCertFiles;
  let b: LoggedBroker;

  before(async () => {
    certs = cleanup.add(devCerts(['app']), removeCerts);
    other = cleanup.add(devCerts(['app']), removeCerts);
    b = cleanup.add(
      await startLoggedBroker(['PLAINTEXT', 'SASL_PLAINTEXT', 'SSL'], {
        ...pemSslConfig(certs),
        ...saslConfig(['SASL_PLAINTEXT'], ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']),
        'listener.name.ssl.ssl.client.auth': 'required',
        'connection.failed.authentication.delay.ms': 0,
      }),
      (x) => x.stop(),
    );
    await addScramUser(b.address('PLAINTEXT'), 'carol', 'carol-secret', ['SCRAM-SHA-256', 'SCRAM-SHA-512']);
  });
  after(() => cleanup.run());

  async function python(listener: string, props: Record<string, unknown>): Promise<string> {
    const r = await runProcess(PYTHON, ['-c', PY, JSON.stringify(props), b.address(listener)], '', 60_000);
    const out = r.stdout.toString().trim().split('\n').pop() ?? '';
    // kafka-python's connection logs why it gave up (its admin client then reports NoBrokersAvailable):
    // after SaslHandshake v0 the raw-token exchange has no error answer, the broker closes (as Kafka does)
    const closedAuthenticating = /<authenticating>[^\n]*Closing connection/.test(r.stderr);
    return closedAuthenticating ? `${out} (closed while authenticating)` : out;
  }

  /** Requests served on `listener` to `clientId` other than the SASL exchange and ApiVersions. */
  function served(listener: string): number[] {
    return b.broker.metrics.requestLog
      .query({})
      .filter((e) => e.listener === listener && ![17, 18, 36].includes(e.apiKey) && e.outcome === 'response')
      .map((e) => e.apiKey);
  }

  /** Runs `fn`; the broker must log a warning matching `pattern` meanwhile (or within 5 s after). */
  async function oneLineDuring(fn: () => Promise<void>, pattern: RegExp): Promise<void> {
    const before = b.warnings().length;
    await fn();
    const found = () =>
      b
        .warnings()
        .slice(before)
        .some((l) => pattern.test(l.msg));
    for (let i = 0; i < 50 && !found(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(found(), `${pattern} in: ${JSON.stringify(b.warnings().slice(-3))}`).to.equal(true);
  }

  it('kafka-python: wrong PLAIN password, unknown SCRAM user, wrong SCRAM password over SASL_PLAINTEXT are closed while authenticating (SaslHandshake v0: no error answer, as Kafka)', async () => {
    const sasl = (mechanism: string, user: string, password: string) => ({
      security_protocol: 'SASL_PLAINTEXT',
      sasl_mechanism: mechanism,
      sasl_plain_username: user,
      sasl_plain_password: password,
    });
    for (const [props, brokerSays] of [
      [sasl('PLAIN', 'bob', 'nope'), /wrong password for bob/],
      [sasl('SCRAM-SHA-256', 'mallory', 'x'), /unknown user mallory/],
      [sasl('SCRAM-SHA-512', 'carol', 'wrong'), /wrong password for carol/],
    ] as const) {
      await oneLineDuring(async () => {
        const out = await python('SASL_PLAINTEXT', props);
        console.log(`      ${props.sasl_mechanism} ${props.sasl_plain_username}: ${out}`);
        expect(out).to.match(/^ERR NoBrokersAvailable .*\(closed while authenticating\)$/);
      }, brokerSays);
    }
    expect(served('SASL_PLAINTEXT')).to.deep.equal([]);
    expect(await python('SASL_PLAINTEXT', sasl('SCRAM-SHA-512', 'carol', 'carol-secret'))).to.equal('OK');
    expect(await python('SASL_PLAINTEXT', sasl('PLAIN', 'bob', PLAIN_USERS.bob))).to.equal('OK');
  });

  it('kcat: an unknown SCRAM user and a wrong SCRAM password fail with the broker’s message', async () => {
    for (const [user, password, brokerSays] of [
      ['mallory', 'x', /unknown user mallory/],
      ['carol', 'wrong', /wrong password for carol/],
    ] as const) {
      const props = {
        'security.protocol': 'sasl_plaintext',
        'sasl.mechanisms': 'SCRAM-SHA-512',
        'sasl.username': user,
        'sasl.password': password,
      };
      await oneLineDuring(async () => {
        const r = await runKcat(['-b', b.address('SASL_PLAINTEXT'), ...kcatProps(props), '-L', '-m', '3'], '', 20_000);
        expect(r.code).to.not.equal(0);
        expect(r.stderr).to.match(
          /Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512/,
        );
      }, brokerSays);
    }
  });

  it('a client certificate from another CA: kafka-python and kcat are refused, the right one served', async () => {
    const before = served('SSL').length;
    const bad = other.clients['app']!;
    await oneLineDuring(async () => {
      const out = await python('SSL', { security_protocol: 'SSL', ssl_cafile: certs.caCert, ssl_certfile: bad.cert, ssl_keyfile: bad.key });
      console.log(`      kafka-python, another CA: ${out}`);
      expect(out).to.match(/^ERR /);
    }, /client certificate refused/);
    // (the broker's line for this class is rate-limited to one per 10 s: kcat's refusal is counted, not logged)
    const props = { ...rdkafkaSsl(certs), 'ssl.certificate.location': bad.cert, 'ssl.key.location': bad.key };
    const r = await runKcat(['-b', b.address('SSL'), ...kcatProps(props), '-L', '-m', '3'], '', 20_000);
    expect(r.code).to.not.equal(0);
    expect(served('SSL').length).to.equal(before);
    const good = certs.clients['app']!;
    expect(
      await python('SSL', { security_protocol: 'SSL', ssl_cafile: certs.caCert, ssl_certfile: good.cert, ssl_keyfile: good.key }),
    ).to.equal('OK');
  });
});
