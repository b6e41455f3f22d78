/**
 * Several log dirs: a new partition goes to the dir with the fewest partitions (the earlier one on
 * a tie), each dir keeps its own checkpoint and marker, a restart finds every partition where it
 * is (a dir added since takes the next ones), deletion works in whichever dir, a partition
 * directory in two dirs stops the start, and meta.properties ties every dir to its cluster and node.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { BrokerConfig } from '../../../lib/config.js';
import { META_PROPERTIES, LogDirError, checkLogDirIdentity } from '../../../lib/log/log-dir-identity.js';
import { CLEAN_SHUTDOWN_MARKER } from '../../../lib/log/log-manager.js';
import { LogManager } from '../../../lib/log/log-dirs.js';
import { SUMMARY_CHECKPOINT } from '../../../lib/log/log-summary.js';
import { captureLog, config, rmDir, tmpDir, v2 } from './helpers.js';

describe('lib/log several log dirs', () => {
  let root: string;
  let dirs: string[];
  const broker = new BrokerConfig({ overrides: {} });
  const quiet = captureLog().logger;
  beforeEach(() => {
    root = tmpDir('logdirs');
    dirs = ['a', 'b', 'c'].map((n) => path.join(root, n));
  });
  afterEach(() => rmDir(root));

  const dirsOf = (mgr: LogManager, topic: string, n: number): (string | undefined)[] =>
    Array.from({ length: n }, (_, p) => mgr.dirOf(topic, p)).map((d) => (d === undefined ? undefined : path.basename(d)));

  it('places new partitions on the dir with the fewest, keeps them there across a restart, and a dir added later takes the next ones', async () => {
    let mgr = await LogManager.open(dirs.slice(0, 2), broker, quiet);
    for (let p = 0; p < 4; p++) mgr.attach('t', p, config());
    expect(dirsOf(mgr, 't', 4)).to.deep.equal(['a', 'b', 'a', 'b']);
    // only t-1 is written: the others have no directory, their dir is kept by that dir's checkpoint
    await (await mgr.getOrCreate('t', 1, config())).append(v2(3), { leaderEpoch: 0 }).written;
    expect(fs.existsSync(path.join(dirs[1] as string, 't-1'))).to.equal(true);
    expect(fs.existsSync(path.join(dirs[0] as string, 't-1'))).to.equal(false);
    await mgr.shutdown();
    for (const d of dirs.slice(0, 2)) {
      expect(fs.existsSync(path.join(d, CLEAN_SHUTDOWN_MARKER)), d).to.equal(true);
      expect(fs.readFileSync(path.join(d, SUMMARY_CHECKPOINT), 'utf8').split('\n').length - 3, d).to.equal(2); // two partitions each
    }

    mgr = await LogManager.open(dirs, broker, quiet);
    expect(mgr.recovering).to.equal(false); // the two dirs were shut down cleanly, the new one is empty
    expect(dirsOf(mgr, 't', 4)).to.deep.equal(['a', 'b', 'a', 'b']);
    expect(mgr.attach('t', 1, config()).logEndOffset).to.equal(3n);
    for (let p = 0; p < 3; p++) mgr.attach('n', p, config());
    // counts a=2 b=2 c=0: c until it has as many, then the first of the least
    expect(dirsOf(mgr, 'n', 3)).to.deep.equal(['c', 'c', 'a']);
    expect(mgr.partitionsByDir().get(dirs[2] as string)).to.deep.equal([
      { topic: 'n', partition: 0 },
      { topic: 'n', partition: 1 },
    ]);

    await (await mgr.getOrCreate('n', 0, config())).append(v2(1), { leaderEpoch: 0 }).written;
    await mgr.deleteTopic('t');
    await mgr.deletePartition('n', 0);
    expect(dirsOf(mgr, 't', 4)).to.deep.equal([undefined, undefined, undefined, undefined]);
    expect(fs.existsSync(path.join(dirs[1] as string, 't-1'))).to.equal(false);
    expect(fs.existsSync(path.join(dirs[2] as string, 'n-0'))).to.equal(false);
    // a=1 (n-2) b=0 c=1 (n-1): the next goes to b
    mgr.attach('m', 0, config());
    expect(mgr.dirOf('m', 0)).to.equal(dirs[1]);
    await mgr.shutdown();
  });

  it('refuses to start when a partition directory is in two log dirs', async () => {
    const mgr = await LogManager.open(dirs.slice(0, 2), broker, quiet);
    await (await mgr.getOrCreate('t', 0, config())).append(v2(1), { leaderEpoch: 0 }).written;
    await mgr.shutdown();
    fs.cpSync(path.join(dirs[0] as string, 't-0'), path.join(dirs[1] as string, 't-0'), { recursive: true });
    const err = await LogManager.open(dirs.slice(0, 2), broker, quiet).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(LogDirError);
    expect((err as LogDirError).code).to.equal('GREGOR_ERR_LOG_DIR_DUPLICATE');
    expect((err as Error).message)
      .to.include('t-0')
      .and.include(dirs[0])
      .and.include(dirs[1]);
  });

  it('meta.properties: written in every dir, checked at the next start (another cluster or node id, or a foreign dir with partitions, is refused)', async () => {
    await checkLogDirIdentity(dirs, 'cluster-A', 3);
    for (const d of dirs) {
      const text = fs.readFileSync(path.join(d, META_PROPERTIES), 'utf8');
      expect(text)
        .to.match(/^cluster\.id=cluster-A$/m)
        .and.match(/^node\.id=3$/m)
        .and.match(/^version=1$/m)
        .and.match(/^directory\.id=\S{22}$/m);
    }
    await checkLogDirIdentity(dirs, 'cluster-A', 3); // the same broker again
    const refused = async (ds: string[], cluster: string, node: number): Promise<LogDirError> => {
      const e = await checkLogDirIdentity(ds, cluster, node).then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).to.be.instanceOf(LogDirError);
      return e as LogDirError;
    };
    let e = await refused(dirs, 'cluster-B', 3);
    expect([e.code, e.file]).to.deep.equal(['GREGOR_ERR_LOG_DIR_IDENTITY', path.join(dirs[0] as string, META_PROPERTIES)]);
    expect(e.message).to.include('cluster-A').and.include('cluster-B');
    fs.writeFileSync(path.join(dirs[2] as string, META_PROPERTIES), 'version=1\ncluster.id=cluster-A\nnode.id=4\n');
    e = await refused(dirs, 'cluster-A', 3);
    expect([e.code, e.file]).to.deep.equal(['GREGOR_ERR_LOG_DIR_IDENTITY', path.join(dirs[2] as string, META_PROPERTIES)]);
    const foreign = path.join(root, 'foreign');
    fs.mkdirSync(path.join(foreign, 'x-0'), { recursive: true });
    e = await refused([dirs[0] as string, foreign], 'cluster-A', 3);
    expect(e.code).to.equal('GREGOR_ERR_LOG_DIR_META_MISSING');
    expect(e.message).to.include('x-0');
  });
});
