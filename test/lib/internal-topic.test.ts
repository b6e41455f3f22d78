/**
 * InternalTopicOnFirstUse with a creation in two stages (the record stored, then the logs opened):
 * ensureStored() answers once the record is there, ensure() once the logs are; a failure is logged
 * once, answered COORDINATOR_NOT_AVAILABLE, and the next caller retries, waiting for the whole retry.
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

/** A topic whose every creation is a pair of deferreds the test settles: the record, then the logs. */
function staged() {
  const attempts: { stored: Deferred; opened: Deferred }[] = [];
  const lines: { msg: string; code: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(JSON.parse(chunk.toString()) as { msg: string; code: string });
      cb();
    },
  });
  const topic = new InternalTopicOnFirstUse({
    name: '__consumer_offsets',
    create: () => Promise.reject(new Error('the two-stage creation is used when given')),
    stage: async () => {
      const a = { stored: deferred(), opened: deferred() };
      attempts.push(a);
      await a.stored.promise;
      return { opened: a.opened.promise };
    },
    logger: pino({ level: 'error' }, sink),
    errorCode: 'GREGOR_ERR_GROUP_TOPIC',
  });
  return { topic, attempts, lines };
}

/** Whether `p` has settled after the pending microtasks and one macrotask have run. */
async function settled<T>(p: Promise<T>): Promise<{ done: boolean; value?: T }> {
  let out: { done: boolean; value?: T } = { done: false };
  void p.then((value) => (out = { done: true, value }));
  await new Promise((r) => setImmediate(r));
  return out;
}

describe('InternalTopicOnFirstUse: created in two stages', () => {
  it('ensureStored answers once the record is stored, ensure once the logs are open; both share one creation', async () => {
    const { topic, attempts } = staged();
    const found = topic.ensureStored();
    const written = topic.ensure();
    expect(attempts).to.have.length(1);
    expect((await settled(found)).done).to.equal(false);

    attempts[0]?.stored.resolve();
    expect(await settled(found)).to.deep.equal({ done: true, value: ErrorCode.NONE });
    expect((await settled(written)).done, 'a write waits for the logs').to.equal(false);
    expect(topic.isReady).to.equal(false);

    attempts[0]?.opened.resolve();
    expect(await settled(written)).to.deep.equal({ done: true, value: ErrorCode.NONE });
    expect(topic.isReady).to.equal(true);
    expect(await topic.ensureStored()).to.equal(ErrorCode.NONE);
    expect(attempts).to.have.length(1);
  });

  it('logs that fail to open: logged once, COORDINATOR_NOT_AVAILABLE to the waiting write, and the next FindCoordinator waits for the whole retry', async () => {
    const { topic, attempts, lines } = staged();
    const found = topic.ensureStored();
    const written = topic.ensure();
    attempts[0]?.stored.resolve();
    expect(await found).to.equal(ErrorCode.NONE);
    attempts[0]?.opened.reject(new Error('disk full'));
    expect(await written).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(lines.map((l) => [l.msg, l.code])).to.deep.equal([['creating __consumer_offsets failed', 'GREGOR_ERR_GROUP_TOPIC']]);

    const retry = topic.ensureStored();
    expect(attempts).to.have.length(2);
    attempts[1]?.stored.resolve();
    expect((await settled(retry)).done, 'after a failure the record alone does not answer').to.equal(false);
    attempts[1]?.opened.resolve();
    expect(await retry).to.equal(ErrorCode.NONE);
    expect(topic.isReady).to.equal(true);
    expect(lines).to.have.length(1);
  });

  it('a record that cannot be stored: both callers get COORDINATOR_NOT_AVAILABLE, logged once', async () => {
    const { topic, attempts, lines } = staged();
    const found = topic.ensureStored();
    const written = topic.ensure();
    attempts[0]?.stored.reject(new Error('metadata write failed'));
    expect(await found).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(await written).to.equal(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(lines).to.have.length(1);
    expect(topic.isReady).to.equal(false);
  });

  it('a creation in one stage (no `opened`) serves both waits when it resolves', async () => {
    let done!: () => void;
    const topic = new InternalTopicOnFirstUse({
      name: '__transaction_state',
      create: () => new Promise<void>((r) => (done = r)),
      logger: pino({ level: 'silent' }),
      errorCode: 'GREGOR_ERR_TXN_TOPIC',
    });
    const found = topic.ensureStored();
    expect((await settled(found)).done).to.equal(false);
    const written = topic.ensure();
    expect((await settled(written)).done).to.equal(false);
    done();
    expect(await found).to.equal(ErrorCode.NONE);
    expect(await written).to.equal(ErrorCode.NONE);
    expect(topic.isReady).to.equal(true);
  });
});
