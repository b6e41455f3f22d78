/**
 * Fetch's pooled segment read buffers (lib/log/read-buffer-pool.ts) with zero-copy responses: a
 * buffer whose slices sit in a response the socket has not taken yet is never handed to another
 * read. A client that stops reading holds a ~12 MB response unsent while another connection fetches
 * other data of the same read size; the stalled response still decodes to exactly what was
 * produced, and its buffers go back to the pool only once it is written (or its connection closes).
 */
import { expect } from 'chai';
import { buildRecordBatch, decodeRecords } from '../../protocol/records/index.js';
import { ReadBufferPool, ReadLease } from '../../lib/log/read-buffer-pool.js';
import type { BrokerServices } from '../../lib/services.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { FETCH_V, RawClient, fetchBody, rawCreateTopics, rawProduce, type RawFetchPartition } from '../helpers/raw-client.js';

const PARTITIONS = 2;
const BATCHES = 60;
const PER_BATCH = 10;
const VALUE_BYTES = 10_000;
/** each partition: 60 batches of ~100 KB, 6 MB (read into 8 MiB pool buffers) */
const PARTITION_MAX_BYTES = 7 << 20;

function valueOf(tag: string, p: number, i: number): string {
  const head = `${tag}-${p}-${i}:`;
  return head + tag.repeat(VALUE_BYTES - head.length);
}

/** The topic's every value, partition by partition. */
function expected(tag: string): string[][] {
  return Array.from({ length: PARTITIONS }, (_, p) => Array.from({ length: BATCHES * PER_BATCH }, (_, i) => valueOf(tag, p, i)));
}

async function produce(c: RawClient, topic: string, tag: string): Promise<void> {
  for (let b = 0; b < BATCHES; b++) {
    const batches: [number, Buffer][] = Array.from({ length: PARTITIONS }, (_, p) => [
      p,
      buildRecordBatch(
        Array.from({ length: PER_BATCH }, (_, k) => ({
          key: null,
          value: Buffer.from(valueOf(tag, p, b * PER_BATCH + k)),
          timestamp: BigInt(Date.now()),
        })),
      ),
    ]);
    for (const r of await rawProduce(c, topic, batches)) expect(r.errorCode).to.equal(0);
  }
}

/** A Fetch v11 of every partition of `topic` from offset 0, each up to PARTITION_MAX_BYTES. */
function fetchAll(topic: string) {
  const body = fetchBody(
    topic,
    Array.from({ length: PARTITIONS }, (_, p) => ({ partition: p, fetchOffset: 0n })),
    { maxBytes: PARTITION_MAX_BYTES },
  );
  return { ...body, maxBytes: 64 << 20 };
}

/** The values of each partition of a Fetch v11 response (CRCs checked). */
function valuesIn(c: RawClient, i: number): string[][] {
  const body = c.decode(i, 1, FETCH_V).body as { responses: { partitions: RawFetchPartition[] }[] };
  const parts = body.responses[0]?.partitions ?? [];
  return parts.map((p) => {
    expect(p.errorCode).to.equal(0);
    return decodeRecords(p.records ?? Buffer.alloc(0), { maxOutput: 64 << 20 }).records.map((r) => r.value?.toString() ?? '');
  });
}

