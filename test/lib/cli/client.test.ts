/** The protocol client's pure parts, and its ApiVersions negotiation against a scripted broker. */
import { expect } from 'chai';
import net from 'node:net';
import { parseAddress, parseBootstrap } from '../../../lib/client/address.js';
import { BrokerConnection } from '../../../lib/client/connection.js';
import { decodeAssignment, decodeSubscription, encodeAssignment, encodeSubscription } from '../../../lib/client/consumer-protocol.js';
import { ClientError, ClientErrorCode, kafkaError } from '../../../lib/client/errors.js';
import { rangeAssign, roundRobinAssign } from '../../../lib/client/member.js';
import { formatTopicId } from '../../../lib/client/metadata.js';
import { murmur2, partitionForKey } from '../../../lib/client/murmur2.js';
import { commonVersion, parseApiVersionsV0 } from '../../../lib/client/versions.js';
import { encodeResponse, readRequestHeaderFrom } from '../../../protocol/frame.js';

const CONN = { clientId: 't', connectTimeoutMs: 2000, requestTimeoutMs: 2000, softwareName: 'gregor-cli', softwareVersion: '0.1.0' };

describe('client: pure parts', () => {
  it("murmur2 matches Kafka's Utils.murmur2 (UtilsTest vectors)", () => {
    const cases: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    for (const [s, h] of cases) expect(murmur2(Buffer.from(s)), s).to.equal(h);
    expect(partitionForKey(Buffer.from('foobar'), 7)).to.equal((-790332482 & 0x7fffffff) % 7);
  });

  it('addresses: host:port, IPv6, default port, lists', () => {
    expect(parseAddress('localhost')).to.deep.equal({ host: 'localhost', port: 9092 });
    expect(parseAddress('[::1]:9093')).to.deep.equal({ host: '::1', port: 9093 });
    expect(parseAddress('PLAINTEXT://b1:19092')).to.deep.equal({ host: 'b1', port: 19092 });
    expect(parseBootstrap('a:1, b:2')).to.deep.equal([
      { host: 'a', port: 1 },
      { host: 'b', port: 2 },
    ]);
    expect(() => parseAddress('a:0')).to.throw(RangeError);
    expect(() => parseBootstrap(' , ')).to.throw(RangeError);
  });

  it('range and roundrobin assignors as Kafka assigns', () => {
    const subs = new Map([
      ['m2', ['t']],
      ['m1', ['t', 'u']],
    ]);
    const counts = new Map([
      ['t', 3],
      ['u', 2],
    ]);
    expect(Object.fromEntries(rangeAssign(subs, counts))).to.deep.equal({
      m2: [{ topic: 't', partition: 2 }],
      m1: [
        { topic: 't', partition: 0 },
        { topic: 't', partition: 1 },
        { topic: 'u', partition: 0 },
        { topic: 'u', partition: 1 },
      ],
    });
    const rr = roundRobinAssign(subs, counts);
    expect([...rr.values()].flat().length).to.equal(5);
    expect(rr.get('m2')).to.deep.equal([{ topic: 't', partition: 1 }]);
  });

  it('consumer protocol subscription and assignment round-trip', () => {
    expect(decodeSubscription(encodeSubscription(['a', 'b']))).to.deep.equal(['a', 'b']);
    const parts = [
      { topic: 'a', partition: 0 },
      { topic: 'a', partition: 3 },
      { topic: 'b', partition: 1 },
    ];
    expect(decodeAssignment(encodeAssignment(parts))).to.deep.equal(parts);
    expect(decodeAssignment(Buffer.alloc(0))).to.deep.equal([]);
  });

  it('Kafka errors name the API, the broker and NAME (code)', () => {
    const e = kafkaError(36, {
      api: 'CreateTopics',
      broker: 'broker 1 (127.0.0.1:9092)',
      subject: "topic 'x'",
      message: "Topic 'x' already exists.",
    });
    expect(e.message).to.equal(
      "CreateTopics on broker 1 (127.0.0.1:9092): topic 'x': TOPIC_ALREADY_EXISTS (36): Topic 'x' already exists.",
    );
    expect(e.code).to.equal(ClientErrorCode.KAFKA);
    expect(e.kafkaError).to.equal('TOPIC_ALREADY_EXISTS');
    expect(e.retriable).to.equal(false);
    expect(kafkaError(6, { api: 'Produce', broker: 'b' }).retriable).to.equal(true);
  });

  it('ApiVersions v0 error layout and version intersection', () => {
    const body = Buffer.from('0000000700230000000100120000000200000000', 'hex'); // corr 7, err 35, [18: 0-2], throttle
    const r = parseApiVersionsV0(body);
    expect(r.errorCode).to.equal(35);
    expect(r.apis.get(18)).to.deep.equal({ min: 0, max: 2 });
    expect(commonVersion({ min: 0, max: 4 }, { min: 0, max: 2 })).to.equal(2);
    expect(commonVersion({ min: 3, max: 4 }, { min: 0, max: 2 })).to.equal(undefined);
    expect(formatTopicId('00000000000000000000000000000000')).to.equal('AAAAAAAAAAAAAAAAAAAAAA');
  });
});

