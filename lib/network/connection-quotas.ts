/**
 * Broker-wide connection limits shared by every listener, as Kafka's ConnectionQuotas:
 * `max.connections` (all listeners together), `max.connections.per.ip` and
 * `max.connections.per.ip.overrides` (per client address, all listeners together). A connection
 * counts from its acceptance (before a TLS handshake) until it is closed. Over a limit, the new
 * connection is closed at once (see README "Limits and overload" for how Kafka differs).
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

export const ConnectionLimit = {
  MAX_CONNECTIONS: 'max.connections',
  MAX_CONNECTIONS_PER_IP: 'max.connections.per.ip',
} as const;
export type ConnectionLimit = (typeof ConnectionLimit)[keyof typeof ConnectionLimit];

/** Read at each new connection: getters may follow dynamic config updates. */
export interface ConnectionQuotaLimits {
  readonly maxConnections: number;
  readonly maxConnectionsPerIp: number;
  /** address → limit (max.connections.per.ip.overrides) */
  readonly overrides?: ReadonlyMap<string, number>;
}

export class ConnectionQuotas {
  private total = 0;
  private readonly perIp = new Map<string, number>();
  private readonly refusedBy = new Map<ConnectionLimit, number>();

  constructor(private readonly limits: ConnectionQuotaLimits) {}

  /** Open connections on every listener. */
  get count(): number {
    return this.total;
  }

  /** Counts a new connection from `ip`; or, when a limit forbids it, counts the refusal and names the limit. */
  tryAccept(ip: string): { limit: ConnectionLimit; max: number } | null {
    const l = this.limits;
    let refused: { limit: ConnectionLimit; max: number } | null = null;
    if (this.total >= l.maxConnections) refused = { limit: ConnectionLimit.MAX_CONNECTIONS, max: l.maxConnections };
    else {
      const max = l.overrides?.get(ip) ?? l.maxConnectionsPerIp;
      if ((this.perIp.get(ip) ?? 0) >= max) refused = { limit: ConnectionLimit.MAX_CONNECTIONS_PER_IP, max };
    }
    if (refused !== null) {
      this.refusedBy.set(refused.limit, (this.refusedBy.get(refused.limit) ?? 0) + 1);
      return refused;
    }
    this.total++;
    this.perIp.set(ip, (this.perIp.get(ip) ?? 0) + 1);
    return null;
  }

  /** A connection counted by tryAccept closed. */
  release(ip: string): void {
    this.total--;
    const n = (this.perIp.get(ip) ?? 1) - 1;
    if (n <= 0) this.perIp.delete(ip);
    else this.perIp.set(ip, n);
  }

  /** Connections refused so far, by the limit that refused them. */
  refused(): ReadonlyMap<ConnectionLimit, number> {
    return this.refusedBy;
  }
}

/**
 * Parses max.connections.per.ip.overrides: `host:limit` pairs separated by commas (Kafka's format;
 * an IPv6 address is split at its last colon). Throws a message naming the bad entry.
 */
export function parseConnectionOverrides(value: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const i = entry.lastIndexOf(':');
    const host = i > 0 ? entry.slice(0, i).trim() : '';
    const limit = i > 0 ? Number(entry.slice(i + 1).trim()) : NaN;
    if (host === '' || !Number.isInteger(limit) || limit < 0) throw new Error(`'${entry}' is not host:limit with a limit >= 0`);
    out.set(host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host, limit);
  }
  return out;
}

/** The overrides with host names resolved to their addresses (Kafka resolves them too); addresses stay as given. */
export async function resolveConnectionOverrides(overrides: ReadonlyMap<string, number>): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const [host, limit] of overrides) {
    if (isIP(host) !== 0) {
      out.set(host, limit);
      continue;
    }
    const addrs = await lookup(host, { all: true }).catch(() => []);
    for (const a of addrs) out.set(a.address, limit);
  }
  return out;
}