async function until(what: string, cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('fetch read buffers are pooled and never reused while a write holds them (zero-copy)', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let b: TestBroker;
  let pool: ReadBufferPool;
  /** leases not released yet (the in-process broker's pool, watched through the prototypes) */
  const outstanding = new Set<ReadLease>();
  /** leases made so far */
  let leased = 0;

  before(async () => {
    const lease = Object.getOwnPropertyDescriptor(ReadBufferPool.prototype, 'lease')?.value as ReadBufferPool['lease'];
    const release = Object.getOwnPropertyDescriptor(ReadLease.prototype, 'release')?.value as ReadLease['release'];
    ReadBufferPool.prototype.lease = function (this: ReadBufferPool, bytes: number) {
      const l = lease.call(this, bytes);
      outstanding.add(l);
      leased++;
      return l;
    };
    ReadLease.prototype.release = function (this: ReadLease) {
      outstanding.delete(this);
      release.call(this);
    };
    cleanup.defer(() => {
      ReadBufferPool.prototype.lease = lease;
      ReadLease.prototype.release = release;
    });
    b = cleanup.add(
      await startTestBroker({
        'num.partitions': PARTITIONS,
        'gregor.fetch.zero.copy': 'true',
        'gregor.fetch.read.buffer.pool.bytes': String(64 << 20),
      }),
      (x) => x.stop(),
    );
    pool = (b.broker as unknown as { services: BrokerServices }).services.readBuffers;
    const c = cleanup.add(await RawClient.connect(b.bootstrap), (x) => x.destroy());
    await rawCreateTopics(c, [
      { name: 'pool-a', partitions: PARTITIONS },
      { name: 'pool-b', partitions: PARTITIONS },
    ]);
    await produce(c, 'pool-a', 'A');
    await produce(c, 'pool-b', 'B');
  });
  after(() => cleanup.run());

  it('a stalled reader gets exactly its bytes after other fetches of the same size reused the pool; its buffers go back once written', async () => {
    const fast = cleanup.add(await RawClient.connect(b.bootstrap), (x) => x.destroy());
    // warm the pool: two 8 MiB buffers, free again once the response is written
    await fast.send(1, FETCH_V, fetchAll('pool-b'));
    await fast.waitResponses(1, 60_000);
    expect(valuesIn(fast, 0)).to.deep.equal(expected('B'));
    await until('the warm-up response is written', () => outstanding.size === 0);
    expect(pool.idleBytes).to.equal(2 * (8 << 20));

    const slow = cleanup.add(await RawClient.connect(b.bootstrap), (x) => x.destroy());
    slow.socket.pause();
    const leasedBefore = leased;
    await slow.send(1, FETCH_V, fetchAll('pool-a'));
    // handled (both partitions read, from the two free buffers); the socket cannot take 12 MB from a client not reading
    await until('the stalled fetch read both partitions', () => leased === leasedBefore + PARTITIONS);
    await new Promise((r) => setTimeout(r, 200));
    const held = [...outstanding].map((l) => l.buf.buffer);

    // other fetches of the same read size while that write is pending (their own buffers, recycled)
    const heldDuring: ArrayBufferLike[][] = [];
    for (let i = 1; i <= 3; i++) {
      await fast.send(1, FETCH_V, fetchAll('pool-b'));
      await fast.waitResponses(i + 1, 60_000);
      expect(valuesIn(fast, i)).to.deep.equal(expected('B'));
      await until('the fast response is written', () => outstanding.size <= PARTITIONS, 10_000).catch(() => undefined);
      heldDuring.push([...outstanding].map((l) => l.buf.buffer));
    }
    expect(slow.responses, 'nothing of the stalled response was read yet').to.have.length(0);

    slow.socket.resume();
    await slow.waitResponses(1, 60_000);
    expect(valuesIn(slow, 0), 'the stalled response, byte for byte').to.deep.equal(expected('A'));
    // its buffers were leased all along, and nothing else was between the fast fetches
    expect(held).to.have.length(PARTITIONS);
    for (const h of heldDuring) expect(h).to.deep.equal(held);
    expect(pool.stats.reused, 'the fast fetches recycled their buffers').to.be.at.least(2 * PARTITIONS);
    await until('the stalled response is written and its buffers released', () => outstanding.size === 0);
  });

  it('a connection closed with a response unsent gives its buffers back', async () => {
    const slow = await RawClient.connect(b.bootstrap);
    slow.socket.pause();
    await slow.send(1, FETCH_V, fetchAll('pool-a'));
    await until('the stalled fetch holds its read buffers', () => outstanding.size === PARTITIONS);
    await new Promise((r) => setTimeout(r, 200));
    expect(outstanding.size, 'still held: its write is pending').to.equal(PARTITIONS);
    const before = pool.idleBytes;
    slow.destroy();
    await until('the closed connection released them', () => outstanding.size === 0);
    expect(pool.idleBytes).to.be.greaterThan(before);
  });

  it('gregor.fetch.zero.copy=false: responses copied once, read buffers not pooled (a new one per read)', async () => {
    const copy = cleanup.add(await startTestBroker({ 'num.partitions': PARTITIONS, 'gregor.fetch.zero.copy': 'false' }), (x) => x.stop());
    const copyPool = (copy.broker as unknown as { services: BrokerServices }).services.readBuffers;
    const c = cleanup.add(await RawClient.connect(copy.bootstrap), (x) => x.destroy());
    await rawCreateTopics(c, [{ name: 'pool-c', partitions: PARTITIONS }]);
    await produce(c, 'pool-c', 'C');
    // responses so far: CreateTopics and the Produces
    const base = c.responses.length;
    for (let i = 0; i < 2; i++) {
      await c.send(1, FETCH_V, fetchAll('pool-c'));
      await c.waitResponses(base + i + 1, 60_000);
      expect(valuesIn(c, base + i)).to.deep.equal(expected('C'));
    }
    expect(copyPool.maxBytes).to.equal(0);
    expect(copyPool.stats.reused).to.equal(0);
    expect(copyPool.idleBytes).to.equal(0);
    expect(outstanding.size, 'released at once after the copy').to.equal(0);
  });
});
