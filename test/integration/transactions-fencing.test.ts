/**
 * Zombie fencing through real clients (issue 11): producer A (transactional id X) begins a transaction
 * and writes; producer B initialises the same transactional id, which fences A and aborts A's open
 * transaction. A's further sends and its commit fail with the client's fenced error (librdkafka 2.15:
 * a fatal ERR__FENCED; kafkajs 2.2.4: INVALID_PRODUCER_EPOCH, as it knows no PRODUCER_FENCED), either
 * after one more send or straight at EndTxn. A read_committed reader never sees A's records (which
 * are in the log, read_uncommitted) and sees B's committed ones.
 * Fails (never skips) when @confluentinc/kafka-javascript is missing.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { observeRequests, readAllRdkafka, until } from '../helpers/eos.js';
import { RawClient, rawCreateTopics } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const kafkajs = require('kafkajs') as typeof import('kafkajs');

type Any = any;

const ERR__FENCED = -144;
const INVALID_PRODUCER_EPOCH = 47;

/** What each case does with the fenced producer A after B's initialisation. */
const CASES = [
  { name: 'A sends again, then commits', sendAfterFence: true },
  { name: 'A commits straight away (EndTxn with the old epoch)', sendAfterFence: false },
] as const;

/** The topic's values: read_committed and read_uncommitted (one partition). */
async function values(ck: Any, b: TestBroker, topic: string): Promise<{ committed: string[]; all: string[] }> {
  const committed = (await readAllRdkafka(ck, b.bootstrap, topic, 1, 'read_committed'))[0]!.map((r) => r.value);
  const all = (await readAllRdkafka(ck, b.bootstrap, topic, 1, 'read_uncommitted'))[0]!.map((r) => r.value);
  return { committed, all };
}

/** node-rdkafka-style callback → promise of the error (null when none). */
const errorOf = (f: (cb: (e: Any) => void) => void): Promise<Any> => new Promise((resolve) => f((e: Any) => resolve(e ?? null)));

