/**
 * Bad input on the security layers (issue 18): a fast-check run of SaslAuthenticate payloads — valid
 * PLAIN, SCRAM (client-first and client-final) and OAUTHBEARER exchanges mutated byte by byte,
 * truncated, extended, and frames that claim more than sasl.server.max.receive.size — and of TLS
 * records against an SSL listener: mutated ClientHellos, garbage and oversized record headers, and
 * garbage records injected after a completed handshake. The broker must answer or close each
 * connection, stay up, keep its RSS bounded (no allocation for a claimed size it refuses), and serve a
 * real client on another connection all along.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { Cleanup } from '../helpers/cleanup.js';
import { RawClient } from '../helpers/raw-client.js';
import { addScramUser, PLAIN_USERS, saslConfig } from '../helpers/sasl.js';
import {
  devCerts,
  kafkajsSsl,
  pemSslConfig,
  removeCerts,
  startLoggedBroker,
  type DevCertFiles,
  type LoggedBroker,
} from '../helpers/tls.js';

/** SaslAuthenticate cases (TLS: half as many); SECURITY_FUZZ_RUNS=5000 for a long run outside npm test. */
const RUNS = Number(process.env['SECURITY_FUZZ_RUNS'] ?? 120);
const SEED = Number(process.env['SECURITY_FUZZ_SEED'] ?? 20261202);
/** RSS may grow by this much over the whole run (buffers, TLS contexts, V8 heap); a claimed 2 GiB frame would not fit. */
const RSS_SLACK = 256 * 1024 * 1024;

const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
const jwt = (claims: Record<string, unknown>) => `${b64url({ alg: 'none' })}.${b64url(claims)}.`;
const now = () => Math.floor(Date.now() / 1000);

/** Valid first messages of each mechanism, before mutation. */
const SEEDS: Record<'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512' | 'OAUTHBEARER', () => Buffer> = {
  PLAIN: () => Buffer.from(`\0alice\0${PLAIN_USERS.alice}`),
  'SCRAM-SHA-256': () => Buffer.from('n,,n=carol,r=fyko+d2lbbFgONRv9qkxdawL'),
  'SCRAM-SHA-512': () => Buffer.from('n,,n=carol,r=rOprNGfwEbeRWgbNEkqO'),
  OAUTHBEARER: () => Buffer.from(`n,,\x01auth=Bearer ${jwt({ sub: 'dave', iat: now(), exp: now() + 600, scope: 'kafka' })}\x01\x01`),
};
type Mechanism = keyof typeof SEEDS;

