/**
 * gregor.socket.write.direct (on by default): a plain TCP connection sends each response with one
 * sendmsg to the socket's descriptor while Node's stream holds nothing of the connection's, and what
 * the kernel does not take through the stream (lib/network/direct-write.ts). Real clients (kafkajs,
 * kcat on librdkafka, kafka-python checking CRCs) produce and read back exactly, with a small socket
 * send buffer so that large Fetch responses go out in part directly and in part through the stream;
 * an SSL listener of the same broker never sends directly; with the setting off nothing does.
 */
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { directWrites, sendNowaitCall } from '../../lib/network/direct-write.js';
import { Cleanup } from '../helpers/cleanup.js';
import { hex, runKafkaPython } from '../helpers/kafka-python.js';
import { kcatValues, plainAndSslBroker, produceBatches, values } from '../helpers/large-values.js';
import { kafkajsReadAll } from '../helpers/roundtrip.js';
import { rdkafkaSsl, startLoggedBroker, type DevCertFiles, type TlsBroker } from '../helpers/tls.js';

describe('responses sent straight to the socket (gregor.socket.write.direct)', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let certs: DevCertFiles;
  let b: TlsBroker;
  let kafka: Kafka;

  before(async function () {
    if (sendNowaitCall() === null) {
      // needs the pread addon built with sendNowait (npm install builds it); CI has it
      this.skip();
    }
    ({ certs, b, kafka } = await plainAndSslBroker(
      cleanup,
      {
        'num.partitions': 1,
        // 64 KB once the kernel doubles it: a ~1 MB Fetch response cannot leave in one call
        'socket.send.buffer.bytes': 32768,
      },
      'direct-write',
    ));
  });
  after(() => cleanup.run());

  it('kafkajs and kcat read back exactly what kafkajs produced; small responses left whole, large ones in part', async () => {
    const vals = values('dw', 3000);
    const before = { ...directWrites };
    await produceBatches(kafka, 'dw-a', vals);
    expect(directWrites.whole - before.whole, 'produce responses sent directly').to.be.at.least(30);

    const mid = { ...directWrites };
    expect(await kcatValues(b.plain, 'dw-a')).to.deep.equal(vals);
    expect(await kafkajsReadAll(kafka, 'dw-a', 'dw-a-group', vals.length, 60_000)).to.deep.equal(vals);
    // ~4.6 MB of values read twice in ~1 MB responses: each started directly, the rest through the stream
    expect(directWrites.partial - mid.partial, 'large responses sent in part').to.be.at.least(4);
    expect(directWrites.bytes - mid.bytes, 'bytes sent directly').to.be.greaterThan(0);
    expect(b.warnings()).to.deep.equal([]);
  });

  it('kafka-python (checking CRCs) produces and reads back its records', async () => {
    const before = { ...directWrites };
    const records = Array.from({ length: 1500 }, (_, i) => ({
      p: 0,
      k: hex(`k${i}`),
      v: hex(`py-${i}:${'r'.repeat(500 + (i % 700))}`),
      ts: 1_700_000_000_000 + i,
    }));
    const res = (
      await runKafkaPython({ bootstrap: b.plain, api_version: null, acks: 1, runs: [{ topic: 'dw-py', codec: 'none', records }] })
    ).get('dw-py');
    expect(res?.sent.map((m) => m[1])).to.deep.equal(records.map((_, i) => i));
    expect(res?.read.map((r) => r[5])).to.deep.equal(records.map((r) => r.v));
    expect(res?.read.map((r) => r[4])).to.deep.equal(records.map((r) => r.k));
    expect(directWrites.whole - before.whole).to.be.greaterThan(0);
  });

  it('over SSL nothing is sent directly (the bytes must be encrypted), and the records are the same', async () => {
    const before = { ...directWrites };
    expect(await kcatValues(b.ssl, 'dw-a', rdkafkaSsl(certs, 'app'))).to.deep.equal(values('dw', 3000));
    expect(directWrites.whole + directWrites.partial - before.whole - before.partial).to.equal(0);
  });

  it('gregor.socket.write.direct=false: every response goes through the stream, and the records are the same', async () => {
    const off = await startLoggedBroker(['PLAINTEXT'], { 'num.partitions': 1, 'gregor.socket.write.direct': false });
    try {
      const bootstrap = off.address('PLAINTEXT');
      const vals = values('off', 500);
      const before = { ...directWrites };
      await produceBatches(new Kafka({ brokers: [bootstrap], clientId: 'direct-write-off', logLevel: logLevel.NOTHING }), 'dw-off', vals);
      expect(await kcatValues(bootstrap, 'dw-off')).to.deep.equal(vals);
      expect(directWrites.whole + directWrites.partial - before.whole - before.partial).to.equal(0);
    } finally {
      await off.stop();
    }
  });
});
