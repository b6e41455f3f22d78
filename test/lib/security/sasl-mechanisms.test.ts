/**
 * The SASL mechanisms' server sides without a broker: SCRAM-SHA-256 against RFC 7677's example exchange
 * (and a SCRAM-SHA-512 client computed here), PLAIN's message forms, OAUTHBEARER's unsecured JWT checks,
 * and the sasl.jaas.config parser; the start-up log's effective configuration hides passwords.
 */
import { expect } from 'chai';
import { createHash, createHmac } from 'node:crypto';
import { BrokerConfig } from '../../../lib/config.js';
import { ConfigError } from '../../../lib/config/error.js';
import { parseJaasConfig, plainUsers } from '../../../lib/security/sasl/jaas.js';
import { SaslError } from '../../../lib/security/sasl/mechanism.js';
import { OAuthBearerServer, unsecuredValidatorOptions, validateUnsecuredJwt } from '../../../lib/security/sasl/oauthbearer.js';
import { PlainServer } from '../../../lib/security/sasl/plain.js';
import { credentialFromSalted, newCredential, saltedPassword, ScramServer } from '../../../lib/security/sasl/scram.js';

function thrown(fn: () => unknown): SaslError {
  try {
    fn();
  } catch (e) {
    if (e instanceof SaslError) return e;
    throw e;
  }
  throw new Error('no SaslError');
}

const plainJaasText = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";';

