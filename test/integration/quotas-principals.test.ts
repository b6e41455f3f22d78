/**
 * Client quotas by SASL principal and by handler time, seen by librdkafka (its statistics report the
 * throttle_time_ms it was given): a `user` entity's producer_byte_rate holds the authenticated user
 * (User:alice over SASL_PLAINTEXT) and not another user; request_percentage (handler time as a % of
 * one thread) throttles a busy client id and not another. Indicative rates only (a shared machine).
 */
import { expect } from 'chai';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { Cleanup } from '../helpers/cleanup.js';
import { alterQuotas, produceFor } from '../helpers/quotas.js';
import { PLAIN_USERS, saslConfig } from '../helpers/sasl.js';
import { startLoggedBroker, type LoggedBroker } from '../helpers/tls.js';

const KB = 1024;

describe('client quotas by SASL user and by request_percentage, with librdkafka', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let b: LoggedBroker;

  before(async () => {
    b = cleanup.add(
      await startLoggedBroker(['PLAINTEXT', 'SASL_PLAINTEXT'], {
        ...saslConfig(['SASL_PLAINTEXT'], ['PLAIN']),
        'quota.window.num': 5,
        'admin.listener': '127.0.0.1:0',
        'num.partitions': 1,
      }),
      (x) => x.stop(),
    );
  });
  after(() => cleanup.run());

  const metricsText = async (): Promise<string> => (await fetch(`http://${b.broker.adminAddress ?? ''}/metrics`)).text();

  const sasl = (user: keyof typeof PLAIN_USERS) => ({
    'security.protocol': 'sasl_plaintext',
    'sasl.mechanisms': 'PLAIN',
    'sasl.username': user,
    'sasl.password': PLAIN_USERS[user],
  });

  it('producer_byte_rate on user alice holds User:alice (same client id as bob), not bob', async () => {
    await alterQuotas(b.address('PLAINTEXT'), [{ entity: { user: 'alice' }, ops: { producer_byte_rate: 256 * KB } }]);
    const ck = loadConfluent();
    const alice = await produceFor(ck, b.address('SASL_PLAINTEXT'), 'q-users', 'app', 6, sasl('alice'));
    const bob = await produceFor(ck, b.address('SASL_PLAINTEXT'), 'q-users', 'app', 6, sasl('bob'));
    const rate = (t: { bytes: number; seconds: number }) => t.bytes / t.seconds / KB;
    console.log(
      `      alice ${rate(alice).toFixed(0)} KB/s (throttle max ${alice.maxThrottleMs} ms), bob ${rate(bob).toFixed(0)} KB/s (${bob.maxThrottleMs} ms)`,
    );
    expect(alice.maxThrottleMs, 'alice throttled').to.be.greaterThan(0);
    expect(bob.maxThrottleMs, 'bob not throttled').to.equal(0);
    // alice: about a quota window's burst plus the rate (5 windows of 1 s: at most ~2x over 6 s); bob past it
    expect(rate(alice)).to.be.below(2 * 256);
    expect(rate(bob)).to.be.greaterThan(rate(alice));
    // the throttle went to alice by name
    const text = await metricsText();
    expect(text).to.match(/gregor_client_quota_throttle_time_ms_total\{[^}]*user="alice"[^}]*\} [1-9]/);
    expect(text).to.not.match(/gregor_client_quota_throttle_time_ms_total\{[^}]*user="bob"[^}]*\} [1-9]/);
  });

  it('request_percentage throttles a client id whose requests take more handler time than its share; another is not', async () => {
    await alterQuotas(b.address('PLAINTEXT'), [{ entity: { 'client-id': 'busy' }, ops: { request_percentage: 0.05 } }]);
    const ck = loadConfluent();
    const busy = await produceFor(ck, b.address('PLAINTEXT'), 'q-requests', 'busy', 5, { 'linger.ms': 0, 'batch.size': 4096 });
    const idle = await produceFor(ck, b.address('PLAINTEXT'), 'q-requests', 'calm', 5, { 'linger.ms': 0, 'batch.size': 4096 });
    console.log(`      busy throttle max ${busy.maxThrottleMs} ms, calm ${idle.maxThrottleMs} ms`);
    expect(busy.maxThrottleMs).to.be.greaterThan(0);
    // as Kafka's ClientRequestQuotaManager: at most one quota window (quota.window.size.seconds) at a time
    expect(busy.maxThrottleMs).to.be.at.most(1000);
    expect(idle.maxThrottleMs).to.equal(0);
    const text = await metricsText();
    expect(text).to.match(/gregor_client_quota_throttle_time_ms_total\{[^}]*quota="request_percentage"[^}]*client_id="busy"[^}]*\} [1-9]/);
  });
});