describe('zombie fencing: a second producer with the same transactional id fences the first', function () {
  this.timeout(120_000);
  let ck: Any;
  let b: TestBroker;
  let raw: RawClient;
  const cleanup = new Cleanup();
  before(async () => {
    ck = loadConfluent();
    b = cleanup.add(await startTestBroker(), (t) => t.stop());
    raw = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
  });
  after(() => cleanup.run());

  /** InitProducerId requests with this transactional id (what fences). */
  function watchInits(txnId: string): { count: () => number; remove: () => void } {
    let n = 0;
    const h = observeRequests(b, 22, (r) => {
      if (r.transactionalId === txnId) n++;
    });
    return { count: () => n, remove: () => h.remove() };
  }

  for (const c of CASES) {
    it(`librdkafka 2.15: ${c.name} → fatal ERR__FENCED; A's records never visible, B's are`, async () => {
      const topic = `fence-rdk-${c.sendAfterFence ? 'send' : 'commit'}`;
      const txnId = `${topic}-txn`;
      await rawCreateTopics(raw, [{ name: topic, partitions: 1 }]);
      const mk = () => {
        const p = new ck.Producer({
          'bootstrap.servers': b.bootstrap,
          'transactional.id': txnId,
          dr_cb: true,
          'linger.ms': 0,
          log_level: 0,
        });
        p.setPollInterval(10);
        return p;
      };
      const A = mk();
      const B = mk();
      const reports: { value: string; code: number | null }[] = [];
      A.on('delivery-report', (e: Any, r: Any) => reports.push({ value: String(r?.opaque), code: e ? e.code : null }));
      const inits = watchInits(txnId);
      try {
        expect(await errorOf((cb) => A.connect({}, cb))).to.equal(null);
        expect(await errorOf((cb) => A.initTransactions(10_000, cb))).to.equal(null);
        expect(await errorOf((cb) => A.beginTransaction(cb))).to.equal(null);
        for (const v of ['a1', 'a2']) A.produce(topic, 0, Buffer.from(v), null, Date.now(), v);
        expect(await errorOf((cb) => A.flush(10_000, cb))).to.equal(null);
        await until(() => reports.length === 2, 10_000, 'delivery reports of a1, a2');
        expect(reports).to.deep.equal([
          { value: 'a1', code: null },
          { value: 'a2', code: null },
        ]);

        expect(await errorOf((cb) => B.connect({}, cb))).to.equal(null);
        expect(await errorOf((cb) => B.initTransactions(10_000, cb))).to.equal(null);
        expect(inits.count(), 'InitProducerId requests').to.be.at.least(2);

        if (c.sendAfterFence) {
          A.produce(topic, 0, Buffer.from('a3'), null, Date.now(), 'a3');
          await errorOf((cb) => A.flush(10_000, cb));
          await until(() => reports.length === 3, 10_000, 'delivery report of a3');
          expect(reports[2], "A's produce after the fence").to.deep.equal({ value: 'a3', code: INVALID_PRODUCER_EPOCH });
        }
        const commitErr = await errorOf((cb) => A.commitTransaction(10_000, cb));
        expect(commitErr, "A's commit").to.not.equal(null);
        expect({ code: commitErr.code, isFatal: commitErr.isFatal }, String(commitErr?.message)).to.deep.equal({
          code: ERR__FENCED,
          isFatal: true,
        });
        // fatal: the producer stays unusable
        const abortErr = await errorOf((cb) => A.abortTransaction(10_000, cb));
        expect(abortErr?.code).to.equal(ERR__FENCED);

        expect(await errorOf((cb) => B.beginTransaction(cb))).to.equal(null);
        for (const v of ['b1', 'b2']) B.produce(topic, 0, Buffer.from(v), null, Date.now(), v);
        expect(await errorOf((cb) => B.commitTransaction(10_000, cb))).to.equal(null);
      } finally {
        inits.remove();
        await Promise.all([A, B].map((p) => errorOf((cb) => (p.isConnected() ? p.disconnect(cb) : cb(null)))));
      }
      const v = await values(ck, b, topic);
      expect(v.committed, 'read_committed').to.deep.equal(['b1', 'b2']);
      expect(v.all, 'read_uncommitted: A was written, then aborted; a3 was refused').to.deep.equal(['a1', 'a2', 'b1', 'b2']);
    });
  }

  for (const c of CASES) {
    it(`kafkajs 2.2.4: ${c.name} → INVALID_PRODUCER_EPOCH; A's records never visible, B's are`, async () => {
      const topic = `fence-kjs-${c.sendAfterFence ? 'send' : 'commit'}`;
      const transactionalId = `${topic}-txn`;
      await rawCreateTopics(raw, [{ name: topic, partitions: 1 }]);
      const kafka = new kafkajs.Kafka({ brokers: [b.bootstrap], clientId: 'fence-kjs', logLevel: kafkajs.logLevel.NOTHING });
      const A = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
      const B = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
      const inits = watchInits(transactionalId);
      try {
        await A.connect();
        const ta = await A.transaction();
        await ta.send({
          topic,
          acks: -1,
          messages: [
            { value: 'a1', partition: 0 },
            { value: 'a2', partition: 0 },
          ],
        });

        await B.connect();
        const tb = await B.transaction(); // kafkajs initialises the transactional producer id here
        expect(inits.count(), 'InitProducerId requests').to.equal(2);

        if (c.sendAfterFence) {
          const sendErr = await ta.send({ topic, acks: -1, messages: [{ value: 'a3', partition: 0 }] }).then(
            () => null,
            (e: unknown) => e,
          );
          expect(sendErr, "A's send after the fence").to.not.equal(null);
          expect({ name: (sendErr as Any).name, type: (sendErr as Any).type, retriable: (sendErr as Any).retriable }).to.deep.equal({
            name: 'KafkaJSProtocolError',
            type: 'INVALID_PRODUCER_EPOCH',
            retriable: false,
          });
        }
        const commitErr = await ta.commit().then(
          () => null,
          (e: unknown) => e,
        );
        expect(commitErr, "A's commit").to.not.equal(null);
        expect({ name: (commitErr as Any).name, type: (commitErr as Any).type }).to.deep.equal({
          name: 'KafkaJSProtocolError',
          type: 'INVALID_PRODUCER_EPOCH',
        });

        await tb.send({
          topic,
          acks: -1,
          messages: [
            { value: 'b1', partition: 0 },
            { value: 'b2', partition: 0 },
          ],
        });
        await tb.commit();
      } finally {
        inits.remove();
        await A.disconnect();
        await B.disconnect();
      }
      const v = await values(ck, b, topic);
      expect(v.committed, 'read_committed').to.deep.equal(['b1', 'b2']);
      expect(v.all, 'read_uncommitted: A was written, then aborted; a3 was refused').to.deep.equal(['a1', 'a2', 'b1', 'b2']);
    });
  }
});
