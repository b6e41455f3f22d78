#!/usr/bin/env node
// Builds the native addons with node-gyp against the running Node's own headers (no download):
//   native/sockopt  SO_SNDBUF / SO_RCVBUF (socket.send/receive.buffer.bytes)
//   native/crc32c   CRC-32C with the CPU's CRC32 instruction (record batch checks)
//   native/pread    reads served from the page cache without the thread pool (segment reads)
// Never fails the install: an addon that does not build prints one warning and the broker runs
// without it (the socket options are ignored; CRC-32C falls back to @node-rs/crc32; every segment
// read goes through libuv's thread pool).
//   node native/build.mjs [name...]            build all, or the named ones (quiet when it works)
//   node native/build.mjs --strict [name...]   exit 1 on any failure (for CI checks)
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const strict = process.argv.includes('--strict');
const ADDONS = {
  sockopt: 'socket.send/receive.buffer.bytes will be ignored',
  crc32c: 'CRC-32C falls back to @node-rs/crc32',
  pread: "segment reads all go through libuv's thread pool",
};
const named = process.argv.slice(2).filter((a) => !a.startsWith('--'));
for (const n of named) if (!(n in ADDONS)) throw new Error(`unknown addon ${n} (one of ${Object.keys(ADDONS).join(', ')})`);

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

/** Builds one addon; returns why it failed, or null. */
function build(name, gyp, nodedir) {
  if (!gyp) return 'node-gyp not found';
  if (!nodedir) return 'Node headers (include/node/node_api.h) not found';
  const dir = join(here, name);
  const r = spawnSync(process.execPath, [gyp, 'rebuild', `--nodedir=${nodedir}`, '--directory', dir], {
    encoding: 'utf8',
    env: { ...process.env, npm_config_loglevel: 'error' },
  });
  if (r.status !== 0) {
    process.stderr.write((r.stdout ?? '') + (r.stderr ?? ''));
    return `node-gyp exited with ${r.status ?? r.signal}`;
  }
  if (!existsSync(join(dir, 'build', 'Release', `${name}.node`))) return `build/Release/${name}.node missing after build`;
  return null;
}

const gyp = findNodeGyp();
const nodedir = findNodeDir();
let failed = false;
for (const [name, without] of Object.entries(ADDONS)) {
  if (named.length > 0 && !named.includes(name)) continue;
  const why = build(name, gyp, nodedir);
  if (why !== null) {
    failed = true;
    console.warn(`gregor: ${name} addon not built (${why}); ${without}`);
  }
}
process.exit(strict && failed ? 1 : 0);
