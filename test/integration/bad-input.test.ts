/**
 * Bad input on the Kafka port of one running child broker: garbage, HTTP, a TLS ClientHello, 2 GB and
 * negative size prefixes, unknown API keys and versions, malformed bodies, over-limit frames, corrupt
 * and oversized batches. Each case runs on its own raw connection while a kafkajs producer keeps
 * producing to another topic; each must close (or be answered) promptly without the broker's RSS
 * jumping, and the producer's work must complete and read back exactly at the end.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { buildRecordBatch, decodeRecords } from '../../protocol/records/index.js';
import { startChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';
import { KafkajsPartitionReader } from '../helpers/kafkajs-reader.js';
import { processRss, RawClient, rawCreateTopics, rawFetch, rawListOffset, rawProduce, rawRequestFrame } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';
import { asError } from '../../lib/as-error.js';
import { mulberry32 } from '../helpers/prng.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const MAX_REQUEST = 1 << 20; // socket.request.max.bytes for this broker
const MESSAGE_MAX = 200_000; // message.max.bytes for this broker
const RSS_SLACK = 50 << 20;
const PROMPT_MS = 2000;
const BG_TOPIC = 'bad-input-bg';
const BG_PARTITIONS = 3;

/** mulberry32: deterministic garbage */
const prng = mulberry32;
function randomBytes(seed: number, n: number): Buffer {
  const r = prng(seed);
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 256);
  return out;
}

function records(n: number, tag: string, valueSize = 20): { key: Buffer; value: Buffer; timestamp: bigint }[] {
  const now = BigInt(Date.now());
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`${tag}-${i}`),
    value: Buffer.alloc(valueSize, 97 + (i % 26)),
    timestamp: now,
  }));
}

