/**
 * One connection's SASL state on a SASL_PLAINTEXT / SASL_SSL listener, as Kafka's server
 * authenticator keeps it:
 *   handshake     ApiVersions and SaslHandshake only
 *   authenticate  after SaslHandshake v1: SaslAuthenticate only
 *   legacy        after SaslHandshake v0: raw size-prefixed tokens, not Kafka requests (kafka-python)
 *   complete      every request; a SaslHandshake v1+ begins re-authentication (KIP-368) when the client
 *                 showed it can (SaslAuthenticate v1+); past the session's lifetime, anything else closes
 *   failed        the answer to the failed step goes out, then the connection closes
 * The handlers of SaslHandshake and SaslAuthenticate call in here; lib/security/sasl/gate.ts keeps
 * every other request out until `complete`.
 */
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { SaslAuthenticateResponse } from '../../../protocol/generated/sasl-authenticate.js';
import type { SaslHandshakeResponse } from '../../../protocol/generated/sasl-handshake.js';
import { SaslError, type SaslMechanismServer } from './mechanism.js';
import { OAuthBearerServer } from './oauthbearer.js';
import { PlainServer } from './plain.js';
import { isScramMechanism, ScramServer, type StoredScramCredential } from './scram.js';
import type { SaslListenerSettings } from './settings.js';

export type SaslState = 'handshake' | 'authenticate' | 'legacy' | 'complete' | 'failed';

/** A SCRAM credential of a user, from the metadata store. */
export type ScramLookup = (mechanism: string, user: string) => StoredScramCredential | undefined;

export interface SaslFailure {
  reason: string;
  fields: Record<string, unknown>;
}

export class SaslSession {
  state: SaslState = 'handshake';
  /** the mechanism of the current (or last completed) exchange */
  mechanism: string | null = null;
  /** the authenticated principal (User:<name>), once complete */
  principal: string | null = null;
  /** set when a step failed: the connection closes after its answer */
  failure: SaslFailure | null = null;
  /** ms since the epoch after which only re-authentication is served (null: no limit) */
  expiresAtMs: number | null = null;
  private server: SaslMechanismServer | null = null;
  private clientSupportsReauth = false;
  private reauthenticating = false;
  /** re-authentication asked for another mechanism: its SaslAuthenticate fails */
  private badReauthMechanism: string | null = null;

  constructor(
    readonly settings: SaslListenerSettings,
    private readonly scram: ScramLookup,
    private readonly now: () => number = Date.now,
  ) {}

  get authenticated(): boolean {
    return this.state === 'complete';
  }

  /** Whether a SaslHandshake now begins re-authentication (else it is answered ILLEGAL_SASL_STATE). */
  get canReauthenticate(): boolean {
    return this.state === 'complete' && this.clientSupportsReauth;
  }

  expired(): boolean {
    return this.expiresAtMs !== null && this.now() > this.expiresAtMs;
  }

  /** SaslHandshake: picks the mechanism (or refuses it with the enabled list). */
  handshake(mechanism: string, version: number): SaslHandshakeResponse {
    const mechanisms = [...this.settings.mechanisms];
    const reauth = this.state === 'complete';
    if ((this.state !== 'handshake' && !reauth) || (reauth && (!this.clientSupportsReauth || version < 1)))
      return { errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms };
    if (!mechanisms.includes(mechanism)) {
      this.fail(`unsupported SASL mechanism ${mechanism}`, { mechanism, enabled: mechanisms });
      return { errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms };
    }
    this.reauthenticating = reauth;
    this.badReauthMechanism = reauth && mechanism !== this.mechanism ? mechanism : null;
    if (this.badReauthMechanism === null) {
      this.mechanism = mechanism;
      this.server = this.newServer(mechanism);
    }
    this.state = version >= 1 ? 'authenticate' : 'legacy';
    return { errorCode: ErrorCode.NONE, mechanisms };
  }

