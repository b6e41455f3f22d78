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
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * The generated protocol's per-API modules (~0.9 MB, of which a client needs a handful of APIs) are not
 * in start.cjs: each is its own CommonJS chunk, dist/bundle/protocol/<api>.cjs, which the registry
 * (protocol/generated/index.ts, whose `requireApi` is replaced here) compiles the first time one of
 * that API's codecs is used. A chunk's imports of the codec runtime are the bundle's own modules (one
 * Reader, one Writer), handed to it as its `require`: as plain objects of their exports' values, and
 * without esbuild's `__toESM` wrapper around a namespace import (below). Both would put getters
 * between the generated code and every `W.sizeCompactRecords` or `RT.isDefaultValue` it calls (two
 * layers: esbuild's export getters and `__toESM`'s copies of them), which made encoding a
 * 10,000-partition Fetch response from the chunk take 4.1 ms where the same code as ES modules takes
 * 1.7. The codec modules export only functions, classes and constants, so a copy of their values is
 * what a live binding would read.
 */
const GENERATED_INDEX = join(root, 'dist/protocol/generated/index.js');
const CODEC_IMPORT = /^\.\.\/codec\/(reader|writer|runtime)\.js$/;
const REQUIRE_API = 'const requireApi = createRequire(import.meta.url);';
const CHUNK_LOADER = `
import * as __codecReader from '../codec/reader.js';
import * as __codecWriter from '../codec/writer.js';
import * as __codecRuntime from '../codec/runtime.js';
let __codecModules;
const requireApi = (id) => {
  const plain = (ns) => Object.freeze(Object.assign({}, ns));
  __codecModules ??= { '../codec/reader.js': plain(__codecReader), '../codec/writer.js': plain(__codecWriter), '../codec/runtime.js': plain(__codecRuntime) };
  const file = require('node:path').join(__dirname, 'protocol', id.slice(2, -3) + '.cjs');
  const run = require('node:vm').compileFunction(require('node:fs').readFileSync(file, 'utf8'), ['exports', 'require', 'module'], { filename: file });
  const module = { exports: {} };
  run(module.exports, (dep) => __codecModules[dep] ?? require(dep), module);
  return module.exports;
};
`;

/** The API modules the registry loads (`requireApi('./produce.js')`), as paths under dist/. */
function generatedApiModules() {
  const index = readFileSync(GENERATED_INDEX, 'utf8');
  const modules = [...index.matchAll(/requireApi\('\.\/([\w-]+)\.js'\)/g)].map((m) => `dist/protocol/generated/${m[1]}.js`);
  if (!index.includes(REQUIRE_API) || modules.length < 80) throw new Error('bundle: unexpected protocol/generated/index.js layout');
  return modules;
}