describe('bad input on the Kafka port (child broker, kafkajs producing alongside)', function () {
  this.timeout(120_000);
  let dataDir: string;
  let b: ChildBroker;
  let pid: number;
  let baselineRss = 0;

  // The background producer: real work that must keep completing while bad input arrives.
  const bgSent = new Map<number, string[]>(); // partition → values, in acknowledged order
  let bgAcked = 0;
  let bgStop = false;
  let bgError: Error | null = null;
  let bgLoop: Promise<void> = Promise.resolve();

  /** Resolves once the background producer acknowledged `n` more records (proves the broker serves). */
  async function bgProgress(n = 100, timeoutMs = 10_000): Promise<void> {
    const target = bgAcked + n;
    const deadline = Date.now() + timeoutMs;
    while (bgAcked < target) {
      if (bgError !== null) throw new Error(`background producer failed: ${String(bgError)}`);
      if (Date.now() > deadline) throw new Error(`background producer stalled at ${bgAcked} acks`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Runs a bad-input case: RSS before/after, the background producer progressing during and after it. */
  async function badCase(fn: () => Promise<void>): Promise<void> {
    const before = await processRss(pid);
    await fn();
    await bgProgress();
    const after = await processRss(pid);
    expect(after - before, `RSS grew by ${((after - before) / 1048576).toFixed(1)} MB`).to.be.below(RSS_SLACK);
    expect(after - baselineRss, 'RSS since the suite started').to.be.below(2 * RSS_SLACK);
  }

  /** Writes bytes on a fresh connection and expects the broker to close it promptly without a response. */
  async function expectClosed(bytes: Buffer | string, what: string): Promise<void> {
    const c = await RawClient.connect(b.bootstrap);
    const t0 = performance.now();
    await c.write(bytes);
    const closed = await c.waitClosed(PROMPT_MS);
    expect(closed, `${what}: connection still open after ${PROMPT_MS} ms`).to.equal(true);
    expect(c.responses, `${what}: no response expected`).to.have.length(0);
    expect((c.closedAt ?? Infinity) - t0).to.be.below(PROMPT_MS);
    c.destroy();
  }

  const cleanup = new Cleanup();

  before(async () => {
    dataDir = cleanup.add(tempDir('gregor-bad-input-'), (d) => rmSync(d, { recursive: true, force: true }));
    b = cleanup.add(
      await startChildBroker(dataDir, 0, {
        'socket.request.max.bytes': String(MAX_REQUEST),
        'message.max.bytes': String(MESSAGE_MAX),
        'num.partitions': '2',
      }),
      async (child) => {
        child.child.kill('SIGKILL');
        await child.exited;
      },
    );
    pid = b.child.pid!;
    const admin = await RawClient.connect(b.bootstrap);
    await rawCreateTopics(admin, [
      { name: BG_TOPIC, partitions: BG_PARTITIONS },
      { name: 'bad-input-data', partitions: 2 },
    ]);
    admin.destroy();

    const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'bad-input-bg', logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    let n = 0;
    cleanup.defer(async () => {
      bgStop = true;
      await bgLoop;
    });
    bgLoop = (async () => {
      try {
        while (!bgStop) {
          const messages = Array.from({ length: 50 }, () => {
            const i = n++;
            return { key: `k${i}`, value: `v${i}`, partition: i % BG_PARTITIONS };
          });
          const res = await producer.send({ topic: BG_TOPIC, acks: -1, messages });
          for (const r of res) if (r.errorCode !== 0) throw new Error(`produce error ${r.errorCode}`);
          for (const m of messages) {
            const list = bgSent.get(m.partition) ?? [];
            list.push(m.value);
            bgSent.set(m.partition, list);
          }
          bgAcked += messages.length;
        }
      } catch (e) {
        bgError = asError(e);
      } finally {
        await producer.disconnect().catch(() => undefined);
      }
    })();
    await bgProgress(200);
    baselineRss = await processRss(pid);
  });

  after(() => cleanup.run());

  it('random garbage bytes: closed', async () => {
    await badCase(async () => {
      for (let seed = 1; seed <= 8; seed++) await expectClosed(randomBytes(seed, 8192), `garbage seed ${seed}`);
      // well-framed garbage: a valid size prefix around random bytes (random API key, version, body)
      for (let seed = 100; seed < 108; seed++) {
        const body = randomBytes(seed, 512);
        const frame = Buffer.alloc(4 + body.length);
        frame.writeInt32BE(body.length, 0);
        body.copy(frame, 4);
        await expectClosed(frame, `framed garbage seed ${seed}`);
      }
    });
  });

  it('an HTTP request: closed', async () => {
    await badCase(() => expectClosed('GET / HTTP/1.1\r\nHost: x\r\n\r\n', 'HTTP'));
  });

  it('a TLS ClientHello: closed', async () => {
    // TLS record header (handshake, TLS 1.0 record version, length 0x00c4) + ClientHello start
    const hello = Buffer.concat([
      Buffer.from([0x16, 0x03, 0x01, 0x00, 0xc4, 0x01, 0x00, 0x00, 0xc0, 0x03, 0x03]),
      randomBytes(99, 32 + 150),
    ]);
    await badCase(() => expectClosed(hello, 'TLS ClientHello'));
  });

  it('a 2 GB size prefix (0x7fffffff) and a negative one (0x80000000): closed before allocating', async () => {
    await badCase(async () => {
      const big = Buffer.from([0x7f, 0xff, 0xff, 0xff, 0, 1, 2, 3]);
      await expectClosed(big, '0x7fffffff');
      await expectClosed(Buffer.from([0x80, 0x00, 0x00, 0x00, 0, 1, 2, 3]), '0x80000000');
      await expectClosed(Buffer.from([0xff, 0xff, 0xff, 0xff]), '-1');
    });
  });

  it('an unknown API key (999) with a valid header: closed', async () => {
    await badCase(() => expectClosed(rawRequestFrame(999, 0, 7, Buffer.alloc(16)), 'API key 999'));
  });

  it('Metadata v99: closed', async () => {
    await badCase(() => expectClosed(rawRequestFrame(3, 99, 8, Buffer.from([0x00]), { flexibleHeader: true }), 'Metadata v99'));
  });

  it('ApiVersions v99: answered with a v0 body, UNSUPPORTED_VERSION (35) and the key list', async () => {
    await badCase(async () => {
      const c = await RawClient.connect(b.bootstrap);
      // client_software_name, client_software_version (compact strings) + empty tags, as a v3 request would carry
      await c.write(rawRequestFrame(18, 99, 42, Buffer.from([0x02, 0x78, 0x02, 0x31, 0x00]), { flexibleHeader: true }));
      await c.waitResponses(1, PROMPT_MS);
      const res = c.decode(0, 18, 0);
      expect(res.correlationId).to.equal(42);
      const body = res.body as { errorCode: number; apiKeys: { apiKey: number; minVersion: number; maxVersion: number }[] };
      expect(body.errorCode).to.equal(35);
      const keys = new Map(body.apiKeys.map((k) => [k.apiKey, k]));
      for (const k of [0, 1, 2, 3, 18, 19]) expect(keys.has(k), `API key ${k} listed`).to.equal(true);
      expect(keys.get(18)?.maxVersion).to.be.at.least(3);
      // the connection stays usable: a supported ApiVersions is answered
      const ok = await c.request<{ errorCode: number }>(18, 3, { clientSoftwareName: 'raw', clientSoftwareVersion: '1' });
      expect(ok.errorCode).to.equal(0);
      c.destroy();
    });
  });

  it('a truncated or malformed body for known APIs: closed', async () => {
    await badCase(async () => {
      // Metadata v1 claiming 5 topics, carrying one and a half
      const md = Buffer.concat([Buffer.from([0, 0, 0, 5, 0, 3]), Buffer.from('abc'), Buffer.from([0, 10, 0x61])]);
      await expectClosed(rawRequestFrame(3, 1, 9, md), 'truncated Metadata v1');
      // Produce v8 cut off inside the topic array
      const produce = Buffer.from([0xff, 0xff, 0, 1, 0, 0, 0x13, 0x88, 0, 0, 0, 1, 0, 20, 0x61]);
      await expectClosed(rawRequestFrame(0, 8, 10, produce), 'truncated Produce v8');
      // Fetch v4 with an impossible (negative, not -1) array length
      const fetch = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0x10, 0, 0, 0xff, 0xff, 0xff, 0xf0]);
      await expectClosed(rawRequestFrame(1, 4, 11, fetch), 'malformed Fetch v4');
      // a frame too short to hold a request header
      await expectClosed(Buffer.from([0, 0, 0, 3, 0, 18, 0]), '3-byte frame');
    });
  });

  it(`a frame of socket.request.max.bytes (${MAX_REQUEST}) is read; one byte more is refused`, async () => {
    await badCase(async () => {
      // exactly at the limit: a Metadata v1 request (no topics) padded with trailing bytes, which are
      // tolerated as Kafka does; header = 2+2+4 + 2+"raw-client"(10) = 20 bytes
      const metadataFrame = (cid: number, size: number) =>
        rawRequestFrame(3, 1, cid, Buffer.concat([Buffer.from([0, 0, 0, 0]), Buffer.alloc(size - 20 - 4, 0)]));
      const frame = metadataFrame(12, MAX_REQUEST);
      expect(frame.readInt32BE(0)).to.equal(MAX_REQUEST);
      const c = await RawClient.connect(b.bootstrap);
      await c.write(frame);
      await c.waitResponses(1, 5000);
      expect(c.decode(0, 3, 1).correlationId).to.equal(12);
      c.destroy();

      const over = metadataFrame(13, MAX_REQUEST + 1);
      expect(over.readInt32BE(0)).to.equal(MAX_REQUEST + 1);
      await expectClosed(over, 'max + 1');
    });
  });

  it('Produce acks=0 gets no response; the next request on the connection is answered', async () => {
    await badCase(async () => {
      const c = await RawClient.connect(b.bootstrap);
      const before = await rawListOffset(c, 'bad-input-data', 1);
      const batch = buildRecordBatch(records(5, 'acks0'));
      const produce = {
        transactionalId: null,
        acks: 0,
        timeoutMs: 5000,
        topicData: [{ name: 'bad-input-data', partitionData: [{ index: 1, records: batch }] }],
      };
      const cid0 = await c.send(0, 8, produce);
      const cid1 = await c.send(18, 3, { clientSoftwareName: 'raw', clientSoftwareVersion: '1' });
      const rs = await c.waitResponses(2, 5000); // ListOffsets + ApiVersions
      expect(c.decode(1, 18, 3).correlationId).to.equal(cid1);
      expect(cid1).to.equal(cid0 + 1);
      await new Promise((r) => setTimeout(r, 100));
      expect(c.responses).to.have.length(rs.length);
      expect(await rawListOffset(c, 'bad-input-data', 1)).to.equal(before + 5n);
      c.destroy();
    });
  });

  it('a CRC-corrupted batch gets CORRUPT_MESSAGE for its partition only; nothing is written; the other partition succeeds', async () => {
    await badCase(async () => {
      const c = await RawClient.connect(b.bootstrap);
      const end0 = await rawListOffset(c, 'bad-input-data', 0);
      const end1 = await rawListOffset(c, 'bad-input-data', 1);
      const bad = buildRecordBatch(records(3, 'corrupt'));
      bad[bad.length - 1] = bad[bad.length - 1]! ^ 0x01; // a value byte, inside the CRC's range
      const good = buildRecordBatch(records(4, 'good'));
      const res = await rawProduce(c, 'bad-input-data', [
        [0, bad],
        [1, good],
      ]);
      const byPartition = new Map(res.map((r) => [r.index, r]));
      expect(byPartition.get(0)?.errorCode).to.equal(2);
      expect(byPartition.get(1)?.errorCode).to.equal(0);
      expect(byPartition.get(1)?.baseOffset).to.equal(end1);
      expect(await rawListOffset(c, 'bad-input-data', 0)).to.equal(end0);
      expect(await rawListOffset(c, 'bad-input-data', 1)).to.equal(end1 + 4n);
      const f = await rawFetch(c, 'bad-input-data', 1, end1);
      const got = decodeRecords(f.records ?? Buffer.alloc(0), { maxOutput: 1 << 20 }).records;
      expect(got.map((r) => r.key?.toString())).to.deep.equal(['good-0', 'good-1', 'good-2', 'good-3']);
      c.destroy();
    });
  });

  it('a batch over message.max.bytes gets MESSAGE_TOO_LARGE (10); nothing is written', async () => {
    await badCase(async () => {
      const c = await RawClient.connect(b.bootstrap);
      const end0 = await rawListOffset(c, 'bad-input-data', 0);
      const big = buildRecordBatch(records(1, 'big', MESSAGE_MAX + 1000));
      const res = await rawProduce(c, 'bad-input-data', [[0, big]]);
      expect(res[0]?.errorCode).to.equal(10);
      expect(await rawListOffset(c, 'bad-input-data', 0)).to.equal(end0);
      // a batch just under the limit is accepted
      const ok = buildRecordBatch(records(1, 'fits', MESSAGE_MAX - 200));
      const res2 = await rawProduce(c, 'bad-input-data', [[0, ok]]);
      expect(res2[0]?.errorCode).to.equal(0);
      c.destroy();
    });
  });

  it('the background producer completed and every acknowledged record reads back exactly', async () => {
    bgStop = true;
    await bgLoop;
    expect(bgError).to.equal(null);
    expect(bgAcked).to.be.above(1000);
    const reader = new KafkajsPartitionReader([b.bootstrap]);
    await reader.connect(BG_TOPIC);
    try {
      for (let p = 0; p < BG_PARTITIONS; p++) {
        const want = bgSent.get(p) ?? [];
        const got = await reader.readAll(BG_TOPIC, p, 0n, BigInt(want.length));
        expect(got.map((m) => m.value?.toString())).to.deep.equal(want);
        got.forEach((m, i) => expect(m.offset).to.equal(String(i)));
      }
    } finally {
      await reader.disconnect();
    }
  });
});
