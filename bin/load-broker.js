'use strict';
/**
 * Loads the broker's start path, dist/bundle/start.cjs (scripts/bundle.mjs), compiled with a V8 code
 * cache: the bytecode of its top level and of every function start-up ran, saved by the first start
 * after a build and read back by later ones, which then skip parsing and compiling ~2.9 MB of
 * JavaScript (about half of gregor's own start-up time). ES modules cannot use a code cache on Node 20;
 * hence a CommonJS bundle compiled through vm.Script.
 *
 * The cache file starts with a line naming what it was made from (Node version, architecture, the
 * bundle's size and mtime) and is ignored when any of those differ; V8 itself refuses one made by
 * another V8 or under other V8 flags (`cachedDataRejected`). A missing, stale or refused cache is
 * written again once the broker is ready, before its ready line (~10 ms, once), atomically (temporary file + rename, so brokers starting at the
 * same time never read a partial one); a read-only install simply runs without one.
 * GREGOR_CODE_CACHE=0 turns it off; any other value is the cache file's path.
 */
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const { createRequire } = require('node:module');

const BUNDLE = path.join(__dirname, '..', 'dist', 'bundle', 'start.cjs');
const FORMAT = 'gregor-code-cache/1';

/** The cache file for this environment, or null when the cache is off. */
function cacheFileFrom(env) {
  const value = env.GREGOR_CODE_CACHE;
  if (value === '0' || value === 'off') return null;
  return value !== undefined && value !== '' ? path.resolve(value) : `${BUNDLE}.cache`;
}

/** The cached data after the header line, when the header is `key`. */
function readCache(file, key) {
  let data;
  try {
    data = fs.readFileSync(file);
  } catch {
    return undefined;
  }
  const eol = data.indexOf(0x0a);
  if (eol < 0 || data.toString('latin1', 0, eol) !== key) return undefined;
  return data.subarray(eol + 1);
}

function writeCache(file, key, data) {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, Buffer.concat([Buffer.from(`${key}\n`, 'latin1'), data]));
    fs.renameSync(tmp, file);
  } catch {
    // a read-only install or a full disk: the next start compiles again
    fs.rmSync(tmp, { force: true });
  }
}

/**
 * Compiles and runs the bundle. Returns its exports (`main`) and, when the cache was missing, stale or
 * refused, `saveCodeCache` for main to call once the broker is ready (before its ready line); `cache` says which it was.
 */
function loadBroker(env = process.env) {
  const source = fs.readFileSync(BUNDLE, 'latin1'); // ASCII, see scripts/bundle.mjs
  const file = cacheFileFrom(env);
  const stat = fs.statSync(BUNDLE);
  const key = `${FORMAT} ${process.version} ${process.arch} ${stat.size} ${stat.mtimeMs}`;
  const cachedData = file === null ? undefined : readCache(file, key);
  // the bundle is its own CommonJS wrapper (scripts/bundle.mjs): compiled as read, with no second copy
  const script = new vm.Script(source, {
    filename: BUNDLE,
    ...(cachedData !== undefined ? { cachedData } : {}),
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(BUNDLE), module, BUNDLE, path.dirname(BUNDLE));
  const used = cachedData !== undefined && !script.cachedDataRejected;
  const cache = file === null ? 'off' : used ? 'used' : cachedData === undefined ? 'missing' : 'refused';
  const saveCodeCache = file === null || used ? undefined : () => writeCache(file, key, script.createCachedData());
  return { main: module.exports.main, saveCodeCache, cache };
}

module.exports = { loadBroker, cacheFileFrom };
