/**
 * Loads one of gregor's own N-API addons, built by native/build.mjs into
 * native/<name>/build/Release/<name>.node. The file is found by walking up from this module to the
 * package root, so the same code works from dist/protocol/records/ and from the bundle in dist/bundle/.
 * A missing or unloadable addon is not an error here: the caller gets the reason and runs without it.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface AddonLoad<T> {
  addon: T | null;
  /** why the addon is unavailable (null when it loaded) */
  error: string | null;
}

/** T is the addon's shape, named by the caller: require() cannot infer it. */
export function loadAddon<T>(name: string): AddonLoad<T> {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, 'native', name, 'build', 'Release', `${name}.node`);
    if (existsSync(file)) {
      try {
        return { addon: createRequire(import.meta.url)(file) as T, error: null };
      } catch (err) {
        return { addon: null, error: `${file}: ${(err as Error).message}` };
      }
    }
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'native'))) break;
    dir = dirname(dir);
  }
  return { addon: null, error: `native/${name}/build/Release/${name}.node not found (run node native/build.mjs ${name})` };
}