/** A mutation of a valid message: byte flips, a cut, an insertion, a repeat, or a random replacement. */
const mutation = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }), n: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ maxLength: 64 }) }),
  fc.record({ kind: fc.constant('repeat' as const), times: fc.integer({ min: 2, max: 2000 }) }),
  fc.record({ kind: fc.constant('random' as const), bytes: fc.uint8Array({ maxLength: 512 }) }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

function mutate(seed: Buffer, m: Mutation): Buffer {
  if (m.kind === 'random') return Buffer.from(m.bytes);
  if (m.kind === 'repeat') return Buffer.concat(Array.from({ length: m.times }, () => seed));
  const at = seed.length === 0 ? 0 : m.at % seed.length;
  if (m.kind === 'cut') return seed.subarray(0, at);
  if (m.kind === 'insert') return Buffer.concat([seed.subarray(0, at), Buffer.from(m.bytes), seed.subarray(at)]);
  const out = Buffer.from(seed);
  for (let i = 0; i < m.n && out.length > 0; i++) {
    const j = (at + i * 7) % out.length;
    out[j] = (out[j] ?? 0) ^ m.xor;
  }
  return out;
}

describe('security fuzz: SaslAuthenticate payloads and TLS records never crash the broker nor grow it unbounded', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let certs: DevCertFiles;
  let b: LoggedBroker;
  let canary: Producer;
  let clientHello: Buffer;

  before(async () => {
    certs = cleanup.add(devCerts(['app']), removeCerts);
    b = cleanup.add(
      await startLoggedBroker(['PLAINTEXT', 'SASL_PLAINTEXT', 'SSL'], {
        ...pemSslConfig(certs),
        ...saslConfig(['SASL_PLAINTEXT'], ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER']),
        'connection.failed.authentication.delay.ms': '0',
        'num.partitions': 1,
      }),
      (x) => x.stop(),
    );
    await addScramUser(b.address('PLAINTEXT'), 'carol', 'carol-secret', ['SCRAM-SHA-256', 'SCRAM-SHA-512']);
    // a real client over SSL that must keep working while the fuzz runs
    canary = new Kafka({
      brokers: [b.address('SSL')],
      clientId: 'canary',
      ssl: kafkajsSsl(certs),
      logLevel: logLevel.NOTHING,
    }).producer();
    await canary.connect();
    cleanup.add(canary, (p) => p.disconnect());
    // a real ClientHello, captured from node's TLS client against a plain TCP server
    const server = net.createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as net.AddressInfo).port;
    const got = new Promise<Buffer>((resolve) =>
      server.once('connection', (s) => s.once('data', (d: Buffer) => (resolve(d), s.destroy()))),
    );
    const t = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false });
    t.on('error', () => undefined);
    clientHello = await got;
    t.destroy();
    server.close();
  });
  after(() => cleanup.run());

  const canarySend = async (tag: string) => {
    const r = await canary.send({ topic: 'canary', messages: [{ value: tag }] });
    expect(r[0]?.errorCode).to.equal(0);
  };

  /** Writes `bytes` and waits for the broker to answer or close (at most `ms`); never leaves the socket open. */
  async function poke(c: RawClient, bytes: Buffer, ms = 1500): Promise<void> {
    try {
      await c.write(bytes);
    } catch {
      // the broker closed first: fine
    }
    const deadline = Date.now() + ms;
    while (!c.closed && c.responses.length === 0 && Date.now() < deadline) await sleep(5);
    c.destroy();
  }

  it('SaslAuthenticate: mutated PLAIN / SCRAM first and final / OAUTHBEARER payloads, oversized claims', async () => {
    const rss0 = process.memoryUsage().rss;
    const mechanisms = Object.keys(SEEDS) as Mechanism[];
    let served = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...mechanisms),
        mutation,
        fc.oneof(fc.constant('first' as const), fc.constant('final' as const), fc.constant('claim' as const)),
        fc.constantFrom(0, 1, 2),
        fc.integer({ min: 524_289, max: 2 ** 31 - 1 }),
        async (mechanism, m, step, version, claimed) => {
          const c = await RawClient.connect(b.address('SASL_PLAINTEXT'));
          try {
            await c.request(ApiKey.SaslHandshake, 1, { mechanism });
            if (step === 'claim') {
              // a SaslAuthenticate frame that claims more than sasl.server.max.receive.size: closed unread
              const head = Buffer.alloc(8);
              head.writeInt32BE(claimed, 0);
              await poke(c, head);
              return;
            }
            let seed = SEEDS[mechanism]();
            if (step === 'final' && mechanism.startsWith('SCRAM')) {
              // a real server-first, then a mutated client-final built on its nonce
              const first = await c.request<{ errorCode: number; authBytes: Buffer }>(ApiKey.SaslAuthenticate, version, {
                authBytes: seed,
              });
              if (first.errorCode !== 0) return;
              const nonce = /r=([^,]+)/.exec(first.authBytes.toString())?.[1] ?? '';
              seed = Buffer.from(`c=biws,r=${nonce},p=${Buffer.alloc(mechanism.endsWith('512') ? 64 : 32, 7).toString('base64')}`);
            }
            await c.send(ApiKey.SaslAuthenticate, version, { authBytes: mutate(seed, m) });
            await poke(c, Buffer.alloc(0));
            served++;
          } finally {
            c.destroy();
          }
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
    await canarySend('after-sasl-fuzz');
    expect(served).to.be.greaterThan(RUNS / 4);
    expect(process.memoryUsage().rss - rss0).to.be.lessThan(RSS_SLACK);
    // a good login still works on the fuzzed listener
    const ok = await RawClient.connect(b.address('SASL_PLAINTEXT'));
    try {
      await ok.request(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' });
      const auth = await ok.request<{ errorCode: number }>(ApiKey.SaslAuthenticate, 2, { authBytes: SEEDS.PLAIN() });
      expect(auth.errorCode).to.equal(0);
    } finally {
      ok.destroy();
    }
  });

  it('TLS: mutated ClientHellos, garbage and oversized record headers, garbage records after the handshake', async () => {
    const rss0 = process.memoryUsage().rss;
    const recordHeader = (type: number, len: number) => Buffer.from([type, 3, 3, (len >> 8) & 0xff, len & 0xff]);
    const payload = fc.oneof(
      mutation.map((m) => ({ afterHandshake: false, bytes: mutate(clientHello, m) })),
      fc
        .tuple(fc.constantFrom(20, 21, 22, 23, 24, 0, 255), fc.integer({ min: 0, max: 65535 }), fc.uint8Array({ maxLength: 2048 }))
        .map(([type, len, body]) => ({ afterHandshake: false, bytes: Buffer.concat([recordHeader(type, len), Buffer.from(body)]) })),
      fc.uint8Array({ minLength: 1, maxLength: 4096 }).map((bytes) => ({ afterHandshake: true, bytes: Buffer.from(bytes) })),
      fc
        .tuple(fc.constantFrom(21, 23), fc.uint8Array({ minLength: 1, maxLength: 300 }))
        .map(([type, body]) => ({ afterHandshake: true, bytes: Buffer.concat([recordHeader(type, body.length), Buffer.from(body)]) })),
    );
    const [host, port] = [b.address('SSL').split(':')[0] ?? '127.0.0.1', Number(b.address('SSL').split(':').pop())];
    let handshakes = 0;
    await fc.assert(
      fc.asyncProperty(payload, async ({ afterHandshake, bytes }) => {
        const raw = net.connect({ host, port });
        raw.on('error', () => undefined);
        await once(raw, 'connect');
        const closed = once(raw, 'close');
        if (afterHandshake) {
          // a real handshake over the raw socket, then bytes written under the TLS layer: the broker sees bad records
          const t = tls.connect({ socket: raw, servername: 'localhost', ca: kafkajsSsl(certs).ca });
          t.on('error', () => undefined);
          await Promise.race([once(t, 'secureConnect'), sleep(5000)]);
          handshakes++;
        }
        raw.write(bytes);
        // a refused record closes the connection; an incomplete one waits for more bytes: leave it then
        await Promise.race([closed, sleep(150)]);
        raw.destroy();
      }),
      { numRuns: Math.ceil(RUNS / 2), seed: SEED },
    );
    expect(handshakes).to.be.greaterThan(0);
    await canarySend('after-tls-fuzz');
    expect(process.memoryUsage().rss - rss0).to.be.lessThan(RSS_SLACK);
    // the broker logged the refusals as warnings, not errors
    expect(b.lines().filter((l) => l.level === 'error' || l.level === 'fatal')).to.deep.equal([]);
  });
});
