/**
 * SASL refusals and edge cases (issue 18): wrong passwords, unknown users, an unsupported mechanism,
 * requests before authentication and a plaintext client on a SASL port each fail as the client expects,
 * with one broker line and no request served; SASL requests on a PLAINTEXT listener get
 * ILLEGAL_SASL_STATE; garbage, truncated and oversized SASL tokens (framed and legacy) never crash the
 * broker; OAUTHBEARER refuses expired and under-scoped unsecured JWTs with RFC 7628's error; KIP-368
 * re-authentication (connections.max.reauth.ms per listener) keeps a connection, and one past its
 * session lifetime is closed. A second listener (OAUTH, mapped to SASL_PLAINTEXT) has its own
 * mechanisms and session lifetime (listener.name.oauth.*).
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SASLOptions } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { SaslAuthenticateResponse } from '../../protocol/generated/sasl-authenticate.js';
import type { SaslHandshakeResponse } from '../../protocol/generated/sasl-handshake.js';
import { Cleanup } from '../helpers/cleanup.js';
import { runKcat } from '../helpers/kcat.js';
import { RawClient } from '../helpers/raw-client.js';
import { kafkajsListTopics, refused } from '../helpers/roundtrip.js';
import { addScramUser, PLAIN_USERS, plainJaas, saslConfig } from '../helpers/sasl.js';
import { kcatProps, startLoggedBroker, type LoggedBroker } from '../helpers/tls.js';

const GENERIC = (mech: string) => `Authentication failed during authentication due to invalid credentials with SASL mechanism ${mech}`;

/** An unsigned JWT (alg none) with `claims`. */
function unsecuredJwt(claims: Record<string, unknown>): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none' })}.${part(claims)}.`;
}

const oauthToken = (jwt: string) => Buffer.from(`n,,\x01auth=Bearer ${jwt}\x01\x01`);
const plainToken = (user: string, password: string) => Buffer.from(`\0${user}\0${password}`);

