/**
 * Cross-site request defences of the console.
 * - Host: the Host header must name a loopback address, localhost, or the admin listener's own
 *   address (a page on another site whose name resolves to 127.0.0.1, DNS rebinding, is refused);
 *   any host goes with admin.listener.allow.remote=true, where the operator chose the exposure.
 * - Mutating requests (POST, PUT, DELETE) need the per-process token twice, as a SameSite=Strict
 *   cookie (set with the page, never sent by a browser on another site's request) and in the
 *   x-gregor-csrf header (which no cross-site form can set, and a cross-site fetch cannot set without
 *   a CORS preflight the console never answers); an Origin or Sec-Fetch-Site naming another site is
 *   refused even with the token. The token is compared in constant time.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { crossSiteReason } from '../admin/cross-site.js';
import { ConsoleError, ConsoleErrorCode } from './http.js';

export const CSRF_COOKIE = 'gregor_csrf';
export const CSRF_HEADER = 'x-gregor-csrf';

function hostName(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  const i = host.lastIndexOf(':');
  return i < 0 ? host : host.slice(0, i);
}

function loopbackName(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'localhost' || n.endsWith('.localhost') || n === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(n);
}

export function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function sameToken(a: string | undefined, b: string): boolean {
  if (a === undefined) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class CsrfGuard {
  readonly token = randomBytes(32).toString('hex');

  constructor(
    private readonly allowRemote: boolean,
    /** host:port of the admin listener as bound */
    private readonly listenerAddress: () => string | null,
  ) {}

  /** The Set-Cookie header the page is served with. */
  get cookieHeader(): string {
    return `${CSRF_COOKIE}=${this.token}; Path=/ui; SameSite=Strict`;
  }

  checkHost(req: IncomingMessage): void {
    if (this.allowRemote) return;
    const host = req.headers.host ?? '';
    const name = hostName(host);
    const own = this.listenerAddress();
    if (loopbackName(name) || (own !== null && hostName(own) === name)) return;
    throw new ConsoleError(
      403,
      ConsoleErrorCode.HOST,
      `Host "${host}" is not this listener's address: open the console through localhost or 127.0.0.1 (or set admin.listener.allow.remote=true)`,
    );
  }

  checkMutation(req: IncomingMessage): void {
    const refuse = (why: string) => new ConsoleError(403, ConsoleErrorCode.CSRF, `cross-site request refused: ${why}`);
    const why = crossSiteReason(req);
    if (why !== null) throw refuse(why);
    const header = req.headers[CSRF_HEADER];
    if (!sameToken(typeof header === 'string' ? header : undefined, this.token))
      throw refuse(`the ${CSRF_HEADER} header does not carry the console's token (reload the page)`);
    if (!sameToken(cookie(req, CSRF_COOKIE), this.token)) throw refuse(`the ${CSRF_COOKIE} cookie is missing or stale (reload the page)`);
  }
}
