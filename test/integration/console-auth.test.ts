/**
 * The console's login on a broker with SASL enabled (issue 19): the API answers 401 until a user of
 * the broker's SASL listeners (a PLAIN user of the JAAS entry, or a SCRAM user of the metadata store)
 * logs in; the session cookie is HttpOnly and SameSite=Strict; logout ends it. The /v1 admin routes
 * are not behind the login (they predate it, and keep their own cross-site checks).
 */
import { expect } from 'chai';
import { Cleanup } from '../helpers/cleanup.js';
import { ConsoleClient } from '../helpers/console.js';
import { SCRAM_USER, startSaslConsoleBroker } from '../helpers/console-sasl.js';
import { PLAIN_USERS } from '../helpers/sasl.js';

describe('web console login when SASL is enabled', function () {
  this.timeout(60_000);
  const cleanup = new Cleanup();
  let ui: ConsoleClient;

  before(async () => {
    const broker = await startSaslConsoleBroker(cleanup, 'gregor-console-auth-');
    ui = new ConsoleClient(broker.admin);
    await ui.open();
  });
  after(() => cleanup.run());

  const login = async (user: string, password: string) => {
    const res = await ui.post('/session', { user, password });
    const m = /gregor_session=([0-9a-f]+)/.exec(res.headers.get('set-cookie') ?? '');
    return { ...res, session: m?.[1] ?? null };
  };

  it('says a login is needed, and refuses the API (reads, writes and the live tail) without a session', async () => {
    const s = await ui.get('/session');
    expect(s.status).to.equal(200);
    expect(s.body).to.deep.include({ saslEnabled: true, user: null });
    expect(s.body.mechanisms).to.have.members(['PLAIN', 'SCRAM-SHA-512']);
    for (const path of ['/overview', '/topics', '/groups', '/requests', '/topics/x/tail']) {
      const r = await ui.get(path);
      expect(r.status, path).to.equal(401);
      expect(r.body.error, path).to.equal('GREGOR_ERR_CONSOLE_UNAUTHENTICATED');
    }
    expect((await ui.post('/topics', { name: 'nope' })).status).to.equal(401);
    // the page and its assets load (the login form is part of them); /v1 is not behind the login
    expect((await fetch(`${ui.base}/ui`)).status).to.equal(200);
    expect((await fetch(`${ui.base}/ui/assets/app.js`)).status).to.equal(200);
    expect((await fetch(`${ui.base}/v1/faults`)).status).to.equal(200);
  });

  it('refuses a wrong password, an unknown user and a SCRAM password given for a PLAIN user, after the failed-authentication delay', async () => {
    for (const [user, password] of [
      ['alice', 'wrong'],
      ['mallory', 'alice-secret'],
      ['alice', SCRAM_USER.password],
      [SCRAM_USER.user, 'alice-secret'],
      ['alice', ''],
    ] as const) {
      const t0 = Date.now();
      const r = await login(user, password);
      expect(r.status, `${user}/${password}`).to.equal(401);
      expect(r.body.error).to.equal('GREGOR_ERR_CONSOLE_UNAUTHENTICATED');
      expect(r.session).to.equal(null);
      expect(Date.now() - t0, 'connection.failed.authentication.delay.ms').to.be.at.least(190);
    }
    // a login without the CSRF token is a cross-site request (login CSRF)
    const forged = await fetch(`${ui.base}/ui/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://evil.example' },
      body: JSON.stringify({ user: 'alice', password: PLAIN_USERS.alice }),
    });
    expect(forged.status).to.equal(403);
  });

  it('logs in a PLAIN user and a SCRAM user with an HttpOnly, SameSite=Strict cookie; logout ends the session', async () => {
    const plain = await login('alice', PLAIN_USERS.alice);
    expect(plain.status).to.equal(200);
    expect(plain.body).to.deep.include({ saslEnabled: true, user: 'alice' });
    const cookie = plain.headers.get('set-cookie') ?? '';
    expect(cookie).to.match(/^gregor_session=[0-9a-f]{64}; Path=\/ui; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    const as = (session: string | null) => ({ cookie: `gregor_session=${session ?? ''}` });
    const read = (session: string | null, path = '/overview') => ui.send('GET', path, undefined, as(session));
    expect((await read(plain.session)).status).to.equal(200);
    expect((await read(plain.session, '/session')).body.user).to.equal('alice');
    // a mutating request with the session and the CSRF token works
    const created = await ui.send('POST', '/topics', { name: 'after-login', partitions: 1 }, as(plain.session));
    expect(created.status, JSON.stringify(created.body)).to.equal(201);

    const scram = await login(SCRAM_USER.user, SCRAM_USER.password);
    expect(scram.status).to.equal(200);
    expect(scram.body.user).to.equal(SCRAM_USER.user);
    expect((await read(scram.session, '/topics')).status).to.equal(200);

    // a made-up session is not one
    expect((await read('f'.repeat(64))).status).to.equal(401);

    const out = await ui.send('POST', '/session/logout', {}, as(plain.session));
    expect(out.status).to.equal(200);
    expect(out.headers.get('set-cookie')).to.match(/^gregor_session=; Path=\/ui; HttpOnly; SameSite=Strict; Max-Age=0$/);
    expect((await read(plain.session)).status).to.equal(401);
    // the other session lives on
    expect((await read(scram.session)).status).to.equal(200);
  });
});
