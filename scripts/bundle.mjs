// Bundles the broker's start path (dist/lib/cli.js and the append worker) into dist/bundle/ with
// esbuild, so that `gregor start` loads a few files instead of ~300 modules (start-up time, issue 13).
// Dynamic imports (tool commands, the metrics exporter) stay separate chunks, loaded when used;
// npm packages stay external. Entry names are flat ([name].js) and dist/bundle/ sits at the depth of
// dist/lib/, so the paths the broker resolves from import.meta.url (the append worker beside its
// pool, ../../package.json) resolve alike in both layouts.
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist/bundle');
rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ['dist/lib/cli.js', 'dist/lib/append/worker.js'],
  entryNames: '[name]',
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
});
