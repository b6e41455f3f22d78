/**
 * gregor.fetch.sendfile=true (off by default): a consumer's Fetch on a plain TCP connection answers large stored batches
 * with FileSlices, which the connection sends from the segment file with sendfile (lib/log/
 * file-slices.ts, lib/network/response-writer.ts). Real clients (kafkajs, kcat on librdkafka,
 * kafka-python with CRC checks) read back exactly what was produced, with a small socket send buffer
 * so that slices also meet a full socket; read_committed readers skip an aborted transaction's large
 * batches; over SSL nothing is sliced; every descriptor a slice held is closed again.
 */
import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { fileSliceCalls } from '../../lib/log/file-io.js';
import { sliceReads } from '../../lib/log/file-slices.js';
import { sliceSends } from '../../lib/network/response-writer.js';
import { Cleanup } from '../helpers/cleanup.js';
import { hex, runKafkaPython } from '../helpers/kafka-python.js';
import { runKcat } from '../helpers/kcat.js';
import { kcatValues, plainAndSslBroker, produceBatches, values } from '../helpers/large-values.js';
import { kafkajsReadAll } from '../helpers/roundtrip.js';
import { rdkafkaSsl, startLoggedBroker, type DevCertFiles, type TlsBroker } from '../helpers/tls.js';

const openDescriptors = (): number => readdirSync('/proc/self/fd').length;

