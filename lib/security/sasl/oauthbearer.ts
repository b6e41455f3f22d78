/**
 * SASL/OAUTHBEARER (RFC 7628) with Kafka's development validator for unsecured JWTs (alg "none", no
 * signature): the client's `n,[a=authzid],\x01auth=Bearer <jwt>\x01...\x01` is checked for `exp`
 * (required, not passed), `iat` (not in the future), the principal claim (`sub` by default) and the
 * required scope, with the JAAS options Kafka's unsecured validator reads
 * (unsecuredValidatorPrincipalClaimName, unsecuredValidatorScopeClaimName,
 * unsecuredValidatorRequiredScope, unsecuredValidatorAllowableClockSkewMs). A refused token gets
 * RFC 7628's JSON error as a challenge; the client's \x01 answer then fails the exchange with it.
 */
import { SaslError, type SaslMechanismServer } from './mechanism.js';

export interface UnsecuredValidatorOptions {
  principalClaim: string;
  scopeClaim: string;
  requiredScope: string[];
  clockSkewMs: number;
}

export function unsecuredValidatorOptions(options: ReadonlyMap<string, string>): UnsecuredValidatorOptions {
  const skew = Number(options.get('unsecuredValidatorAllowableClockSkewMs') ?? '0');
  return {
    principalClaim: options.get('unsecuredValidatorPrincipalClaimName')?.trim() || 'sub',
    scopeClaim: options.get('unsecuredValidatorScopeClaimName')?.trim() || 'scope',
    requiredScope: (options.get('unsecuredValidatorRequiredScope') ?? '').split(/\s+/).filter((s) => s !== ''),
    clockSkewMs: Number.isFinite(skew) && skew > 0 ? skew : 0,
  };
}

class TokenRejected extends Error {
  constructor(
    readonly status: 'invalid_token' | 'insufficient_scope',
    message: string,
  ) {
    super(message);
  }
}

function decodePart(part: string, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    throw new TokenRejected('invalid_token', `the JWT ${what} is not base64url JSON`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new TokenRejected('invalid_token', `the JWT ${what} is not a JSON object`);
  return v as Record<string, unknown>;
}

/** Validates an unsecured JWT; returns the principal name and the expiry (ms since the epoch). */
export function validateUnsecuredJwt(
  token: string,
  opts: UnsecuredValidatorOptions,
  nowMs: number,
): { principal: string; expiresAtMs: number } {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[2] !== '')
    throw new TokenRejected('invalid_token', 'an unsecured JWT has three parts and an empty signature');
  const header = decodePart(parts[0] ?? '', 'header');
  if (header['alg'] !== 'none') throw new TokenRejected('invalid_token', 'an unsecured JWT must have alg "none"');
  const claims = decodePart(parts[1] ?? '', 'payload');
  const exp = claims['exp'];
  if (typeof exp !== 'number') throw new TokenRejected('invalid_token', 'the JWT has no numeric exp claim');
  const iat = claims['iat'];
  if (iat !== undefined && typeof iat !== 'number') throw new TokenRejected('invalid_token', 'the JWT iat claim is not a number');
  if (exp * 1000 <= nowMs - opts.clockSkewMs)
    throw new TokenRejected('invalid_token', `the JWT expired at ${new Date(exp * 1000).toISOString()}`);
  if (typeof iat === 'number') {
    if (iat * 1000 > nowMs + opts.clockSkewMs) throw new TokenRejected('invalid_token', 'the JWT was issued in the future');
    if (exp <= iat) throw new TokenRejected('invalid_token', 'the JWT expires before it was issued');
  }
  const principal = claims[opts.principalClaim];
  if (typeof principal !== 'string' || principal.trim() === '')
    throw new TokenRejected('invalid_token', `the JWT has no ${opts.principalClaim} claim naming the principal`);
  const rawScope = claims[opts.scopeClaim];
  const scope = typeof rawScope === 'string' ? rawScope.split(/\s+/) : Array.isArray(rawScope) ? rawScope.map(String) : [];
  const missing = opts.requiredScope.filter((s) => !scope.includes(s));
  if (missing.length > 0) throw new TokenRejected('insufficient_scope', `the JWT scope lacks ${missing.join(' ')}`);
  return { principal, expiresAtMs: exp * 1000 };
}

// RFC 7628's client initial response: gs2 header, then key=value pairs each ended by \x01 (SOH), then \x01
const SOH = '\x01';
const INITIAL = new RegExp(`^n,(?:a=([^,${SOH}]*))?,${SOH}((?:[A-Za-z]+=[\\x21-\\x7e \\t\\r\\n]*${SOH})*)${SOH}$`);

export class OAuthBearerServer implements SaslMechanismServer {
  readonly mechanism = 'OAUTHBEARER';
  private user = '';
  private done = false;
  private error: string | null = null;
  private errorDetail = '';
  private expiresAt: number | undefined;

  constructor(
    private readonly opts: UnsecuredValidatorOptions,
    private readonly now: () => number = Date.now,
  ) {}

  get complete(): boolean {
    return this.done;
  }

  get authorizationId(): string {
    return this.user;
  }

  get credentialExpiresAtMs(): number | undefined {
    return this.expiresAt;
  }

  evaluate(token: Buffer): Buffer {
    if (this.error !== null) {
      // the client's answer to our error challenge (a lone \x01): the exchange fails with the error
      throw new SaslError(this.error, this.errorDetail);
    }
    if (this.done) throw SaslError.invalid(this.mechanism, 'OAUTHBEARER exchange already complete');
    const m = INITIAL.exec(token.toString('utf8'));
    if (m === null) throw SaslError.invalid(this.mechanism, 'invalid OAUTHBEARER client initial response');
    const pairs = new Map<string, string>();
    for (const kv of (m[2] ?? '').split('\x01')) {
      const eq = kv.indexOf('=');
      if (eq > 0) pairs.set(kv.slice(0, eq), kv.slice(eq + 1));
    }
    const auth = /^Bearer +([A-Za-z0-9\-._~+/]*=*)$/i.exec(pairs.get('auth') ?? '');
    if (auth === null) throw SaslError.invalid(this.mechanism, 'no auth=Bearer <token> in the OAUTHBEARER client response');
    try {
      const v = validateUnsecuredJwt(auth[1] ?? '', this.opts, this.now());
      const authzid = m[1] ?? '';
      if (authzid !== '' && authzid !== v.principal)
        throw new SaslError(
          `Authentication failed: Client requested an authorization id (${authzid}) that is different from the token's principal name (${v.principal})`,
        );
      this.user = v.principal;
      this.expiresAt = v.expiresAtMs;
      this.done = true;
      return Buffer.alloc(0);
    } catch (e) {
      if (!(e instanceof TokenRejected)) throw e;
      const scope = e.status === 'insufficient_scope' ? { scope: this.opts.requiredScope.join(' ') } : {};
      this.error = JSON.stringify({ status: e.status, ...scope });
      this.errorDetail = `token refused: ${e.message}`;
      return Buffer.from(this.error, 'utf8');
    }
  }
}
