/** Listener specs (NAME://host:port) and the admin HTTP listener's address. */
import { ConfigError } from './error.js';

/** An admin.listener value: null for `none`, else where to bind (`0` alone: 127.0.0.1 on a free port; `:p` or `p`: 127.0.0.1). */
export function parseAdminListener(spec: string): { host: string; port: number } | null {
  const v = spec.trim();
  if (v.toLowerCase() === 'none') return null;
  const m = /^(?:(\[[^\]]*\]|[^:]*):)?(\d+)$/.exec(v);
  if (m === null || m[2] === undefined) throw new ConfigError(`admin.listener=${spec}: ${ADMIN_LISTENER_FORMAT}`);
  const port = Number(m[2]);
  if (port > 65535) throw new ConfigError(`admin.listener=${spec}: invalid port`);
  const host = (m[1] ?? '').replace(/^\[|\]$/g, '');
  return { host: host === '' ? '127.0.0.1' : host, port };
}

const ADMIN_LISTENER_FORMAT = 'expected host:port, a port, 0 or none';

export function adminListenerError(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  try {
    parseAdminListener(v);
    return undefined;
  } catch {
    return ADMIN_LISTENER_FORMAT;
  }
}

export interface Listener {
  name: string;
  host: string;
  port: number;
}

export function parseListener(spec: string): Listener {
  const m = /^([A-Za-z0-9_]+):\/\/(\[[^\]]*\]|[^:]*):(\d+)$/.exec(spec.trim());
  if (m === null || m[1] === undefined || m[2] === undefined || m[3] === undefined) {
    throw new ConfigError(`listener '${spec}' is not NAME://host:port`);
  }
  const port = Number(m[3]);
  if (port > 65535) throw new ConfigError(`listener '${spec}' has an invalid port`);
  return { name: m[1].toUpperCase(), host: m[2].replace(/^\[|\]$/g, ''), port };
}
