/**
 * The console's page and its bundle (dist/ui/, built by scripts/bundle.mjs from ui/), read once and
 * kept in memory. Served with a Content-Security-Policy that allows nothing from elsewhere: scripts,
 * styles, fonts and data all come from this listener (the console works offline).
 */
import { existsSync, readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/**
 * dist/ui/: beside dist/lib/ seen from dist/lib/console/, or beside dist/bundle/ when this code runs
 * inside the start bundle (recognised by the build's ui-build.json, which the sources in ui/ lack).
 */
function uiDir(): string | null {
  for (const rel of ['../../ui/', '../ui/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(`${dir}ui-build.json`)) return dir;
  }
  return null;
}

export class StaticFiles {
  private readonly dir = uiDir();
  private readonly cache = new Map<string, Buffer | null>();

  get available(): boolean {
    return this.dir !== null;
  }

  /** Sends `name` (a file of dist/ui/) or returns false when there is no such file. */
  send(res: ServerResponse, name: string, headers: Record<string, string> = {}): boolean {
    if (this.dir === null || !/^[A-Za-z0-9-]+\.[a-z]+(?:\.map)?$/.test(name)) return false;
    let data = this.cache.get(name);
    if (data === undefined) {
      const file = `${this.dir}${name}`;
      data = existsSync(file) ? readFileSync(file) : null;
      this.cache.set(name, data);
    }
    if (data === null) return false;
    const ext = name.slice(name.lastIndexOf('.'));
    res.writeHead(200, {
      'content-type': TYPES[ext] ?? 'application/octet-stream',
      'content-length': data.length,
      'cache-control': 'no-cache',
      'content-security-policy': CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      ...headers,
    });
    res.end(data);
    return true;
  }
}
