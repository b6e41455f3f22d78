/**
 * The console's login when the broker has SASL enabled (any SASL_PLAINTEXT or SASL_SSL listener):
 * a user and password, checked against the same credentials the broker's SASL listeners accept (the
 * PLAIN users of their JAAS entries, and the SCRAM credentials of the metadata store for the SCRAM
 * mechanisms they enable), through lib/security/sasl; then a session cookie (HttpOnly,
 * SameSite=Strict, Path=/ui) that the API requires. Without SASL the console stays open.
 *   GET  /ui/api/session         {saslEnabled, user, mechanisms}: what the page shows before anything else
 *   POST /ui/api/session         {user, password} -> 200 {user} + Set-Cookie | 401 (after the broker's
 *                                connection.failed.authentication.delay.ms, as a failed SASL exchange)
 *   POST /ui/api/session/logout  ends the session, clears the cookie
 * Sessions live in memory (a restart logs everyone out) for `SESSION_MS` from the login.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { type BrokerConfig, parseListener } from '../config.js';
import type { MetadataStore } from '../metadata/store.js';
import { PlainServer } from '../security/sasl/plain.js';
import { credentialFromSalted, isScramMechanism, saltedPassword } from '../security/sasl/scram.js';
import { listenerSaslSettings } from '../security/sasl/settings.js';
import { bodyObject, ConsoleError, ConsoleErrorCode, sendJson, str } from './http.js';
import { cookie } from './security.js';
import type { ApiRoute } from './types.js';

export const SESSION_COOKIE = 'gregor_session';
/** how long a login lasts */
export const SESSION_MS = 12 * 60 * 60 * 1000;
/** at most this many live sessions (the oldest go first) */
const MAX_SESSIONS = 1000;

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class ConsoleAuth {
  /** PLAIN users of every SASL listener with PLAIN enabled */
  private readonly plainUsers = new Map<string, string>();
  /** SCRAM mechanisms enabled on some SASL listener */
  private readonly scram = new Set<'SCRAM-SHA-256' | 'SCRAM-SHA-512'>();
  readonly mechanisms: string[] = [];
  readonly enabled: boolean;
  private readonly sessions = new Map<string, { user: string; expiresAt: number }>();
  private readonly failedDelayMs: number;

  constructor(
    config: BrokerConfig,
    private readonly metadata: () => MetadataStore,
  ) {
    let enabled = false;
    let delay = 0;
    for (const spec of config.brokerListeners) {
      const name = parseListener(spec).name;
      const protocol = config.securityProtocol(name);
      if (protocol !== 'SASL_PLAINTEXT' && protocol !== 'SASL_SSL') continue;
      enabled = true;
      const s = listenerSaslSettings(config, name);
      delay = Math.max(delay, s.failedAuthDelayMs);
      for (const m of s.mechanisms) {
        if (!this.mechanisms.includes(m)) this.mechanisms.push(m);
        if (m === 'PLAIN') for (const [u, p] of s.plainUsers) if (!this.plainUsers.has(u)) this.plainUsers.set(u, p);
        if (isScramMechanism(m)) this.scram.add(m);
      }
    }
    this.enabled = enabled;
    this.failedDelayMs = delay;
  }

  /** The logged-in user of a request, or null (always null without SASL). */
  user(req: IncomingMessage): string | null {
    const token = cookie(req, SESSION_COOKIE);
    if (token === undefined) return null;
    const s = this.sessions.get(token);
    if (s === undefined) return null;
    if (s.expiresAt <= Date.now()) {
      this.sessions.delete(token);
      return null;
    }
    return s.user;
  }

  /** Throws 401 unless SASL is off or the request carries a live session. */
  require(req: IncomingMessage): void {
    if (!this.enabled || this.user(req) !== null) return;
    throw new ConsoleError(401, ConsoleErrorCode.UNAUTHENTICATED, 'log in with a SASL user of this broker (PLAIN or SCRAM)');
  }

  /** Whether `password` is `user`'s, for PLAIN (its JAAS users) or any enabled SCRAM mechanism. */
  check(user: string, password: string): boolean {
    if (user === '' || password === '') return false;
    if (this.plainUsers.has(user)) {
      try {
        new PlainServer(this.plainUsers).evaluate(Buffer.from(`\u0000${user}\u0000${password}`, 'utf8'));
        return true;
      } catch {
        // not PLAIN's password; SCRAM's may still match
      }
    }
    const creds = this.scram.size === 0 ? undefined : this.metadata().scramCredentials().get(user);
    for (const mech of this.scram) {
      const c = creds?.[mech];
      if (c === undefined) continue;
      const salt = Buffer.from(c.salt, 'base64');
      const mine = credentialFromSalted(mech, saltedPassword(mech, password, salt, c.iterations), salt, c.iterations);
      if (sameText(mine.storedKey, c.storedKey) && sameText(mine.serverKey, c.serverKey)) return true;
    }
    return false;
  }

  private login(user: string): string {
    const token = randomBytes(32).toString('hex');
    if (this.sessions.size >= MAX_SESSIONS) {
      const oldest = this.sessions.keys().next();
      if (oldest.done !== true) this.sessions.delete(oldest.value);
    }
    this.sessions.set(token, { user, expiresAt: Date.now() + SESSION_MS });
    return token;
  }

  private sessionCookie(token: string, maxAgeS: number): string {
    return `${SESSION_COOKIE}=${token}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}`;
  }

  /** The routes that work without a session. */
  routes(): ApiRoute[] {
    return [
      {
        method: 'GET',
        path: /^\/session$/,
        handle: (req, res) => sendJson(res, 200, { saslEnabled: this.enabled, user: this.user(req), mechanisms: this.mechanisms }),
      },
      {
        method: 'POST',
        path: /^\/session$/,
        handle: async (_req, res, { body }) => {
          const o = bodyObject(body);
          const user = str(o, 'user');
          const password = str(o, 'password');
          if (!this.enabled)
            throw new ConsoleError(409, ConsoleErrorCode.BAD_REQUEST, 'SASL is not enabled on this broker: the console needs no login');
          if (!this.check(user, password)) {
            await sleep(this.failedDelayMs);
            throw new ConsoleError(401, ConsoleErrorCode.UNAUTHENTICATED, 'invalid user name or password');
          }
          res.setHeader('set-cookie', this.sessionCookie(this.login(user), Math.floor(SESSION_MS / 1000)));
          sendJson(res, 200, { saslEnabled: true, user, mechanisms: this.mechanisms });
        },
      },
      {
        method: 'POST',
        path: /^\/session\/logout$/,
        handle: (req, res) => {
          const token = cookie(req, SESSION_COOKIE);
          if (token !== undefined) this.sessions.delete(token);
          res.setHeader('set-cookie', this.sessionCookie('', 0));
          sendJson(res, 200, { saslEnabled: this.enabled, user: null, mechanisms: this.mechanisms });
        },
      },
    ];
  }
}
