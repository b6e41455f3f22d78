/**
 * SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) on the server side, as Kafka's SCRAM mechanism
 * speaks it: client-first `n,[a=authzid],n=user,r=nonce`, server-first `r=..,s=salt,i=iterations`,
 * client-final `c=biws,r=..,p=proof`, server-final `v=signature`. Credentials are kept salted (salt,
 * iterations, StoredKey, ServerKey), never the password. Only Node's crypto.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { StoredScramCredential } from '../../metadata/store.js';
import { SaslError, type SaslMechanismServer } from './mechanism.js';

export const SCRAM_MECHANISMS = {
  'SCRAM-SHA-256': { hash: 'sha256', keyLength: 32, type: 1 },
  'SCRAM-SHA-512': { hash: 'sha512', keyLength: 64, type: 2 },
} as const;
export type ScramMechanismName = keyof typeof SCRAM_MECHANISMS;

/** Kafka's bounds on a credential's iteration count (both mechanisms). */
export const SCRAM_MIN_ITERATIONS = 4096;
export const SCRAM_MAX_ITERATIONS = 16384;

export type { StoredScramCredential };

export function isScramMechanism(name: string): name is ScramMechanismName {
  return Object.hasOwn(SCRAM_MECHANISMS, name);
}

/** The mechanism of AlterUserScramCredentials' mechanism byte (1, 2), or undefined (0 = unknown). */
export function scramMechanismByType(type: number): ScramMechanismName | undefined {
  for (const [name, m] of Object.entries(SCRAM_MECHANISMS)) if (m.type === type) return name as ScramMechanismName;
  return undefined;
}

const hmac = (mech: ScramMechanismName, key: Buffer, data: string | Buffer): Buffer =>
  createHmac(SCRAM_MECHANISMS[mech].hash, key).update(data).digest();
const digest = (mech: ScramMechanismName, data: Buffer): Buffer => createHash(SCRAM_MECHANISMS[mech].hash).update(data).digest();

/** Hi() of RFC 5802: PBKDF2 with the mechanism's HMAC. */
export function saltedPassword(mech: ScramMechanismName, password: string, salt: Buffer, iterations: number): Buffer {
  return pbkdf2Sync(
    Buffer.from(password.normalize('NFKC'), 'utf8'),
    salt,
    iterations,
    SCRAM_MECHANISMS[mech].keyLength,
    SCRAM_MECHANISMS[mech].hash,
  );
}

/** The stored form of a salted password (what AlterUserScramCredentials sends). */
export function credentialFromSalted(mech: ScramMechanismName, salted: Buffer, salt: Buffer, iterations: number): StoredScramCredential {
  const clientKey = hmac(mech, salted, 'Client Key');
  return {
    salt: salt.toString('base64'),
    iterations,
    storedKey: digest(mech, clientKey).toString('base64'),
    serverKey: hmac(mech, salted, 'Server Key').toString('base64'),
  };
}

/** A new credential for `password` with a random salt. */
export function newCredential(mech: ScramMechanismName, password: string, iterations: number): StoredScramCredential {
  const salt = randomBytes(SCRAM_MECHANISMS[mech].keyLength);
  return credentialFromSalted(mech, saltedPassword(mech, password, salt, iterations), salt, iterations);
}

/** saslname of RFC 5802: `=2C` is a comma, `=3D` an equals sign; any other `=` is malformed. */
function decodeSaslName(s: string): string | null {
  if (/=(?!2C|3D)/.test(s)) return null;
  return s.replace(/=2C/g, ',').replace(/=3D/g, '=');
}

/** Printable ASCII except the comma (RFC 5802's nonce alphabet). */
const NONCE = /^[\x21-\x2b\x2d-\x7e]+$/;
const CLIENT_FIRST = /^n,(?:a=([^,]*))?,n=([^,]+),r=([^,]+)((?:,[a-zA-Z0-9]+=[^,]*)*)$/;
const CLIENT_FINAL = /^c=([A-Za-z0-9+/=]*),r=([^,]+)((?:,[a-zA-Z]=[^,]*)*),p=([A-Za-z0-9+/=]+)$/;

type Lookup = (user: string) => StoredScramCredential | undefined;

