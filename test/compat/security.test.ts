/**
 * The compat matrix's security section inside `npm test` (compat/security/matrix.ts): kafkajs,
 * librdkafka, kcat and kafka-python each produce and read back in a consumer group over SSL, SSL with a
 * client certificate, SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER) and SASL_SSL;
 * every cell must pass, and the report section lists each.
 */
import { expect } from 'chai';
import {
  runSecurityMatrix,
  SECURITY_CLIENTS,
  SECURITY_LISTENERS,
  securityReport,
  startSecurityBroker,
  type SecurityBroker,
} from '../../compat/security/matrix.js';
import { Cleanup } from '../helpers/cleanup.js';

describe('compat security section: every client × every listener kind produces and joins a group', function () {
  this.timeout(240_000);
  const cleanup = new Cleanup();
  let b: SecurityBroker;
  before(async () => {
    b = cleanup.add(await startSecurityBroker(), (x) => x.stop());
  });
  after(() => cleanup.run());

  it('28 cells pass; the report has a row per listener', async () => {
    const results = await runSecurityMatrix(b);
    expect(results).to.have.length(SECURITY_LISTENERS.length * SECURITY_CLIENTS.length);
    expect(results.filter((r) => r.outcome !== 'pass').map((r) => `${r.scenario} × ${r.client}: ${r.reason ?? r.outcome}`)).to.deep.equal(
      [],
    );
    const report = securityReport(results);
    for (const l of SECURITY_LISTENERS) expect(report).to.include(`| ${l.title} |`);
    // the SASL cells authenticated as their users (the request log keeps each request's principal)
    const principals = new Set(b.broker.broker.metrics.requestLog.query({}).map((e) => e.principal));
    expect([...principals]).to.include.members(['User:alice', 'User:carol', 'User:dave']);
  });
});
