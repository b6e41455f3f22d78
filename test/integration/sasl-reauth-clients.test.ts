/**
 * KIP-368 re-authentication with a real client: librdkafka (2.2+) re-authenticates a SASL connection
 * before the session lifetime the broker reported (connections.max.reauth.ms) runs out, on the same
 * connection. A producer that sends through several lifetimes is never disconnected, and the request log
 * shows each of its connections authenticating again and again. kafkajs and kafka-python do not
 * re-authenticate (they are disconnected at the end of a session and reconnect), so librdkafka is the
 * client that proves it.
 */
import { expect } from 'chai';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { asError } from '../../lib/as-error.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { Cleanup } from '../helpers/cleanup.js';
import { addScramUser, PLAIN_USERS, saslConfig } from '../helpers/sasl.js';
import { startLoggedBroker, type LoggedBroker } from '../helpers/tls.js';

type Any = any;

const REAUTH_MS = 2500;
const RUN_MS = 9000;

describe('SASL re-authentication (KIP-368) with librdkafka', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let b: LoggedBroker;

  before(async () => {
    b = cleanup.add(
      await startLoggedBroker(['PLAINTEXT', 'SASL_PLAINTEXT'], {
        ...saslConfig(['SASL_PLAINTEXT'], ['PLAIN', 'SCRAM-SHA-512']),
        'connections.max.reauth.ms': REAUTH_MS,
        'num.partitions': 1,
      }),
      (x) => x.stop(),
    );
    await addScramUser(b.address('PLAINTEXT'), 'carol', 'carol-secret', ['SCRAM-SHA-512']);
  });
  after(() => cleanup.run());

  /** Produces one record every 100 ms for RUN_MS as client `clientId`; every delivery must succeed. */
  async function produceThroughLifetimes(clientId: string, sasl: Record<string, string>): Promise<number> {
    const ck: Any = loadConfluent();
    const producer = new ck.Producer({
      'bootstrap.servers': b.address('SASL_PLAINTEXT'),
      'security.protocol': 'sasl_plaintext',
      'client.id': clientId,
      'linger.ms': 0,
      dr_cb: true,
      log_level: 0,
      ...sasl,
    });
    const errors: string[] = [];
    producer.on('event.error', (e: Any) => errors.push(String(e?.message ?? e)));
    await new Promise<void>((resolve, reject) => producer.connect({}, (e: Any) => (e ? reject(asError(e)) : resolve())));
    let delivered = 0;
    producer.on('delivery-report', (err: Any) => (err ? errors.push(String(err.message ?? err)) : delivered++));
    producer.setPollInterval(10);
    let sent = 0;
    const end = Date.now() + RUN_MS;
    while (Date.now() < end) {
      producer.produce(`reauth-${clientId}`, 0, Buffer.from(`r${sent++}`), null);
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise<void>((resolve, reject) => producer.flush(20_000, (e: Any) => (e ? reject(asError(e)) : resolve())));
    await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
    expect(errors, clientId).to.deep.equal([]);
    expect(delivered, clientId).to.equal(sent);
    return sent;
  }

  for (const [mechanism, sasl] of [
    ['PLAIN', { 'sasl.mechanisms': 'PLAIN', 'sasl.username': 'alice', 'sasl.password': PLAIN_USERS.alice }],
    ['SCRAM-SHA-512', { 'sasl.mechanisms': 'SCRAM-SHA-512', 'sasl.username': 'carol', 'sasl.password': 'carol-secret' }],
  ] as const) {
    it(`${mechanism}: a producer sending for ${RUN_MS / 1000} s under connections.max.reauth.ms=${REAUTH_MS} re-authenticates on its connections, never cut off`, async () => {
      const clientId = `rd-reauth-${mechanism.toLowerCase()}`;
      const sent = await produceThroughLifetimes(clientId, sasl);
      expect(sent).to.be.greaterThan(40);
      const mine = b.broker.metrics.requestLog.query({}).filter((e) => e.clientId === clientId);
      // the connection that carried the records: SaslAuthenticate again and again, each answered without error
      const produceConn = mine.find((e) => e.apiKey === ApiKey.Produce)?.connection;
      expect(produceConn, 'a Produce in the request log').to.be.a('string');
      const auths = mine.filter((e) => e.connection === produceConn && e.apiKey === ApiKey.SaslAuthenticate);
      // first authentication, then one per lifetime at most REAUTH_MS apart (librdkafka re-authenticates at 85-95% of it)
      expect(auths.length, 'SaslAuthenticate on the producing connection').to.be.at.least(1 + Math.floor(RUN_MS / REAUTH_MS) - 1);
      expect(auths.every((e) => e.errorCode === 0 && e.outcome === 'response')).to.equal(true);
      expect(
        auths.some((e) => e.version >= 1),
        'SaslAuthenticate v1+ (session lifetimes)',
      ).to.equal(true);
      // nothing was closed for an expired session, and the broker said nothing about this client
      expect(mine.filter((e) => e.outcome === 'closed').map((e) => e.closeReason)).to.deep.equal([]);
      expect(b.warnings().filter((l) => JSON.stringify(l).includes(clientId) || /expired/.test(l.msg))).to.deep.equal([]);
    });
  }
});