/** The server side of one SCRAM exchange. */
export class ScramServer implements SaslMechanismServer {
  private step: 'first' | 'final' | 'done' = 'first';
  private user = '';
  private cred: StoredScramCredential | undefined;
  private clientFirstBare = '';
  private serverFirst = '';
  private nonce = '';
  private gs2Header = '';

  constructor(
    readonly mechanism: ScramMechanismName,
    private readonly lookup: Lookup,
    /** the server's part of the nonce (tests pass RFC 7677's); alphanumeric like Kafka's */
    private readonly serverNonce: () => string = () => randomBytes(16).toString('hex'),
  ) {}

  get complete(): boolean {
    return this.step === 'done';
  }

  get authorizationId(): string {
    return this.user;
  }

  evaluate(token: Buffer): Buffer {
    const text = token.toString('utf8');
    if (this.step === 'first') return this.first(text);
    if (this.step === 'final') return this.final(text);
    throw SaslError.invalid(this.mechanism, 'SCRAM exchange already complete');
  }

  private first(text: string): Buffer {
    const m = CLIENT_FIRST.exec(text);
    if (m === null) throw SaslError.invalid(this.mechanism, 'invalid SCRAM client-first message');
    const [, authzRaw, nameRaw = '', clientNonce = '', extensions = ''] = m;
    const user = decodeSaslName(nameRaw);
    if (user === null || !NONCE.test(clientNonce)) throw SaslError.invalid(this.mechanism, 'invalid SCRAM client-first message');
    if (/(^|,)tokenauth=/.test(extensions)) throw SaslError.invalid(this.mechanism, 'delegation tokens are not supported');
    this.user = user;
    const authzid = authzRaw === undefined ? '' : decodeSaslName(authzRaw);
    if (authzid !== '' && authzid !== user)
      throw new SaslError('Authentication failed: Client requested an authorization id that is different from username');
    const cred = this.lookup(user);
    if (cred === undefined) throw SaslError.invalid(this.mechanism, `unknown user ${user}`);
    if (cred.iterations < SCRAM_MIN_ITERATIONS) throw SaslError.invalid(this.mechanism, `credential of ${user} has too few iterations`);
    this.cred = cred;
    this.gs2Header = text.slice(0, text.indexOf(',', 2) + 1);
    this.clientFirstBare = text.slice(this.gs2Header.length);
    this.nonce = clientNonce + this.serverNonce();
    this.serverFirst = `r=${this.nonce},s=${cred.salt},i=${cred.iterations}`;
    this.step = 'final';
    return Buffer.from(this.serverFirst, 'utf8');
  }

  private final(text: string): Buffer {
    const m = CLIENT_FINAL.exec(text);
    const cred = this.cred;
    if (m === null || cred === undefined) throw SaslError.invalid(this.mechanism, 'invalid SCRAM client-final message');
    const [, channelBinding = '', nonce = '', , proofB64 = ''] = m;
    // Kafka checks only that the nonce ends with the one it sent: older librdkafka (kcat) repeats the client's part
    if (!nonce.endsWith(this.nonce)) throw SaslError.invalid(this.mechanism, 'invalid nonce in the SCRAM client-final message');
    if (Buffer.from(channelBinding, 'base64').toString('utf8') !== this.gs2Header)
      throw SaslError.invalid(this.mechanism, 'invalid channel binding in the SCRAM client-final message');
    const withoutProof = text.slice(0, text.lastIndexOf(',p='));
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`;
    const storedKey = Buffer.from(cred.storedKey, 'base64');
    const clientSignature = hmac(this.mechanism, storedKey, authMessage);
    const proof = Buffer.from(proofB64, 'base64');
    if (proof.length !== clientSignature.length) throw SaslError.invalid(this.mechanism, `wrong password for ${this.user}`);
    const clientKey = Buffer.alloc(proof.length);
    for (let i = 0; i < proof.length; i++) clientKey[i] = (proof[i] ?? 0) ^ (clientSignature[i] ?? 0);
    const computed = digest(this.mechanism, clientKey);
    if (computed.length !== storedKey.length || !timingSafeEqual(computed, storedKey))
      throw SaslError.invalid(this.mechanism, `wrong password for ${this.user}`);
    this.step = 'done';
    const serverSignature = hmac(this.mechanism, Buffer.from(cred.serverKey, 'base64'), authMessage);
    return Buffer.from(`v=${serverSignature.toString('base64')}`, 'utf8');
  }
}
