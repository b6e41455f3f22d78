/**
 * The cleaner considers every log, not only those opened since the start (issue 16): a compacted
 * topic written while the cleaner was off, then left alone after a restart (its logs are not
 * opened by any request), is cleaned from its summary. With two log.dirs each partition's dir
 * keeps its own cleaner-offset-checkpoint, as Kafka's do. Child broker, kafkajs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { type ChildBroker, startChildBroker, tempDir } from '../helpers/broker.js';
import { createCompacted, expectOnePerKey, writeDirty } from '../helpers/compacted.js';
import { until } from '../helpers/eos.js';

const { Kafka, logLevel } = kafkajs;

/** Bytes of a partition's live segments (`.log` files; swapped-out ones wait as `.deleted`). */
function logBytes(partitionDir: string): number {
  let n = 0;
  for (const f of fs.readdirSync(partitionDir)) if (f.endsWith('.log')) n += fs.statSync(path.join(partitionDir, f)).size;
  return n;
}

const count = (text: string, msg: string): number => text.split('\n').filter((l) => l.includes(`"msg":"${msg}"`)).length;

describe('log cleaner: logs not opened since a restart, a checkpoint per log dir (child broker, two log.dirs)', function () {
  this.timeout(120_000);
  const root = tempDir('gregor-clean-restart-');
  const dirs = ['a', 'b'].map((d) => path.join(root, d)) as [string, string];
  let b: (ChildBroker & { output(): string }) | null = null;
  const start = async (cleaner: boolean): Promise<ChildBroker & { output(): string }> => {
    b = await startChildBroker(dirs[0], 0, {
      'log.dirs': dirs.join(','),
      'log.cleaner.enable': String(cleaner),
      'log.cleaner.backoff.ms': '200',
    });
    return b;
  };
  const stop = async (): Promise<void> => {
    b?.child.kill('SIGTERM');
    expect(await b?.exited).to.equal(0);
    b = null;
  };
  after(async () => {
    if (b !== null) {
      b.child.kill('SIGKILL');
      await b.exited;
    }
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('a dirty compacted topic left alone after a restart is cleaned; each dir checkpoints its own partition', async () => {
    let broker = await start(false);
    const kafka = new Kafka({ clientId: 'cleaner-restart', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    const producer = kafka.producer();
    await admin.connect();
    await producer.connect();
    await createCompacted(admin, 'state', 2);
    const want = await writeDirty(producer, 'state', 2);
    await producer.disconnect();
    await admin.disconnect();
    await stop();
    // state-0 in the first dir, state-1 in the second (the dir with fewer partitions, the first on a tie)
    const partDirs = [path.join(dirs[0], 'state-0'), path.join(dirs[1], 'state-1')];
    expect(partDirs.map((d) => fs.existsSync(d))).to.deep.equal([true, true]);
    const before = partDirs.map(logBytes);

    // restarted with the cleaner on; nothing reads or writes the topic until it is cleaned
    broker = await start(true);
    const out = (): string => broker.output();
    await until(
      () => count(out(), 'cleaned log') >= 2,
      60_000,
      () => `both partitions to be cleaned:\n${out()}`,
    );
    expect(count(out(), 'opened a log not in use to clean it')).to.equal(2);
    const after = partDirs.map(logBytes);
    for (const [i, n] of after.entries()) expect(n, partDirs[i]).to.be.lessThan((before[i] as number) / 2);
    // The checkpoint is written after the cleaning is logged (tmp file, fsync, rename): wait for the
    // rename, then read each dir's for its own partition only. The first dirty offset is where the
    // active segment starts: the last record written.
    const checkpoint = (d: string): string | null => {
      const f = path.join(d, 'cleaner-offset-checkpoint');
      return fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : null;
    };
    const expected = dirs.map((_, i) => ['0', '1', `state ${i} ${(want[i]?.end ?? 0n) - 1n}`]);
    await until(
      () => dirs.every((d, i) => checkpoint(d)?.split('\n')[2] === expected[i]?.[2]),
      10_000,
      () =>
        `each dir's cleaner-offset-checkpoint to list its partition: ${dirs.map((d) => `${d}: ${JSON.stringify(checkpoint(d))}`).join('; ')}`,
    );
    for (const [i, d] of dirs.entries()) expect((checkpoint(d) ?? '').split('\n').slice(0, 3), d).to.deep.equal(expected[i]);
    for (const [p, w] of want.entries()) await expectOnePerKey(broker.bootstrap, 'state', p, w);
    await stop();
  });
});
