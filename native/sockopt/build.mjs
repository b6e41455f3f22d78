#!/usr/bin/env node
// Builds the sockopt addon with node-gyp against the running Node's own headers (no download).
// Never fails the install: on failure it prints one warning and the broker runs without it.
//   node native/sockopt/build.mjs            build (quiet when it works)
//   node native/sockopt/build.mjs --strict   exit 1 on failure (for CI checks)
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const strict = process.argv.includes('--strict');

function fail(msg) {
  console.warn(`gregor: sockopt addon not built (${msg}); socket.send/receive.buffer.bytes will be ignored`);
  process.exit(strict ? 1 : 0);
}

// node-gyp: the one npm sets for lifecycle scripts, else the copy bundled with npm.
function findNodeGyp() {
  const cands = [];
  if (process.env.npm_config_node_gyp) cands.push(process.env.npm_config_node_gyp);
  const npmRoot = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' }).stdout?.trim();
  if (npmRoot) cands.push(join(npmRoot, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  cands.push(resolve(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  return cands.find((p) => existsSync(p));
}

// Headers of the running Node (e.g. /usr/include/node): pointing --nodedir there avoids a download.
function findNodeDir() {
  const cands = [resolve(dirname(process.execPath), '..'), '/usr', '/usr/local'];
  return cands.find((d) => existsSync(join(d, 'include', 'node', 'node_api.h')));
}

const gyp = findNodeGyp();
if (!gyp) fail('node-gyp not found');
const nodedir = findNodeDir();
if (!nodedir) fail('Node headers (include/node/node_api.h) not found');
const r = spawnSync(process.execPath, [gyp, 'rebuild', `--nodedir=${nodedir}`, '--directory', here], {
  encoding: 'utf8',
  env: { ...process.env, npm_config_loglevel: 'error' },
});
if (r.status !== 0) {
  process.stderr.write((r.stdout ?? '') + (r.stderr ?? ''));
  fail(`node-gyp exited with ${r.status ?? r.signal}`);
}
if (!existsSync(join(here, 'build', 'Release', 'sockopt.node'))) fail('build/Release/sockopt.node missing after build');
