/**
 * Recovery after an unclean shutdown happens after ready (issue 14): the logs to recover (those in
 * the open journal) are not opened at start; each is recovered by its first use or by the log
 * manager's background pass, and answers no offsets before that. A produce to a log not recovered
 * yet lands after its recovered tail; a shutdown before every log was recovered leaves no
 * clean-shutdown marker, so the next start recovers them. Last, the same through a broker process
 * killed with SIGKILL: every partition written, torn tails, a corrupt partition that cannot recover.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { BrokerConfig } from '../../../lib/config.js';
import { CLEAN_SHUTDOWN_MARKER } from '../../../lib/log/log-manager.js';
import { type ChildBroker, startChildBroker } from '../../helpers/broker.js';
import { LIST_OFFSETS_V, RawClient, rawCreateTopics, rawFetch, rawListOffset, rawProduce } from '../../helpers/raw-client.js';
import { captureLog, config, expectLogError, readAll, rmDir, tearTail, tmpDir, v2, managerRuns } from './helpers.js';
import { createRequire } from 'node:module';
import { loadConfluent } from '../../../compat/lib/confluent-module.js';
import { asError } from '../../../lib/as-error.js';

/** The part of librdkafka's KafkaConsumer (@confluentinc/kafka-javascript, loaded at run time) used here. */
interface RdConsumer {
  connect(opts: { timeout: number }, cb: (e: unknown) => void): void;
  assign(tps: { topic: string; partition: number; offset: number }[]): void;
  consume(n: number, cb: (e: unknown, m: { partition: number; offset: number; value: Buffer }[]) => void): void;
  disconnect(cb: () => void): void;
}

const require = createRequire(import.meta.url);
const broker = new BrokerConfig({ overrides: { 'log.retention.bytes': '-1' } });
const PID = { producerId: 777n, producerEpoch: 0 };

/** An idempotent batch of `n` records at sequence `seq`. */
const idem = (seq: number, n = 3): Buffer =>
  v2(n, { producerId: PID.producerId, producerEpoch: PID.producerEpoch, baseSequence: seq, prefix: `s${seq}` });