  /** SaslAuthenticate: the next token of the exchange. */
  authenticate(token: Buffer, version: number): SaslAuthenticateResponse {
    const empty = Buffer.alloc(0);
    if (this.state !== 'authenticate')
      return {
        errorCode: ErrorCode.ILLEGAL_SASL_STATE,
        errorMessage:
          this.state === 'complete'
            ? 'SaslAuthenticate request received after successful authentication'
            : `SaslAuthenticate request received in SASL state ${this.state}`,
        authBytes: empty,
        sessionLifetimeMs: 0n,
      };
    if (version >= 1) this.clientSupportsReauth = true;
    try {
      const out = this.step(token);
      const lifetime = this.authenticated ? this.sessionLifetimeMs() : 0;
      return { errorCode: ErrorCode.NONE, errorMessage: null, authBytes: out, sessionLifetimeMs: BigInt(lifetime) };
    } catch (e) {
      if (!(e instanceof SaslError)) throw e;
      return { errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED, errorMessage: e.message, authBytes: empty, sessionLifetimeMs: 0n };
    }
  }

  /** A raw token after SaslHandshake v0: the answer token, or null when the exchange failed (close, no answer). */
  legacyToken(token: Buffer): Buffer | null {
    try {
      const out = this.step(token);
      if (this.authenticated) this.sessionLifetimeMs();
      return out;
    } catch (e) {
      if (!(e instanceof SaslError)) throw e;
      return null;
    }
  }

  /** Runs one token through the mechanism; on success completes the session; throws SaslError (recorded as the failure). */
  private step(token: Buffer): Buffer {
    const mech = this.mechanism ?? '';
    try {
      if (this.badReauthMechanism !== null)
        throw new SaslError(
          `SASL mechanism '${this.badReauthMechanism}' requested by client is not supported for re-authentication of mechanism '${mech}'`,
        );
      const server = this.server;
      if (server === null) throw SaslError.invalid(mech, 'no SASL exchange in progress');
      const out = server.evaluate(token);
      if (server.complete) {
        const principal = `User:${server.authorizationId}`;
        if (this.reauthenticating && principal !== this.principal)
          throw new SaslError(`Cannot change principals during re-authentication from ${this.principal ?? ''}: ${principal}`);
        this.principal = principal;
        this.state = 'complete';
      }
      return out;
    } catch (e) {
      if (e instanceof SaslError) {
        const user = this.server?.authorizationId;
        this.fail(`SASL ${this.reauthenticating ? 're-authentication' : 'authentication'} failed: ${e.detail}`, {
          mechanism: mech,
          ...(user !== undefined && user !== '' ? { user } : {}),
        });
      }
      throw e;
    }
  }

  /** KIP-368: the session's lifetime, from connections.max.reauth.ms and the credential's expiry (0: none). */
  private sessionLifetimeMs(): number {
    const now = this.now();
    const max = this.settings.reauthMs.get(this.mechanism ?? '') ?? 0;
    const credentialExpiry = this.server?.credentialExpiresAtMs;
    let lifetime = 0;
    if (credentialExpiry !== undefined) lifetime = Math.max(0, Math.round(credentialExpiry - now));
    if (max > 0) lifetime = credentialExpiry === undefined ? max : Math.min(lifetime, max);
    this.expiresAtMs = credentialExpiry !== undefined || max > 0 ? now + lifetime : null;
    return lifetime;
  }

  private fail(reason: string, fields: Record<string, unknown>): void {
    this.state = 'failed';
    this.failure ??= { reason, fields };
  }

  private newServer(mechanism: string): SaslMechanismServer {
    if (mechanism === 'PLAIN') return new PlainServer(this.settings.plainUsers);
    if (mechanism === 'OAUTHBEARER') return new OAuthBearerServer(this.settings.oauth, this.now);
    if (isScramMechanism(mechanism)) return new ScramServer(mechanism, (user) => this.scram(mechanism, user));
    throw new Error(`no server for SASL mechanism ${mechanism}`);
  }
}
