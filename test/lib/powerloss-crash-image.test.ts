/** The power-loss image builder (test/helpers/powerloss/crash-image.ts): what a crash keeps, entry by entry. */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { Replay, type JournalEntry } from '../helpers/powerloss/crash-image.js';
import { makeTempDir } from '../helpers/temp-dirs.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** The files of the image after applying `entries`, as name → content. */
function image(entries: readonly JournalEntry[], mode: 'synced' | 'prefix', rand: () => number = () => 0.999): Record<string, string> {
  const r = new Replay();
  for (const e of entries) r.apply(e);
  const dir = path.join(makeTempDir('gregor-plimg-'), 'img');
  r.materialize(dir, mode, rand);
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        out[`${path.relative(dir, p)}/`] = '';
        walk(p);
      } else out[path.relative(dir, p)] = fs.readFileSync(p, 'utf8');
    }
  };
  walk(dir);
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  return out;
}

const create: JournalEntry = { op: 'open', path: 'f', ino: 1, dir: false, created: true, trunc: true };
const rootOpen: JournalEntry = { op: 'open', path: '', ino: 100, dir: true };
const dirSync = (id: number): JournalEntry[] => [rootOpen, { op: 'sync0', ino: 100, id }, { op: 'sync1', ino: 100, id }];
const write = (pos: number, s: string): JournalEntry => ({ op: 'write', ino: 1, pos, data: b64(s) });

describe('power-loss crash images', function () {
  it('keeps a new name only once its directory is fsynced, and its data only once the file is', function () {
    const synced = [create, write(0, 'abc'), { op: 'sync0', ino: 1, id: 1 }, { op: 'sync1', ino: 1, id: 1 }];
    expect(image(synced, 'synced')).to.deep.equal({});
    expect(image([...synced, ...dirSync(2)], 'synced')).to.deep.equal({ f: 'abc' });
    expect(image([create, write(0, 'abc'), ...dirSync(2)], 'synced')).to.deep.equal({ f: '' });
  });

  it('an fsync covers the writes completed before it began, and only once it has ended', function () {
    const base = [create, ...dirSync(9), write(0, 'abc'), { op: 'sync0', ino: 1, id: 1 }, write(3, 'def')];
    expect(image(base, 'synced')).to.deep.equal({ f: '' });
    expect(image([...base, { op: 'sync1', ino: 1, id: 1 }], 'synced')).to.deep.equal({ f: 'abc' });
  });

  it('a rename is durable only after a directory fsync: before it the old name holds the file', function () {
    const base = [create, write(0, 'new'), { op: 'sync0', ino: 1, id: 1 }, { op: 'sync1', ino: 1, id: 1 }, ...dirSync(2)];
    const renamed = [...base, { op: 'rename', from: 'f', to: 'g' }];
    expect(image(renamed, 'synced')).to.deep.equal({ f: 'new' });
    expect(image([...renamed, ...dirSync(3)], 'synced')).to.deep.equal({ g: 'new' });
    expect(image(renamed, 'prefix')).to.deep.equal({ g: 'new' });
  });

  it('the prefix mode keeps the synced content plus a prefix of the later writes, the last torn', function () {
    const base = [
      create,
      ...dirSync(9),
      write(0, 'abc'),
      { op: 'sync0', ino: 1, id: 1 },
      { op: 'sync1', ino: 1, id: 1 },
      write(3, 'defgh'),
      write(8, 'ij'),
    ];
    expect(image(base, 'prefix', () => 0)).to.deep.equal({ f: 'abc' });
    // 2 of the 2 later writes kept; the last one torn after 1 byte (rand 0.4 of 2 bytes → 1 + 0)
    const picks = [0.9, 0.4];
    expect(image(base, 'prefix', () => picks.shift() ?? 0)).to.deep.equal({ f: 'abcdefghi' });
    expect(image(base, 'synced')).to.deep.equal({ f: 'abc' });
  });

  it('a directory made and not fsynced into its parent is not in the synced image', function () {
    const entries = [
      { op: 'mkdir', path: 'd' },
      { op: 'open', path: 'd', ino: 5, dir: true },
      { op: 'open', path: 'd/x', ino: 1, dir: false, created: true },
      write(0, 'x'),
      { op: 'sync0', ino: 1, id: 1 },
      { op: 'sync1', ino: 1, id: 1 },
      { op: 'sync0', ino: 5, id: 2 },
      { op: 'sync1', ino: 5, id: 2 },
    ];
    expect(image(entries, 'synced')).to.deep.equal({});
    expect(image([...entries, ...dirSync(3)], 'synced')).to.deep.equal({ 'd/': '', 'd/x': 'x' });
  });
});
