/**
 * SASL/PLAIN (RFC 4616) on the server side: one message `[authzid] NUL authcid NUL passwd`, checked
 * against the users of the listener's PlainLoginModule JAAS entry (`user_<name>="<password>"`, as
 * Kafka's default server callback reads them). Passwords are compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { SaslError, type SaslMechanismServer } from './mechanism.js';

const sha256 = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

export class PlainServer implements SaslMechanismServer {
  readonly mechanism = 'PLAIN';
  private user = '';
  private done = false;

  constructor(private readonly users: ReadonlyMap<string, string>) {}

  get complete(): boolean {
    return this.done;
  }

  get authorizationId(): string {
    return this.user;
  }

  evaluate(token: Buffer): Buffer {
    if (this.done) throw SaslError.invalid('PLAIN', 'PLAIN exchange already complete');
    const parts = token.toString('utf8').split('\u0000');
    if (parts.length !== 3) throw SaslError.invalid('PLAIN', `Invalid SASL/PLAIN response: expected 3 tokens, got ${parts.length}`);
    const [authzid = '', user = '', password = ''] = parts;
    if (user === '') throw new SaslError('Authentication failed: username not specified');
    if (password === '') throw new SaslError('Authentication failed: password not specified');
    if (authzid !== '' && authzid !== user)
      throw new SaslError('Authentication failed: Client requested an authorization id that is different from username');
    const expected = this.users.get(user);
    // hashed first so that both sides have one length and the comparison takes one time
    const ok = timingSafeEqual(sha256(expected ?? `\u0000${password}`), sha256(password)) && expected !== undefined;
    if (!ok)
      throw new SaslError(
        'Authentication failed: Invalid username or password',
        `${expected === undefined ? 'unknown user' : 'wrong password for'} ${user}`,
      );
    this.user = user;
    this.done = true;
    return Buffer.alloc(0);
  }
}
