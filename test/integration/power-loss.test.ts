/**
 * Power loss, not just kill -9 (issue 17 item 1). A gregor child process runs with the storage fault
 * layer (test/helpers/powerloss/fs-journal-preload.ts), which journals every write, truncate, fsync,
 * rename, create and removal under its data dir; kafkajs creates a topic, produces records one at a
 * time and commits a group's offsets, each acknowledgement marked in the journal. Then, for crash
 * points k (every journal entry of a short workload; random ones of a longer one), the on-disk state
 * a power loss at k leaves is built (crash-image.ts: only what was fsynced, names only as their
 * directory was fsynced; or also a random prefix of the unsynced writes per file, the last torn),
 * gregor recovers it in-process and check-image.ts checks it: a full integrity scan of every
 * partition (batches whole, CRCs, offsets in order, indexes pointing at entries), records 0..n-1
 * holding their values, nothing synced lost, nothing acknowledged lost under log.flush.policy=always
 * or log.flush.interval.messages=1, the topic present once its creation was acknowledged, and (on a
 * subset, through kafkajs) the committed offset one that was committed.
 *
 * Each durability setting runs one workload (POWERLOSS_RECORDS records, default 16): every crash
 * point of it in the synced mode (a point whose image and acknowledgements equal one checked
 * already shares its result), then POWERLOSS_POINTS random points (default 20) in the prefix mode.
 * `npm run test:powerloss` runs a longer workload at many more points; POWERLOSS_VERBOSE=1 prints
 * how many points each case checked.
 */
import path from 'node:path';
import { expect } from 'chai';
import { Replay, readJournal, type ImageMode, type JournalEntry } from '../helpers/powerloss/crash-image.js';
import { batchesOf, checkImage, recordsFromStart } from '../helpers/powerloss/check-image.js';
import { PL_TOPIC, runWorkload, workloadConfig, type Durability, type Workload } from '../helpers/powerloss/workload.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import { mulberry32 } from '../helpers/prng.js';
import { makeTempDir } from '../helpers/temp-dirs.js';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';

const POINTS = Number(process.env['POWERLOSS_POINTS'] ?? 20);

const rng = mulberry32;

interface Outcome {
  points: number;
  /** distinct images recovered */
  recovered: number;
  failures: string[];
}

/** Checks crash points `points` (sorted journal indexes: a crash after that many entries) of `w` in `mode`. */
async function crashAt(w: Workload, points: readonly number[], mode: ImageMode, seed: number, clientEvery: number): Promise<Outcome> {
  const work = makeTempDir('gregor-powerloss-img-');
  const replay = new Replay();
  const committedValues = new Set(w.journal.filter((e) => e.op === 'commit').map((e) => e['offset'] as number));
  const markers: JournalEntry[] = [];
  const failures: string[] = [];
  const rand = rng(seed);
  const seen = new Map<string, string[]>();
  let i = 0;
  let recovered = 0;
  try {
    for (const k of points) {
      while (replay.applied < k) {
        const e = w.journal[replay.applied] as JournalEntry;
        if (e.op === 'ack' || e.op === 'commit' || e.op === 'created') markers.push(e);
        replay.apply(e);
      }
      const synced = path.join(work, `s${k}`);
      replay.materialize(synced, 'synced');
      const syncedFloor = recordsFromStart(batchesOf(path.join(synced, `${PL_TOPIC}-0`))).n;
      let image = synced;
      if (mode === 'prefix') {
        image = path.join(work, `p${k}`);
        replay.materialize(image, 'prefix', rand);
      }
      // a crash point whose image and acknowledgements are those of one checked already gives its result
      const key = `${digestTree(image)}/${markers.length}`;
      const viaClient = i++ % clientEvery === 0;
      let problems = viaClient ? undefined : seen.get(key);
      if (problems === undefined) {
        problems = await checkImage(image, w.config, { durability: w.durability, markers, syncedFloor, committedValues, viaClient });
        recovered++;
        if (!viaClient) seen.set(key, problems);
      }
      if (problems.length > 0)
        failures.push(`${w.durability}/${mode} crash after entry ${k} (${w.journal[k - 1]?.op ?? '-'}): ${problems.join('; ')}`);
      rmSync(synced, { recursive: true, force: true });
      rmSync(image, { recursive: true, force: true });
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  if (process.env['POWERLOSS_VERBOSE'] !== undefined) {
    process.stderr.write(
      `power-loss ${w.durability}/${mode}: ${points.length} crash points of ${w.journal.length}, ${recovered} images recovered, ${failures.length} failing\n`,
    );
  }
  return { points: points.length, recovered, failures };
}

/** A digest of the files under `dir` (names and contents). */
function digestTree(dir: string): string {
  const h = createHash('sha1');
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(d, e.name);
      h.update(`${path.relative(dir, p)}\0`);
      if (e.isDirectory()) walk(p);
      else h.update(readFileSync(p));
    }
  };
  walk(dir);
  return h.digest('hex');
}