await build({
  absWorkingDir: root,
  entryPoints: generatedApiModules(),
  entryNames: '[name]',
  outExtension: { '.js': '.cjs' },
  outdir: join(outdir, 'protocol'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  charset: 'ascii',
  plugins: [
    {
      name: 'gregor-api-chunk',
      setup(b) {
        b.onResolve({ filter: CODEC_IMPORT }, (args) => ({ path: args.path, external: true }));
      },
    },
  ],
  sourcemap: 'linked',
  logLevel: 'warning',
});

// `import * as W from '../codec/writer.js'` became `W = __toESM(require("../codec/writer.js"), 1)`: a
// copy of the module made of getters. The codec modules are plain objects (see CHUNK_LOADER) and no
// chunk reads a `default` from them, so the chunk takes the object itself (same line, same columns
// after it but for the sourcemap of that one statement).
const CODEC_NAMESPACE = /__toESM\(require\("(\.\.\/codec\/(?:reader|writer|runtime)\.js)"\), 1\)/g;
for (const name of readdirSync(join(outdir, 'protocol'))) {
  if (!name.endsWith('.cjs')) continue;
  const file = join(outdir, 'protocol', name);
  const text = readFileSync(file, 'utf8');
  const out = text.replace(CODEC_NAMESPACE, 'require("$1")');
  if (/\bW\.default\b|\bRT\.default\b/.test(out)) throw new Error(`bundle: ${name} reads a codec module's default export`);
  if (out !== text) writeFileSync(file, out);
}

/** @type {import('esbuild').Plugin} */
const startPath = {
  name: 'gregor-start-path',
  setup(b) {
    b.onResolve({ filter: /^prom-client$/ }, (args) =>
      args.importer.includes('/node_modules/') ? undefined : { path: 'prom-client', namespace: 'prom-client-parts' },
    );
    b.onLoad({ filter: /[/\\]dist[/\\]protocol[/\\]generated[/\\]index\.js$/ }, (args) =>
      args.path === GENERATED_INDEX
        ? { contents: readFileSync(args.path, 'utf8').replace(REQUIRE_API, CHUNK_LOADER), loader: 'js' }
        : undefined,
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

const WRAPPER_OPEN = '(function (exports, require, module, __filename, __dirname) { "use strict"; ';
const WRAPPER_CLOSE = '\n})';

/**
 * Node built-ins the broker needs only for some features (TLS listeners, SASL/SCRAM, compression, dev
 * certs, the advertised-listener check after start): an import of one becomes an object that requires
 * the module on its first property read (below), instead of a require() while the bundle is evaluated
 * (crypto, tls, zlib, child_process with dgram: ~15 ms of a start on this machine's cores).
 */
const LAZY_BUILTINS = ['node:crypto', 'node:tls', 'node:zlib', 'node:child_process', 'node:dns/promises'];
const LAZY_BUILTIN =
  'function __gregorLazy(id, esm) { var m; var load = function () { return m || (m = require(id)); };' +
  ' return new Proxy({}, { get: function (_, k) { return esm && k === "default" ? load() : load()[k]; },' +
  ' has: function (_, k) { return k in load(); } }); } ';
/**
 * esbuild gives every default or namespace import of a built-in its own `__toESM(require(id), 1)`: a
 * copy of the module's exports as getters, 48 of them for path, fs, fs/promises and net (~10 ms of
 * start-up: ~100 defineProperty calls per copy of fs). One copy per built-in, shared by its importers,
 * does the same (an import is never written to).
 */
const SHARED_BUILTIN =
  'var __gregorEsm = {}; function __gregorBuiltin(id) { return __gregorEsm[id] || (__gregorEsm[id] = __toESM(require(id), 1)); } ';

/**
 * Rewrites `import_x = require("node:crypto")` (named imports) and `import_x = __toESM(require(...), 1)`
 * (default or namespace imports) of a LAZY_BUILTINS module to `__gregorLazy(...)`, where every other
 * use of that variable is a property read (`import_x.name`), which is all the proxy serves; any other
 * use keeps its eager require.
 */
function onlyPropertyReads(text, name) {
  const use = new RegExp(`\\b${name}\\b`, 'g');
  for (let m = use.exec(text); m !== null; m = use.exec(text)) {
    const after = text.slice(m.index + name.length, m.index + name.length + 4);
    if (after.startsWith('.') || /^ = [^=]/.test(after)) continue;
    // esbuild's hoisted declaration of a lazily initialised module's imports: `var import_a, b, c;`
    const line = text.slice(text.lastIndexOf('\n', m.index) + 1, text.indexOf('\n', m.index));
    if (/^\s*var [\w$]+(, [\w$]+)*;$/.test(line)) continue;
    return false;
  }
  return true;
}

/** LAZY_BUILTINS made lazy, the other built-ins' default or namespace imports shared (SHARED_BUILTIN). */
function builtinImports(text) {
  const ids = LAZY_BUILTINS.map((id) => id.replace(/[/]/g, '\\/')).join('|');
  const decl = new RegExp(`\\b(import_\\w+) = (__toESM\\()?require\\("(${ids})"\\)(, 1\\))?;`, 'g');
  const lazy = [];
  const out = text.replace(decl, (whole, name, toEsm, id, esmTail) => {
    if ((toEsm === undefined) !== (esmTail === undefined)) return whole;
    if (!onlyPropertyReads(text, name)) return whole;
    lazy.push(id);
    return `${name} = __gregorLazy("${id}", ${toEsm === undefined ? 0 : 1});`;
  });
  const shared = out.replace(/\b__toESM\(require\("(node:[\w/]+)"\), 1\)/g, '__gregorBuiltin("$1")');
  if (!LAZY_BUILTINS.every((id) => lazy.includes(id))) {
    const eager = LAZY_BUILTINS.filter((id) => !lazy.includes(id));
    console.warn(`bundle: loaded when the bundle is, not on first use: ${eager.join(', ')}`);
  }
  return shared;
}

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
  // the file is the function bin/load-broker.js calls (Node's CommonJS wrapper, written here so that the
  // loader compiles the text it read and V8 makes no second, concatenated copy of 2.9 MB); on its
  // first line, so the source map's lines hold, and with "use strict" first, which esbuild's own
  // directive, below the banner, no longer is
  banner: {
    js: `${WRAPPER_OPEN}${LAZY_BUILTIN}${SHARED_BUILTIN}var __gregorBundleUrl = require("node:url").pathToFileURL(__filename).href;`,
  },
  plugins: [startPath],
  sourcemap: 'linked',
  logLevel: 'warning',
});
// esbuild escapes every non-ASCII character of strings, regular expressions, template literals and
// identifiers (charset ascii); what remains is in comments, which are rewritten to '?' (one per UTF-16
// unit, so the source map's columns still hold) for bin/load-broker.js to read the file as latin1,
// ~10x cheaper than decoding 2.9 MB of UTF-8.
const text = builtinImports(readFileSync(startFile, 'utf8')).replace(/[^\p{ASCII}]/gu, (c) => '?'.repeat(c.length));
const mapComment = text.lastIndexOf('\n//# sourceMappingURL=');
if (!text.startsWith(WRAPPER_OPEN) || mapComment < 0) throw new Error('bundle: unexpected start.cjs layout');
writeFileSync(startFile, `${text.slice(0, mapComment)}${WRAPPER_CLOSE}${text.slice(mapComment)}`);

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
