// Bundles the broker's start path with esbuild (start-up time, issues 13 and 14).
//
// dist/bundle/start.cjs: dist/lib/cli.js and the pure-JS packages it needs, as ONE CommonJS file.
// bin/load-broker.js compiles it with a V8 code cache (vm.Script cachedData), which no ES module can
// use on Node 20, and a CommonJS entry also spares the process the ES module loader. Kept outside:
// the native packages (crc32, compression codecs), re2js (required on first use), etcd3 (required
// only by a broker with metadata.store=etcd, with grpc-js and protobufjs behind it), and the tool
// commands' program (lib/cli/program.js, loaded by dynamic import only when a tool runs). prom-client
// is bundled through its parts: its index also loads its cluster aggregator, whose `cluster` module
// pulls child_process, dgram and dns into every start (~7 ms) for a feature the broker never uses.
//
// dist/bundle/worker.js: the append worker, an ES module (with its chunks) started by the pool from
// `new URL('./worker.js', import.meta.url)`; dist/bundle/cleaner-worker.js likewise, the log cleaner's
// thread (lib/log/cleaner/pool.ts). dist/bundle/ sits at the depth of dist/lib/, so the paths
// the broker resolves from import.meta.url (the worker beside its pool, ../../package.json, the native
// sockopt addon) resolve alike in both layouts.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist/bundle');
rmSync(outdir, { recursive: true, force: true });

await build({
  absWorkingDir: root,
  entryPoints: ['dist/lib/append/worker.js', 'dist/lib/log/cleaner/cleaner-worker.js'],
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

/** prom-client's index without its cluster aggregator and push gateway (still reachable, loaded on first use). */
const PROM_CLIENT_PARTS = `
exports.Registry = require('prom-client/lib/registry');
exports.register = exports.Registry.globalRegistry;
exports.Counter = require('prom-client/lib/counter');
exports.Gauge = require('prom-client/lib/gauge');
exports.Histogram = require('prom-client/lib/histogram');
exports.Summary = require('prom-client/lib/summary');
exports.collectDefaultMetrics = require('prom-client/lib/defaultMetrics');
exports.validateMetricName = require('prom-client/lib/validation').validateMetricName;
Object.defineProperty(exports, 'AggregatorRegistry', { get: () => require('prom-client/lib/cluster') });
Object.defineProperty(exports, 'Pushgateway', { get: () => require('prom-client/lib/pushgateway') });
`;

/** @type {import('esbuild').Plugin} */
const startPath = {
  name: 'gregor-start-path',
  setup(b) {
    b.onResolve({ filter: /^prom-client$/ }, (args) =>
      args.importer.includes('/node_modules/') ? undefined : { path: 'prom-client', namespace: 'prom-client-parts' },
    );
    b.onLoad({ filter: /.*/, namespace: 'prom-client-parts' }, () => ({ contents: PROM_CLIENT_PARTS, loader: 'js', resolveDir: root }));
    // the tool commands stay unbundled ES modules, imported from dist/lib/ when one runs
    b.onResolve({ filter: /\/program\.js$/ }, (args) =>
      args.kind === 'dynamic-import' && args.importer.endsWith(join('dist/lib/cli/index.js'))
        ? { path: '../lib/cli/program.js', external: true }
        : undefined,
    );
  },
};

const startFile = join(outdir, 'start.cjs');
await build({
  absWorkingDir: root,
  entryPoints: ['dist/lib/cli.js'],
  outfile: startFile,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  charset: 'ascii',
  external: ['@node-rs/crc32', '@toondepauw/node-zstd', 'lz4-napi', 'snappy', 're2js', 'etcd3'],
  define: { 'import.meta.url': '__gregorBundleUrl' },
  banner: { js: 'var __gregorBundleUrl = require("node:url").pathToFileURL(__filename).href;' },
  plugins: [startPath],
  sourcemap: 'linked',
  logLevel: 'warning',
});
// esbuild escapes every non-ASCII character of strings, regular expressions, template literals and
// identifiers (charset ascii); what remains is in comments, which are rewritten to '?' (one per UTF-16
// unit, so the source map's columns still hold) for bin/load-broker.js to read the file as latin1,
// ~10x cheaper than decoding 1.8 MB of UTF-8.
const text = readFileSync(startFile, 'utf8');
writeFileSync(
  startFile,
  text.replace(/[^\p{ASCII}]/gu, (c) => '?'.repeat(c.length)),
);

// dist/ui/: the web console's page (ui/, Preact + htm + uPlot) as an ES module (uPlot in a chunk) and one style sheet,
// served by the admin listener at /ui (lib/console/static.ts): nothing is fetched from elsewhere.
// ui-build.json marks the directory as the built one.
const uiDir = join(root, 'dist/ui');
rmSync(uiDir, { recursive: true, force: true });
mkdirSync(uiDir, { recursive: true });
await build({
  absWorkingDir: root,
  entryPoints: { app: 'ui/main.js' },
  outdir: uiDir,
  bundle: true,
  // uPlot is imported on first use (ui/lib/ui.js): a chunk of its own
  splitting: true,
  chunkNames: 'chunk-[hash]',
  format: 'esm',
  platform: 'browser',
  target: ['chrome110', 'firefox110', 'safari16'],
  minify: true,
  legalComments: 'linked',
  logLevel: 'warning',
});
copyFileSync(join(root, 'ui/index.html'), join(uiDir, 'index.html'));
writeFileSync(join(uiDir, 'ui-build.json'), `${JSON.stringify({ builtAt: new Date().toISOString() })}\n`);