const every = (n: number): number[] => Array.from({ length: n }, (_, k) => k + 1);
function randomPoints(n: number, count: number, seed: number): number[] {
  const r = rng(seed);
  const set = new Set<number>();
  while (set.size < Math.min(count, n)) set.add(1 + Math.floor(r() * n));
  return [...set].sort((a, b) => a - b);
}

describe('power loss: a journaled gregor, crash images at every point, recovery checked (kafkajs)', function () {
  this.timeout(600000);

  it('a recorded crash: a roll kept the later segment while the tail of the one before was lost (defaults)', async function () {
    const journal = readJournal(path.join(PROJECT_ROOT, 'test/fixtures/powerloss/roll-gap.jsonl'));
    const replay = new Replay();
    for (const e of journal) replay.apply(e);
    const image = path.join(makeTempDir('gregor-powerloss-fixture-'), 'img');
    replay.materialize(image, 'synced');
    expect(readdirSync(path.join(image, `${PL_TOPIC}-0`)).filter((n) => n.endsWith('.log'))).to.have.length(3);
    const syncedFloor = recordsFromStart(batchesOf(path.join(image, `${PL_TOPIC}-0`))).n;
    expect(syncedFloor).to.equal(17);
    const problems = await checkImage(image, workloadConfig('default'), {
      durability: 'default',
      markers: journal.filter((e) => e.op === 'ack' || e.op === 'commit' || e.op === 'created'),
      syncedFloor,
      committedValues: new Set(journal.filter((e) => e.op === 'commit').map((e) => e['offset'] as number)),
      viaClient: true,
    });
    expect(problems).to.deep.equal([]);
    expect(readdirSync(path.join(image, `${PL_TOPIC}-0`)).filter((n) => n.endsWith('.log'))).to.deep.equal([
      '00000000000000000000.log',
      '00000000000000000017.log',
    ]);
    rmSync(path.dirname(image), { recursive: true, force: true });
  });

  const RECORDS = Number(process.env['POWERLOSS_RECORDS'] ?? 16);
  const durabilities: Durability[] = ['always', 'interval1', 'default'];
  for (const d of durabilities) {
    describe(`log.flush ${d === 'interval1' ? 'interval.messages=1' : d === 'always' ? 'policy=always' : 'defaults (never fsync)'}`, function () {
      let w: Workload;
      before(async function () {
        w = await runWorkload(d, RECORDS, 4);
      });

      it('every crash point, the synced state only', async function () {
        expect(w.journal.filter((e) => e.op === 'ack')).to.have.length(RECORDS);
        const out = await crashAt(w, every(w.journal.length), 'synced', 1, 25);
        expect(out.points).to.be.greaterThan(80);
        expect(out.recovered).to.be.greaterThan(5);
        expect(out.failures, out.failures.slice(0, 10).join('\n')).to.deep.equal([]);
      });

      it('random crash points, the synced state plus a random prefix of the unsynced writes (the last torn)', async function () {
        const points = randomPoints(w.journal.length, POINTS, 17);
        const out = await crashAt(w, points, 'prefix', 42, 8);
        expect(out.failures, out.failures.slice(0, 10).join('\n')).to.deep.equal([]);
      });
    });
  }
});
