/** What the benches that set two gregor trees side by side (consume-trees, cold-consume) share. */
import { join } from 'node:path';
import { ROOT_DIR } from './proc-stats.js';

/** `--before DIR` (a built checkout of the tree to compare with; required) and `--out DIR` (compat/results). */
export function parseTreeArgs(argv: readonly string[]): { before: string; out: string } {
  let before: string | undefined;
  let out = join(ROOT_DIR, 'compat/results');
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = argv[i + 1];
    if ((a === '--before' || a === '--out') && v === undefined) throw new Error(`${a} needs a value`);
    if (a === '--before') before = argv[++i];
    else if (a === '--out') out = argv[++i] ?? out;
    else throw new Error(`unknown argument ${a} (--before DIR [--out DIR])`);
  }
  if (before === undefined) throw new Error('--before DIR (a built checkout of the tree to compare with) is required');
  return { before, out };
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] ?? NaN) : ((s[m - 1] ?? NaN) + (s[m] ?? NaN)) / 2;
};
