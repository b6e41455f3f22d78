/**
 * A guard the soak (compat/soak) suggested: the soak's broker holds descriptors on `.deleted`
 * segment files while log.segment.delete.delay.ms runs (the cleaner swaps segments out every few
 * seconds there), so its fd count climbs for the first minute; this checks they are all given back
 * once the delay has passed, also when the same base offset is cleaned again within the delay (a
 * second `.deleted` file takes the first one's name).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { sleep, until } from '../helpers/eos.js';

const { Kafka, logLevel } = kafkajs;

/** This process's descriptors on files under `dir`, as their link targets. */
function fdsUnder(dir: string): string[] {
  const out: string[] = [];
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) out.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

describe('log cleaner: swapped-out segments release their descriptors', function () {
  this.timeout(120_000);
  let b: TestBroker | null = null;
  after(async () => b?.stop());

  it('no descriptor stays on a .deleted or unlinked segment file after repeated cleanings', async () => {
    b = await startTestBroker({ 'log.cleaner.backoff.ms': 100, 'log.segment.delete.delay.ms': 300 });
    const kafka = new Kafka({ clientId: 'cleaner-fds', brokers: [b.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        {
          topic: 'compacted',
          numPartitions: 1,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'segment.bytes', value: '4096' },
            { name: 'min.cleanable.dirty.ratio', value: '0.01' },
          ],
        },
      ],
    });
    const producer = kafka.producer();
    await producer.connect();
    const cleaner = b.broker.cleaner;
    if (cleaner === null) throw new Error('the broker has no log cleaner');
    for (let round = 0; round < 40 && cleaner.stats.cleanings < 8; round++) {
      await producer.send({
        topic: 'compacted',
        messages: Array.from({ length: 40 }, (_, i) => ({ key: `k${i % 20}`, value: `r${round}-${i}`.padEnd(60, '.') })),
      });
      await sleep(150);
    }
    await producer.disconnect();
    expect(cleaner.stats.cleanings).to.be.at.least(8);
    const topicDir = path.join(b.dataDir, 'compacted-0');
    // past file.delete.delay.ms, every swapped-out segment is unlinked and its descriptor closed
    await until(
      () => Promise.resolve(fdsUnder(topicDir).every((f) => f.endsWith('.log'))),
      10_000,
      'no descriptor on a deleted segment',
    ).catch(() => undefined);
    const stale = fdsUnder(topicDir).filter((f) => !f.endsWith('.log'));
    expect(stale, stale.join('\n')).to.deep.equal([]);
    // the live segments' files, each once
    const live = fdsUnder(topicDir);
    expect(new Set(live).size).to.equal(live.length);
    for (const f of live) expect(fs.existsSync(f), f).to.equal(true);
    await admin.disconnect();
  });
});