const jwt = (claims: Record<string, unknown>, header: Record<string, unknown> = { alg: 'none' }) =>
  `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;

describe('SASL mechanisms (server side)', () => {
  it("SCRAM-SHA-256: RFC 7677's example exchange, byte for byte", () => {
    const salt = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64');
    const cred = credentialFromSalted('SCRAM-SHA-256', saltedPassword('SCRAM-SHA-256', 'pencil', salt, 4096), salt, 4096);
    const server = new ScramServer(
      'SCRAM-SHA-256',
      (u) => (u === 'user' ? cred : undefined),
      () => '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
    );
    const first = server.evaluate(Buffer.from('n,,n=user,r=rOprNGfwEbeRWgbNEkqO')).toString();
    expect(first).to.equal('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096');
    const final = server.evaluate(
      Buffer.from('c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ='),
    );
    expect(final.toString()).to.equal('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=');
    expect(server.complete).to.equal(true);
    expect(server.authorizationId).to.equal('user');
  });

  it('SCRAM-SHA-512: a client computed here gets in with the right password, not with a wrong one; user names are unescaped', () => {
    const cred = newCredential('SCRAM-SHA-512', 's3cret', 4096);
    const run = (password: string): Buffer => {
      const server = new ScramServer('SCRAM-SHA-512', (u) => (u === 'a,b=c' ? cred : undefined));
      const bare = 'n=a=2Cb=3Dc,r=abc';
      const serverFirst = server.evaluate(Buffer.from(`n,,${bare}`)).toString();
      const [r, s, i] = serverFirst.split(',').map((x) => x.slice(2));
      const salted = saltedPassword('SCRAM-SHA-512', password, Buffer.from(s ?? '', 'base64'), Number(i));
      const clientKey = createHmac('sha512', salted).update('Client Key').digest();
      const withoutProof = `c=biws,r=${r ?? ''}`;
      const sig = createHmac('sha512', createHash('sha512').update(clientKey).digest())
        .update(`${bare},${serverFirst},${withoutProof}`)
        .digest();
      const proof = Buffer.from(clientKey.map((b, k) => b ^ (sig[k] ?? 0)));
      return server.evaluate(Buffer.from(`${withoutProof},p=${proof.toString('base64')}`));
    };
    expect(run('s3cret').toString()).to.match(/^v=/);
    expect(thrown(() => run('nope')).message).to.equal(
      'Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512',
    );
  });

  it('SCRAM: malformed first messages, channel binding, another authzid and unknown users are refused', () => {
    const cred = newCredential('SCRAM-SHA-256', 'x', 4096);
    const server = () => new ScramServer('SCRAM-SHA-256', (u) => (u === 'u' ? cred : undefined));
    for (const m of ['', 'n,,', 'y,,n=u,r=a', 'p=x,,n=u,r=a', 'n,,n=u', 'n,,n=u=zz,r=a', 'n,,n=nobody,r=abc', 'n,,n=u,r=a,b'])
      expect(() => server().evaluate(Buffer.from(m)), m).to.throw(SaslError);
    expect(thrown(() => server().evaluate(Buffer.from('n,a=v,n=u,r=a'))).message).to.match(/authorization id that is different/);
  });

  it('PLAIN: users from the JAAS entry; message forms and passwords checked as Kafka does', () => {
    const users = plainUsers(
      parseJaasConfig(
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="a" user_admin="a" user_alice="p \\"w;";',
        'k',
      ),
    );
    expect([...users]).to.deep.equal([
      ['admin', 'a'],
      ['alice', 'p "w;'],
    ]);
    const ok = new PlainServer(users);
    expect(ok.evaluate(Buffer.from('\0alice\0p "w;')).length).to.equal(0);
    expect(ok.authorizationId).to.equal('alice');
    expect(thrown(() => new PlainServer(users).evaluate(Buffer.from('\0admin\0b'))).message).to.equal(
      'Authentication failed: Invalid username or password',
    );
    expect(thrown(() => new PlainServer(users).evaluate(Buffer.from('\0ghost\0a'))).detail).to.equal('unknown user ghost');
  });

  it('sasl.jaas.config: exactly one login module with a control flag; bad syntax names the key', () => {
    const e = parseJaasConfig('org.apache.kafka.common.security.scram.ScramLoginModule required;', 'k');
    expect(e).to.deep.include({ loginModule: 'org.apache.kafka.common.security.scram.ScramLoginModule', flag: 'required' });
    for (const bad of ['', 'Mod;', 'Mod required a=1', 'Mod required a=;', 'Mod required a="x;', 'A required; B required;'])
      expect(() => parseJaasConfig(bad, 'the.key'), bad).to.throw(ConfigError, /the\.key/);
  });

  it("OAUTHBEARER: the unsecured validator's checks, and the error challenge then failure", () => {
    const opts = unsecuredValidatorOptions(new Map([['unsecuredValidatorRequiredScope', 'a b']]));
    const now = 1_700_000_000_000;
    const t = now / 1000;
    expect(validateUnsecuredJwt(jwt({ sub: 'x', exp: t + 10, scope: 'b a c' }), opts, now)).to.deep.equal({
      principal: 'x',
      expiresAtMs: now + 10_000,
    });
    const refusals: [string, RegExp][] = [
      [jwt({ sub: 'x', exp: t + 10, scope: 'a b' }, { alg: 'HS256' }), /alg "none"/],
      [jwt({ sub: 'x', scope: 'a b' }), /exp/],
      [jwt({ sub: 'x', exp: t - 1, scope: 'a b' }), /expired/],
      [jwt({ sub: 'x', exp: t + 10, iat: t + 5, scope: 'a b' }), /future/],
      [jwt({ exp: t + 10, scope: 'a b' }), /sub claim/],
      [jwt({ sub: 'x', exp: t + 10, scope: 'a' }), /lacks b/],
      ['a.b', /three parts/],
      [`${jwt({ sub: 'x', exp: t + 10 })}sig`, /three parts/],
    ];
    for (const [token, why] of refusals) expect(() => validateUnsecuredJwt(token, opts, now), token).to.throw(why);
    const skew = unsecuredValidatorOptions(new Map([['unsecuredValidatorAllowableClockSkewMs', '5000']]));
    expect(validateUnsecuredJwt(jwt({ sub: 'x', exp: t - 1 }), skew, now).principal).to.equal('x');

    const server = new OAuthBearerServer(opts, () => now);
    const challenge = server.evaluate(Buffer.from(`n,,\x01auth=Bearer ${jwt({ sub: 'x', exp: t + 10 })}\x01\x01`));
    expect(challenge.toString()).to.equal('{"status":"insufficient_scope","scope":"a b"}');
    expect(thrown(() => server.evaluate(Buffer.from('\x01'))).message).to.equal('{"status":"insufficient_scope","scope":"a b"}');
    expect(() => new OAuthBearerServer(opts).evaluate(Buffer.from('n,,auth=Bearer x'))).to.throw(SaslError);
  });
});

describe('the effective configuration logged at start', () => {
  it('hides password values (Kafka prints [hidden]); the SASL keys are there with their values', () => {
    const c = new BrokerConfig({
      overrides: {
        'ssl.keystore.password': 'top-secret',
        'sasl.enabled.mechanisms': 'PLAIN',
        'listener.name.sasl_plaintext.plain.sasl.jaas.config': plainJaasText,
      },
    });
    const e = c.effective();
    expect(e['ssl.keystore.password']).to.equal('[hidden]');
    expect(e['ssl.key.password']).to.equal(null);
    expect(e['sasl.enabled.mechanisms']).to.deep.equal(['PLAIN']);
    expect(JSON.stringify(e)).to.not.include('top-secret').and.not.include('alice-secret');
    expect(c.notApplying()).to.not.include('listener.name.sasl_plaintext.plain.sasl.jaas.config');
  });
});
