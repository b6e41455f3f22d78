/**
 * A producer with acks=0 that flushes and disconnects at once (a CLI tool, a short-lived job): its
 * Produce requests reach the broker, possibly together with the FIN. Kafka handles every request it
 * has read even when the connection is gone; gregor used to drop the requests still queued behind the
 * one in flight when the peer closed, and librdkafka's one-request-per-partition produce lost the
 * records of every partition but the first (found by the compat suite's acks-0 scenario).
 */
import { expect } from 'chai';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { asError } from '../../lib/as-error.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { RawClient, rawCreateTopics, rawListOffset } from '../helpers/raw-client.js';

type Any = any;

const PARTITIONS = 4;
const PER_PARTITION = 6;

function cb(fn: (done: (err: Any) => void) => void): Promise<void> {
  return new Promise((resolve, reject) =>
    fn((err: Any) => {
      if (err) reject(asError(err));
      else resolve();
    }),
  );
}

describe('acks=0 producer that disconnects right after flushing (librdkafka)', function () {
  this.timeout(60_000);
  const cleanup = new Cleanup();
  let b: TestBroker;
  let c: RawClient;

  before(async () => {
    b = cleanup.add(await startTestBroker(), (t) => t.stop());
    c = cleanup.add(await RawClient.connect(b.bootstrap), (x) => x.destroy());
  });
  after(() => cleanup.run());

  it(`every partition gets its ${PER_PARTITION} records, five rounds in a row`, async () => {
    const ck = loadConfluent();
    for (let round = 0; round < 5; round++) {
      const topic = `acks0-disconnect-${round}`;
      await rawCreateTopics(c, [{ name: topic, partitions: PARTITIONS }]);
      const p = new ck.Producer({ 'bootstrap.servers': b.bootstrap, acks: 0, 'linger.ms': 5, log_level: 0 });
      await cb((d) => p.connect({ timeout: 10000 }, d));
      for (let i = 0; i < PARTITIONS * PER_PARTITION; i++)
        p.produce(topic, i % PARTITIONS, Buffer.from(`r${round}-${i}`), null, Date.now());
      await cb((d) => p.flush(10000, d));
      await cb((d) => p.disconnect(d));
      // the broker may still be appending what it read before the FIN: wait for it, then demand all
      const deadline = Date.now() + 5000;
      let ends: bigint[];
      for (;;) {
        ends = [];
        for (let part = 0; part < PARTITIONS; part++) ends.push(await rawListOffset(c, topic, part));
        if (ends.every((e) => e === BigInt(PER_PARTITION)) || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(ends, `round ${round}: log end offsets`).to.deep.equal(Array.from({ length: PARTITIONS }, () => BigInt(PER_PARTITION)));
    }
  });
});