describe('SASL: refusals, bad input, OAUTHBEARER tokens, re-authentication', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  let b: LoggedBroker;

  before(async () => {
    b = cleanup.add(
      await startLoggedBroker(['PLAINTEXT', 'SASL_PLAINTEXT', 'OAUTH'], {
        'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,OAUTH:SASL_PLAINTEXT',
        ...saslConfig(['SASL_PLAINTEXT'], ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']),
        'listener.name.oauth.sasl.enabled.mechanisms': 'OAUTHBEARER,PLAIN',
        'listener.name.oauth.plain.sasl.jaas.config': plainJaas(PLAIN_USERS),
        'listener.name.oauth.oauthbearer.sasl.jaas.config':
          'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="kafka";',
        'listener.name.oauth.connections.max.reauth.ms': '1500',
        'connection.failed.authentication.delay.ms': '10',
      }),
      (x) => x.stop(),
    );
    await addScramUser(b.address('PLAINTEXT'), 'carol', 'carol-secret', ['SCRAM-SHA-256', 'SCRAM-SHA-512']);
  });
  after(() => cleanup.run());

  /** Runs `fn` and returns the warning lines the broker logged meanwhile. */
  async function warnedDuring(fn: () => Promise<void>): Promise<string[]> {
    const before = b.warnings().length;
    await fn();
    await sleep(50);
    return b
      .warnings()
      .slice(before)
      .map((l) => l.msg);
  }

  /** Requests other than ApiVersions/SaslHandshake/SaslAuthenticate a client id got served. */
  const served = (clientId: string) =>
    b.broker.metrics.requestLog
      .query({})
      .filter((e) => e.clientId === clientId && ![17, 18, 36].includes(e.apiKey) && e.outcome !== 'closed');

  const kafkajsList = (clientId: string, sasl: SASLOptions | undefined, listener = 'SASL_PLAINTEXT'): Promise<string[]> =>
    kafkajsListTopics(b.address(listener), { clientId, ...(sasl === undefined ? {} : { sasl }) });

  it('kafkajs: wrong PLAIN password, unknown SCRAM user, wrong SCRAM password, unsupported mechanism, no SASL at all: refused, one line each, nothing served', async () => {
    const cases: [string, SASLOptions | undefined, RegExp, RegExp][] = [
      [
        'bad-plain',
        { mechanism: 'plain', username: 'alice', password: 'nope' },
        /Invalid username or password/,
        /SASL authentication failed: wrong password for alice/,
      ],
      [
        'bad-user',
        { mechanism: 'scram-sha-256', username: 'mallory', password: 'x' },
        /invalid credentials with SASL mechanism SCRAM-SHA-256/,
        /SASL authentication failed: unknown user mallory/,
      ],
      [
        'bad-scram',
        { mechanism: 'scram-sha-512', username: 'carol', password: 'wrong' },
        /invalid credentials with SASL mechanism SCRAM-SHA-512/,
        /SASL authentication failed: wrong password for carol/,
      ],
      [
        'bad-mech',
        { mechanism: 'oauthbearer', oauthBearerProvider: () => Promise.resolve({ value: 'x' }) },
        /does not support the requested SASL mechanism/,
        /unsupported SASL mechanism OAUTHBEARER/,
      ],
      ['no-sasl', undefined, /closed|Connection error|ECONNRESET|hang up/i, /unexpected Metadata request before the SASL handshake/],
    ];
    for (const [clientId, sasl, clientSays, brokerSays] of cases) {
      const lines = await warnedDuring(async () => {
        const e = await refused(kafkajsList(clientId, sasl));
        expect(e.message, clientId).to.match(clientSays);
      });
      expect(lines, clientId).to.have.length(1);
      expect(lines[0], clientId).to.match(brokerSays);
      expect(served(clientId), clientId).to.deep.equal([]);
    }
    // the good ones still get in
    expect(await kafkajsList('good', { mechanism: 'scram-sha-512', username: 'carol', password: 'carol-secret' })).to.be.an('array');
    expect(served('good')).to.not.deep.equal([]);
  });

  it("kcat (librdkafka): a wrong PLAIN password fails with the broker's message", async () => {
    const props = { 'security.protocol': 'sasl_plaintext', 'sasl.mechanisms': 'PLAIN', 'sasl.username': 'bob', 'sasl.password': 'bad' };
    const r = await runKcat(['-b', b.address('SASL_PLAINTEXT'), ...kcatProps(props), '-L', '-m', '3'], '', 20_000);
    expect(r.code).to.not.equal(0);
    expect(r.stderr).to.match(/Authentication failed: Invalid username or password/);
  });

  it('raw wire: requests before authentication close the connection unanswered; SASL requests on PLAINTEXT get ILLEGAL_SASL_STATE', async () => {
    for (const [apiKey, version, body] of [
      [ApiKey.Metadata, 4, { topics: null, allowAutoTopicCreation: false }],
      [ApiKey.SaslAuthenticate, 1, { authBytes: plainToken('alice', PLAIN_USERS.alice) }],
    ] as const) {
      const c = cleanup.add(await RawClient.connect(b.address('SASL_PLAINTEXT')), (x) => x.destroy());
      const lines = await warnedDuring(async () => {
        await c.send(apiKey, version, body);
        expect(await c.waitClosed()).to.equal(true);
      });
      expect(c.responses).to.have.length(0);
      expect(lines).to.have.length(1);
    }
    // after a v1 handshake, only SaslAuthenticate
    const c = cleanup.add(await RawClient.connect(b.address('SASL_PLAINTEXT')), (x) => x.destroy());
    const hs = await c.request<SaslHandshakeResponse>(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' });
    expect(hs).to.include({ errorCode: 0 });
    expect(hs.mechanisms).to.deep.equal(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']);
    await c.send(ApiKey.Metadata, 4, { topics: null, allowAutoTopicCreation: false });
    expect(await c.waitClosed()).to.equal(true);
    expect(c.responses).to.have.length(1);

    const p = cleanup.add(await RawClient.connect(b.address('PLAINTEXT')), (x) => x.destroy());
    expect(await p.request(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' })).to.include({ errorCode: ErrorCode.ILLEGAL_SASL_STATE });
    const auth = await p.request<SaslAuthenticateResponse>(ApiKey.SaslAuthenticate, 2, { authBytes: Buffer.alloc(0) });
    expect(auth).to.include({
      errorCode: ErrorCode.ILLEGAL_SASL_STATE,
      errorMessage: 'SaslAuthenticate request received after successful authentication',
    });
    expect(p.closed).to.equal(false);
  });

  it('raw wire: unsupported mechanism (the enabled list back), PLAIN message forms, garbage and truncated SCRAM tokens, an oversized frame', async () => {
    const exchange = async (
      mechanism: string,
      tokens: Buffer[],
    ): Promise<{ hs: SaslHandshakeResponse; auth: SaslAuthenticateResponse[]; closed: boolean }> => {
      const c = cleanup.add(await RawClient.connect(b.address('SASL_PLAINTEXT')), (x) => x.destroy());
      const hs = await c.request<SaslHandshakeResponse>(ApiKey.SaslHandshake, 1, { mechanism });
      const auth: SaslAuthenticateResponse[] = [];
      for (const t of tokens) {
        if (c.closed) break;
        auth.push(await c.request<SaslAuthenticateResponse>(ApiKey.SaslAuthenticate, 2, { authBytes: t }));
      }
      return { hs, auth, closed: await c.waitClosed(1000) };
    };
    const unsupported = await exchange('GSSAPI', []);
    expect(unsupported.hs).to.deep.include({
      errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM,
      mechanisms: ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'],
    });
    expect(unsupported.closed).to.equal(true);

    const plainCases: [Buffer, string][] = [
      [Buffer.from('alice\0alice-secret'), GENERIC('PLAIN')],
      [plainToken('', 'x'), 'Authentication failed: username not specified'],
      [plainToken('alice', ''), 'Authentication failed: password not specified'],
      [
        Buffer.from('bob\0alice\0alice-secret'),
        'Authentication failed: Client requested an authorization id that is different from username',
      ],
    ];
    for (const [token, message] of plainCases) {
      const r = await exchange('PLAIN', [token]);
      expect(r.auth[0]).to.include({ errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED, errorMessage: message });
      expect(r.closed).to.equal(true);
    }
    const ok = await exchange('PLAIN', [Buffer.from('alice\0alice\0alice-secret')]);
    expect(ok.auth[0]).to.include({ errorCode: 0 });
    expect(ok.closed).to.equal(false);

    const scramCases: Buffer[] = [
      Buffer.from('garbage'),
      Buffer.from('n,,n=carol'),
      Buffer.from('p=tls-unique,,n=carol,r=abc'),
      Buffer.alloc(4000, 0xff),
      Buffer.from(`n,,n=${'c'.repeat(100_000)},r=abc,ext=1`),
    ];
    for (const t of scramCases) {
      const r = await exchange('SCRAM-SHA-256', [t]);
      expect(r.auth[0]).to.include({ errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED, errorMessage: GENERIC('SCRAM-SHA-256') });
      expect(r.closed).to.equal(true);
    }
    // a valid client-first, then a truncated and a garbled client-final
    for (const final of ['c=biws,r=', 'c=biws,r=abc,p=AAAA', 'c=eHl6,r=@,p=!!']) {
      const r = await exchange('SCRAM-SHA-512', [Buffer.from('n,,n=carol,r=clientnonce'), Buffer.from(final)]);
      expect(r.auth[0]?.errorCode).to.equal(0);
      expect(r.auth[0]?.authBytes.toString()).to.match(/^r=clientnonce[0-9a-f]{32},s=[A-Za-z0-9+/=]+,i=4096$/);
      expect(r.auth[1]).to.include({ errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED, errorMessage: GENERIC('SCRAM-SHA-512') });
      expect(r.closed).to.equal(true);
    }
    // bigger than sasl.server.max.receive.size (524288) before authentication: closed unread
    const big = cleanup.add(await RawClient.connect(b.address('SASL_PLAINTEXT')), (x) => x.destroy());
    const size = Buffer.alloc(4);
    size.writeInt32BE(600_000, 0);
    const lines = await warnedDuring(async () => {
      await big.write(size);
      expect(await big.waitClosed()).to.equal(true);
    });
    expect(lines).to.deep.equal(['closing connection: invalid request size']);
  });

  it('fuzz: random SaslAuthenticate payloads for every mechanism and random legacy (v0) tokens never crash the broker', async () => {
    for (let i = 0; i < 60; i++) {
      const listener = i % 3 === 2 ? 'OAUTH' : 'SASL_PLAINTEXT';
      const mechanism = ['PLAIN', 'SCRAM-SHA-256', 'OAUTHBEARER'][i % 3] ?? 'PLAIN';
      const c = cleanup.add(await RawClient.connect(b.address(listener)), (x) => x.destroy());
      const legacy = i % 4 === 0;
      await c.request(ApiKey.SaslHandshake, legacy ? 0 : 1, { mechanism });
      const token = randomBytes(Math.floor(Math.random() * 300));
      if (legacy) {
        const frame = Buffer.alloc(4 + token.length);
        frame.writeInt32BE(token.length, 0);
        token.copy(frame, 4);
        await c.write(frame);
      } else {
        await c.send(ApiKey.SaslAuthenticate, 1, { authBytes: token });
      }
      await c.waitClosed(2000);
      c.destroy();
    }
    expect(await kafkajsList('after-fuzz', { mechanism: 'plain', username: 'bob', password: PLAIN_USERS.bob })).to.be.an('array');
  });

  it('OAUTHBEARER (unsecured JWT): an expired token and one without the required scope get RFC 7628 errors; a good one sets the session lifetime', async () => {
    const now = Date.now() / 1000;
    const attempt = async (claims: Record<string, unknown>) => {
      const c = cleanup.add(await RawClient.connect(b.address('OAUTH')), (x) => x.destroy());
      expect(await c.request(ApiKey.SaslHandshake, 1, { mechanism: 'OAUTHBEARER' })).to.include({ errorCode: 0 });
      const first = await c.request<SaslAuthenticateResponse>(ApiKey.SaslAuthenticate, 1, { authBytes: oauthToken(unsecuredJwt(claims)) });
      return { c, first };
    };
    for (const [claims, status] of [
      [{ sub: 'dave', iat: now - 100, exp: now - 10, scope: 'kafka' }, '{"status":"invalid_token"}'],
      [{ sub: 'dave', exp: now + 60, scope: 'other' }, '{"status":"insufficient_scope","scope":"kafka"}'],
      [{ exp: now + 60, scope: 'kafka' }, '{"status":"invalid_token"}'],
    ] as const) {
      const { c, first } = await attempt(claims);
      // the error comes as a challenge; the client's \x01 answer ends the exchange with it
      expect(first).to.include({ errorCode: 0 });
      expect(first.authBytes.toString()).to.equal(status);
      const second = await c.request<SaslAuthenticateResponse>(ApiKey.SaslAuthenticate, 1, { authBytes: Buffer.from('\x01') });
      expect(second).to.include({ errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED, errorMessage: status });
      expect(await c.waitClosed()).to.equal(true);
    }
    const { c, first } = await attempt({ sub: 'dave', iat: now, exp: now + 60, scope: 'kafka other' });
    expect(first).to.include({ errorCode: 0 });
    // the listener's connections.max.reauth.ms (1500) is below the token's remaining minute
    expect(first.sessionLifetimeMs).to.equal(1500n);
    expect(await c.request(ApiKey.Metadata, 4, { topics: null, allowAutoTopicCreation: false })).to.include({ correlationId: 3 });
    const short = await attempt({ sub: 'dave', exp: now + 1, scope: 'kafka' });
    expect(Number(short.first.sessionLifetimeMs)).to.be.within(1, 1000);
  });

  it('KIP-368: SaslHandshake v1 + SaslAuthenticate re-authenticates a session; past its lifetime a request closes the connection; a principal cannot change', async () => {
    const metadata = { topics: null, allowAutoTopicCreation: false };
    const login = async (c: RawClient, user: 'alice' | 'bob', version = 1) => {
      expect(await c.request(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' })).to.include({ errorCode: 0 });
      return c.request<SaslAuthenticateResponse>(ApiKey.SaslAuthenticate, version, { authBytes: plainToken(user, PLAIN_USERS[user]) });
    };
    const c = cleanup.add(await RawClient.connect(b.address('OAUTH')), (x) => x.destroy());
    expect((await login(c, 'alice')).sessionLifetimeMs).to.equal(1500n);
    await c.request(ApiKey.Metadata, 4, metadata);
    await sleep(1700);
    expect((await login(c, 'alice')).sessionLifetimeMs).to.equal(1500n);
    await c.request(ApiKey.Metadata, 4, metadata); // served: the session was renewed
    expect(c.closed).to.equal(false);
    await sleep(1700);
    await c.send(ApiKey.Metadata, 4, metadata);
    expect(await c.waitClosed()).to.equal(true);

    const d = cleanup.add(await RawClient.connect(b.address('OAUTH')), (x) => x.destroy());
    await login(d, 'alice');
    const other = await login(d, 'bob');
    expect(other).to.include({
      errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED,
      errorMessage: 'Cannot change principals during re-authentication from User:alice: User:bob',
    });
    expect(await d.waitClosed()).to.equal(true);

    // a client that used SaslAuthenticate v0 cannot re-authenticate: its SaslHandshake gets ILLEGAL_SASL_STATE
    const e = cleanup.add(await RawClient.connect(b.address('OAUTH')), (x) => x.destroy());
    expect(await login(e, 'bob', 0)).to.include({ errorCode: 0 });
    expect(await e.request(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' })).to.include({ errorCode: ErrorCode.ILLEGAL_SASL_STATE });
  });
});
