/**
 * A `gregor start` process stopped cleanly (SIGTERM: clean-shutdown marker, no recovery at the next
 * start) whose partitions lost their `leader-epoch-checkpoint` (deleted, or garbled) comes back with
 * the same leader epochs (issue 17, item 3): data written with kafkajs, the files damaged, the
 * broker started again and written to again by kafkajs (which opens the logs), one log line per
 * partition says the epochs were rebuilt from the batches, and after the next SIGTERM the
 * checkpoints hold what they held: epoch 0 from offset 0. Before the fix the log came back with no
 * epochs and the next append recorded epoch 0 as starting at the old log end (`0 150`), which a
 * follower's OffsetForLeaderEpoch would then be answered from. (A single node answers ListOffsets
 * and OffsetForLeaderEpoch of its current epoch 0 without the cache, so the wire shows no
 * difference there; the unit tests in test/lib/log/epoch-rebuild.test.ts check several epochs
 * through the log API.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { LEADER_EPOCH_CHECKPOINT } from '../../lib/log/checkpoint.js';
import { startChildBroker, tempDir, type ChildBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';

type Broker = ChildBroker & { output(): string };
const TOPIC = 'epochs';
const PARTITIONS = 2;

describe('leader-epoch-checkpoint lost on a cleanly stopped broker: rebuilt from the log at the next start', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let dataDir: string;
  let broker: Broker;

  const start = async (): Promise<void> => {
    broker = cleanup.add(await startChildBroker(dataDir, 0, { 'admin.listener': 'none' }), async (b) => {
      if (b.child.exitCode === null && b.child.signalCode === null) b.child.kill('SIGKILL');
      await b.exited;
    });
  };
  const stop = async (): Promise<void> => {
    broker.child.kill('SIGTERM');
    expect(await broker.exited, broker.output().slice(-3000)).to.equal(0);
  };
  const file = (p: number): string => path.join(dataDir, `${TOPIC}-${p}`, LEADER_EPOCH_CHECKPOINT);
  /** 30 requests of 10 records over both partitions; the log end moves by 150 on each. */
  const write = async (): Promise<void> => {
    const producer = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    for (let b = 0; b < 30; b++)
      await producer.send({
        topic: TOPIC,
        acks: -1,
        messages: Array.from({ length: 10 }, (_, i) => ({ partition: (b + i) % PARTITIONS, value: Buffer.alloc(100, b) })),
      });
    await producer.disconnect();
  };

  before(() => {
    dataDir = cleanup.add(tempDir('gregor-epoch-rebuild-'), (d) => fs.rmSync(d, { recursive: true, force: true }));
  });
  // a failed case leaves no broker running on the data dir for the next
  afterEach(async () => {
    if (broker.child.exitCode === null && broker.child.signalCode === null) {
      broker.child.kill('SIGKILL');
      await broker.exited;
    }
  });
  after(() => cleanup.run());

  it('writes with kafkajs over several segments: the checkpoints say epoch 0 from offset 0', async () => {
    await start();
    const admin = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({
      topics: [{ topic: TOPIC, numPartitions: PARTITIONS, configEntries: [{ name: 'segment.bytes', value: '8192' }] }],
    });
    await admin.disconnect();
    await write();
    await stop();
    expect([0, 1].map((p) => fs.readFileSync(file(p), 'utf8'))).to.deep.equal(['0\n1\n0 0\n', '0\n1\n0 0\n']);
    expect(fs.readdirSync(path.dirname(file(0))).filter((n) => n.endsWith('.log')).length).to.be.greaterThan(1);
  });

  for (const [what, damage] of [
    ['deleted', (f: string) => fs.rmSync(f)],
    ['garbled', (f: string) => fs.writeFileSync(f, '0\n1\n\u0000\u0007 x7\n')],
  ] as const) {
    it(`a checkpoint ${what} after SIGTERM: the next start rebuilds the epochs from the batches, and a new append keeps epoch 0 at offset 0`, async () => {
      damage(file(0));
      damage(file(1));
      await start();
      await write();
      const rebuilt = (): number =>
        broker
          .output()
          .split('\n')
          .filter((l) => l.includes("rebuilt the leader epochs from the log's batch headers")).length;
      for (let i = 0; i < 200 && rebuilt() < PARTITIONS; i++) await new Promise((r) => setTimeout(r, 25));
      expect(rebuilt(), broker.output().slice(-2000)).to.equal(PARTITIONS);
      expect(broker.output()).to.not.include('"msg":"log recovered"');
      await stop();
      expect([0, 1].map((p) => fs.readFileSync(file(p), 'utf8'))).to.deep.equal(['0\n1\n0 0\n', '0\n1\n0 0\n']);
    });
  }
});
