/**
 * compat/bench/native/rdkafka-consume.c through NativeConsumer.timed() against a real gregor: the time
 * to the first record delivered (what consume-trees splits a run by) comes before the last record's,
 * both within the run, and is -1 when no record arrives.
 */
import { expect } from 'chai';
import { librdkafkaMissing } from '../../compat/bench/native-build.js';
import { startNativeConsumer, startNativeProducer } from '../../compat/bench/native-producer.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawClient, rawCreateTopics } from '../helpers/raw-client.js';

describe('native C consumer: time to the first record', function () {
  this.timeout(120_000);
  let b: TestBroker | undefined;

  before(async function () {
    const missing = librdkafkaMissing();
    if (missing !== null) {
      // the C programs link the librdkafka that scripts/setup-test-deps.sh builds; without it they cannot run
      this.skip();
    }
    b = await startTestBroker();
    const admin = await RawClient.connect(b.bootstrap);
    try {
      await rawCreateTopics(admin, [
        { name: 'timing-full', partitions: 1 },
        { name: 'timing-empty', partitions: 1 },
      ]);
    } finally {
      admin.destroy();
    }
  });

  after(async () => {
    await b?.stop();
  });

  it('delivers the first record before the last one, after the assign, over many fetches', async () => {
    const bootstrap = (b as TestBroker).bootstrap;
    // 50 batches of 100 records; the consumer asks for ~2 KB per partition, so each Fetch returns one batch
    const p = await startNativeProducer(bootstrap, 'timing-full', 0, 5000, 1, {
      'linger.ms': 0,
      'batch.num.messages': 100,
      'request.required.acks': -1,
    });
    const pr = await p.timed();
    await p.end();
    expect(pr.failed).to.equal(0);
    const c = await startNativeConsumer(bootstrap, 'timing-full', 1, { 'fetch.message.max.bytes': 2000, 'fetch.wait.max.ms': 10 });
    const r = await c.timed();
    await c.end();
    expect(r.records).to.equal(5000);
    expect(r.secondsToFirst).to.be.greaterThan(0);
    expect(r.secondsToFirst).to.be.lessThan(r.seconds);
    expect(r.seconds).to.be.at.most(r.secondsToEof);
  });

  it('reports -1 when the partition holds no record', async () => {
    const c = await startNativeConsumer((b as TestBroker).bootstrap, 'timing-empty', 1, { 'fetch.wait.max.ms': 10 });
    const r = await c.timed();
    await c.end();
    expect(r.records).to.equal(0);
    expect(r.secondsToFirst).to.equal(-1);
  });
});
