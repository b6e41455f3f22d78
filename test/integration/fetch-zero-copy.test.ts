/**
 * gregor.fetch.zero.copy=true: Fetch responses leave as a list of buffers with the stored record
 * slices spliced in (protocol/frame.ts encodeResponseChunks), over PLAINTEXT and SSL. Real clients
 * read back exactly what was produced, and the broker really sent chunked responses.
 */
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { decodeRecords } from '../../protocol/records/index.js';
import { ResponseWriter } from '../../lib/network/response-writer.js';
import { Cleanup } from '../helpers/cleanup.js';
import { RawClient, rawFetch } from '../helpers/raw-client.js';
import { kafkajsRoundTrip, rdkafkaRoundTrip } from '../helpers/roundtrip.js';
import {
  devCerts,
  kafkajsSsl,
  pemSslConfig,
  rdkafkaSsl,
  removeCerts,
  startTlsBroker,
  type DevCertFiles,
  type TlsBroker,
} from '../helpers/tls.js';

describe('zero-copy fetch responses (gregor.fetch.zero.copy=true)', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let certs: DevCertFiles;
  let b: TlsBroker;
  /** responses written as several chunks since the last reset, and their bytes */
  let chunked = 0;
  let chunkedBytes = 0;
  const write = Object.getOwnPropertyDescriptor(ResponseWriter.prototype, 'write')?.value as ResponseWriter['write'];

  before(async () => {
    // counts what the broker hands to its sockets (in-process broker: the same prototype)
    ResponseWriter.prototype.write = function (this: ResponseWriter, res, timing, written) {
      if (Array.isArray(res) && res.length > 1) {
        chunked++;
        chunkedBytes += res.reduce((n, c) => n + c.length, 0);
      }
      return write.call(this, res, timing, written);
    };
    cleanup.add(null, () => {
      ResponseWriter.prototype.write = write;
    });
    certs = cleanup.add(devCerts(['app']), removeCerts);
    b = cleanup.add(await startTlsBroker({ ...pemSslConfig(certs), 'num.partitions': 1, 'gregor.fetch.zero.copy': 'true' }), (x) =>
      x.stop(),
    );
  });
  after(() => cleanup.run());

  // values of several KB (batches above the splice threshold) mixed with small ones
  const values = Array.from({ length: 300 }, (_, i) => (i % 7 === 0 ? `${i}:${'z'.repeat(3000 + i)}` : `v${i}`));

  it('kafkajs over PLAINTEXT and over SSL reads back exactly what it produced; the responses went out in chunks', async () => {
    chunked = chunkedBytes = 0;
    const plain = new Kafka({ brokers: [b.plain], clientId: 'zc-plain', logLevel: logLevel.NOTHING });
    const tls = new Kafka({ brokers: [b.ssl], clientId: 'zc-tls', ssl: kafkajsSsl(certs), logLevel: logLevel.NOTHING });
    expect(await kafkajsRoundTrip(plain, 'zc-plain', values)).to.deep.equal(values);
    expect(await kafkajsRoundTrip(tls, 'zc-tls', values)).to.deep.equal(values);
    expect(chunked, 'responses sent as chunks').to.be.greaterThan(1);
    expect(chunkedBytes, 'bytes of the chunked responses').to.be.greaterThan(2 * 300 * 400);
  });

  it('librdkafka over SSL: produce, then a group consumer reads every record', async () => {
    const got = await rdkafkaRoundTrip({ 'bootstrap.servers': b.ssl, ...rdkafkaSsl(certs, 'app'), log_level: 0 }, 'zc-rdkafka', 500);
    expect(got).to.deep.equal(Array.from({ length: 500 }, (_, i) => `r${i}`));
  });

  it('a raw Fetch v11 (non-flexible) of the log from offset 0: the records of the chunked response decode to the values', async () => {
    const c = await RawClient.connect(b.plain);
    try {
      chunked = 0;
      const p = await rawFetch(c, 'zc-plain', 0, 0n, { maxBytes: 8 << 20 });
      expect(p.errorCode).to.equal(0);
      const got = decodeRecords(p.records ?? Buffer.alloc(0), { maxOutput: 1 << 24 }).records.map((r) => r.value?.toString());
      expect(got).to.deep.equal(values);
      expect(chunked, 'that response went out in chunks').to.equal(1);
    } finally {
      c.socket.destroy();
    }
  });
});