describe('lib/log recovery after ready', () => {
  const runs = managerRuns('lazy-recovery', broker);
  const open = runs.open;
  /** The crash of a run: its manager is dropped without a shutdown. */
  const crash = runs.crash;

  /** A clean run, then a run that writes 4 idempotent batches (12 records) to each partition and dies with partition 0's last batch torn. */
  async function crashedWithTornTail(partitions: number[]): Promise<void> {
    let mgr = await open();
    await mgr.shutdown();
    mgr = await open();
    for (const p of partitions) {
      const log = await mgr.getOrCreate('t', p, config());
      for (let i = 0; i < 4; i++) await log.appendAsync(idem(i * 3), { leaderEpoch: 0 });
      await log.flush();
    }
    tearTail(path.join(runs.dir, 't-0'), idem(9).length);
    crash(mgr);
  }

  it('a log to recover answers no offsets before its recovery; a produce to it lands after the recovered tail', async () => {
    await crashedWithTornTail([0, 1]);
    const c = captureLog();
    const mgr = await open(c.logger);
    expect(mgr.hadCleanShutdown).to.equal(false);
    const log = mgr.attach('t', 0, config());
    const other = mgr.attach('t', 1, config());
    expect([log.servable, log.isOpen, mgr.recovering]).to.deep.equal([false, false, true]);
    expect(c.lines, 'nothing recovered at start').to.not.include('truncating log tail');
    // no figure from an unrecovered log: a retriable error (and the recovery starts)
    expectLogError(() => log.logEndOffset, ErrorCode.REQUEST_TIMED_OUT);
    expectLogError(() => log.latestEpoch, ErrorCode.REQUEST_TIMED_OUT);
    // the produce waits for the recovery: the torn batch (offsets 9-11) is cut, the new one takes 9
    const r = await log.appendAsync(idem(9), { leaderEpoch: 0 });
    expect(c.lines).to.include('truncating log tail');
    expect([r.info.firstOffset, log.logEndOffset]).to.deep.equal([9n, 12n]);
    // the producer state came back from the recovered log: a retry of batch 6 is a duplicate
    const dup = await log.appendAsync(idem(6), { leaderEpoch: 0 });
    expect([dup.info.firstOffset, dup.info.recordCount]).to.deep.equal([6n, 0]);
    expect((await readAll(log)).length).to.equal(4);
    // partition 1 still waits
    expect([mgr.recovering, other.servable, other.isOpen]).to.deep.equal([true, false, false]);
  });

  it('the background pass recovers every log to recover; the others stay closed', async () => {
    await crashedWithTornTail([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const mgr = await open();
    const logs = Array.from({ length: 10 }, (_, p) => mgr.attach('t', p, config()));
    const untouched = mgr.attach('t', 10, config());
    expect(logs.every((l) => !l.servable)).to.equal(true);
    await mgr.startRecovery(3);
    expect(mgr.recovering).to.equal(false);
    expect(logs.map((l) => [l.isOpen, l.logEndOffset])).to.deep.equal(logs.map((_, p) => [true, p === 0 ? 9n : 12n]));
    expect([untouched.servable, untouched.isOpen, untouched.logEndOffset]).to.deep.equal([true, false, 0n]);
  });

  it('a shutdown before every log was recovered writes no clean-shutdown marker: the next start recovers them', async () => {
    await crashedWithTornTail([0, 1, 2]);
    let mgr = await open();
    const first = mgr.attach('t', 1, config());
    for (const p of [0, 2]) mgr.attach('t', p, config());
    await first.open();
    expect(first.logEndOffset).to.equal(12n);
    await mgr.shutdown();
    expect(fs.existsSync(path.join(runs.dir, CLEAN_SHUTDOWN_MARKER))).to.equal(false);

    mgr = await open();
    expect(mgr.hadCleanShutdown).to.equal(false);
    const logs = [0, 1, 2].map((p) => mgr.attach('t', p, config()));
    expect(logs.map((l) => l.servable)).to.deep.equal([false, false, false]);
    await mgr.startRecovery();
    expect(logs.map((l) => l.logEndOffset)).to.deep.equal([9n, 12n, 12n]);
    await mgr.shutdown();
    expect(fs.existsSync(path.join(runs.dir, CLEAN_SHUTDOWN_MARKER))).to.equal(true);

    // all recovered: a clean start serves them from their summaries
    mgr = await open();
    const again = [0, 1, 2].map((p) => mgr.attach('t', p, config()));
    expect(again.map((l) => [l.servable, l.isOpen, l.logEndOffset])).to.deep.equal([
      [true, false, 9n],
      [true, false, 12n],
      [true, false, 12n],
    ]);
  });
});

describe('lib/log recovery after ready in a broker process', function () {
  this.timeout(120_000);
  const PARTITIONS = 300;
  let dataDir: string;
  let b: ChildBroker | null = null;
  beforeEach(() => {
    dataDir = fs.realpathSync(tmpDir('lazy-recovery-broker'));
  });
  afterEach(async () => {
    if (b !== null && b.child.exitCode === null && b.child.signalCode === null) {
      b.child.kill('SIGKILL');
      await b.exited;
    }
    b = null;
    rmDir(dataDir);
  });

  async function listAll(c: RawClient): Promise<{ partitionIndex: number; errorCode: number; offset: bigint }[]> {
    const res = await c.request<{ topics: { partitions: { partitionIndex: number; errorCode: number; offset: bigint }[] }[] }>(
      2,
      LIST_OFFSETS_V,
      {
        replicaId: -1,
        isolationLevel: 0,
        topics: [
          {
            name: 'wide',
            partitions: Array.from({ length: PARTITIONS }, (_, partitionIndex) => ({
              partitionIndex,
              currentLeaderEpoch: -1,
              timestamp: -1n,
            })),
          },
        ],
      },
      60_000,
    );
    return res.topics[0]?.partitions ?? [];
  }

  it(`kill -9 after writing all ${PARTITIONS} partitions: ready at once, a torn partition recovers on first use, a corrupt one goes offline alone`, async () => {
    b = await startChildBroker(dataDir);
    let c = await RawClient.connect(b.bootstrap);
    await rawCreateTopics(c, [{ name: 'wide', partitions: PARTITIONS }]);
    const one = v2(1, { prefix: 'all' });
    const all: [number, Buffer][] = Array.from({ length: PARTITIONS }, (_, p) => [p, one]);
    for (const r of await rawProduce(c, 'wide', all)) expect(r.errorCode).to.equal(0);
    // partition 7 gets a second batch, which the crash tears; partition 9 gets a second segment
    // file that overlaps the first (corruption that recovery must refuse to cut)
    const second = v2(2, { prefix: 'second' });
    for (const r of await rawProduce(c, 'wide', [
      [7, second],
      [9, second],
    ]))
      expect(r.errorCode).to.equal(0);
    expect(await rawListOffset(c, 'wide', 7)).to.equal(3n);
    c.destroy();
    b.child.kill('SIGKILL');
    await b.exited;
    tearTail(path.join(dataDir, 'wide-7'), second.length);
    const p9 = path.join(dataDir, 'wide-9');
    fs.copyFileSync(path.join(p9, '00000000000000000000.log'), path.join(p9, '00000000000000000001.log'));

    // the old start recovered every log before ready, and failed on partition 9
    b = await startChildBroker(dataDir);
    c = await RawClient.connect(b.bootstrap);
    // a produce to the torn partition lands after its recovered tail (the whole first batch)
    const after = await rawProduce(c, 'wide', [[7, v2(1, { prefix: 'after' })]]);
    expect([after[0]?.errorCode, after[0]?.baseOffset]).to.deep.equal([0, 1n]);
    const f = await rawFetch(c, 'wide', 7, 0n, { maxWaitMs: 0 });
    expect([f.errorCode, f.highWatermark]).to.deep.equal([0, 2n]);
    // first use by off-the-shelf clients: kafkajs produces to partition 3, librdkafka reads partition 5
    const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');
    const producer = new Kafka({ brokers: [b.bootstrap], logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    const sent = await producer.send({ topic: 'wide', acks: -1, messages: [{ partition: 3, value: 'kafkajs after the crash' }] });
    await producer.disconnect();
    expect(sent.map((r) => [r.partition, r.errorCode, r.baseOffset])).to.deep.equal([[3, 0, '1']]);
    const rd = loadConfluent() as { KafkaConsumer: new (conf: object, topicConf: object) => RdConsumer };
    const consumer = new rd.KafkaConsumer({ 'bootstrap.servers': b.bootstrap, 'group.id': 'lazy-recovery', log_level: 0 }, {});
    await new Promise<void>((resolve, reject) =>
      consumer.connect({ timeout: 10_000 }, (e: unknown) => (e ? reject(asError(e)) : resolve())),
    );
    consumer.assign([{ topic: 'wide', partition: 5, offset: 0 }]);
    const read: { partition: number; offset: number; value: string }[] = [];
    const deadline = Date.now() + 10_000;
    while (read.length === 0 && Date.now() < deadline) {
      const batch = await new Promise<{ partition: number; offset: number; value: Buffer }[]>((resolve, reject) =>
        consumer.consume(10, (e: unknown, m: { partition: number; offset: number; value: Buffer }[]) =>
          e ? reject(asError(e)) : resolve(m),
        ),
      );
      for (const m of batch) read.push({ partition: m.partition, offset: m.offset, value: m.value.toString() });
    }
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
    expect(read.map((m) => [m.partition, m.offset, m.value.startsWith('all')])).to.deep.equal([[5, 0, true]]);
    const got = await listAll(c);
    expect(got).to.have.length(PARTITIONS);
    for (const p of got) {
      const want =
        p.partitionIndex === 9
          ? { errorCode: ErrorCode.KAFKA_STORAGE_ERROR, offset: -1n }
          : { errorCode: 0, offset: p.partitionIndex === 7 || p.partitionIndex === 3 ? 2n : 1n };
      expect({ errorCode: p.errorCode, offset: p.offset }, `partition ${p.partitionIndex}`).to.deep.equal(want);
    }
    expect((await rawFetch(c, 'wide', 9, 0n, { maxWaitMs: 0 })).errorCode).to.equal(ErrorCode.KAFKA_STORAGE_ERROR);
    // the metrics leave the offline partition out (it has no offsets to show) and show the others
    const metrics = await fetch(`http://${b.admin ?? ''}/metrics`);
    expect(metrics.status).to.equal(200);
    const text = await metrics.text();
    expect(text).to.include('kafka_log_log_logendoffset{topic="wide",partition="7"} 2');
    expect(text).to.not.include('kafka_log_log_logendoffset{topic="wide",partition="9"}');
    c.destroy();
    b.child.kill('SIGTERM');
    expect(await b.exited).to.equal(0);
  });
});
