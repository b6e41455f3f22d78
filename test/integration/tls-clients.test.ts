/**
 * SSL listener beside a PLAINTEXT one (issue 18): kafkajs, librdkafka (@confluentinc/kafka-javascript),
 * kcat and kafka-python produce and consume over SSL while a kafkajs client does the same on the
 * PLAINTEXT listener of the same broker; a kafkajs consumer group joins over SSL. The broker uses a
 * PEM key store made by `gregor dev certs`' code (openssl).
 */
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { Cleanup } from '../helpers/cleanup.js';
import { runKcat } from '../helpers/kcat.js';
import { kafkajsRoundTrip, rdkafkaRoundTrip } from '../helpers/roundtrip.js';
import { hex, runKafkaPython } from '../helpers/kafka-python.js';
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

describe('SSL listener beside PLAINTEXT: every client produces and consumes', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let certs: DevCertFiles;
  let b: TlsBroker;

  before(async () => {
    certs = cleanup.add(devCerts(['app']), removeCerts);
    b = cleanup.add(await startTlsBroker({ ...pemSslConfig(certs), 'num.partitions': 1 }), (x) => x.stop());
  });
  after(() => cleanup.run());

  it('kafkajs over SSL (a consumer group joins) while kafkajs uses the PLAINTEXT listener at the same time', async () => {
    const tls = new Kafka({ brokers: [b.ssl], clientId: 'tls', ssl: kafkajsSsl(certs), logLevel: logLevel.NOTHING });
    const plain = new Kafka({ brokers: [b.plain], clientId: 'plain', logLevel: logLevel.NOTHING });
    const values = Array.from({ length: 200 }, (_, i) => `v${i}`);
    const [overTls, overPlain] = await Promise.all([
      kafkajsRoundTrip(tls, 'tls-kafkajs', values),
      kafkajsRoundTrip(plain, 'plain-kafkajs', values),
    ]);
    expect(overTls).to.deep.equal(values);
    expect(overPlain).to.deep.equal(values);
    // Metadata over SSL names the SSL listener's address, over PLAINTEXT the PLAINTEXT one
    const admin = tls.admin();
    await admin.connect();
    const cluster = await admin.describeCluster();
    await admin.disconnect();
    expect(cluster.brokers.map((x) => `${x.host}:${x.port}`)).to.deep.equal([b.ssl]);
  });

  it('librdkafka (@confluentinc/kafka-javascript) over SSL with a client certificate: produce, then a group consumer reads', async () => {
    const props = { 'bootstrap.servers': b.ssl, ...rdkafkaSsl(certs, 'app'), log_level: 0 };
    const got = await rdkafkaRoundTrip(props, 'tls-librdkafka', 100);
    expect(got).to.deep.equal(Array.from({ length: 100 }, (_, i) => `r${i}`));
  });

  it('kcat over SSL: produce, then consume back', async () => {
    const x = kcatProps(rdkafkaSsl(certs, 'app'));
    const p = await runKcat(['-b', b.ssl, ...x, '-P', '-t', 'tls-kcat'], 'a\nb\nc\n');
    expect(p.code, p.stderr).to.equal(0);
    const c = await runKcat(['-b', b.ssl, ...x, '-C', '-t', 'tls-kcat', '-o', 'beginning', '-e', '-f', '%s\\n']);
    expect(c.code, c.stderr).to.equal(0);
    expect(c.stdout.toString()).to.equal('a\nb\nc\n');
  });

  it('kafka-python over SSL (ssl_cafile, ssl_certfile, ssl_keyfile): produce, then read back', async () => {
    const app = certs.clients['app'];
    if (app === undefined) throw new Error('no client certificate');
    const records = Array.from({ length: 50 }, (_, i) => ({ p: 0, k: hex(`k${i}`), v: hex(`v${i}`), ts: 1_700_000_000_000 + i }));
    const res = await runKafkaPython({
      bootstrap: b.ssl,
      api_version: null,
      acks: 1,
      client: { security_protocol: 'SSL', ssl_cafile: certs.caCert, ssl_certfile: app.cert, ssl_keyfile: app.key },
      runs: [{ topic: 'tls-python', codec: 'none', records }],
    });
    const r = res.get('tls-python');
    expect(r?.sent.map((m) => m[1])).to.deep.equal(records.map((_, i) => i));
    expect(r?.read.map((m) => m[5])).to.deep.equal(records.map((x) => x.v));
  });
});
