/**
 * InternalTopicOnFirstUse: ensure() waits for the creation, ensureStarted() (a one-node
 * FindCoordinator) only starts it; a failure is logged once and answered COORDINATOR_NOT_AVAILABLE,
 * and the next caller retries, ensureStarted() then waiting for the retry.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { InternalTopicOnFirstUse } from '../../lib/internal-topic.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: Error) => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A topic whose every creation is a deferred the test settles; the error lines it logs. */
function topicUnderTest() {
  const creations: Deferred[] = [];
  const lines: { msg: string; code: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(JSON.parse(chunk.toString()) as { msg: string; code: string });
      cb();
    },
  });
  const topic = new InternalTopicOnFirstUse({
    name: '__consumer_offsets',
    create: () => {
      const d = deferred();
      creations.push(d);
      return d.promise;
    },
    logger: pino({ level: 'error' }, sink),
    errorCode: 'GREGOR_ERR_GROUP_TOPIC',
  });
  return { topic, creations, lines };
}

/** Whether `p` has settled once the pending microtasks and a macrotask have run. */
async function settled<T>(p: Promise<T>): Promise<{ done: boolean; value?: T }> {
  let out: { done: boolean; value?: T } = { done: false };
  void p.then((value) => (out = { done: true, value }));
  await new Promise((r) => setImmediate(r));
  return out;
}

describe('InternalTopicOnFirstUse: created on first use', () => {
  it('ensureStarted answers NONE at once and starts the creation; ensure waits for it; one creation serves both', async () => {
    const { topic, creations } = topicUnderTest();
    expect(await topic.ensureStarted()).to.equal(ErrorCode.NONE);
    expect(creations, 'started').to.have.length(1);
    const written = topic.ensure();
    expect((await settled(written)).done, 'a write waits for the topic').to.equal(false);
    expect(topic.isReady).to.equal(false);

    creations[0]?.resolve();
    expect(await settled(written)).to.deep.equal({ done: true, value: ErrorCode.NONE });
    expect(topic.isReady).to.equal(true);
    expect(await topic.ensureStarted()).to.equal(ErrorCode.NONE);
    expect(creations).to.have.length(1);
  });

  it('a failed creation: logged once, COORDINATOR_NOT_AVAILABLE to the waiting writes, and the next ensureStarted waits for the retry', async () => {
    const { topic, creations, lines } = topicUnderTest();
    expect(await topic.ensureStarted()).to.equal(ErrorCode.NONE);
    const w1 = topic.ensure();
    const w2 = topic.ensure();
    creations[0]?.reject(new Error('disk full'));
    expect(await w1).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(await w2).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(lines.map((l) => [l.msg, l.code])).to.deep.equal([['creating __consumer_offsets failed', 'GREGOR_ERR_GROUP_TOPIC']]);

    const retry = topic.ensureStarted();
    expect(creations, 'the retry started').to.have.length(2);
    expect((await settled(retry)).done, 'after a failure FindCoordinator waits').to.equal(false);
    creations[1]?.reject(new Error('still full'));
    expect(await retry).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);

    const third = topic.ensureStarted();
    expect(creations).to.have.length(3);
    creations[2]?.resolve();
    expect(await third).to.equal(ErrorCode.NONE);
    expect(topic.isReady).to.equal(true);
    expect(lines).to.have.length(2);
    // once made, FindCoordinator answers at once again
    expect(await topic.ensureStarted()).to.equal(ErrorCode.NONE);
  });

  it('settled (shutdown waits on it) resolves once the creation in flight has ended, either way, and at once when none is', async () => {
    const { topic, creations } = topicUnderTest();
    expect((await settled(topic.settled())).done, 'none in flight').to.equal(true);
    await topic.ensureStarted();
    const first = topic.settled();
    expect((await settled(first)).done).to.equal(false);
    creations[0]?.reject(new Error('disk full'));
    expect((await settled(first)).done, 'after a failure').to.equal(true);
    const retry = topic.ensureStarted(); // waits for the retry, after a failure
    const second = topic.settled();
    expect((await settled(second)).done).to.equal(false);
    creations[1]?.resolve();
    expect((await settled(second)).done, 'after a success').to.equal(true);
    expect(await retry).to.equal(ErrorCode.NONE);
  });

  it('markReady (the topic existed at start): neither call creates anything', async () => {
    const { topic, creations } = topicUnderTest();
    topic.markReady();
    expect(await topic.ensure()).to.equal(ErrorCode.NONE);
    expect(await topic.ensureStarted()).to.equal(ErrorCode.NONE);
    expect(creations).to.have.length(0);
  });
});
