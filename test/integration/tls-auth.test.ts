/**
 * SSL listener security (issue 18): ssl.client.auth=required refuses a client without a certificate
 * and one whose certificate another CA signed, and serves one with a good certificate under its
 * principal (User:CN=...,OU=...,O=..., or as ssl.principal.mapping.rules rewrites it); TLS version
 * bounds (ssl.enabled.protocols); plaintext on the SSL port and TLS on the PLAINTEXT port fail with one
 * log line each and no request served; PKCS12 key and trust stores with listener.name.ssl.* keys;
 * start-up refusals (SASL listeners with GSSAPI, JKS, no key store); `gregor dev certs` from the command line.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { KafkaConfig } from 'kafkajs';
import { startBroker } from '../../lib/broker.js';
import { silentLogger } from '../../lib/observability/logger.js';
import { tempDir } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { runKcat } from '../helpers/kcat.js';
import { kafkajsListTopics, refused } from '../helpers/roundtrip.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import {
  devCerts,
  kafkajsSsl,
  kcatProps,
  pemSslConfig,
  rdkafkaSsl,
  removeCerts,
  startTlsBroker,
  type DevCertFiles,
  type TlsBroker,
} from '../helpers/tls.js';

/** Lists topics with kafkajs (no retries): resolves with the names, or rejects with the client's error. */
const listTopics = (brokers: string, ssl: KafkaConfig['ssl'] | undefined): Promise<string[]> =>
  kafkajsListTopics(brokers, ssl === undefined ? {} : { ssl });

/** Requests the broker answered on the SSL listener, by principal. */
function sslPrincipals(b: TlsBroker): string[] {
  return [
    ...new Set(
      b.broker.metrics.requestLog
        .query({})
        .filter((e) => e.listener === 'SSL')
        .map((e) => e.principal),
    ),
  ];
}

