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

/** A listener's security protocol from listener.security.protocol.map entries (NAME:PROTOCOL); Kafka refuses a name the map lacks. */
export function securityProtocolOf(map: readonly string[], listenerName: string): string {
  for (const entry of map) {
    const [name = '', proto = ''] = entry.split(':').map((x) => x.trim());
    if (name.toUpperCase() === listenerName.toUpperCase()) return proto.toUpperCase();
  }
  throw new ConfigError(
    `No security protocol defined for listener ${listenerName}: add ${listenerName}:<PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL> to listener.security.protocol.map`,
  );
}

export const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;

/** Refuses listeners whose security protocol Kafka does not define. */
export function checkListenerProtocols(names: readonly string[], map: readonly string[]): void {
  for (const name of names) {
    const proto = securityProtocolOf(map, name);
    if (!(SECURITY_PROTOCOLS as readonly string[]).includes(proto))
      throw new ConfigError(`listener ${name}: unknown security protocol ${proto}`);
  }
}