describe('sendfile fetch responses (gregor.fetch.sendfile)', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let certs: DevCertFiles;
  let b: TlsBroker;
  let kafka: Kafka;

  before(async function () {
    if (fileSliceCalls() === null) {
      // needs the pread addon built (npm install builds it) and Linux 6.5+ for cachestat; CI has both
      this.skip();
    }
    ({ certs, b, kafka } = await plainAndSslBroker(
      cleanup,
      {
        'num.partitions': 1,
        'gregor.fetch.sendfile': true,
        // every read goes to the segment files (no recent-batches cache), and a small send buffer
        // (64 KB once the kernel doubles it) makes each slice meet a full socket
        'gregor.log.recent.cache.bytes': 0,
        'socket.send.buffer.bytes': 32768,
      },
      'sendfile',
    ));
  });
  after(() => cleanup.run());

  it('kafkajs and kcat (librdkafka) read back exactly what was produced in ~200 KB batches; the batches left with sendfile', async () => {
    const vals = values('a', 3000);
    await produceBatches(kafka, 'sf-a', vals);
    const made = sliceReads.made;
    const sent = { ...sliceSends };
    expect(await kcatValues(b.plain, 'sf-a')).to.deep.equal(vals);

    const got = await kafkajsReadAll(kafka, 'sf-a', 'sf-a-group', vals.length, 60_000);
    expect(got).to.deep.equal(vals);

    const bytes = vals.reduce((n, v) => n + v.length, 0);
    // ~1 MB per fetch (max.partition.fetch.bytes), each a slice of several batches: ~5 per reader
    expect(sliceReads.made - made, 'reads answered with slices').to.be.at.least(8);
    const bySendfile = sliceSends.sendfileBytes - sent.sendfileBytes;
    const copied = sliceSends.copiedBytes - sent.copiedBytes;
    // two readers of ~4.6 MB of values: nearly all of it (not a last small read) in slices, most of
    // that with sendfile, some through the socket when its small buffer was full
    expect(bySendfile + copied, 'bytes of slices').to.be.greaterThan(1.5 * bytes);
    expect(bySendfile, 'bytes sent with sendfile').to.be.greaterThan(copied);
    expect(copied, 'bytes that met a full socket buffer').to.be.greaterThan(0);
    expect(b.warnings()).to.deep.equal([]);
  });

  it('kafka-python (checking CRCs) reads back its own ~256 KB batches, sent from the file', async () => {
    const made = sliceReads.made;
    const records = Array.from({ length: 1200 }, (_, i) => ({
      p: 0,
      k: hex(`k${i}`),
      v: hex(`py-${i}:${'q'.repeat(900 + (i % 300))}`),
      ts: 1_700_000_000_000 + i,
    }));
    const res = (
      await runKafkaPython({ bootstrap: b.plain, api_version: null, acks: 1, runs: [{ topic: 'sf-py', codec: 'none', records }] })
    ).get('sf-py');
    expect(res?.read.map((r) => r[5])).to.deep.equal(records.map((r) => r.v));
    expect(res?.read.map((r) => r[4])).to.deep.equal(records.map((r) => r.k));
    expect(sliceReads.made - made, 'reads answered with slices').to.be.greaterThan(0);
  });

  it('read_committed: kcat skips an aborted transaction whose large batches came as slices, and reads the committed ones', async () => {
    const producer = kafka.producer({ transactionalId: 'sf-txn', idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const aborted = values('aborted', 400);
    const committed = values('committed', 400);
    try {
      let txn = await producer.transaction();
      for (let i = 0; i < aborted.length; i += 100)
        await txn.send({ topic: 'sf-txn', messages: aborted.slice(i, i + 100).map((value) => ({ value })) });
      await txn.abort();
      txn = await producer.transaction();
      for (let i = 0; i < committed.length; i += 100)
        await txn.send({ topic: 'sf-txn', messages: committed.slice(i, i + 100).map((value) => ({ value })) });
      await txn.commit();
    } finally {
      await producer.disconnect();
    }
    const made = sliceReads.made;
    expect(await kcatValues(b.plain, 'sf-txn', { 'isolation.level': 'read_committed' })).to.deep.equal(committed);
    expect(sliceReads.made - made, 'reads answered with slices').to.be.greaterThan(0);
    // read_uncommitted sees both (the markers are not records)
    expect(await kcatValues(b.plain, 'sf-txn', { 'isolation.level': 'read_uncommitted' })).to.deep.equal([...aborted, ...committed]);
  });

  it('over SSL nothing is sliced (the bytes must be encrypted), and the records are the same', async () => {
    const made = sliceReads.made;
    expect(await kcatValues(b.ssl, 'sf-a', rdkafkaSsl(certs, 'app'))).to.deep.equal(values('a', 3000));
    expect(sliceReads.made - made).to.equal(0);
  });

  it('off by default: a broker left at its defaults sends the same large batches from memory', async () => {
    const plainOnly = await startLoggedBroker(['PLAINTEXT'], { 'num.partitions': 1, 'gregor.log.recent.cache.bytes': 0 });
    try {
      const bootstrap = plainOnly.address('PLAINTEXT');
      const vals = values('d', 1000);
      await produceBatches(new Kafka({ brokers: [bootstrap], clientId: 'sendfile-default', logLevel: logLevel.NOTHING }), 'sf-d', vals);
      const made = sliceReads.made;
      expect(await kcatValues(bootstrap, 'sf-d')).to.deep.equal(vals);
      expect(sliceReads.made - made).to.equal(0);
    } finally {
      await plainOnly.stop();
    }
  });

  it('a reader that disconnects mid-response leaves no descriptor open, and others are served meanwhile', async () => {
    const before = openDescriptors();
    const made = sliceReads.made;
    for (let i = 0; i < 5; i++) {
      // kcat stops after the first records (-c): the rest of its fetch responses are never read
      const r = await runKcat(['-C', '-b', b.plain, '-t', 'sf-a', '-o', 'beginning', '-c', '5', '-q', '-f', '%s\\n']);
      expect(r.code).to.equal(0);
      expect(
        r.stdout
          .toString()
          .split('\n')
          .filter((l) => l !== ''),
      ).to.deep.equal(values('a', 5));
    }
    expect(await kcatValues(b.plain, 'sf-a')).to.have.length(3000);
    expect(sliceReads.made - made).to.be.greaterThan(5);
    // the broker notices the closed connections and releases the slices' descriptors
    const deadline = Date.now() + 10_000;
    while (openDescriptors() > before + 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(openDescriptors(), 'descriptors open, against before').to.be.at.most(before + 2);
  });
});