describe('SSL listener: client certificates, TLS versions, wrong protocols', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let certs: DevCertFiles;
  let other: DevCertFiles;

  before(() => {
    certs = cleanup.add(devCerts(['app']), removeCerts);
    other = cleanup.add(devCerts(['app']), removeCerts); // the same names, signed by another CA
  });
  after(() => cleanup.run());

  it('ssl.client.auth=required: no certificate and another CA refused (one line each, no request served); a good certificate is served as its principal', async () => {
    const b = cleanup.add(await startTlsBroker({ ...pemSslConfig(certs), 'ssl.client.auth': 'required' }), (x) => x.stop());
    const noCert = await refused(listTopics(b.ssl, kafkajsSsl(certs)));
    expect(noCert.message).to.match(/certificate required|socket hang up|Connection error|closed/i);
    const otherCa = { ...kafkajsSsl(other, 'app'), ca: kafkajsSsl(certs).ca };
    await refused(listTopics(b.ssl, otherCa));
    // librdkafka sees the handshake alert
    const k = await runKcat(['-b', b.ssl, ...kcatProps(rdkafkaSsl(certs)), '-L', '-m', '3'], '', 20_000);
    expect(k.code).to.not.equal(0);
    expect(k.stderr).to.match(/certificate required/);
    expect(b.broker.metrics.requestLog.query({}).filter((e) => e.listener === 'SSL')).to.deep.equal([]);
    const classes = b.warnings().map((l) => l.msg);
    expect(classes.filter((m) => m.startsWith('client certificate missing'))).to.have.length(1);
    expect(classes.filter((m) => m.startsWith('client certificate refused'))).to.have.length(1);
    expect(b.warnings().find((l) => l.msg.startsWith('client certificate refused'))?.['reason']).to.equal(
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    );

    expect(await listTopics(b.ssl, kafkajsSsl(certs, 'app'))).to.be.an('array');
    expect(sslPrincipals(b)).to.deep.equal(['User:CN=app,OU=gregor-dev,O=gregor']);
    expect(await listTopics(b.plain, undefined)).to.be.an('array'); // PLAINTEXT still serves
  });

  it('ssl.client.auth=requested: a client without a certificate is User:ANONYMOUS; one from another CA is refused', async () => {
    const b = cleanup.add(await startTlsBroker({ ...pemSslConfig(certs), 'ssl.client.auth': 'requested' }), (x) => x.stop());
    expect(await listTopics(b.ssl, kafkajsSsl(certs))).to.be.an('array');
    expect(sslPrincipals(b)).to.deep.equal(['User:ANONYMOUS']);
    await refused(listTopics(b.ssl, { ...kafkajsSsl(other, 'app'), ca: kafkajsSsl(certs).ca }));
    expect(b.warnings().map((l) => l.msg)).to.deep.equal(['client certificate refused: connection closed']);
  });

  it('plaintext on the SSL port and TLS on the PLAINTEXT port: refused with one line per class, the broker keeps serving', async () => {
    const b = cleanup.add(await startTlsBroker(pemSslConfig(certs)), (x) => x.stop());
    for (let i = 0; i < 3; i++) {
      await refused(listTopics(b.ssl, undefined));
      await refused(listTopics(b.plain, kafkajsSsl(certs)));
    }
    const msgs = b.warnings().map((l) => l.msg);
    expect(msgs.filter((m) => m === 'plaintext client on an SSL listener: connection closed')).to.have.length(1);
    expect(msgs.filter((m) => m === 'TLS client on a PLAINTEXT listener: connection closed')).to.have.length(1);
    expect(b.broker.metrics.requestLog.query({})).to.deep.equal([]); // no request was served
    expect(await listTopics(b.ssl, kafkajsSsl(certs))).to.be.an('array');
    expect(await listTopics(b.plain, undefined)).to.be.an('array');
  });

  it('ssl.enabled.protocols=TLSv1.2 refuses a TLSv1.3-only client; TLSv1.3 refuses a TLSv1.2-only one', async () => {
    const v12 = cleanup.add(await startTlsBroker({ ...pemSslConfig(certs), 'ssl.enabled.protocols': 'TLSv1.2' }), (x) => x.stop());
    await refused(listTopics(v12.ssl, { ...kafkajsSsl(certs), minVersion: 'TLSv1.3' }));
    expect(v12.warnings().map((l) => l.msg)).to.deep.equal(['no TLS version in common (ssl.enabled.protocols): connection closed']);
    expect(await listTopics(v12.ssl, { ...kafkajsSsl(certs), maxVersion: 'TLSv1.2' })).to.be.an('array');
    const v13 = cleanup.add(await startTlsBroker({ ...pemSslConfig(certs), 'ssl.enabled.protocols': 'TLSv1.3' }), (x) => x.stop());
    await refused(listTopics(v13.ssl, { ...kafkajsSsl(certs), maxVersion: 'TLSv1.2' }));
    expect(v13.warnings().map((l) => l.msg)).to.deep.equal(['no TLS version in common (ssl.enabled.protocols): connection closed']);
    expect(await listTopics(v13.ssl, { ...kafkajsSsl(certs), minVersion: 'TLSv1.3' })).to.be.an('array');
  });

  it('ssl.cipher.suites (IANA names) limits TLS 1.2 suites: a client offering only others is refused', async () => {
    const b = cleanup.add(
      await startTlsBroker({
        ...pemSslConfig(certs),
        'ssl.enabled.protocols': 'TLSv1.2',
        'ssl.cipher.suites': 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
      }),
      (x) => x.stop(),
    );
    await refused(listTopics(b.ssl, { ...kafkajsSsl(certs), ciphers: 'ECDHE-RSA-AES256-GCM-SHA384' }));
    expect(b.warnings().map((l) => l.msg)).to.deep.equal(['no cipher suite in common (ssl.cipher.suites): connection closed']);
    expect(await listTopics(b.ssl, { ...kafkajsSsl(certs), ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' })).to.be.an('array');
  });

  it('PKCS12 key store and trust store given per listener (listener.name.ssl.*), with a principal mapping rule', async () => {
    const b = cleanup.add(
      await startTlsBroker({
        'listener.name.ssl.ssl.keystore.type': 'PKCS12',
        'listener.name.ssl.ssl.keystore.location': certs.brokerKeystoreP12,
        'listener.name.ssl.ssl.keystore.password': certs.password,
        'listener.name.ssl.ssl.truststore.type': 'PKCS12',
        'listener.name.ssl.ssl.truststore.location': certs.truststoreP12,
        'listener.name.ssl.ssl.truststore.password': certs.password,
        'listener.name.ssl.ssl.client.auth': 'required',
        'ssl.principal.mapping.rules': 'RULE:^CN=([^,]+),OU=.*$/$1/U,DEFAULT',
      }),
      (x) => x.stop(),
    );
    const x = kcatProps(rdkafkaSsl(certs, 'app'));
    const p = await runKcat(['-b', b.ssl, ...x, '-P', '-t', 'p12'], 'one\ntwo\n');
    expect(p.code, p.stderr).to.equal(0);
    const c = await runKcat(['-b', b.ssl, ...x, '-C', '-t', 'p12', '-o', 'beginning', '-e', '-f', '%s\\n']);
    expect(c.stdout.toString()).to.equal('one\ntwo\n');
    expect(sslPrincipals(b)).to.deep.equal(['User:APP']);
    // the keys are honoured, so not listed among those that do not apply
    expect(b.broker.config.notApplying().filter((k) => k.includes('ssl'))).to.deep.equal([]);
  });

  it('PEM key store and trust store given inline (ssl.keystore.key, ssl.keystore.certificate.chain, ssl.truststore.certificates), on one line', async () => {
    const oneLine = (f: string): string => readFileSync(f, 'utf8').replace(/\n/g, ' ');
    const broker = join(certs.dir, 'broker');
    const b = cleanup.add(
      await startTlsBroker({
        'ssl.keystore.type': 'PEM',
        'ssl.keystore.key': oneLine(`${broker}.key`),
        'ssl.keystore.certificate.chain': oneLine(`${broker}.pem`),
        'ssl.truststore.type': 'PEM',
        'ssl.truststore.certificates': oneLine(certs.caCert),
        'ssl.client.auth': 'required',
      }),
      (x) => x.stop(),
    );
    expect(await listTopics(b.ssl, kafkajsSsl(certs, 'app'))).to.be.an('array');
    expect(sslPrincipals(b)).to.deep.equal(['User:CN=app,OU=gregor-dev,O=gregor']);
  });

  it("refuses at start: a SASL listener left with GSSAPI (Kafka's default mechanism, not in gregor), a JKS key store, an SSL listener without a key store, an SSL inter-broker listener in a cluster", async () => {
    const dataDir = cleanup.add(tempDir(), (d) => rmSync(d, { recursive: true, force: true }));
    const start = (config: Record<string, string>) =>
      refused(startBroker({ dataDir, logger: silentLogger(), config: { 'admin.listener': 'none', ...config } }));
    expect((await start({ listeners: 'SASL_SSL://127.0.0.1:0', ...pemSslConfig(certs) })).message).to.match(
      /listener SASL_SSL: SASL mechanism GSSAPI is not supported by gregor/,
    );
    expect((await start({ listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0' })).message).to.match(
      /listener SASL_PLAINTEXT: SASL mechanism GSSAPI is not supported/,
    );
    expect((await start({ listeners: 'SSL://127.0.0.1:0', 'ssl.keystore.location': certs.brokerKeystoreP12 })).message).to.match(
      /JKS key stores are not supported/,
    );
    expect((await start({ listeners: 'SSL://127.0.0.1:0', 'ssl.keystore.type': 'PEM' })).message).to.match(/ssl.keystore.location/);
    expect((await start({ listeners: 'INTERNAL://127.0.0.1:0' })).message).to.match(/No security protocol defined for listener INTERNAL/);
    const cluster = {
      listeners: 'SSL://127.0.0.1:0',
      ...pemSslConfig(certs),
      'metadata.store': 'etcd',
      'etcd.endpoints': 'http://127.0.0.1:1',
    };
    expect((await start(cluster)).message).to.match(
      /inter-broker listener SSL is SSL: brokers of a gregor cluster speak neither TLS nor SASL/,
    );
  });

  it('gregor dev certs writes a CA, broker and client certificates that openssl verifies, and prints the config', () => {
    const out = join(
      cleanup.add(tempDir('gregor-devcerts-'), (d) => rmSync(d, { recursive: true, force: true })),
      'c',
    );
    const text = execFileSync(process.execPath, [join(PROJECT_ROOT, 'bin/gregor.js'), 'dev', 'certs', '--out', out, '--client', 'alice'], {
      encoding: 'utf8',
    });
    expect(text).to.include(`ssl.keystore.location=${join(out, 'broker-keystore.pem')}`);
    expect(text).to.include('principal User:CN=alice,OU=gregor-dev,O=gregor');
    for (const f of ['ca.pem', 'broker.p12', 'truststore.p12', 'alice.p12', 'alice.key'])
      expect(existsSync(join(out, f)), f).to.equal(true);
    const v = execFileSync('openssl', ['verify', '-CAfile', join(out, 'ca.pem'), join(out, 'broker.pem'), join(out, 'alice.pem')], {
      encoding: 'utf8',
    });
    expect(v).to.equal(`${join(out, 'broker.pem')}: OK\n${join(out, 'alice.pem')}: OK\n`);
  });
});