/** A broker that knows ApiVersions v0-2 only (like the librdkafka mock) and advertises JoinGroup 0-6. */
function scriptedBroker(): Promise<{ server: net.Server; port: number; versionsAsked: number[] }> {
  const versionsAsked: number[] = [];
  const server = net.createServer((s) => {
    let buf = Buffer.alloc(0);
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const frame = buf.subarray(4, 4 + buf.readInt32BE(0));
        buf = buf.subarray(4 + frame.length);
        const { header } = readRequestHeaderFrom(frame);
        versionsAsked.push(header.apiVersion);
        if (header.apiVersion > 2) {
          const out = Buffer.alloc(4 + 4 + 2 + 4 + 6);
          out.writeInt32BE(out.length - 4, 0);
          out.writeInt32BE(header.correlationId, 4);
          out.writeInt16BE(35, 8);
          out.writeInt32BE(1, 10);
          out.writeInt16BE(18, 14);
          out.writeInt16BE(0, 16);
          out.writeInt16BE(2, 18);
          s.write(out);
        } else {
          const apiKeys = [
            { apiKey: 18, minVersion: 0, maxVersion: 2 },
            { apiKey: 3, minVersion: 0, maxVersion: 12 },
            { apiKey: 11, minVersion: 0, maxVersion: 6 },
          ];
          s.write(
            encodeResponse(18, header.apiVersion, header.correlationId, { errorCode: 0, apiKeys, throttleTimeMs: 0 }, { sizePrefix: true }),
          );
        }
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as net.AddressInfo).port, versionsAsked })),
  );
}

describe('client: connection', () => {
  it('ApiVersions falls back to the version the broker knows; no flexible versions below ApiVersions v3', async () => {
    const b = await scriptedBroker();
    try {
      const c = await BrokerConnection.open({ host: '127.0.0.1', port: b.port }, 'test broker', CONN);
      expect(b.versionsAsked).to.deep.equal([4, 2]);
      expect(c.apiVersionsVersion).to.equal(2);
      expect(c.versionOf(11)).to.equal(5); // JoinGroup 6 is flexible: not used
      expect(c.versionOf(3)).to.equal(8); // Metadata 9+ is flexible
      expect(() => c.version(19)).to.throw(ClientError, /test broker does not support CreateTopics/);
      c.close();
    } finally {
      b.server.close();
    }
  });

  it('a refused connection names the address', async () => {
    const s = net.createServer();
    const port = await new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as net.AddressInfo).port)));
    s.close();
    try {
      await BrokerConnection.open({ host: '127.0.0.1', port }, `bootstrap 127.0.0.1:${port}`, CONN);
      expect.fail('connected');
    } catch (e) {
      expect(e).to.be.instanceOf(ClientError);
      expect((e as ClientError).code).to.equal(ClientErrorCode.CONNECT);
      expect((e as Error).message).to.equal(`cannot connect to bootstrap 127.0.0.1:${port}: ECONNREFUSED`);
    }
  });
});
